package mqtt

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// guard bounds how long a test waits for something that should happen; it
// is a hang guard, never what makes a test pass.
const guard = 15 * time.Second

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// testClient builds a client for node on the broker at url, subscribed to
// its request topic at QoS 1, with ready and lost events on channels.
type testClient struct {
	*Client
	topics Topics
	ready  chan int
	lost   chan error
}

func newTestClient(t *testing.T, url, node string, mod func(*ClientConfig)) *testClient {
	t.Helper()
	tp, err := NewTopics("edgellm", node)
	if err != nil {
		t.Fatal(err)
	}
	tc := &testClient{topics: tp, ready: make(chan int, 16), lost: make(chan error, 16)}
	cfg := ClientConfig{
		Broker:               url,
		ClientID:             ClientID(node),
		Availability:         tp.Availability(),
		Subscriptions:        map[string]byte{tp.Request(): 1, tp.Cancel(): 1},
		MaxReconnectInterval: time.Second,
		ConnectTimeout:       5 * time.Second,
		OnReady:              func(n int) { tc.ready <- n },
		OnConnectionLost:     func(err error) { tc.lost <- err },
		Logger:               quietLogger(),
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tc.Client = c
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(ctx)
	})
	return tc
}

func (tc *testClient) connect(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := tc.Connect(ctx); err != nil {
		t.Fatal(err)
	}
}

func (tc *testClient) next(t *testing.T) Message {
	t.Helper()
	select {
	case m, ok := <-tc.Messages():
		if !ok {
			t.Fatal("Messages closed")
		}
		return m
	case <-time.After(guard):
		t.Fatal("no message")
	}
	return Message{}
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(guard):
		t.Fatalf("timed out waiting for %s", what)
	}
	var zero T
	return zero
}

func TestClientRoundTrip(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	c := newTestClient(t, b.URL(), "rt", nil)
	c.connect(t)
	if n := waitFor(t, c.ready, "OnReady"); n != 1 {
		t.Errorf("OnReady(%d), want 1", n)
	}
	if !c.IsConnected() {
		t.Error("IsConnected false after Connect")
	}

	peer := b.Peer(t, mqtttest.PeerOptions{})
	peer.Subscribe(c.topics.Response(), 1)
	peer.Publish(c.topics.Request(), 1, false, "What is 2+2?")
	m := c.next(t)
	if m.Topic != c.topics.Request() || string(m.Payload) != "What is 2+2?" || m.QoS != 1 || m.Retained {
		t.Errorf("received %+v", m)
	}
	m.Ack()
	m.Ack() // a second Ack is harmless

	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := c.Publish(ctx, c.topics.Response(), 1, false, []byte("4")); err != nil {
		t.Fatal(err)
	}
	if r := peer.Next(guard); r.Topic != c.topics.Response() || r.Payload != "4" {
		t.Errorf("peer received %+v", r)
	}
}

func TestClientDeliversInOrder(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	c := newTestClient(t, b.URL(), "order", nil)
	c.connect(t)
	peer := b.Peer(t, mqtttest.PeerOptions{})
	const n = 60
	for i := 0; i < n; i++ {
		peer.Publish(c.topics.Request(), 1, false, fmt.Sprint(i))
	}
	for i := 0; i < n; i++ {
		m := c.next(t)
		if string(m.Payload) != fmt.Sprint(i) {
			t.Fatalf("message %d has payload %q", i, m.Payload)
		}
		m.Ack()
	}
}

func TestClientRetainedAvailability(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	c := newTestClient(t, b.URL(), "avail", nil)
	c.connect(t)

	fresh := b.Peer(t, mqtttest.PeerOptions{})
	fresh.Subscribe(c.topics.Availability(), 1)
	if r := fresh.Next(guard); r.Payload != Online || !r.Retained {
		t.Errorf("fresh subscriber got %+v, want retained online", r)
	}

	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := <-c.Messages(); ok {
		t.Error("Messages still open after Close")
	}
	after := b.Peer(t, mqtttest.PeerOptions{})
	after.Subscribe(c.topics.Availability(), 1)
	if r := after.Next(guard); r.Payload != Offline || !r.Retained {
		t.Errorf("after Close a fresh subscriber got %+v, want retained offline", r)
	}
}

// TestHelperClientProcess is not a test: TestClientWillOnKill runs the test
// binary with EDGELLM_MQTT_HELPER_BROKER set, and this connects a client,
// says "ready" and waits to be killed.
func TestHelperClientProcess(t *testing.T) {
	url := os.Getenv("EDGELLM_MQTT_HELPER_BROKER")
	if url == "" {
		return
	}
	tp, _ := NewTopics("edgellm", "killed")
	c, err := NewClient(ClientConfig{Broker: url, ClientID: ClientID("killed"), Availability: tp.Availability(),
		Subscriptions: map[string]byte{tp.Request(): 1}, Logger: quietLogger()})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until killed
	os.Exit(0)
}

func TestClientWillOnKill(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	tp, _ := NewTopics("edgellm", "killed")

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperClientProcess$")
	cmd.Env = append(os.Environ(), "EDGELLM_MQTT_HELPER_BROKER="+b.URL())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		_ = cmd.Process.Kill()
		t.Fatalf("helper said %q (%v)", line, err)
	}

	watcher := b.Peer(t, mqtttest.PeerOptions{})
	watcher.Subscribe(tp.Availability(), 1)
	if r := watcher.Next(guard); r.Payload != Online {
		t.Fatalf("before the kill: %+v, want online", r)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if r := watcher.Next(guard); r.Topic != tp.Availability() || r.Payload != Offline {
		t.Fatalf("after SIGKILL the watcher got %+v, want the will (offline)", r)
	}
	fresh := b.Peer(t, mqtttest.PeerOptions{})
	fresh.Subscribe(tp.Availability(), 1)
	if r := fresh.Next(guard); r.Payload != Offline || !r.Retained {
		t.Errorf("fresh subscriber after the kill got %+v, want retained offline", r)
	}
}

func TestClientPersistentSession(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	first := newTestClient(t, b.URL(), "persist", nil)
	first.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := first.Close(ctx); err != nil {
		t.Fatal(err)
	}

	// Published at QoS 1 while the node is down: the broker queues them in
	// the node's session.
	peer := b.Peer(t, mqtttest.PeerOptions{})
	peer.Publish(first.topics.Request(), 1, false, "queued-1")
	peer.Publish(first.topics.Request(), 1, false, "queued-2")

	second := newTestClient(t, b.URL(), "persist", nil)
	second.connect(t)
	ids := map[string]uint16{}
	for _, want := range []string{"queued-1", "queued-2"} {
		m := second.next(t)
		if string(m.Payload) != want || m.Duplicate || m.PacketID == 0 {
			t.Fatalf("after reconnecting got %q (duplicate %v, packet id %d), want %q, a first delivery", m.Payload, m.Duplicate, m.PacketID, want)
		}
		ids[want] = m.PacketID
	}
	// Not acknowledged (as if the daemon crashed mid-job): the broker
	// delivers them again, marked duplicate, to the next connection.
	if err := second.Close(ctx); err != nil {
		t.Fatal(err)
	}
	third := newTestClient(t, b.URL(), "persist", nil)
	third.connect(t)
	for _, want := range []string{"queued-1", "queued-2"} {
		m := third.next(t)
		if string(m.Payload) != want || !m.Duplicate || m.PacketID != ids[want] {
			t.Fatalf("redelivery: got %q (duplicate %v, packet id %d), want %q duplicate with packet id %d", m.Payload, m.Duplicate, m.PacketID, want, ids[want])
		}
		m.Ack()
	}
}

func TestClientReconnectsAfterBrokerRestart(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	c := newTestClient(t, b.URL(), "restart", nil)
	c.connect(t)
	waitFor(t, c.ready, "first OnReady")

	b.Stop()
	waitFor(t, c.lost, "OnConnectionLost")
	// An answer published while the broker is down is kept and sent once the
	// connection is back.
	published := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		published <- c.Publish(ctx, c.topics.Status(), 1, true, []byte("answer-during-outage"))
	}()
	b.Start()
	if n := waitFor(t, c.ready, "OnReady after the restart"); n != 2 {
		t.Errorf("OnReady(%d) after restart, want 2", n)
	}
	if err := waitFor(t, published, "the publish made during the outage"); err != nil {
		t.Fatalf("publish during outage: %v", err)
	}

	peer := b.Peer(t, mqtttest.PeerOptions{})
	peer.Subscribe(c.topics.Status(), 1)
	if r := peer.Next(guard); r.Payload != "answer-during-outage" {
		t.Errorf("status after restart %+v", r)
	}
	peer.Subscribe(c.topics.Availability(), 1)
	if r := peer.Next(guard); r.Payload != Online {
		t.Errorf("availability after reconnect %+v, want online", r)
	}
	// Resubscribed: a request published after the restart arrives.
	peer.Publish(c.topics.Request(), 1, false, "after restart")
	if m := c.next(t); string(m.Payload) != "after restart" {
		t.Errorf("got %q", m.Payload)
	}
}

func TestClientSetSubscriptions(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	c := newTestClient(t, b.URL(), "subs", nil)
	c.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	newTopics, _ := NewTopics("renamed", "subs")
	if err := c.SetSubscriptions(ctx, map[string]byte{newTopics.Request(): 1}); err != nil {
		t.Fatal(err)
	}
	peer := b.Peer(t, mqtttest.PeerOptions{})
	// Published first: if the old subscription were still there it would
	// arrive first.
	peer.Publish(c.topics.Request(), 1, false, "old topic")
	peer.Publish(newTopics.Request(), 1, false, "new topic")
	if m := c.next(t); string(m.Payload) != "new topic" {
		t.Fatalf("got %q on %s, want the new topic's message only", m.Payload, m.Topic)
	}
}

func TestClientTLSAndPassword(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{TLS: true, RequireClientCert: true, Users: map[string]string{"edgellm": "s3cret"}})
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("guess\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tlsCfg := func(pw string) func(*ClientConfig) {
		return func(cfg *ClientConfig) {
			cfg.Username, cfg.PasswordFile = "edgellm", pw
			cfg.CAFile, cfg.CertFile, cfg.KeyFile = b.CAFile, b.ClientCertFile, b.ClientKeyFile
		}
	}

	c := newTestClient(t, b.TLSURL(), "tls", tlsCfg(good))
	c.connect(t)
	peer := b.Peer(t, mqtttest.PeerOptions{Username: "edgellm", Password: "s3cret"})
	peer.Publish(c.topics.Request(), 1, false, "over TLS")
	if m := c.next(t); string(m.Payload) != "over TLS" {
		t.Errorf("got %q", m.Payload)
	}

	// Wrong password: refused at once with a clear error, not retried.
	wrong := newTestClient(t, b.TLSURL(), "wrongpw", tlsCfg(bad))
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	start := time.Now()
	err := wrong.Connect(ctx)
	if err == nil {
		t.Fatal("connected with a wrong password")
	}
	if !strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), "check mqtt.username and mqtt.password_file") ||
		ctx.Err() != nil || time.Since(start) > 5*time.Second {
		t.Errorf("wrong password error: %v (after %v)", err, time.Since(start))
	}

	// A broker certificate from an unknown CA: refused, pointing at tls.ca.
	untrusted := newTestClient(t, b.TLSURL(), "noca", func(cfg *ClientConfig) {
		tlsCfg(good)(cfg)
		cfg.CAFile = ""
	})
	err = untrusted.Connect(ctx)
	if err == nil || !strings.Contains(err.Error(), "mqtt.tls.ca") || ctx.Err() != nil {
		t.Errorf("unknown CA error: %v", err)
	}

	// The plain listener with the wrong password is refused the same way.
	plain := newTestClient(t, b.URL(), "plainwrong", func(cfg *ClientConfig) { cfg.Username, cfg.PasswordFile = "edgellm", bad })
	if err := plain.Connect(ctx); err == nil || !strings.Contains(err.Error(), "check mqtt.username") {
		t.Errorf("plain wrong password: %v", err)
	}
}

func TestClientConnectRetriesUntilContextEnds(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	b.Stop() // nothing listens on the port now
	c := newTestClient(t, b.URL(), "nobroker", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	err := c.Connect(ctx)
	// A refused TCP connection is worth retrying: Connect keeps going until
	// the context ends and then reports the last failure.
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Connect without a broker: %v", err)
	}

	// Once the broker is back, the same client connects.
	b.Start()
	c.connect(t)
}

func TestNewClientErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(notPEM, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	base := ClientConfig{Broker: "ssl://localhost:8883", ClientID: "x", Availability: "a/b", Logger: quietLogger()}
	for _, tc := range []struct {
		name string
		mod  func(*ClientConfig)
		want string
	}{
		{"missing fields", func(c *ClientConfig) { c.ClientID = "" }, "Broker, ClientID and Availability are required"},
		{"missing password file", func(c *ClientConfig) { c.Username, c.PasswordFile = "u", filepath.Join(dir, "nope") }, "mqtt: password file: open"},
		{"empty password file", func(c *ClientConfig) { c.Username, c.PasswordFile = "u", empty }, "is empty"},
		{"CA not PEM", func(c *ClientConfig) { c.CAFile = notPEM }, "no PEM certificate"},
		{"missing CA", func(c *ClientConfig) { c.CAFile = filepath.Join(dir, "nope") }, "mqtt: tls ca:"},
		{"cert without key", func(c *ClientConfig) { c.CertFile = notPEM }, "needs both"},
		{"bad key pair", func(c *ClientConfig) { c.CertFile, c.KeyFile = notPEM, notPEM }, "mqtt: tls client certificate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.mod(&cfg)
			if _, err := NewClient(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// fakeTB records a Fatalf instead of failing the real test.
type fakeTB struct {
	testing.TB
	msg string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestBrokerMissingFailsWithInstallHint(t *testing.T) {
	t.Setenv(mqtttest.MosquittoEnv, filepath.Join(t.TempDir(), "no-mosquitto"))
	f := &fakeTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		mqtttest.Start(f, mqtttest.Options{})
	}()
	<-done
	if !strings.Contains(f.msg, "apt-get install -y mosquitto") {
		t.Errorf("Start without mosquitto failed with %q; want the install hint", f.msg)
	}
}

// TestClientPublishesBeforeOnline: what BeforeOnline publishes reaches the
// broker before "online", on the first connection and on a reconnection, so
// whoever sees "online" has the retained status too.
func TestClientPublishesBeforeOnline(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	watch := b.Peer(t, mqtttest.PeerOptions{})
	watch.Subscribe("edgellm/bo/#", 1)
	n := 0
	c := newTestClient(t, b.URL(), "bo", func(cfg *ClientConfig) {
		cfg.BeforeOnline = func(ctx context.Context, c *Client) {
			n++
			if err := c.Publish(ctx, "edgellm/bo/status", 1, true, []byte(fmt.Sprintf("status %d", n))); err != nil {
				t.Errorf("BeforeOnline publish: %v", err)
			}
		}
	})
	c.connect(t)
	// An earlier subscriber sees the status, then online.
	for _, want := range []string{"status 1", Online} {
		if m := watch.Next(guard); m.Payload != want {
			t.Fatalf("got %s %q, want %q", m.Topic, m.Payload, want)
		}
	}
	// A fresh subscriber that sees online also finds the status.
	fresh := b.Peer(t, mqtttest.PeerOptions{})
	fresh.Subscribe("edgellm/bo/availability", 1)
	fresh.Subscribe("edgellm/bo/status", 1)
	got := map[string]string{}
	for len(got) < 2 {
		m := fresh.Next(guard)
		if !m.Retained {
			t.Fatalf("%s: not retained", m.Topic)
		}
		got[m.Topic] = m.Payload
	}
	if got["edgellm/bo/availability"] != Online || got["edgellm/bo/status"] != "status 1" {
		t.Fatalf("retained: %v", got)
	}

	// After the broker restarts, the will ("offline") is retained, then the
	// client reconnects: status again before online.
	b.Restart()
	waitFor(t, c.ready, "OnReady")
	waitFor(t, c.ready, "OnReady after the restart")
	watch = b.Peer(t, mqtttest.PeerOptions{})
	watch.Subscribe("edgellm/bo/availability", 1)
	watch.Subscribe("edgellm/bo/status", 1)
	got = map[string]string{}
	for len(got) < 2 {
		m := watch.Next(guard)
		got[m.Topic] = m.Payload
	}
	if got["edgellm/bo/availability"] != Online || got["edgellm/bo/status"] != "status 2" {
		t.Fatalf("after reconnecting: %v", got)
	}
}
