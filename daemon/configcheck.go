package daemon

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/mqtt"
)

// fieldErr builds a FieldError for key with the line it came from, if any.
func (c *Config) fieldErr(key, format string, args ...any) error {
	return &FieldError{Line: c.lines[key], Key: key, Msg: fmt.Sprintf(format, args...)}
}

// finish fills the machine-dependent defaults and validates every key.
func (c *Config) finish() error {
	if c.Model.Threads == 0 {
		c.Model.Threads = DefaultThreads(availableCPUs())
	}
	if c.MQTT.NodeID == "" {
		host, err := os.Hostname()
		if err != nil {
			return c.fieldErr("mqtt.node_id", "empty, and the host name is unknown (%v); set it", err)
		}
		c.MQTT.NodeID = NodeIDFromHostname(host)
	}
	if c.StateDir == "" {
		dir, err := UserStateDir()
		if err != nil {
			return c.fieldErr("state_dir", "unset, and the user's state directory is unknown (%v); set it", err)
		}
		c.StateDir = dir
	}
	return c.validate()
}

// maxPromptBytesCeiling is the largest limits.max_prompt_bytes.
const maxPromptBytesCeiling = 16 << 20

// validate checks every key; it reports all problems, not just the first.
func (c *Config) validate() error {
	var errs []error
	add := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	m := &c.Model
	if strings.TrimSpace(m.Path) == "" {
		add(c.fieldErr("model.path", "required: the GGUF model file to serve"))
	}
	add(c.intRange("model.context", m.Context, 16, 1<<20))
	add(c.intRange("model.threads", m.Threads, 0, 1024))
	add(c.intRange("model.nice", m.Nice, -20, 19))
	if _, err := inference.ParseKVType(m.KVType); err != nil {
		add(c.fieldErr("model.kv_type", "%q: want one of %s", m.KVType, strings.Join(inference.KVTypeNames(), ", ")))
	}

	q := &c.MQTT
	if q.Broker == EmbeddedBroker {
		if q.Username != "" || q.PasswordFile != "" || q.TLS != (TLSConfig{}) {
			add(c.fieldErr("mqtt.broker", "embedded: mqtt.username, password_file and tls are for an external broker; the daemon logs in to its own broker by itself"))
		}
		if _, _, err := net.SplitHostPort(q.Embedded.Listen); err != nil {
			add(c.fieldErr("mqtt.embedded.listen", "%q is not host:port (%v)", q.Embedded.Listen, err))
		}
	} else if broker, err := mqtt.NormalizeBrokerURL(q.Broker); err != nil {
		add(c.fieldErr("mqtt.broker", "%v (or \"embedded\" for the built-in broker)", err))
	} else {
		q.Broker = broker
	}
	if err := mqtt.ValidateID(q.NodeID); err != nil {
		add(c.fieldErr("mqtt.node_id", "%v", err))
	}
	if err := mqtt.ValidateTopicPrefix(q.BaseTopic); err != nil {
		add(c.fieldErr("mqtt.base_topic", "%v", err))
	}
	if q.PasswordFile != "" && q.Username == "" {
		add(c.fieldErr("mqtt.password_file", "set, but mqtt.username is empty; a password needs a user name"))
	}
	if (q.TLS.Cert == "") != (q.TLS.Key == "") {
		if q.TLS.Cert == "" {
			add(c.fieldErr("mqtt.tls.key", "set without mqtt.tls.cert; a client certificate needs both"))
		} else {
			add(c.fieldErr("mqtt.tls.cert", "set without mqtt.tls.key; a client certificate needs both"))
		}
	}
	if scheme, _, _ := strings.Cut(q.Broker, "://"); scheme == "tcp" || scheme == "ws" {
		for _, k := range []struct{ key, val string }{{"mqtt.tls.ca", q.TLS.CA}, {"mqtt.tls.cert", q.TLS.Cert}, {"mqtt.tls.key", q.TLS.Key}} {
			if k.val != "" {
				add(c.fieldErr(k.key, "set, but mqtt.broker %s is not encrypted; use ssl:// or wss://", q.Broker))
			}
		}
	}
	if q.Pool != "" {
		if err := mqtt.ValidateID(q.Pool); err != nil {
			add(c.fieldErr("mqtt.pool", "%v", err))
		}
	}
	add(c.durationRange("mqtt.status_interval", q.StatusInterval, time.Second, 24*time.Hour))
	if err := mqtt.ValidateTopicPrefix(q.HomeAssistant.DiscoveryPrefix); err != nil {
		add(c.fieldErr("mqtt.homeassistant.discovery_prefix", "%v", err))
	}
	if u := q.HomeAssistant.ConfigurationURL; u != "" {
		// What Home Assistant accepts as a device's configuration_url.
		p, err := url.Parse(u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https" && p.Scheme != "homeassistant") || p.Host == "" {
			add(c.fieldErr("mqtt.homeassistant.configuration_url", "%q is not an http://, https:// or homeassistant:// URL", u))
		}
	}

	add(c.intRange("queue.size", c.Queue.Size, 1, 10000))
	add(c.intRange("queue.slots", c.Queue.Slots, 0, MaxSlots))
	add(c.durationRange("queue.job_timeout", c.Queue.JobTimeout, time.Second, 24*time.Hour))

	add(c.intRange("limits.max_prompt_bytes", c.Limits.MaxPromptBytes, 1, maxPromptBytesCeiling))
	add(c.intRange("limits.max_tokens", c.Limits.MaxTokens, 1, 1<<20))
	if c.Limits.MaxTokens >= m.Context && m.Context >= 16 {
		add(c.fieldErr("limits.max_tokens", "%d leaves no room for a prompt in model.context %d", c.Limits.MaxTokens, m.Context))
	}

	s := &c.Sampling
	add(c.floatRange("sampling.temperature", s.Temperature, 0, api.MaxTemperature, false))
	add(c.floatRange("sampling.top_p", s.TopP, 0, 1, true))
	if s.TopP > 0 && float32(s.TopP) == 0 { // the sampler works in float32
		add(c.fieldErr("sampling.top_p", "%g is 0 in single precision", s.TopP))
	}
	add(c.intRange("sampling.top_k", s.TopK, 0, 1<<20))
	if s.MinP < 0 || float32(s.MinP) >= 1 {
		add(c.fieldErr("sampling.min_p", "must be in [0, 1), got %g", s.MinP))
	}
	if s.RepeatPenalty <= 0 || s.RepeatPenalty > 10 {
		add(c.fieldErr("sampling.repeat_penalty", "must be in (0, 10] (1 turns it off), got %g", s.RepeatPenalty))
	}
	if s.Seed < -1 {
		add(c.fieldErr("sampling.seed", "must be -1 (random) or a non-negative integer, got %d", s.Seed))
	}
	for _, l := range []struct{ key, addr string }{{"http.listen", c.HTTP.Listen}, {"http.ollama_listen", c.HTTP.OllamaListen}} {
		if l.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(l.addr); err != nil {
			add(c.fieldErr(l.key, "%q is not host:port (%v); empty turns this API off", l.addr, err))
		}
	}
	if c.HTTP.Listen != "" && c.HTTP.Listen == c.HTTP.OllamaListen {
		add(c.fieldErr("http.ollama_listen", "is http.listen's address too; the two APIs need their own ports"))
	}
	if (c.HTTP.TLS.Cert == "") != (c.HTTP.TLS.Key == "") {
		add(c.fieldErr("http.tls", "needs both cert and key, or neither"))
	}
	add(c.intRange("http.max_body_bytes", c.HTTP.MaxBodyBytes, 1024, maxPromptBytesCeiling))
	if strings.TrimSpace(c.StateDir) == "" {
		add(c.fieldErr("state_dir", "must not be blank"))
	}
	return errors.Join(errs...)
}

func (c *Config) intRange(key string, v, lo, hi int) error {
	if v < lo || v > hi {
		return c.fieldErr(key, "must be between %d and %d, got %d", lo, hi, v)
	}
	return nil
}

func (c *Config) durationRange(key string, v, lo, hi time.Duration) error {
	if v < lo || v > hi {
		return c.fieldErr(key, "must be between %v and %v, got %v", lo, hi, v)
	}
	return nil
}

// floatRange checks lo ≤ v ≤ hi, or lo < v ≤ hi when openLow.
func (c *Config) floatRange(key string, v, lo, hi float64, openLow bool) error {
	if openLow && (v <= lo || v > hi) {
		return c.fieldErr(key, "must be in (%g, %g], got %g", lo, hi, v)
	}
	if v < lo || v > hi {
		return c.fieldErr(key, "must be in [%g, %g], got %g", lo, hi, v)
	}
	return nil
}

// resolvePaths makes relative file paths relative to dir, a .jinja
// model.chat_template's too.
func (c *Config) resolvePaths(dir string) {
	paths := []*string{&c.Model.Path, &c.MQTT.PasswordFile, &c.MQTT.TLS.CA, &c.MQTT.TLS.Cert, &c.MQTT.TLS.Key, &c.MQTT.Embedded.PasswordFile, &c.HTTP.APIKeyFile, &c.HTTP.TLS.Cert, &c.HTTP.TLS.Key, &c.StateDir}
	if isTemplateFile(c.Model.ChatTemplate) {
		paths = append(paths, &c.Model.ChatTemplate)
	}
	for _, p := range paths {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(dir, *p)
		}
	}
}

// isTemplateFile reports whether a chat_template setting names a .jinja
// file rather than holding Jinja text or a family name.
func isTemplateFile(s string) bool {
	return strings.HasSuffix(s, ".jinja") && !strings.Contains(s, "{{") && !strings.Contains(s, "{%")
}

// CheckFiles checks that the files the configuration names exist and can be
// read: the model, the password file and the TLS files; and that
// model.chat_template, when set, is a family name, a readable .jinja file or
// Jinja text that compiles. `edgellm serve --check` runs it after
// LoadConfig.
func (c *Config) CheckFiles() error {
	var errs []error
	if c.Model.ChatTemplate != "" {
		if _, err := chat.ChooseFormat(c.Model.ChatTemplate, ""); err != nil {
			errs = append(errs, c.fieldErr("model.chat_template", "%v", err))
		}
	}
	for _, f := range []struct{ key, path string }{
		{"model.path", c.Model.Path},
		{"mqtt.password_file", c.MQTT.PasswordFile},
		{"mqtt.tls.ca", c.MQTT.TLS.CA},
		{"mqtt.tls.cert", c.MQTT.TLS.Cert},
		{"mqtt.tls.key", c.MQTT.TLS.Key},
		{"mqtt.embedded.password_file", c.MQTT.Embedded.PasswordFile},
		{"http.api_key_file", c.HTTP.APIKeyFile},
		{"http.tls.cert", c.HTTP.TLS.Cert},
		{"http.tls.key", c.HTTP.TLS.Key},
	} {
		if f.path == "" {
			continue
		}
		fh, err := os.Open(f.path)
		if err != nil {
			errs = append(errs, c.fieldErr(f.key, "%v", err))
			continue
		}
		st, err := fh.Stat()
		fh.Close()
		if err == nil && !st.Mode().IsRegular() {
			err = fmt.Errorf("%s is not a regular file", f.path)
		}
		if err != nil {
			errs = append(errs, c.fieldErr(f.key, "%v", err))
		}
	}
	return errors.Join(errs...)
}

// DefaultThreads is the model.threads default for a machine with cpus CPUs
// available: leave one for the rest of the board (Home Assistant often runs
// on the same Pi), but use at least one.
func DefaultThreads(cpus int) int {
	return max(cpus-1, 1)
}

// availableCPUs is the number of CPUs this process may use: the affinity mask
// and, since Go 1.25, the cgroup CPU limit both bound GOMAXPROCS.
func availableCPUs() int {
	return min(runtime.NumCPU(), runtime.GOMAXPROCS(0))
}

// NodeIDFromHostname turns a host name into a node id: the first label,
// lower-cased, with every character outside [a-z0-9_-] replaced by '-'.
// An empty result becomes "edgellm".
func NodeIDFromHostname(host string) string {
	host, _, _ = strings.Cut(host, ".")
	var b strings.Builder
	for _, r := range strings.ToLower(host) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	id := b.String()
	if len(id) > mqtt.MaxIDLen {
		id = id[:mqtt.MaxIDLen]
	}
	if id == "" {
		return "edgellm"
	}
	return id
}
