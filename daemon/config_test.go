package daemon

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// fieldErrors flattens err (a FieldError or a join of them).
func fieldErrors(t *testing.T, err error) []*FieldError {
	t.Helper()
	var out []*FieldError
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		var fe *FieldError
		if !errors.As(e, &fe) {
			t.Fatalf("error %v (%T) is not a *FieldError", e, e)
		}
		out = append(out, fe)
	}
	walk(err)
	return out
}

const minimal = "model:\n  path: /m.gguf\n"

func TestRepoConfigIsDocumentedDefault(t *testing.T) {
	const path = "../config.yaml"
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatalf("config.yaml does not validate: %v", err)
	}

	// Every key of the Config struct appears in the file, with a comment.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var walk func(n *yaml.Node, prefix string)
	walk = func(n *yaml.Node, prefix string) {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := prefix + k.Value
			seen[key] = true
			if strings.TrimSpace(k.HeadComment+k.LineComment+v.LineComment) == "" {
				t.Errorf("config.yaml line %d: key %s has no comment", k.Line, key)
			}
			if v.Kind == yaml.MappingNode {
				walk(v, key+".")
			}
		}
	}
	walk(doc.Content[0], "")
	keys := ConfigKeys()
	if len(keys) < 28 {
		t.Fatalf("ConfigKeys() found only %d keys: %v", len(keys), keys)
	}
	for _, k := range keys {
		if !seen[k] {
			t.Errorf("config.yaml lacks key %s", k)
		}
	}

	// The documented values are the defaults the code applies.
	def := DefaultConfig()
	def.Model.Path = cfg.Model.Path
	def.Model.Threads = cfg.Model.Threads
	def.MQTT.NodeID = cfg.MQTT.NodeID
	// The packaged configuration names the service's state directory; the
	// code's default is the user's own.
	if cfg.StateDir != "/var/lib/edgellm" {
		t.Errorf("config.yaml state_dir %q, want /var/lib/edgellm", cfg.StateDir)
	}
	def.StateDir = cfg.StateDir
	got := *cfg
	got.lines = nil
	if !reflect.DeepEqual(&got, def) {
		t.Errorf("config.yaml values differ from DefaultConfig():\n file %+v\n code %+v", got, *def)
	}
	if cfg.Model.Threads != DefaultThreads(availableCPUs()) {
		t.Errorf("threads: 0 resolved to %d, want %d", cfg.Model.Threads, DefaultThreads(availableCPUs()))
	}
	if cfg.Line("model.context") == 0 || cfg.Line("sampling.seed") <= cfg.Line("model.context") {
		t.Errorf("key lines not recorded: model.context=%d sampling.seed=%d", cfg.Line("model.context"), cfg.Line("sampling.seed"))
	}
}

func TestParseConfigDefaultsAndValues(t *testing.T) {
	cfg, err := ParseConfig([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if cfg.MQTT.NodeID != NodeIDFromHostname(host) || cfg.MQTT.NodeID == "" {
		t.Errorf("node_id = %q, want from host name %q", cfg.MQTT.NodeID, host)
	}
	if cfg.MQTT.BaseTopic != "edgellm" || cfg.MQTT.HomeAssistant.DiscoveryPrefix != "homeassistant" {
		t.Errorf("topic defaults wrong: %+v", cfg.MQTT)
	}
	if cfg.Model.Threads < 1 {
		t.Errorf("threads = %d, want ≥ 1", cfg.Model.Threads)
	}

	cfg, err = ParseConfig([]byte(`
model:
  path: /m.gguf
  context: 4096
  threads: 3
  nice: -5
  chat_template: chatml
  kv_type: q8_0
mqtt:
  broker: ssl://broker.lan
  node_id: kitchen-pi
  base_topic: home/llm
  username: pi
  password_file: /etc/edgellm/pw
  tls: {ca: /ca.pem, cert: /c.pem, key: /k.pem}
  pool: fleet_1
  status_interval: 15s
  embedded: {listen: "127.0.0.1:1884", password_file: /etc/edgellm/passwd}
  homeassistant: {enabled: false, discovery_prefix: ha}
queue: {size: 2, job_timeout: 90s}
limits: {max_prompt_bytes: 1000, max_tokens: 100}
sampling: {temperature: 0, top_p: 1, top_k: 0, min_p: 0, repeat_penalty: 1, seed: 42}
cache: {persist: false}
http: {listen: "127.0.0.1:8080", api_key_file: /etc/edgellm/api-key, max_body_bytes: 65536}
state_dir: /tmp/s
`))
	if err != nil {
		t.Fatal(err)
	}
	want := &Config{
		Model: ModelConfig{Path: "/m.gguf", Context: 4096, Threads: 3, Nice: -5, ChatTemplate: "chatml", KVType: "q8_0"},
		MQTT: MQTTConfig{Broker: "ssl://broker.lan:8883", NodeID: "kitchen-pi", BaseTopic: "home/llm", Username: "pi",
			PasswordFile: "/etc/edgellm/pw", TLS: TLSConfig{CA: "/ca.pem", Cert: "/c.pem", Key: "/k.pem"}, Pool: "fleet_1",
			StatusInterval: 15 * time.Second, HomeAssistant: HomeAssistantConfig{Enabled: false, DiscoveryPrefix: "ha"},
			Embedded: EmbeddedConfig{Listen: "127.0.0.1:1884", PasswordFile: "/etc/edgellm/passwd"}},
		Queue:    QueueConfig{Size: 2, JobTimeout: 90 * time.Second},
		Limits:   LimitsConfig{MaxPromptBytes: 1000, MaxTokens: 100},
		Sampling: SamplingConfig{Temperature: 0, TopP: 1, TopK: 0, MinP: 0, RepeatPenalty: 1, Seed: 42},
		Cache:    CacheConfig{Persist: false},
		HTTP:     HTTPConfig{Listen: "127.0.0.1:8080", APIKeyFile: "/etc/edgellm/api-key", MaxBodyBytes: 65536},
		StateDir: "/tmp/s",
	}
	cfg.lines = nil
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", *cfg, *want)
	}
}

func TestDefaultThreads(t *testing.T) {
	for cpus, want := range map[int]int{0: 1, 1: 1, 2: 1, 4: 3, 8: 7} {
		if got := DefaultThreads(cpus); got != want {
			t.Errorf("DefaultThreads(%d) = %d, want %d", cpus, got, want)
		}
	}
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		name, yaml string
		key        string
		line       int
		msg        string
	}{
		{"unknown top key", "modle:\n  path: x\n", "modle", 1, "unknown key"},
		{"unknown nested key", minimal + "  contxt: 5\n", "model.contxt", 3, "unknown key; the keys of model are: chat_template, context, kv_type, nice, path, repack, threads"},
		{"unknown deep key", minimal + "mqtt:\n  tls:\n    capath: x\n", "mqtt.tls.capath", 5, "unknown key"},
		{"int type", minimal + "  context: big\n", "model.context", 3, "want an integer, got !!str `big`"},
		{"float type", minimal + "sampling:\n  top_p: high\n", "sampling.top_p", 4, "want a number"},
		{"bool type", minimal + "mqtt:\n  homeassistant:\n    enabled: maybe\n", "mqtt.homeassistant.enabled", 5, "want true or false"},
		{"duration words", minimal + "queue:\n  job_timeout: 5 minutes\n", "queue.job_timeout", 4, "duration such as 30s"},
		{"duration bare int", minimal + "mqtt:\n  status_interval: 60\n", "mqtt.status_interval", 4, "duration"},
		{"mapping for a scalar", minimal + "  chat_template:\n    a: b\n", "model.chat_template", 4, "want a string, got !!map"},
		{"section is scalar", "model: foo\n", "model", 1, "want a mapping of keys"},
		{"section is list", minimal + "queue:\n  - 1\n", "queue", 4, "want a mapping of keys, got a list"},
		{"top level list", "- a\n- b\n", "", 1, "must be a mapping"},
		{"missing model.path", "model:\n  context: 1024\n", "model.path", 0, "required"},
		{"context too small", minimal + "  context: 8\n", "model.context", 3, "between 16 and"},
		{"negative threads", minimal + "  threads: -1\n", "model.threads", 3, "between 0 and"},
		{"nice out of range", minimal + "  nice: 20\n", "model.nice", 3, "between -20 and 19"},
		{"kv type", minimal + "  kv_type: q4\n", "model.kv_type", 3, `"q4": want one of f16, q8_0`},
		{"broker scheme", minimal + "mqtt:\n  broker: mqtt://h:1883\n", "mqtt.broker", 4, "use tcp://, ssl://, ws:// or wss://"},
		{"broker http", minimal + "mqtt:\n  broker: http://h\n", "mqtt.broker", 4, "not supported"},
		{"broker no host", minimal + "mqtt:\n  broker: tcp://:1883\n", "mqtt.broker", 4, "no host"},
		{"broker credentials", minimal + "mqtt:\n  broker: tcp://u:p@h:1883\n", "mqtt.broker", 4, "credentials"},
		{"broker bad port", minimal + "mqtt:\n  broker: tcp://h:99999\n", "mqtt.broker", 4, "port"},
		{"broker tcp path", minimal + "mqtt:\n  broker: tcp://h:1883/x\n", "mqtt.broker", 4, "no path"},
		{"broker not a url", minimal + "mqtt:\n  broker: 'tcp://h:1883/%zz'\n", "mqtt.broker", 4, "not a URL"},
		{"node id slash", minimal + "mqtt:\n  node_id: a/b\n", "mqtt.node_id", 4, "only letters, digits"},
		{"node id wildcard", minimal + "mqtt:\n  node_id: 'a+'\n", "mqtt.node_id", 4, "only letters, digits"},
		{"node id too long", minimal + "mqtt:\n  node_id: " + strings.Repeat("n", 65) + "\n", "mqtt.node_id", 4, "longer than 64"},
		{"base topic trailing slash", minimal + "mqtt:\n  base_topic: edgellm/\n", "mqtt.base_topic", 4, "empty level"},
		{"base topic wildcard", minimal + "mqtt:\n  base_topic: 'a/#'\n", "mqtt.base_topic", 4, "wildcard"},
		{"base topic dollar", minimal + "mqtt:\n  base_topic: $SYS\n", "mqtt.base_topic", 4, "reserved"},
		{"base topic empty", minimal + "mqtt:\n  base_topic: ''\n", "mqtt.base_topic", 4, "must not be empty"},
		{"password without user", minimal + "mqtt:\n  password_file: /pw\n", "mqtt.password_file", 4, "needs a user name"},
		{"cert without key", minimal + "mqtt:\n  broker: ssl://h\n  tls:\n    cert: /c\n", "mqtt.tls.cert", 6, "needs both"},
		{"key without cert", minimal + "mqtt:\n  broker: ssl://h\n  tls:\n    key: /k\n", "mqtt.tls.key", 6, "needs both"},
		{"tls with tcp", minimal + "mqtt:\n  tls:\n    ca: /ca\n", "mqtt.tls.ca", 5, "not encrypted"},
		{"pool invalid", minimal + "mqtt:\n  pool: a/b\n", "mqtt.pool", 4, "only letters"},
		{"status interval zero", minimal + "mqtt:\n  status_interval: 0s\n", "mqtt.status_interval", 4, "between 1s and 24h"},
		{"discovery prefix empty", minimal + "mqtt:\n  homeassistant:\n    discovery_prefix: ''\n", "mqtt.homeassistant.discovery_prefix", 5, "empty"},
		{"http listen", minimal + "http:\n  listen: 8080\n", "http.listen", 4, "not host:port"},
		{"http body limit", minimal + "http:\n  max_body_bytes: 10\n", "http.max_body_bytes", 4, "between 1024"},
		{"ollama listen", minimal + "http:\n  ollama_listen: 11434\n", "http.ollama_listen", 4, "not host:port"},
		{"same port twice", minimal + "http:\n  listen: :8080\n  ollama_listen: :8080\n", "http.ollama_listen", 5, "their own ports"},
		{"tls without key", minimal + "http:\n  listen: :8080\n  tls:\n    cert: /etc/ssl/x.pem\n", "http.tls", 5, "both cert and key"},
		{"configuration url", minimal + "mqtt:\n  homeassistant:\n    configuration_url: ftp://pi.local/\n", "mqtt.homeassistant.configuration_url", 5, "not an http://"},
		{"queue size zero", minimal + "queue:\n  size: 0\n", "queue.size", 4, "between 1 and"},
		{"job timeout negative", minimal + "queue:\n  job_timeout: -1s\n", "queue.job_timeout", 4, "between 1s"},
		{"max prompt bytes zero", minimal + "limits:\n  max_prompt_bytes: 0\n", "limits.max_prompt_bytes", 4, "between 1 and"},
		{"max tokens beyond context", minimal + "  context: 512\nlimits:\n  max_tokens: 512\n", "limits.max_tokens", 5, "no room for a prompt"},
		{"temperature negative", minimal + "sampling:\n  temperature: -0.1\n", "sampling.temperature", 4, "in [0, 5]"},
		{"top_p zero", minimal + "sampling:\n  top_p: 0\n", "sampling.top_p", 4, "in (0, 1]"},
		{"top_p above one", minimal + "sampling:\n  top_p: 1.5\n", "sampling.top_p", 4, "in (0, 1]"},
		{"top_k negative", minimal + "sampling:\n  top_k: -1\n", "sampling.top_k", 4, "between 0 and"},
		{"min_p above one", minimal + "sampling:\n  min_p: 2\n", "sampling.min_p", 4, "in [0, 1)"},
		{"min_p one", minimal + "sampling:\n  min_p: 1\n", "sampling.min_p", 4, "in [0, 1)"},
		{"top_p zero in float32", minimal + "sampling:\n  top_p: 1e-50\n", "sampling.top_p", 4, "single precision"},
		{"repeat penalty zero", minimal + "sampling:\n  repeat_penalty: 0\n", "sampling.repeat_penalty", 4, "(0, 10]"},
		{"seed below -1", minimal + "sampling:\n  seed: -2\n", "sampling.seed", 4, "-1 (random)"},
		{"state dir blank", minimal + "state_dir: ' '\n", "state_dir", 3, "must not be blank"},
		{"embedded with a user", minimal + "mqtt:\n  broker: embedded\n  username: u\n", "mqtt.broker", 4, "external broker"},
		{"embedded listen", minimal + "mqtt:\n  broker: embedded\n  embedded:\n    listen: nonsense\n", "mqtt.embedded.listen", 6, "not host:port"},
		{"duplicate key", minimal + "  path: /other\n", "model.path", 3, "already defined"},
		{"yaml syntax", "model:\n  path: [unclosed\n", "", 0, "yaml:"},
		{"two documents", minimal + "---\nmodel:\n  path: y\n", "", 3, "more than one YAML document"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := ParseConfig([]byte(tc.yaml))
			if err == nil {
				t.Fatalf("no error; config %+v", cfg)
			}
			fes := fieldErrors(t, err)
			if len(fes) != 1 {
				t.Fatalf("want one error, got %d: %v", len(fes), err)
			}
			fe := fes[0]
			if fe.Key != tc.key || fe.Line != tc.line || !strings.Contains(fe.Msg, tc.msg) {
				t.Errorf("got key=%q line=%d msg=%q\nwant key=%q line=%d msg containing %q", fe.Key, fe.Line, fe.Msg, tc.key, tc.line, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "daemon: config: ") {
				t.Errorf("error %q lacks the daemon: config: prefix", err)
			}
			if tc.key != "" && !strings.Contains(err.Error(), tc.key) {
				t.Errorf("error text %q does not name the key %s", err, tc.key)
			}
		})
	}
}

func TestParseConfigReportsAllProblems(t *testing.T) {
	_, err := ParseConfig([]byte("model:\n  path: x\n  context: 1\nqueue:\n  size: 0\nsampling:\n  top_p: 7\n"))
	fes := fieldErrors(t, err)
	got := map[string]int{}
	for _, fe := range fes {
		got[fe.Key] = fe.Line
	}
	want := map[string]int{"model.context": 3, "queue.size": 5, "sampling.top_p": 7}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v (%v)", got, want, err)
	}
	if !strings.Contains(err.Error(), "line 5: queue.size: must be between 1 and 10000, got 0") {
		t.Errorf("error text: %v", err)
	}
}

func TestParseConfigEmptySectionsKeepDefaults(t *testing.T) {
	cfg, err := ParseConfig([]byte(minimal + "mqtt:\nqueue:\n  size:\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Queue.Size != DefaultQueueSize || cfg.MQTT.Broker != DefaultBroker {
		t.Errorf("empty values changed defaults: queue.size=%d broker=%q", cfg.Queue.Size, cfg.MQTT.Broker)
	}
}

// Without state_dir a hand-run daemon keeps its state in the user's own
// directory, never in the packaged service's /var/lib/edgellm.
func TestStateDirDefaultsToTheUsers(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	cfg, err := ParseConfig([]byte("model:\n  path: /m.gguf\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(home, ".local/state/edgellm"); cfg.StateDir != want {
		t.Errorf("state_dir %q, want %q", cfg.StateDir, want)
	}
	xdg := t.TempDir()
	t.Setenv("XDG_STATE_HOME", xdg)
	if cfg, err = ParseConfig([]byte("model:\n  path: /m.gguf\n")); err != nil || cfg.StateDir != filepath.Join(xdg, "edgellm") {
		t.Errorf("with $XDG_STATE_HOME: state_dir %q (%v)", cfg.StateDir, err)
	}
	t.Setenv("XDG_STATE_HOME", "")
	t.Setenv("HOME", "")
	if _, err := ParseConfig([]byte("model:\n  path: /m.gguf\n")); err == nil || !strings.Contains(err.Error(), "state_dir") {
		t.Errorf("without a home: %v", err)
	}
}

func TestLoadConfigFileNameAndRelativePaths(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.yaml")
	if err := os.WriteFile(path, []byte("model:\n  path: models/m.gguf\nmqtt:\n  username: u\n  password_file: pw\nstate_dir: /abs/state\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := LoadConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Model.Path != filepath.Join(dir, "models/m.gguf") || cfg.MQTT.PasswordFile != filepath.Join(dir, "pw") || cfg.StateDir != "/abs/state" {
		t.Errorf("paths not resolved against %s: %q %q %q", dir, cfg.Model.Path, cfg.MQTT.PasswordFile, cfg.StateDir)
	}

	// CheckFiles names the missing file's key and line.
	err = cfg.CheckFiles()
	fes := fieldErrors(t, err)
	if len(fes) != 2 || fes[0].Key != "model.path" || fes[0].Line != 2 || fes[1].Key != "mqtt.password_file" || fes[1].Line != 5 {
		t.Fatalf("CheckFiles: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "models"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"models/m.gguf", "pw"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := cfg.CheckFiles(); err != nil {
		t.Errorf("CheckFiles with the files present: %v", err)
	}
	cfg.Model.Path = dir
	if err := cfg.CheckFiles(); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("CheckFiles on a directory: %v", err)
	}

	// Parse errors carry the file name.
	if err := os.WriteFile(path, []byte("model:\n  path: x\n  contxt: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = LoadConfig(path)
	if err == nil || !strings.Contains(err.Error(), "daemon: config: "+path+":3: model.contxt: unknown key") {
		t.Errorf("LoadConfig error: %v", err)
	}
	if _, err := LoadConfig(filepath.Join(dir, "missing.yaml")); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestNodeIDFromHostname(t *testing.T) {
	for host, want := range map[string]string{
		"raspberrypi":           "raspberrypi",
		"Kitchen-Pi.local":      "kitchen-pi",
		"pi 4@home":             "pi-4-home",
		"":                      "edgellm",
		strings.Repeat("x", 80): strings.Repeat("x", 64),
	} {
		if got := NodeIDFromHostname(host); got != want {
			t.Errorf("NodeIDFromHostname(%q) = %q, want %q", host, got, want)
		}
	}
}

func TestConfigKeysListsEveryLeaf(t *testing.T) {
	keys := strings.Join(ConfigKeys(), " ")
	for _, k := range []string{"model.path", "model.chat_template", "mqtt.tls.ca", "mqtt.homeassistant.discovery_prefix",
		"queue.job_timeout", "limits.max_tokens", "sampling.repeat_penalty", "state_dir", "mqtt.status_interval"} {
		if !strings.Contains(" "+keys+" ", " "+k+" ") {
			t.Errorf("ConfigKeys lacks %s: %s", k, keys)
		}
	}
	if strings.Contains(keys, "lines") {
		t.Errorf("ConfigKeys includes unexported fields: %s", keys)
	}
}
