// Package daemon holds the parts of `edgellm serve` that are not the MQTT
// protocol: the configuration file, the memory budget, and the systemd
// notification protocol.
package daemon

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is the daemon configuration, read from a YAML file whose keys are
// exactly the `yaml` tags below (see config.yaml at the repository root for
// the documented defaults).
type Config struct {
	// Model selects the model file and how it runs.
	Model ModelConfig `yaml:"model"`
	// MQTT configures the broker connection and the topics.
	MQTT MQTTConfig `yaml:"mqtt"`
	// Queue configures the job queue in front of the workers.
	Queue QueueConfig `yaml:"queue"`
	// Limits bound what a single request may ask for.
	Limits LimitsConfig `yaml:"limits"`
	// Sampling holds the defaults for requests that do not set them.
	Sampling SamplingConfig `yaml:"sampling"`
	// Cache configures the prompt cache.
	Cache CacheConfig `yaml:"cache"`
	// HTTP configures the OpenAI-compatible HTTP API (off by default).
	HTTP HTTPConfig `yaml:"http"`
	// StateDir is where the daemon keeps state across restarts (for example
	// the answered deliveries, so a redelivered request is answered once).
	// Unset, it is the user's own (UserStateDir), so a hand-run daemon never
	// shares the packaged service's /var/lib/edgellm.
	StateDir string `yaml:"state_dir"`

	// lines maps dotted keys to the line they were set on in the file.
	lines map[string]int
}

// ModelConfig is the `model` section.
type ModelConfig struct {
	// Path is the GGUF model file. Required.
	Path string `yaml:"path"`
	// Context is the context length in tokens (prompt plus answer).
	Context int `yaml:"context"`
	// Threads is the number of inference threads; 0 means one less than the
	// CPUs available (at least 1).
	Threads int `yaml:"threads"`
	// Nice is the scheduling priority of the worker (-20 … 19).
	Nice int `yaml:"nice"`
	// ChatTemplate overrides the chat template from the model file: a
	// .jinja file's path, Jinja text, or a hand-written family's name
	// (chatml, zephyr, llama2, llama3, llama3.1, phi3); empty means the
	// model's own (tokenizer.chat_template, rendered with Jinja).
	ChatTemplate string `yaml:"chat_template"`
	// KVType is how attention layers store keys and values: f16 (the
	// default) or q8_0 (34/64 of the memory; llama.cpp's -ctk q8_0 -ctv
	// q8_0).
	KVType string `yaml:"kv_type"`
	// Repack copies the Q4_0 and Q4_K weight matrices into the interleaved
	// layouts the CPU's kernels multiply faster (AVX2; nothing elsewhere):
	// decode runs faster (and Q4_0 prefill), and those matrices take heap
	// memory (counted by the memory plan) instead of the file's page
	// cache, which the kernel could reclaim.
	Repack bool `yaml:"repack"`
}

// MQTTConfig is the `mqtt` section.
type MQTTConfig struct {
	// Broker is the broker URL: tcp://, ssl://, ws:// or wss://.
	Broker string `yaml:"broker"`
	// NodeID names this node in topics and is the MQTT client id's suffix;
	// empty means the host name.
	NodeID string `yaml:"node_id"`
	// BaseTopic is the first topic level of every topic we use.
	BaseTopic string `yaml:"base_topic"`
	// Username for the broker; empty means anonymous.
	Username string `yaml:"username"`
	// PasswordFile is a file holding the password (trailing newline ignored).
	PasswordFile string `yaml:"password_file"`
	// TLS holds the certificate files for ssl:// and wss:// brokers.
	TLS TLSConfig `yaml:"tls"`
	// Pool is the shared-subscription group name; when set the node also
	// takes requests from $share/<pool>/<base>/pool/request.
	Pool string `yaml:"pool"`
	// StatusInterval is how often the retained status is refreshed.
	StatusInterval time.Duration `yaml:"status_interval"`
	// Embedded configures the built-in broker (mqtt.broker: embedded).
	Embedded EmbeddedConfig `yaml:"embedded"`
	// HomeAssistant configures Home Assistant MQTT discovery.
	HomeAssistant HomeAssistantConfig `yaml:"homeassistant"`
}

// TLSConfig is the `mqtt.tls` section. All paths are PEM files.
type TLSConfig struct {
	// CA is the CA bundle that signs the broker's certificate; empty means
	// the system roots.
	CA string `yaml:"ca"`
	// Cert is the client certificate (needs Key).
	Cert string `yaml:"cert"`
	// Key is the client certificate's private key (needs Cert).
	Key string `yaml:"key"`
}

// HomeAssistantConfig is the `mqtt.homeassistant` section.
type HomeAssistantConfig struct {
	// Enabled publishes Home Assistant discovery configs.
	Enabled bool `yaml:"enabled"`
	// DiscoveryPrefix is Home Assistant's discovery prefix.
	DiscoveryPrefix string `yaml:"discovery_prefix"`
	// ConfigurationURL is the link on the device's page in Home Assistant
	// (an http or https URL); empty shows none.
	ConfigurationURL string `yaml:"configuration_url"`
}

// CacheConfig is the prompt cache: the KV cache of the previous request is
// reused for the prefix the next one shares with it.
type CacheConfig struct {
	// Persist saves that KV cache in <state_dir>/PromptCacheFile when the
	// daemon stops and loads it when it starts, so the first request after a
	// restart does not prefill a long shared system prompt again.
	Persist bool `yaml:"persist"`
}

// PromptCacheFile is the prompt cache's file in state_dir.
const PromptCacheFile = "prompt-cache.kv"

// EmbeddedConfig is the built-in MQTT broker, used when mqtt.broker is
// "embedded": devices then connect to this machine. Its sessions, queued
// messages and retained messages are kept in <state_dir>/broker.
type EmbeddedConfig struct {
	// Listen is the address the broker listens on, host:port.
	Listen string `yaml:"listen"`
	// PasswordFile is a mosquitto_passwd file of the users devices log in
	// as; empty lets anyone on the network connect.
	PasswordFile string `yaml:"password_file"`
}

// HTTPConfig is the `http` section: the OpenAI-compatible API served beside
// MQTT, from the same queue and worker.
type HTTPConfig struct {
	// Listen is the address of the OpenAI-compatible API, host:port (for
	// example 127.0.0.1:8080); empty turns it off.
	Listen string `yaml:"listen"`
	// APIKeyFile is a file holding the bearer token clients must send to
	// either API (Authorization: Bearer <token>; trailing newline ignored);
	// empty lets any client in.
	APIKeyFile string `yaml:"api_key_file"`
	// OllamaListen is the address of the Ollama-compatible API, host:port
	// (Ollama's own port is 11434); empty turns it off.
	OllamaListen string `yaml:"ollama_listen"`
	// MaxBodyBytes is the largest request body accepted; larger ones are
	// answered 413.
	MaxBodyBytes int `yaml:"max_body_bytes"`
	// TLS, when its Cert and Key are set, serves both APIs over HTTPS.
	TLS HTTPTLSConfig `yaml:"tls"`
}

// HTTPTLSConfig is the `http.tls` section: the server's certificate chain
// and private key, PEM files. Both or neither.
type HTTPTLSConfig struct {
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
}

// QueueConfig is the `queue` section.
type QueueConfig struct {
	// Size is how many jobs may wait behind the running ones.
	Size int `yaml:"size"`
	// Slots is how many jobs run at once; 0 means as many as the memory
	// plan allows at model.context (AutoSlots: at most 4 on a Pi-class
	// board, 8 otherwise, at least 1).
	Slots int `yaml:"slots"`
	// JobTimeout is the deadline of one job, queueing included.
	JobTimeout time.Duration `yaml:"job_timeout"`
}

// LimitsConfig is the `limits` section.
type LimitsConfig struct {
	// MaxPromptBytes is the largest request payload accepted.
	MaxPromptBytes int `yaml:"max_prompt_bytes"`
	// MaxTokens is the largest max_tokens a request may ask for, and the
	// default when it does not ask.
	MaxTokens int `yaml:"max_tokens"`
}

// SamplingConfig is the `sampling` section: defaults for each request.
type SamplingConfig struct {
	// Temperature scales the logits; 0 means greedy.
	Temperature float64 `yaml:"temperature"`
	// TopP is the nucleus sampling mass, in (0, 1].
	TopP float64 `yaml:"top_p"`
	// TopK keeps the K most likely tokens; 0 disables it.
	TopK int `yaml:"top_k"`
	// MinP drops tokens less likely than MinP × the most likely one.
	MinP float64 `yaml:"min_p"`
	// RepeatPenalty divides the logits of recently generated tokens; 1 is off.
	RepeatPenalty float64 `yaml:"repeat_penalty"`
	// Seed seeds the sampler; -1 means a fresh random seed per request.
	Seed int64 `yaml:"seed"`
	// Think lets thinking models reason before they answer (a request's
	// think). Off by default: a voice pipeline must neither wait for nor
	// speak reasoning.
	Think bool `yaml:"think"`
}

// Config defaults. Threads has no constant: it depends on the machine.
const (
	DefaultContext        = 2048
	DefaultNice           = 10
	DefaultKVType         = "f16"
	DefaultBroker         = "tcp://localhost:1883"
	DefaultEmbeddedListen = ":1883"
	// EmbeddedBroker is the mqtt.broker value that runs the built-in broker.
	EmbeddedBroker         = "embedded"
	DefaultBaseTopic       = "edgellm"
	DefaultStatusInterval  = 60 * time.Second
	DefaultDiscoveryPrefix = "homeassistant"
	DefaultQueueSize       = 8
	DefaultJobTimeout      = 5 * time.Minute
	DefaultMaxPromptBytes  = 32 << 10
	DefaultMaxTokens       = 512
	DefaultMaxBodyBytes    = 1 << 20
	DefaultTemperature     = 0.7
	DefaultTopP            = 0.95
	DefaultTopK            = 40
	DefaultMinP            = 0.05
	DefaultRepeatPenalty   = 1.1
	DefaultSeed            = -1
)

// DefaultConfig returns the configuration used for every key the file does
// not set. Model.Path has no default, Threads 0 means "resolve at load" and
// NodeID "" means "the host name".
func DefaultConfig() *Config {
	return &Config{
		Model: ModelConfig{Context: DefaultContext, Nice: DefaultNice, KVType: DefaultKVType},
		MQTT: MQTTConfig{
			Broker:         DefaultBroker,
			BaseTopic:      DefaultBaseTopic,
			StatusInterval: DefaultStatusInterval,
			HomeAssistant:  HomeAssistantConfig{Enabled: true, DiscoveryPrefix: DefaultDiscoveryPrefix},
			Embedded:       EmbeddedConfig{Listen: DefaultEmbeddedListen},
		},
		Queue:  QueueConfig{Size: DefaultQueueSize, JobTimeout: DefaultJobTimeout},
		Limits: LimitsConfig{MaxPromptBytes: DefaultMaxPromptBytes, MaxTokens: DefaultMaxTokens},
		Sampling: SamplingConfig{
			Temperature:   DefaultTemperature,
			TopP:          DefaultTopP,
			TopK:          DefaultTopK,
			MinP:          DefaultMinP,
			RepeatPenalty: DefaultRepeatPenalty,
			Seed:          DefaultSeed,
		},
		Cache: CacheConfig{Persist: true},
		HTTP:  HTTPConfig{MaxBodyBytes: DefaultMaxBodyBytes},
	}
}

// UserStateDir is the state_dir of a configuration that sets none:
// $XDG_STATE_HOME/edgellm, else $HOME/.local/state/edgellm.
func UserStateDir() (string, error) {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "edgellm"), nil
	}
	home := os.Getenv("HOME")
	if !filepath.IsAbs(home) {
		return "", errors.New("neither $XDG_STATE_HOME nor $HOME is set")
	}
	return filepath.Join(home, ".local", "state", "edgellm"), nil
}

// FieldError is one problem with one configuration key. Line is the line the
// key was set on in the file, or 0 when the value is a default; File is set by
// LoadConfig.
type FieldError struct {
	File string // the configuration file, when known
	Line int    // the line the key was set on, or 0
	Key  string // the dotted key, e.g. "model.context"; "" for the file as a whole
	Msg  string // what is wrong
}

// Error formats the problem as "daemon: config: FILE:LINE: KEY: MSG", leaving
// out what is unknown.
func (e *FieldError) Error() string {
	var where string
	switch {
	case e.File != "" && e.Line > 0:
		where = fmt.Sprintf("%s:%d: ", e.File, e.Line)
	case e.File != "":
		where = e.File + ": "
	case e.Line > 0:
		where = fmt.Sprintf("line %d: ", e.Line)
	}
	key := ""
	if e.Key != "" {
		key = e.Key + ": "
	}
	return "daemon: config: " + where + key + e.Msg
}

// LoadConfig reads and validates the configuration file at path. Relative
// paths inside it (model, password and certificate files, state_dir) are
// taken relative to the file's directory.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("daemon: config: %w", err)
	}
	cfg, err := ParseConfig(data)
	if err != nil {
		return nil, withFile(err, path)
	}
	cfg.resolvePaths(filepath.Dir(path))
	return cfg, nil
}

// withFile sets File on every FieldError in err (a single error or a join).
func withFile(err error, file string) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		if joined, ok := err.(interface{ Unwrap() []error }); ok {
			for _, e := range joined.Unwrap() {
				if errors.As(e, &fe) {
					fe.File = file
				}
			}
			return err
		}
		fe.File = file
	}
	return err
}

// ParseConfig parses and validates a configuration file's contents. Unknown
// keys, wrong types and invalid values are errors naming the key and the line;
// several problems are reported together (errors.Join of *FieldError).
func ParseConfig(data []byte) (*Config, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &FieldError{Msg: err.Error()}
	}
	cfg := DefaultConfig()
	cfg.lines = map[string]int{}
	valueLines := map[int][]string{}
	if len(doc.Content) > 0 {
		root := doc.Content[0]
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			root = nil // an empty or comment-only file: all defaults
		}
		if root != nil {
			if errs := walkKeys(root, "", reflect.TypeOf(Config{}), cfg.lines, valueLines); len(errs) > 0 {
				return nil, errors.Join(errs...)
			}
			if err := decodeStrict(data, cfg, valueLines); err != nil {
				return nil, err
			}
		}
	}
	if err := cfg.finish(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ConfigKeys lists every leaf key of the configuration in dotted form
// ("model.path", "mqtt.tls.ca", …), in struct order.
func ConfigKeys() []string {
	var out []string
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for _, f := range yamlFieldList(t) {
			if f.typ.Kind() == reflect.Struct && f.typ != reflect.TypeOf(time.Duration(0)) {
				walk(f.typ, prefix+f.name+".")
				continue
			}
			out = append(out, prefix+f.name)
		}
	}
	walk(reflect.TypeOf(Config{}), "")
	return out
}

// Line returns the line on which key (dotted, e.g. "model.path") was set in
// the file, or 0 when it was not set there.
func (c *Config) Line(key string) int {
	return c.lines[key]
}
