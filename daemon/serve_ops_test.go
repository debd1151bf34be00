package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/mqtt"
	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// serveEnv, when set in the environment, makes the test binary run the
// daemon on that configuration file instead of the tests: the tests that
// kill or signal the daemon start it as a process of its own this way.
const serveEnv = "EDGELLM_TEST_SERVE_CONFIG"

func TestMain(m *testing.M) {
	if os.Getenv(probeChildEnv) == "1" { // the child of a template probe (template_test.go)
		if err := chat.ProbeChild(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if path := os.Getenv(serveEnv); path != "" {
		if err := Run(Options{ConfigPath: path, Version: "test", Logger: NewLogger(-4)}); err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// daemonProcess is the daemon running as a child process.
type daemonProcess struct {
	t    *testing.T
	cmd  *exec.Cmd
	log  *bytes.Buffer
	done chan error
}

// startProcess runs the daemon on the configuration at path in a child
// process and returns once it is online on b. env adds environment variables.
func startProcess(t *testing.T, b *mqtttest.Broker, path string, env ...string) *daemonProcess {
	t.Helper()
	online := watchOnline(t, b)
	p := &daemonProcess{t: t, log: &bytes.Buffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], "-test.run=^$")
	p.cmd.Env = append(append(os.Environ(), serveEnv+"="+path), env...)
	p.cmd.Stderr = &lockedWriter{w: p.log}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
		p.done <- nil
		if t.Failed() {
			t.Logf("daemon log:\n%s", p.log)
		}
	})
	online()
	return p
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// waitExit waits for the process to end and returns its error.
func (p *daemonProcess) waitExit() error {
	select {
	case err := <-p.done:
		p.done <- err
		return err
	case <-time.After(wait):
		p.t.Fatal("the daemon did not exit")
		return nil
	}
}

// retained returns the retained payload of topic as a fresh subscriber sees
// it, waiting for one when there is none yet or it is not want (when want
// is set).
func retained(t *testing.T, b *mqtttest.Broker, topic, want string) string {
	t.Helper()
	p := b.Peer(t, mqtttest.PeerOptions{})
	defer p.Disconnect()
	p.Subscribe(topic, 1)
	for {
		m := p.Next(wait)
		if want == "" || m.Payload == want || strings.Contains(m.Payload, want) {
			return m.Payload
		}
	}
}

// finals collects final answers to the given ids until each has one, and
// then until the answer to a last request shows that nothing more is coming.
func (c *client) finals(ids []string) map[string][]mqtt.Final {
	c.t.Helper()
	got := map[string][]mqtt.Final{}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	count := 0
	for count < len(ids) {
		m := c.next(func(s string) bool {
			return strings.HasPrefix(s, "edgellm/pi1/response/") && !strings.HasSuffix(s, "/stream")
		})
		f := decodeFinal(c.t, m.Payload)
		if want[f.ID] && len(got[f.ID]) == 0 {
			count++
		}
		got[f.ID] = append(got[f.ID], f)
	}
	// The worker answers in order and busy answers go out at once, so once
	// the answer to a request sent now arrives, no earlier answer is pending.
	c.publish(reqTopic, `{"id":"sentinel","prompt":"x","max_tokens":1}`)
	for {
		m := c.next(func(s string) bool {
			return strings.HasPrefix(s, "edgellm/pi1/response/") && !strings.HasSuffix(s, "/stream")
		})
		f := decodeFinal(c.t, m.Payload)
		if f.ID == "sentinel" {
			return got
		}
		got[f.ID] = append(got[f.ID], f)
	}
}

// long is the configuration of tests that need jobs running for a while:
// greedy decoding of the tiny model from "Once upon a time" (with the default repeat penalty) goes on for 527
// tokens before its end-of-text token.
var long = map[string]any{"model.context": 2048, "limits.max_tokens": 1024}

func TestServeQueueFullAnswersBusy(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, map[string]any{"queue.size": 4}), Options{})
	c := newClient(t, b, "t-busy", "edgellm/pi1/response/#")
	var ids []string
	for i := range 20 {
		id := fmt.Sprintf("q%02d", i)
		ids = append(ids, id)
		c.publish(reqTopic, `{"id":"`+id+`","prompt":"Once upon a time","max_tokens":200,"temperature":0}`)
	}
	got := c.finals(ids)
	ok, busy := 0, 0
	for _, id := range ids {
		fs := got[id]
		if len(fs) != 1 {
			t.Fatalf("%s: %d answers, want exactly one: %+v", id, len(fs), fs)
		}
		switch f := fs[0]; {
		case f.Status == mqtt.StatusOK && f.Usage.CompletionTokens == 200:
			ok++
		case f.Status == mqtt.StatusError && f.Error.Code == api.CodeBusy:
			busy++
		default:
			t.Fatalf("%s: unexpected answer %+v", id, f)
		}
	}
	// One running and four queued fit; the rest arrived while they ran.
	if ok < 5 || busy == 0 || ok+busy != 20 {
		t.Fatalf("%d ok, %d busy", ok, busy)
	}
	t.Logf("%d answered, %d busy", ok, busy)
}

// firstChunk waits until the streamed job id has produced text (it is running).
func (c *client) firstChunk(id string) {
	c.t.Helper()
	c.next(topicIs("edgellm/pi1/response/" + id + "/stream"))
}

func TestServeCancel(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, long), Options{})
	c := newClient(t, b, "t-cancel", "edgellm/pi1/response/#")
	c.publish(reqTopic, `{"id":"run","prompt":"Once upon a time","max_tokens":500,"temperature":0,"stream":true}`)
	c.publish(reqTopic, `{"id":"wait","prompt":"Once upon a time","max_tokens":500}`)
	c.firstChunk("run")

	// The queued job is answered at once, the running one stops.
	c.publish(cancelTopic, `{"id":"wait"}`)
	if f := c.final("wait"); f.Status != mqtt.StatusError || f.Error.Code != api.CodeCancelled || f.FinishReason != api.FinishCancelled {
		t.Fatalf("queued job: %+v", f)
	}
	c.publish(cancelTopic, "run") // the bare id works too
	f := c.final("run")
	if f.Status != mqtt.StatusError || f.Error.Code != api.CodeCancelled || f.FinishReason != api.FinishCancelled ||
		f.Usage == nil || f.Usage.CompletionTokens >= 500 || f.Usage.CompletionTokens == 0 || f.Text == "" {
		t.Fatalf("running job: %+v usage %+v", f, f.Usage)
	}

	// "*" (Home Assistant's cancel button) cancels whatever runs.
	c.publish(reqTopic, `{"id":"any","prompt":"Once upon a time","max_tokens":500,"temperature":0,"stream":true}`)
	c.firstChunk("any")
	c.publish(cancelTopic, `{"id":"*"}`)
	if f := c.final("any"); f.FinishReason != api.FinishCancelled {
		t.Fatalf("cancel *: %+v", f)
	}
	c.publish(reqTopic, `{"id":"after","prompt":"x","max_tokens":3}`)
	if f := c.final("after"); f.Status != mqtt.StatusOK {
		t.Fatalf("after cancels: %+v", f)
	}
}

func TestServeSurvivesBrokerRestart(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, nil), Options{})
	c := newClient(t, b, "t-restart", "edgellm/pi1/response/#")
	c.publish(reqTopic, `{"id":"long","prompt":"Once upon a time","max_tokens":250,"temperature":0,"stream":true}`)
	c.firstChunk("long")
	b.Restart()
	got := c.finals([]string{"long"})
	if fs := got["long"]; len(fs) != 1 || fs[0].Status != mqtt.StatusOK || fs[0].Usage.CompletionTokens != 250 {
		t.Fatalf("answers after the broker restart: %+v", fs)
	}
}

func TestServeKilledDaemonAnswersQueuedRequestsOnce(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	path := writeConfig(t, dir, b, long)
	p := startProcess(t, b, path)
	c := newClient(t, b, "t-kill", "edgellm/pi1/response/#")
	ids := []string{"k1", "k2", "k3"}
	for _, id := range ids {
		c.publish(reqTopic, `{"id":"`+id+`","prompt":"Once upon a time","max_tokens":500,"temperature":0,"stream":true}`)
	}
	c.firstChunk("k1")
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.waitExit()
	// The broker publishes the will.
	if got := retained(t, b, "edgellm/pi1/availability", mqtt.Offline); got != mqtt.Offline {
		t.Fatalf("availability after SIGKILL: %q", got)
	}
	startProcess(t, b, path)
	got := c.finals(ids)
	for _, id := range ids {
		if fs := got[id]; len(fs) != 1 || fs[0].Status != mqtt.StatusOK || fs[0].Usage.CompletionTokens != 500 {
			t.Fatalf("%s: answers %+v, want exactly one complete answer", id, fs)
		}
	}
}

// notifyListener is a unixgram NOTIFY_SOCKET that collects datagrams.
type notifyListener struct {
	path string
	conn *net.UnixConn
}

func listenNotify(t *testing.T) *notifyListener {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &notifyListener{path: path, conn: conn}
}

// read returns the next datagram, or "" when none arrives within d.
func (n *notifyListener) read(t *testing.T, d time.Duration) string {
	t.Helper()
	buf := make([]byte, 4096)
	n.conn.SetReadDeadline(time.Now().Add(d))
	k, err := n.conn.Read(buf)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:k])
}

// until reads datagrams until one starts with prefix, returning those seen.
func (n *notifyListener) until(t *testing.T, prefix string) []string {
	t.Helper()
	var seen []string
	for {
		m := n.read(t, wait)
		if m == "" {
			t.Fatalf("no %s datagram; saw %q", prefix, seen)
		}
		seen = append(seen, m)
		if strings.HasPrefix(m, prefix) {
			return seen
		}
	}
}

func TestServeNotifySequenceAndSIGTERM(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	n := listenNotify(t)
	p := startProcess(t, b, writeConfig(t, dir, b, nil), "NOTIFY_SOCKET="+n.path, "WATCHDOG_USEC=400000")
	seen := n.until(t, "READY=1")
	if !strings.HasPrefix(seen[0], "STATUS=loading") {
		t.Errorf("first datagrams %q: want STATUS=loading first", seen)
	}
	// READY came after the subscription: a request sent now is answered
	// (the node's session is new, so it would be lost otherwise).
	c := newClient(t, b, "t-notify", "edgellm/pi1/response/#")
	c.publish(reqTopic, `{"id":"n1","prompt":"x","max_tokens":3}`)
	if f := c.final("n1"); f.Status != mqtt.StatusOK {
		t.Fatalf("answer: %+v", f)
	}
	n.until(t, "WATCHDOG=1")
	n.until(t, "WATCHDOG=1")
	if got := retained(t, b, "edgellm/pi1/status", `"state":"idle"`); !strings.Contains(got, `"model":"tiny-test-f32"`) ||
		!strings.Contains(got, `"version":"test"`) || !strings.Contains(got, `"jobs_ok":1`) {
		t.Errorf("retained status: %s", got)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	n.until(t, "STOPPING=1")
	if err := p.waitExit(); err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	if got := retained(t, b, "edgellm/pi1/availability", ""); got != mqtt.Offline {
		t.Errorf("availability after SIGTERM: %q", got)
	}
	if got := retained(t, b, "edgellm/pi1/status", ""); !strings.Contains(got, `"state":"stopping"`) {
		t.Errorf("status after SIGTERM: %s", got)
	}
}

// wedgedEngine is an engine whose job hangs without progress until released,
// standing in for a bug that the real engine cannot be made to have.
type wedgedEngine struct {
	started chan struct{}
	release chan struct{}
}

func (w *wedgedEngine) Model() ModelInfo {
	return ModelInfo{Name: "wedged", Layers: 1, CacheBytesPerToken: 32, FileBytes: 1}
}

func (w *wedgedEngine) Run(ctx context.Context, job Job) (Outcome, error) {
	w.started <- struct{}{}
	<-w.release
	return Outcome{Text: "late", FinishReason: api.FinishStop}, nil
}

func (w *wedgedEngine) Close() error { return nil }

func TestServeWatchdogStopsWhenWorkerWedged(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	n := listenNotify(t)
	t.Setenv("NOTIFY_SOCKET", n.path)
	t.Setenv("WATCHDOG_USEC", "200000") // ping every 100 ms; 3 stalled checks stop the pings
	eng := &wedgedEngine{started: make(chan struct{}, 1), release: make(chan struct{})}
	load := func(ctx context.Context, o LoadOptions) (Engine, error) { return eng, o.Check(eng.Model()) }
	startServe(t, b, writeConfig(t, dir, b, nil), Options{Load: load})
	n.until(t, "READY=1")
	n.until(t, "WATCHDOG=1")
	c := newClient(t, b, "t-wedge", "edgellm/pi1/response/#")
	c.publish(reqTopic, `{"id":"w","prompt":"x","max_tokens":3}`)
	<-eng.started
	// Pings stop: a full second (ten intervals) without one.
	deadline := time.Now().Add(wait)
	for last := time.Now(); ; {
		m := n.read(t, time.Second)
		if m == "" {
			break
		}
		if strings.HasPrefix(m, "WATCHDOG=1") {
			last = time.Now()
		}
		if time.Now().After(deadline) {
			t.Fatalf("pings went on while the worker was wedged (last %v ago)", time.Since(last))
		}
	}
	close(eng.release)
	n.until(t, "WATCHDOG=1")
	if f := c.final("w"); f.Text != "late" {
		t.Fatalf("answer: %+v", f)
	}
}

// startNotified runs Serve on the configuration it writes in dir with a
// notify socket, and returns once systemd would have READY=1.
func startNotified(t *testing.T, b *mqtttest.Broker, dir string) (*daemonUnderTest, *notifyListener, string) {
	t.Helper()
	n := listenNotify(t)
	t.Setenv("NOTIFY_SOCKET", n.path)
	path := writeConfig(t, dir, b, nil)
	d := startServe(t, b, path, Options{})
	n.until(t, "READY=1")
	return d, n, path
}

func TestServeReload(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	d, n, path := startNotified(t, b, dir)

	// New topics and limits, same model: answered on the new topic at once.
	writeConfig(t, dir, b, map[string]any{"mqtt.base_topic": "home/llm", "limits.max_tokens": 5})
	d.reload <- struct{}{}
	n.until(t, "RELOADING=1")
	n.until(t, "READY=1")
	c := newClient(t, b, "t-reload", "home/llm/pi1/response/#")
	c.publish("home/llm/pi1/request", `{"id":"h1","prompt":"Once upon a time"}`)
	m := c.next(topicIs("home/llm/pi1/response/h1"))
	if f := decodeFinal(t, m.Payload); f.Status != mqtt.StatusOK || f.Usage.CompletionTokens != 5 {
		t.Fatalf("answer after reload: %+v", f)
	}
	if got := retained(t, b, "edgellm/pi1/availability", ""); got != mqtt.Offline {
		t.Errorf("old availability topic: %q", got)
	}
	if got := retained(t, b, "home/llm/pi1/availability", ""); got != mqtt.Online {
		t.Errorf("new availability topic: %q", got)
	}

	// A broken file changes nothing.
	if err := os.WriteFile(path, []byte("model:\n  contxt: 5\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d.reload <- struct{}{}
	n.until(t, "READY=1")
	c.publish("home/llm/pi1/request", `{"id":"h2","prompt":"Once upon a time"}`)
	if f := decodeFinal(t, c.next(topicIs("home/llm/pi1/response/h2")).Payload); f.Usage.CompletionTokens != 5 {
		t.Fatalf("after a bad reload: %+v", f)
	}

	// Another model.
	writeConfig(t, dir, b, map[string]any{"mqtt.base_topic": "home/llm", "model.path": modelPath(t, "qwen2-tiny-q8_0.gguf")})
	d.reload <- struct{}{}
	n.until(t, "RELOADING=1")
	n.until(t, "READY=1")
	// The retained status may still be the one from before the new model; a
	// status naming the new model follows.
	if got := retained(t, b, "home/llm/pi1/status", `"model":"qwen2-tiny`); !strings.Contains(got, `"state":"idle"`) && !strings.Contains(got, `"state":"loading"`) {
		t.Fatalf("status after the model reload: %s", got)
	}
	c.publish("home/llm/pi1/request", `{"id":"h3","prompt":"Hello","max_tokens":4}`)
	if f := decodeFinal(t, c.next(topicIs("home/llm/pi1/response/h3")).Payload); f.Status != mqtt.StatusOK {
		t.Fatalf("answer from the new model: %+v", f)
	}
}

func TestServeTLSAndPassword(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{TLS: true, Users: map[string]string{"edgellm": "s3cret", "dev": "devpw"}})
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := writeConfig(t, dir, b, map[string]any{"mqtt.broker": b.TLSURL(), "mqtt.tls.ca": b.CAFile,
		"mqtt.username": "edgellm", "mqtt.password_file": pw})
	// startServe's watcher connects anonymously, which this broker refuses:
	// watch with a user instead.
	watch := b.Peer(t, mqtttest.PeerOptions{Username: "dev", Password: "devpw"})
	watch.Subscribe("edgellm/pi1/#", 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, Options{ConfigPath: path, Version: "test", Reload: make(chan struct{}), Logger: testLogger(t)})
	}()
	defer func() { cancel(); <-done }()
	for m := watch.Next(wait); m.Topic != "edgellm/pi1/availability" || m.Payload != mqtt.Online; m = watch.Next(wait) {
	}
	watch.Publish(reqTopic, 1, false, `{"id":"tls","prompt":"x","max_tokens":3}`)
	for {
		m := watch.Next(wait)
		if m.Topic == "edgellm/pi1/response/tls" {
			if f := decodeFinal(t, m.Payload); f.Status != mqtt.StatusOK {
				t.Fatalf("answer over TLS: %+v", f)
			}
			return
		}
	}
}

func TestServeFleetPool(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, map[string]any{"mqtt.pool": "kitchen"}), Options{})
	c := newClient(t, b, "t-pool", "edgellm/pi1/response/#")
	c.publish("edgellm/pool/request", `{"id":"p1","prompt":"x","max_tokens":3}`)
	if f := c.final("p1"); f.Status != mqtt.StatusOK {
		t.Fatalf("pool answer: %+v", f)
	}
}

func TestServeDiscoveryResentWhenHomeAssistantStarts(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, nil), Options{})
	c := newClient(t, b, "t-ha", "homeassistant/device/pi1/config")
	first := c.next(topicIs("homeassistant/device/pi1/config"))
	c.publish("homeassistant/status", "online")
	again := c.next(topicIs("homeassistant/device/pi1/config"))
	if again.Retained {
		t.Fatalf("re-sent config arrived as retained")
	}
	var cfg map[string]any
	if err := json.Unmarshal([]byte(first.Payload), &cfg); err != nil || again.Payload != first.Payload {
		t.Fatalf("%v; first %s, again %s", err, first.Payload, again.Payload)
	}
	if dev, ok := cfg["dev"].(map[string]any); !ok || dev["model"] != "tiny-test-f32" || dev["sw_version"] != "test" {
		t.Errorf("device %v", cfg["dev"])
	}
}

func TestServeTrimsLongConversation(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, nil), Options{})
	c := newClient(t, b, "t-trim", "edgellm/pi1/response/#")
	msgs := []api.Message{{Role: "system", Content: "You are terse."}}
	for i := range 20 {
		msgs = append(msgs, api.Message{Role: "user", Content: fmt.Sprintf("question %d %s", i, strings.Repeat("blah ", 10))},
			api.Message{Role: "assistant", Content: fmt.Sprintf("answer %d %s", i, strings.Repeat("yes ", 10))})
	}
	msgs = append(msgs, api.Message{Role: "user", Content: "last question"})
	req, _ := json.Marshal(map[string]any{"id": "trim", "messages": msgs, "max_tokens": 64, "chat_template": "chatml"})
	c.publish(reqTopic, string(req))
	f := c.final("trim")
	if f.Status != mqtt.StatusOK || f.Usage.DroppedTokens == 0 || f.Usage.PromptTokens+64 > 512 || f.Usage.PromptTokens < 300 {
		t.Fatalf("answer: %+v usage %+v", f, f.Usage)
	}
	t.Logf("prompt %d tokens after dropping %d", f.Usage.PromptTokens, f.Usage.DroppedTokens)
}

func TestServeRefusesContextOverBudget(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	sys := fakeSystem(t, map[string]string{
		"proc/self/cgroup":                         "0::/edgellm.service\n",
		"proc/meminfo":                             meminfo4G,
		"sys/fs/cgroup/cgroup.controllers":         "memory\n",
		"sys/fs/cgroup/edgellm.service/memory.max": fmt.Sprint(66 * MiB), // 2 MiB beside the overhead
	})
	path := writeConfig(t, dir, b, map[string]any{"model.context": 4096, "limits.max_tokens": 64})
	err := Serve(context.Background(), Options{ConfigPath: path, System: sys, Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "context 4096 needs 8 MiB of KV cache") ||
		!strings.Contains(err.Error(), "the largest context that fits is 1024") {
		t.Fatalf("Serve = %v", err)
	}
}

// stuckEngine never finishes a job by itself; it stops when the job's
// context ends (as the real engine does between tokens).
type stuckEngine struct{ wedgedEngine }

func (s *stuckEngine) Run(ctx context.Context, job Job) (Outcome, error) {
	job.OnText("partial")
	<-ctx.Done()
	return Outcome{Text: "partial", FinishReason: api.FinishCancelled}, ctx.Err()
}

func TestServeJobTimeout(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	eng := &stuckEngine{}
	load := func(ctx context.Context, o LoadOptions) (Engine, error) { return eng, o.Check(eng.Model()) }
	startServe(t, b, writeConfig(t, dir, b, map[string]any{"queue.job_timeout": "1s"}), Options{Load: load})
	c := newClient(t, b, "t-timeout", "edgellm/pi1/response/#")
	c.publish(reqTopic, `{"id":"slow","prompt":"x"}`)
	f := c.final("slow")
	if f.Status != mqtt.StatusError || f.Error.Code != api.CodeTimeout || f.FinishReason != api.FinishTimeout || f.Text != "partial" {
		t.Fatalf("answer: %+v (error %+v)", f, f.Error)
	}
}

func TestServeEmbeddedBroker(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("model:\n  path: %s\n  context: 256\n  threads: 1\nmqtt:\n  broker: embedded\n  node_id: pi1\n  embedded:\n    listen: %q\nlimits:\n  max_tokens: 16\nstate_dir: %s\n",
		modelPath(t, "tiny-q8_0.gguf"), addr, filepath.Join(dir, "state"))
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, Options{ConfigPath: path, Version: "test", Logger: testLogger(t)}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	// A device connects to the Pi itself (retrying until the broker listens).
	var c paho.Client
	for i := 0; ; i++ {
		c = paho.NewClient(paho.NewClientOptions().AddBroker("tcp://" + addr).SetClientID("device").SetConnectTimeout(time.Second))
		if tok := c.Connect(); tok.WaitTimeout(wait) && tok.Error() == nil {
			break
		} else if i > 200 {
			t.Fatalf("connecting to the embedded broker: %v", tok.Error())
		}
		select {
		case err := <-done:
			t.Fatalf("Serve ended: %v", err)
		case <-time.After(50 * time.Millisecond): // retry pacing, not synchronisation
		}
	}
	defer c.Disconnect(0)
	msgs := make(chan paho.Message, 16)
	if tok := c.Subscribe("edgellm/pi1/#", 1, func(_ paho.Client, m paho.Message) { msgs <- m }); !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	online := false
	for !online {
		select {
		case m := <-msgs:
			online = m.Topic() == "edgellm/pi1/availability" && string(m.Payload()) == mqtt.Online
		case <-time.After(wait):
			t.Fatal("the node never came online on its own broker")
		}
	}
	c.Publish(reqTopic, 1, false, `{"id":"e1","prompt":"x","max_tokens":3}`).WaitTimeout(wait)
	for {
		select {
		case m := <-msgs:
			if m.Topic() == "edgellm/pi1/response/e1" {
				if f := decodeFinal(t, string(m.Payload())); f.Status != mqtt.StatusOK {
					t.Fatalf("answer: %+v", f)
				}
				return
			}
		case <-time.After(wait):
			t.Fatal("no answer over the embedded broker")
		}
	}
}

// With cache.persist the prompt cache survives a restart: the first request
// after it reuses the prefix of the last one before it.
// The prompt cache file survives a restart, with one slot or several (it is
// saved from the slot used last and loaded into the first).
func TestServePersistsPromptCache(t *testing.T) {
	for _, slots := range []int{1, 2} {
		t.Run(fmt.Sprint(slots, " slots"), func(t *testing.T) {
			b := mqtttest.Start(t, mqtttest.Options{})
			dir := t.TempDir()
			path := writeConfig(t, dir, b, map[string]any{"queue.slots": slots})
			long := `{"id":"%s","system":"` + strings.Repeat("You run the lights of a large house. ", 6) + `","prompt":"Kitchen?","max_tokens":4,"temperature":0}`
			c := newClient(t, b, "t-persist", "edgellm/pi1/response/#")
			d := startServe(t, b, path, Options{})
			// With two slots, a job before the one to keep leaves the
			// other slot holding tokens too.
			c.publish(reqTopic, `{"id":"p0","prompt":"Something else entirely","max_tokens":4,"temperature":0}`)
			c.final("p0")
			c.publish(reqTopic, fmt.Sprintf(long, "p1"))
			first := c.final("p1")
			if err := d.stop(); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(dir, "state", PromptCacheFile)); err != nil {
				t.Fatalf("no prompt cache saved: %v", err)
			}
			startServe(t, b, path, Options{})
			c.publish(reqTopic, fmt.Sprintf(long, "p2"))
			again := c.final("p2")
			// p0 shares the template's first tokens at most.
			if first.Usage.CachedTokens > 8 || again.Usage.CachedTokens != again.Usage.PromptTokens-1 || again.Text != first.Text {
				t.Fatalf("before the restart %+v %q, after %+v %q", first.Usage, first.Text, again.Usage, again.Text)
			}
		})
	}
}

// Several prompts are kept: going back to an earlier one (not the previous
// request's) still reuses its prefix, and the answer does not change.
func TestServePrefixCacheKeepsSeveralPrompts(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, map[string]any{"cache.persist": false}), Options{})
	c := newClient(t, b, "t-prefixes", "edgellm/pi1/response/#")
	ask := func(id, system string) mqtt.Final {
		c.publish(reqTopic, `{"id":"`+id+`","system":"`+strings.Repeat(system, 8)+`","prompt":"Now?","max_tokens":4,"temperature":0}`)
		return c.final(id)
	}
	a1 := ask("a1", "You run the lights. ")
	ask("b1", "You water the garden. ")
	a2 := ask("a2", "You run the lights. ")
	if a2.Text != a1.Text || a2.Usage.CachedTokens != a2.Usage.PromptTokens-1 {
		t.Fatalf("back to the first prompt: %+v %q, first time %+v %q", a2.Usage, a2.Text, a1.Usage, a1.Text)
	}
}

// For every new architecture, the daemon's reuse of earlier work — the
// prompt cache file across a restart and the prefix cache of a prompt that
// a request extends — leaves the greedy answers as they were without it.
func TestServeNewArchitecturesReuseKeepsAnswers(t *testing.T) {
	for _, model := range []string{"qwen3-tiny-q8_0", "gemma3-tiny-q8_0", "phi3-tiny-q8_0", "lfm2-tiny-q8_0", "smollm3-tiny-q8_0", "qwen35-tiny-q8_0", "gemma4-tiny-q8_0"} {
		t.Run(model, func(t *testing.T) {
			b := mqtttest.Start(t, mqtttest.Options{})
			path := writeConfig(t, t.TempDir(), b, map[string]any{"model.path": modelPath(t, model+".gguf")})
			c := newClient(t, b, "t-reuse", "edgellm/pi1/response/#")
			short := "Once upon a time, there was a little girl named Lily. She loved to play in the park"
			long := short + " with her big red ball. One day, the ball rolled into the pond"
			ask := func(id, prompt string) mqtt.Final {
				c.publish(reqTopic, `{"id":"`+id+`","prompt":"`+prompt+`","max_tokens":6,"temperature":0}`)
				f := c.final(id)
				if f.Status != mqtt.StatusOK || f.Usage.CompletionTokens == 0 {
					t.Fatalf("%s: %+v", id, f)
				}
				return f
			}
			d := startServe(t, b, path, Options{})
			freshLong := ask("l1", long) // the first request: nothing to reuse
			short1 := ask("s1", short)
			if err := d.stop(); err != nil {
				t.Fatal(err)
			}
			startServe(t, b, path, Options{}) // loads the prompt cache file (short and its answer)
			if short2 := ask("s2", short); short2.Text != short1.Text {
				t.Errorf("short prompt after the restart: %q, before %q", short2.Text, short1.Text)
			}
			long2 := ask("l2", long) // extends the short prompt kept at its prefill
			if long2.Text != freshLong.Text || long2.Usage.CachedTokens != short1.Usage.PromptTokens {
				t.Errorf("long prompt after the short one: %q, %d of %d tokens reused; fresh %q, want %d reused",
					long2.Text, long2.Usage.CachedTokens, long2.Usage.PromptTokens, freshLong.Text, short1.Usage.PromptTokens)
			}
		})
	}
}

// TestServeSharedSystemPromptFromCheckpoint: requests that share a long
// system prompt and differ after it (Home Assistant's) reuse it from the
// third on, also on a model whose state cannot be rewound (qwen35's DeltaNet
// layers): the second request keeps a checkpoint where it parts from the
// first. Answers equal those of a daemon without reuse.
func TestServeSharedSystemPromptFromCheckpoint(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	path := writeConfig(t, t.TempDir(), b, map[string]any{"model.path": modelPath(t, "qwen35-tiny-q8_0.gguf"), "model.context": 1024})
	c := newClient(t, b, "t-system", "edgellm/pi1/response/#")
	system := strings.Repeat("The kitchen light is on. The hall light is off. ", 20)
	ask := func(id, question string) mqtt.Final {
		c.publish(reqTopic, `{"id":"`+id+`","system":"`+system+`","prompt":"`+question+`","raw":true,"max_tokens":6,"temperature":0}`)
		f := c.final(id)
		if f.Status != mqtt.StatusOK || f.Usage.CompletionTokens == 0 {
			t.Fatalf("%s: %+v", id, f)
		}
		return f
	}
	d := startServe(t, b, path, Options{})
	first := ask("q1", "Is the kitchen light on?")
	ask("q2", "What about the hall?")
	third := ask("q3", "Which light is off?")
	if first.Usage.PromptTokens < 500 {
		t.Fatalf("the prompt is only %d tokens", first.Usage.PromptTokens)
	}
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	// The same questions from a fresh start without reuse: the third again.
	path2 := writeConfig(t, t.TempDir(), b, map[string]any{"model.path": modelPath(t, "qwen35-tiny-q8_0.gguf"), "model.context": 1024})
	startServe(t, b, path2, Options{})
	alone := ask("q3-alone", "Which light is off?")
	// The questions part at their first letter: what is reused is the
	// system prompt, all but the last few of the prompt's tokens.
	if third.Usage.CachedTokens < third.Usage.PromptTokens-40 || third.Text != alone.Text {
		t.Errorf("third request: %d of %d tokens reused (want all but the question's), %q; alone %q",
			third.Usage.CachedTokens, third.Usage.PromptTokens, third.Text, alone.Text)
	}
}
