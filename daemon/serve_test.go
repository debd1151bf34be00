package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"gopkg.in/yaml.v3"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/mqtt"
	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// wait is the guard against a hung test: far longer than anything should take.
const wait = 60 * time.Second

func modelPath(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("../testdata/models", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("test model missing: %v", err)
	}
	return p
}

// writeConfig writes a daemon configuration for broker b, with the dotted
// keys of set overriding the defaults the tests use, and returns its path.
func writeConfig(t testing.TB, dir string, b *mqtttest.Broker, set map[string]any) string {
	t.Helper()
	keys := map[string]any{
		"model.path":           modelPath(t, "tiny-q8_0.gguf"),
		"model.context":        512,
		"model.threads":        1,
		"mqtt.broker":          b.URL(),
		"mqtt.node_id":         "pi1",
		"mqtt.status_interval": "1h",
		"limits.max_tokens":    256,
		"state_dir":            filepath.Join(dir, "state"),
		// The random test model's greedy text, with the default repeat
		// penalty, reaches EOS after a few hundred tokens; without it, it
		// runs past 1000, and the tests of long jobs need jobs that run.
		"sampling.repeat_penalty": 1,
		// One job at a time unless a test says otherwise: the tests of
		// queueing (busy, a cancel of a waiting job, redeliveries) need
		// jobs that wait.
		"queue.slots": 1,
	}
	for k, v := range set {
		keys[k] = v
	}
	root := map[string]any{}
	for k, v := range keys {
		parts := strings.Split(k, ".")
		m := root
		for _, p := range parts[:len(parts)-1] {
			sub, ok := m[p].(map[string]any)
			if !ok {
				sub = map[string]any{}
				m[p] = sub
			}
			m = sub
		}
		m[parts[len(parts)-1]] = v
	}
	data, err := yaml.Marshal(root)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// watchOnline subscribes to the node's availability and returns a function
// that waits until the node publishes "online" (not a retained old value).
func watchOnline(t testing.TB, b *mqtttest.Broker) func() {
	t.Helper()
	watch := b.Peer(t, mqtttest.PeerOptions{})
	watch.Subscribe("edgellm/pi1/availability", 1)
	return func() {
		t.Helper()
		defer watch.Disconnect()
		for {
			if m := watch.Next(wait); m.Payload == mqtt.Online && !m.Retained {
				return
			}
		}
	}
}

// daemonUnderTest is a Serve running in this process.
type daemonUnderTest struct {
	t      testing.TB
	cancel context.CancelFunc
	done   chan error
	reload chan struct{}
	broker *mqtttest.Broker // set by startHTTPDaemonD
}

// startServe runs Serve on the configuration at path until the test ends,
// and returns once the node is online on broker b (it subscribes before it
// publishes online).
func startServe(t testing.TB, b *mqtttest.Broker, path string, opts Options) *daemonUnderTest {
	t.Helper()
	online := watchOnline(t, b)
	ctx, cancel := context.WithCancel(context.Background())
	d := &daemonUnderTest{t: t, cancel: cancel, done: make(chan error, 1), reload: make(chan struct{}, 1)}
	opts.ConfigPath = path
	opts.Version = "test"
	opts.Reload = d.reload
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	go func() { d.done <- Serve(ctx, opts) }()
	t.Cleanup(func() { d.stop() })
	online()
	return d
}

// stop stops the daemon and returns Serve's result.
func (d *daemonUnderTest) stop() error {
	d.cancel()
	select {
	case err := <-d.done:
		d.done <- err
		return err
	case <-time.After(wait):
		d.t.Fatal("Serve did not return after its context was cancelled")
		return nil
	}
}

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// client is a test-side MQTT client with a persistent session, so answers
// published while the broker restarts still reach it.
type client struct {
	t    testing.TB
	c    paho.Client
	msgs chan mqtttest.Received
}

func newClient(t testing.TB, b *mqtttest.Broker, id string, filters ...string) *client {
	t.Helper()
	c := &client{t: t, msgs: make(chan mqtttest.Received, 4096)}
	o := paho.NewClientOptions().AddBroker(b.URL()).SetClientID(id).SetCleanSession(false).
		SetProtocolVersion(4).SetAutoReconnect(true).SetMaxReconnectInterval(200 * time.Millisecond).
		SetConnectTimeout(5 * time.Second).SetOrderMatters(true).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			c.msgs <- mqtttest.Received{Topic: m.Topic(), Payload: string(m.Payload()), QoS: m.Qos(), Retained: m.Retained()}
		})
	c.c = paho.NewClient(o)
	if tok := c.c.Connect(); !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("client connect: %v", tok.Error())
	}
	for _, f := range filters {
		if tok := c.c.Subscribe(f, 1, nil); !tok.WaitTimeout(wait) || tok.Error() != nil {
			t.Fatalf("subscribe %s: %v", f, tok.Error())
		}
	}
	t.Cleanup(func() { c.c.Disconnect(0) })
	return c
}

func (c *client) publish(topic string, payload string) {
	c.t.Helper()
	if tok := c.c.Publish(topic, 1, false, payload); !tok.WaitTimeout(wait) || tok.Error() != nil {
		c.t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

// next returns the next message whose topic satisfies match.
func (c *client) next(match func(topic string) bool) mqtttest.Received {
	c.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-c.msgs:
			if match(m.Topic) {
				return m
			}
		case <-deadline:
			c.t.Fatal("no matching message arrived")
		}
	}
}

func topicIs(t string) func(string) bool { return func(s string) bool { return s == t } }

// final waits for the final answer to id.
func (c *client) final(id string) mqtt.Final {
	c.t.Helper()
	m := c.next(topicIs("edgellm/pi1/response/" + id))
	return decodeFinal(c.t, m.Payload)
}

func decodeFinal(t testing.TB, payload string) mqtt.Final {
	t.Helper()
	var f mqtt.Final
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("final answer %q: %v", payload, err)
	}
	return f
}

const (
	reqTopic    = "edgellm/pi1/request"
	cancelTopic = "edgellm/pi1/cancel"
)

func TestServeAnswersRequests(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, nil), Options{})
	c := newClient(t, b, "t-answers", "edgellm/pi1/response/#", "edgellm/pi1/response")

	// A streamed request: the chunks, in order, make up the final text.
	c.publish(reqTopic, `{"id":"s1","prompt":"Once upon a time","max_tokens":24,"temperature":0,"stream":true}`)
	var streamed strings.Builder
	var f mqtt.Final
	for seq := 0; ; {
		m := c.next(func(s string) bool { return strings.HasPrefix(s, "edgellm/pi1/response/s1") })
		if m.Topic == "edgellm/pi1/response/s1" {
			f = decodeFinal(t, m.Payload)
			break
		}
		var ch mqtt.StreamChunk
		if err := json.Unmarshal([]byte(m.Payload), &ch); err != nil || ch.ID != "s1" || ch.Seq != seq || m.QoS != 0 {
			t.Fatalf("chunk %d: %+v (qos %d, err %v)", seq, ch, m.QoS, err)
		}
		streamed.WriteString(ch.Text)
		seq++
	}
	if f.Status != mqtt.StatusOK || f.FinishReason != api.FinishLength || f.Usage == nil || f.Usage.CompletionTokens != 24 ||
		f.Usage.PromptTokens == 0 || f.Timings == nil || f.Timings.DecodeTPS <= 0 || f.Timings.TTFTMs <= 0 {
		t.Fatalf("final: %+v usage %+v timings %+v", f, f.Usage, f.Timings)
	}
	if f.Text == "" || streamed.String() != f.Text {
		t.Fatalf("streamed %q, final %q", streamed.String(), f.Text)
	}

	// Greedy again without streaming: the same text; then a stop sequence
	// taken from the middle of it cuts the answer there.
	c.publish(reqTopic, `{"id":"s2","prompt":"Once upon a time","max_tokens":24,"temperature":0}`)
	// The same prompt again: its KV cache is reused, the answer is the same.
	if g := c.final("s2"); g.Text != f.Text || g.Usage.CachedTokens != g.Usage.PromptTokens-1 || f.Usage.CachedTokens != 0 {
		t.Fatalf("greedy answers differ: %q vs %q (cached %d of %d)", g.Text, f.Text, g.Usage.CachedTokens, g.Usage.PromptTokens)
	}
	runes := []rune(f.Text)
	stop := string(runes[len(runes)/2 : len(runes)/2+2])
	want := f.Text[:strings.Index(f.Text, stop)]
	stopJSON, _ := json.Marshal(stop)
	c.publish(reqTopic, `{"id":"s3","prompt":"Once upon a time","max_tokens":24,"temperature":0,"stop":[`+string(stopJSON)+`]}`)
	if g := c.final("s3"); g.Text != want || g.FinishReason != api.FinishStop {
		t.Fatalf("stop %q: got %q (%s), want %q", stop, g.Text, g.FinishReason, want)
	}

	// The same seed gives the same sampled answer.
	c.publish(reqTopic, `{"id":"r1","prompt":"Hello","max_tokens":32,"temperature":1.0,"seed":1234}`)
	c.publish(reqTopic, `{"id":"r2","prompt":"Hello","max_tokens":32,"temperature":1.0,"seed":1234}`)
	if a, b := c.final("r1"), c.final("r2"); a.Text != b.Text || a.Text == "" {
		t.Fatalf("seeded answers differ: %q vs %q", a.Text, b.Text)
	}

	// A plain-text request gets a plain-text answer on .../response.
	c.publish(reqTopic, "Tell me a story")
	m := c.next(topicIs("edgellm/pi1/response"))
	if m.Payload == "" || strings.HasPrefix(m.Payload, "{") || strings.HasPrefix(m.Payload, "error:") {
		t.Fatalf("plain answer: %q", m.Payload)
	}

	// reply_to sends the final answer elsewhere.
	c2 := newClient(t, b, "t-replyto", "devices/lamp/answer")
	c.publish(reqTopic, `{"id":"rt","prompt":"Hi","max_tokens":4,"reply_to":"devices/lamp/answer"}`)
	if f := decodeFinal(t, c2.next(topicIs("devices/lamp/answer")).Payload); f.ID != "rt" || f.Status != mqtt.StatusOK {
		t.Fatalf("reply_to answer: %+v", f)
	}
}

// Every bad input gets an error answer (where a reply topic is known) and
// the next good request is answered.
func TestServeBadInputs(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, map[string]any{"limits.max_prompt_bytes": 2000}), Options{})
	c := newClient(t, b, "t-bad", "edgellm/pi1/response/#", "edgellm/pi1/response")
	long := strings.Repeat("word ", 390) // fits the payload limit, not the 512-token context
	cases := []struct {
		name, payload, code, field string
	}{
		{"invalid JSON", `{"id":"b1","prompt":"x",}`, api.CodeBadRequest, ""},
		{"wrong type", `{"id":"b2","prompt":"x","max_tokens":"ten"}`, api.CodeBadRequest, "max_tokens"},
		{"unknown field", `{"id":"b3","prompt":"x","colour":"red"}`, api.CodeBadRequest, "colour"},
		{"over the limit", `{"id":"b4","prompt":"` + strings.Repeat("a", 2100) + `"}`, api.CodeTooLong, ""},
		{"max_tokens out of range", `{"id":"b5","prompt":"x","max_tokens":100000}`, api.CodeBadRequest, "max_tokens"},
		{"max_tokens zero", `{"id":"b6","prompt":"x","max_tokens":0}`, api.CodeBadRequest, "max_tokens"},
		{"temperature negative", `{"id":"b7","prompt":"x","temperature":-1}`, api.CodeBadRequest, "temperature"},
		{"prompt longer than the context", `{"id":"b8","prompt":"` + long + `","max_tokens":8}`, api.CodeTooLong, ""},
		{"messages without a chat template", `{"id":"b9","messages":[{"role":"user","content":"hi"}]}`, api.CodeBadRequest, "messages"},
		{"bad role", `{"id":"b10","messages":[{"role":"robot","content":"hi"}]}`, api.CodeBadRequest, ""},
		{"both prompt and messages", `{"id":"b11","prompt":"x","messages":[{"role":"user","content":"hi"}]}`, api.CodeBadRequest, ""},
		{"unsupported schema keyword", `{"id":"b12","prompt":"x","schema":{"type":"string","pattern":"^a"}}`, api.CodeBadRequest, "pattern"},
		{"empty prompt", `{"id":"b13","prompt":""}`, api.CodeBadRequest, ""},
		{"trailing data", `{"id":"b14","prompt":"x"} {}`, api.CodeBadRequest, ""},
		{"tools without a chat template", `{"id":"b15","prompt":"x","tools":[{"type":"function","function":{"name":"f"}}]}`, api.CodeBadRequest, "chat template"},
		{"schema needs more tokens", `{"id":"b16","prompt":"x","max_tokens":2,"schema":{"type":"object","properties":{"abcdef":{"type":"string"}},"required":["abcdef"]}}`, api.CodeBadRequest, "max_tokens"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.publish(reqTopic, tc.payload)
			id := fmt.Sprintf("b%d", i+1)
			f := c.final(id)
			if f.Status != mqtt.StatusError || f.Error == nil || f.Error.Code != tc.code || !strings.Contains(f.Error.Message, tc.field) {
				t.Fatalf("answer: %+v (error %+v), want code %s naming %q", f, f.Error, tc.code, tc.field)
			}
			c.publish(reqTopic, `{"id":"good`+id+`","prompt":"x","max_tokens":2}`)
			if f := c.final("good" + id); f.Status != mqtt.StatusOK {
				t.Fatalf("good request after it: %+v", f)
			}
		})
	}
	c.t = t

	// Invalid UTF-8 and an empty payload have no id: answered on a generated
	// id's topic; a plain-text answer is not possible for them either.
	c.publish(reqTopic, "{\"id\":\"u1\",\"prompt\":\"\xff\xfe\"}")
	if f := c.final("u1"); f.Error == nil || f.Error.Code != api.CodeBadRequest || !strings.Contains(f.Error.Message, "UTF-8") {
		t.Fatalf("invalid UTF-8: %+v", f)
	}
	c.publish(reqTopic, "   ")
	if m := c.next(func(s string) bool { return strings.HasPrefix(s, "edgellm/pi1/response") }); !strings.Contains(m.Payload, "empty payload") {
		t.Fatalf("empty payload answer: %q", m.Payload)
	}
	// Cancels that make no sense, and a topic we do not serve.
	c.publish(cancelTopic, `{"id":7}`)
	c.publish(cancelTopic, `{"id":"nobody"}`)
	c.publish("edgellm/pi1/request/extra", `{"id":"x"}`)
	c.publish(reqTopic, `{"id":"last","prompt":"x","max_tokens":2}`)
	if f := c.final("last"); f.Status != mqtt.StatusOK {
		t.Fatalf("good request at the end: %+v", f)
	}
}

// JSON, JSON Schema and tool calls through the daemon: the answers parse,
// follow their schema, and a required call is published on tool_call.
func TestServeStructuredOutput(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, long), Options{}) // the tool prompt is long in the test vocabulary
	c := newClient(t, b, "t-json", "edgellm/pi1/response/#", "edgellm/pi1/tool_call")
	for i := range 5 {
		id := fmt.Sprintf("j%d", i)
		c.publish(reqTopic, `{"id":"`+id+`","prompt":"Status?","json":true,"max_tokens":40,"temperature":1.2,"seed":`+fmt.Sprint(i)+`}`)
		if f := c.final(id); f.Status != mqtt.StatusOK || !json.Valid([]byte(f.Text)) {
			t.Fatalf("json answer %s: %+v", id, f)
		}
		c.publish(reqTopic, `{"id":"s`+id+`","prompt":"Lights?","max_tokens":60,"temperature":1.0,"seed":`+fmt.Sprint(i)+`,
			"schema":{"type":"object","properties":{"on":{"type":"boolean"},"room":{"enum":["kitchen","hall"]}},"required":["on","room"],"additionalProperties":false}}`)
		f := c.final("s" + id)
		var v struct {
			On   *bool   `json:"on"`
			Room *string `json:"room"`
		}
		dec := json.NewDecoder(strings.NewReader(f.Text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&v); err != nil || v.On == nil || v.Room == nil || (*v.Room != "kitchen" && *v.Room != "hall") {
			t.Fatalf("schema answer %q: %v", f.Text, err)
		}
	}
	c.publish(reqTopic, `{"id":"call","prompt":"Turn on the kitchen light","chat_template":"chatml","max_tokens":80,"tool_choice":"required",
		"tools":[{"type":"function","function":{"name":"light","description":"switch a light","parameters":{"type":"object","properties":{"room":{"type":"string","maxLength":10},"on":{"type":"boolean"}},"required":["room","on"]}}},
		         {"type":"function","function":{"name":"weather","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":10}},"required":["city"]}}}]}`)
	f := c.final("call")
	if f.Status != mqtt.StatusOK || f.FinishReason != api.FinishToolCall || len(f.ToolCalls) != 1 ||
		(f.ToolCalls[0].Name != "light" && f.ToolCalls[0].Name != "weather") || !json.Valid(f.ToolCalls[0].Arguments) ||
		!strings.HasPrefix(f.ToolCalls[0].ID, "call_") || strings.TrimSpace(f.Text) != "" { // the call is in tool_calls, not in text
		t.Fatalf("tool call answer: %+v, text %q (error %+v)", f, f.Text, f.Error)
	}
	m := c.next(topicIs("edgellm/pi1/tool_call"))
	var pub struct {
		RequestID string `json:"request_id"`
		Name      string `json:"name"`
	}
	if err := json.Unmarshal([]byte(m.Payload), &pub); err != nil || pub.RequestID != "call" || pub.Name != f.ToolCalls[0].Name {
		t.Fatalf("tool_call message %s: %v", m.Payload, err)
	}
}
