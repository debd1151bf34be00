package broker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/edgellm/edgellm/mqtt"
)

// guard bounds every wait: far longer than anything should take, so only a
// hung test reaches it.
const guard = 20 * time.Second

func testLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// startBroker starts a broker on a free loopback port (unless cfg names an
// address) and closes it when the test ends.
func startBroker(t *testing.T, cfg Config) *Broker {
	t.Helper()
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	cfg.Logger = testLogger()
	b, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// testClient is a Paho client that queues what it receives. With manualAck
// the test decides which QoS 1 messages to acknowledge.
type testClient struct {
	t    *testing.T
	id   string
	c    paho.Client
	msgs chan paho.Message
}

type clientOpts struct {
	clean          bool
	manualAck      bool
	user, password string
	lost           chan error // receives the error when the connection drops
}

func dial(t *testing.T, url, id string, o clientOpts) (*testClient, error) {
	t.Helper()
	tc := &testClient{t: t, id: id, msgs: make(chan paho.Message, 1000)}
	opts := paho.NewClientOptions().AddBroker(url).SetClientID(id).SetProtocolVersion(4).
		SetCleanSession(o.clean).SetAutoReconnect(false).SetConnectTimeout(5 * time.Second).
		SetOrderMatters(true).SetAutoAckDisabled(o.manualAck).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { tc.msgs <- m })
	if o.user != "" {
		opts.SetUsername(o.user).SetPassword(o.password)
	}
	if o.lost != nil {
		opts.SetConnectionLostHandler(func(_ paho.Client, err error) { o.lost <- err })
	}
	tc.c = paho.NewClient(opts)
	tok := tc.c.Connect()
	if !tok.WaitTimeout(guard) {
		return nil, errors.New("connect timed out")
	}
	if err := tok.Error(); err != nil {
		return nil, err
	}
	t.Cleanup(func() { tc.c.Disconnect(0) })
	return tc, nil
}

func connect(t *testing.T, url, id string, o clientOpts) *testClient {
	t.Helper()
	tc, err := dial(t, url, id, o)
	if err != nil {
		t.Fatalf("connect %s: %v", id, err)
	}
	return tc
}

func (c *testClient) subscribe(filter string, qos byte) {
	c.t.Helper()
	tok := c.c.Subscribe(filter, qos, nil)
	if !tok.WaitTimeout(guard) || tok.Error() != nil {
		c.t.Fatalf("subscribe %s: %v", filter, tok.Error())
	}
	if st := tok.(*paho.SubscribeToken); st.Result()[filter] > 2 {
		c.t.Fatalf("subscribe %s refused: code %#x", filter, st.Result()[filter])
	}
}

func (c *testClient) publish(topic string, qos byte, retain bool, payload string) {
	c.t.Helper()
	tok := c.c.Publish(topic, qos, retain, payload)
	if !tok.WaitTimeout(guard) || tok.Error() != nil {
		c.t.Fatalf("publish %s: %v", topic, tok.Error())
	}
}

func (c *testClient) next() paho.Message {
	c.t.Helper()
	select {
	case m := <-c.msgs:
		return m
	case <-time.After(guard):
		c.t.Fatal("no message arrived")
		return nil
	}
}

// expect receives the next message and checks its topic and payload.
func (c *testClient) expect(topic, payload string) paho.Message {
	c.t.Helper()
	m := c.next()
	if m.Topic() != topic || string(m.Payload()) != payload {
		c.t.Fatalf("got %s %q, want %s %q", m.Topic(), m.Payload(), topic, payload)
	}
	return m
}

func TestQoS1RoundTripAndRetained(t *testing.T) {
	b := startBroker(t, Config{})
	if !strings.HasPrefix(b.URL(), "tcp://127.0.0.1:") || strings.HasSuffix(b.URL(), ":0") {
		t.Fatalf("URL %q", b.URL())
	}
	sub := connect(t, b.URL(), "sub", clientOpts{clean: true})
	sub.subscribe("dev/+/temp", 1)
	pub := connect(t, b.URL(), "pub", clientOpts{clean: true})
	pub.publish("dev/kitchen/temp", 1, false, "21.5")
	m := sub.expect("dev/kitchen/temp", "21.5")
	if m.Qos() != 1 || m.Retained() {
		t.Fatalf("QoS %d retained %v, want QoS 1 not retained", m.Qos(), m.Retained())
	}

	pub.publish("dev/kitchen/state", 1, true, "on")
	pub.publish("dev/hall/state", 1, true, "off")
	pub.publish("dev/hall/state", 1, true, "on") // replaces the retained "off"
	late := connect(t, b.URL(), "late", clientOpts{clean: true})
	late.subscribe("dev/+/state", 1)
	got := map[string]string{}
	for range 2 {
		m := late.next()
		if !m.Retained() {
			t.Fatalf("%s: not flagged retained", m.Topic())
		}
		got[m.Topic()] = string(m.Payload())
	}
	if got["dev/kitchen/state"] != "on" || got["dev/hall/state"] != "on" {
		t.Fatalf("retained messages %v", got)
	}
	// An empty retained payload deletes the retained message.
	pub.publish("dev/hall/state", 1, true, "")
	later := connect(t, b.URL(), "later", clientOpts{clean: true})
	later.subscribe("dev/+/state", 1)
	// mochi acknowledges a publish before it forwards it, so the deletion
	// itself may still reach later live (empty, not retained); what must
	// not come is a retained dev/hall/state.
	skipDeletion := func() paho.Message {
		m := later.next()
		if m.Topic() == "dev/hall/state" && len(m.Payload()) == 0 && !m.Retained() {
			m = later.next()
		}
		return m
	}
	if m := skipDeletion(); m.Topic() != "dev/kitchen/state" || string(m.Payload()) != "on" || !m.Retained() {
		t.Fatalf("got %s %q (retained %v), want the retained dev/kitchen/state \"on\"", m.Topic(), m.Payload(), m.Retained())
	}
	later.subscribe("dev/sync", 1)
	pub.publish("dev/sync", 1, false, "end")
	if m := skipDeletion(); m.Topic() != "dev/sync" || string(m.Payload()) != "end" {
		t.Fatalf("got %s %q, want dev/sync \"end\" (nothing else first)", m.Topic(), m.Payload())
	}
}

// rawClient speaks MQTT 3.1.1 packet by packet, so a test controls exactly
// what is acknowledged and can cut the connection without a DISCONNECT, as
// a device losing power would.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	id   uint16
}

// rawDial connects with cp (protocol fields filled in) and returns the
// client and the CONNACK's session-present flag.
func rawDial(t *testing.T, addr string, cp *packets.ConnectPacket) (*rawClient, bool) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, guard)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	r := &rawClient{t: t, conn: conn}
	cp.ProtocolName, cp.ProtocolVersion, cp.Keepalive = "MQTT", 4, 60
	r.send(cp)
	ack, ok := r.read().(*packets.ConnackPacket)
	if !ok || ack.ReturnCode != 0 {
		t.Fatalf("CONNACK: %v", ack)
	}
	return r, ack.SessionPresent
}

func connectPacket(id string, clean bool) *packets.ConnectPacket {
	cp := packets.NewControlPacket(packets.Connect).(*packets.ConnectPacket)
	cp.ClientIdentifier, cp.CleanSession = id, clean
	return cp
}

func (r *rawClient) send(p packets.ControlPacket) {
	r.t.Helper()
	if err := p.Write(r.conn); err != nil {
		r.t.Fatalf("send %v: %v", p, err)
	}
}

func (r *rawClient) read() packets.ControlPacket {
	r.t.Helper()
	_ = r.conn.SetReadDeadline(time.Now().Add(guard))
	p, err := packets.ReadPacket(r.conn)
	if err != nil {
		r.t.Fatalf("read: %v", err)
	}
	return p
}

func (r *rawClient) subscribe(filter string, qos byte) {
	r.t.Helper()
	r.id++
	sp := packets.NewControlPacket(packets.Subscribe).(*packets.SubscribePacket)
	sp.MessageID, sp.Topics, sp.Qoss = r.id, []string{filter}, []byte{qos}
	r.send(sp)
	if ack, ok := r.read().(*packets.SubackPacket); !ok || ack.ReturnCodes[0] != qos {
		r.t.Fatalf("SUBACK: %v", ack)
	}
}

// publish reads the next packet, which must be a PUBLISH.
func (r *rawClient) publish() *packets.PublishPacket {
	r.t.Helper()
	p, ok := r.read().(*packets.PublishPacket)
	if !ok {
		r.t.Fatalf("got %v, want a PUBLISH", p)
	}
	return p
}

func (r *rawClient) puback(id uint16) {
	r.t.Helper()
	pa := packets.NewControlPacket(packets.Puback).(*packets.PubackPacket)
	pa.MessageID = id
	r.send(pa)
}

// ping waits for a PINGRESP: the broker handles a connection's packets in
// order, so everything sent before has then been processed.
func (r *rawClient) ping() {
	r.t.Helper()
	r.send(packets.NewControlPacket(packets.Pingreq))
	if p, ok := r.read().(*packets.PingrespPacket); !ok {
		r.t.Fatalf("got %v, want PINGRESP", p)
	}
}

func (r *rawClient) disconnect() {
	r.t.Helper()
	r.send(packets.NewControlPacket(packets.Disconnect))
	r.conn.Close()
}

// barrier returns once the broker has fully processed everything c sent
// before: it handles a connection's packets in order, and answers a
// SUBSCRIBE only after routing the PUBLISHes before it (a PUBACK alone
// does not mean the message was routed yet).
func (c *testClient) barrier() {
	c.t.Helper()
	c.subscribe("barrier/"+c.id, 0)
}

func TestWillOnAbruptDisconnect(t *testing.T) {
	b := startBroker(t, Config{})
	watch := connect(t, b.URL(), "watch", clientOpts{clean: true})
	watch.subscribe("dev/+/availability", 1)

	withWill := func(id string) *packets.ConnectPacket {
		cp := connectPacket(id, true)
		cp.WillFlag, cp.WillQos, cp.WillRetain = true, 1, true
		cp.WillTopic, cp.WillMessage = "dev/"+id+"/availability", []byte("offline")
		return cp
	}
	// A clean DISCONNECT sends no will.
	polite, _ := rawDial(t, b.Addr(), withWill("polite"))
	polite.disconnect()
	sensor, _ := rawDial(t, b.Addr(), withWill("sensor"))
	sensor.conn.Close() // no DISCONNECT: the broker must publish the will
	m := watch.expect("dev/sensor/availability", "offline")
	if m.Qos() != 1 {
		t.Fatalf("will QoS %d, want 1", m.Qos())
	}
	// The will was retained: a new subscriber sees it.
	late := connect(t, b.URL(), "late", clientOpts{clean: true})
	late.subscribe("dev/+/availability", 1)
	if m := late.expect("dev/sensor/availability", "offline"); !m.Retained() {
		t.Fatal("will not retained")
	}
}

func TestPersistentSessionRedelivery(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{Dir: dir})
	pub := connect(t, b.URL(), "pub", clientOpts{clean: true})

	// A persistent session subscribes, then goes away cleanly: messages
	// published meanwhile wait for it.
	dev, present := rawDial(t, b.Addr(), connectPacket("dev", false))
	if present {
		t.Fatal("session present on the first connection")
	}
	dev.subscribe("node/request", 1)
	dev.disconnect()
	for i := range 3 {
		pub.publish("node/request", 1, false, fmt.Sprint("r", i))
	}
	pub.publish("node/state", 1, true, "kept")
	pub.barrier()
	dev, present = rawDial(t, b.Addr(), connectPacket("dev", false)) // no new SUBSCRIBE
	if !present {
		t.Fatal("session not present on reconnection")
	}
	// Mochi resends a session's queue sorted by the second each message was
	// created, so messages of the same second may come in any order.
	got := map[string]bool{}
	for range 3 {
		p := dev.publish()
		got[string(p.Payload)] = p.TopicName == "node/request" && p.Qos == 1
		dev.puback(p.MessageID)
	}
	if !got["r0"] || !got["r1"] || !got["r2"] {
		t.Fatalf("queued messages: got %v, want r0, r1 and r2 on node/request at QoS 1", got)
	}
	dev.ping() // the acknowledgements are processed

	// A message received but not acknowledged when the connection dies is
	// delivered again, flagged duplicate; acknowledged ones are not.
	pub.publish("node/request", 1, false, "unacked")
	if p := dev.publish(); string(p.Payload) != "unacked" || p.Dup {
		t.Fatalf("got %q dup %v, want \"unacked\" not dup", p.Payload, p.Dup)
	}
	dev.conn.Close()
	dev, _ = rawDial(t, b.Addr(), connectPacket("dev", false))
	p := dev.publish()
	if string(p.Payload) != "unacked" || !p.Dup {
		t.Fatalf("got %q dup %v, want \"unacked\" again flagged dup", p.Payload, p.Dup)
	}
	dev.puback(p.MessageID)
	dev.ping()
	dev.disconnect()

	// Across a broker restart with the same store: the session, a message
	// queued for it and the retained message survive. Close waits for the
	// publisher's connection, so the message is stored first.
	pub.publish("node/request", 1, false, "before restart")
	addr := b.Addr()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	b2 := startBroker(t, Config{Dir: dir, Listen: addr})
	dev, present = rawDial(t, b2.Addr(), connectPacket("dev", false))
	if !present {
		t.Fatal("session lost in the restart")
	}
	if p := dev.publish(); string(p.Payload) != "before restart" {
		t.Fatalf("after restart got %q, want \"before restart\" (and nothing acknowledged before)", p.Payload)
	}
	late := connect(t, b2.URL(), "late", clientOpts{clean: true})
	late.subscribe("node/state", 1)
	if m := late.expect("node/state", "kept"); !m.Retained() {
		t.Fatal("retained message not flagged retained after restart")
	}
}

func TestSharedSubscription(t *testing.T) {
	b := startBroker(t, Config{})
	a := connect(t, b.URL(), "a", clientOpts{clean: true})
	c := connect(t, b.URL(), "c", clientOpts{clean: true})
	for _, tc := range []*testClient{a, c} {
		tc.subscribe("$share/pool/edgellm/pool/request", 1)
		tc.subscribe("sync", 1)
	}
	pub := connect(t, b.URL(), "pub", clientOpts{clean: true})
	const n = 20
	for i := range n {
		pub.publish("edgellm/pool/request", 1, false, fmt.Sprint(i))
	}
	pub.publish("sync", 1, false, "end") // after every shared message, on each client
	seen := map[string]int{}
	for _, tc := range []*testClient{a, c} {
		for {
			m := tc.next()
			if m.Topic() == "sync" {
				break
			}
			if m.Topic() != "edgellm/pool/request" {
				t.Fatalf("unexpected topic %s", m.Topic())
			}
			seen[string(m.Payload())]++
		}
	}
	for i := range n {
		if seen[fmt.Sprint(i)] != 1 {
			t.Fatalf("message %d delivered %d times, want once to the group: %v", i, seen[fmt.Sprint(i)], seen)
		}
	}
}

// writePasswords writes a password file with the real mosquitto_passwd, in
// both of its hash formats.
func writePasswords(t *testing.T, dir string) string {
	t.Helper()
	tool, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		t.Fatalf("mosquitto_passwd is needed to write a password file: %v (apt-get install mosquitto)", err)
	}
	path := filepath.Join(dir, "passwd")
	for _, args := range [][]string{
		{"-c", "-b", path, "alice", "s3cret"},            // $7$ PBKDF2-SHA512 (the default)
		{"-H", "sha512", "-b", path, "bob", "hunter2:x"}, // $6$ salted SHA-512
	} {
		if out, err := exec.Command(tool, args...).CombinedOutput(); err != nil {
			t.Fatalf("mosquitto_passwd %v: %v: %s", args, err, out)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "alice:$7$") || !strings.Contains(string(data), "bob:$6$") {
		t.Fatalf("unexpected password file:\n%s", data)
	}
	return path
}

func TestPasswordFile(t *testing.T) {
	dir := t.TempDir()
	pw := writePasswords(t, dir)
	if err := (Config{Listen: ":1883", PasswordFile: pw}).Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	b := startBroker(t, Config{PasswordFile: pw})
	for _, ok := range []clientOpts{
		{clean: true, user: "alice", password: "s3cret"},
		{clean: true, user: "bob", password: "hunter2:x"},
	} {
		if _, err := dial(t, b.URL(), "ok-"+ok.user, ok); err != nil {
			t.Errorf("%s refused: %v", ok.user, err)
		}
	}
	user, pw := b.Credentials()
	if _, err := dial(t, b.URL(), "daemon", clientOpts{clean: true, user: user, password: pw}); err != nil {
		t.Errorf("Credentials() refused: %v", err)
	}
	for i, bad := range []clientOpts{
		{clean: true}, // anonymous
		{clean: true, user: "alice", password: "s3cre"}, // wrong password
		{clean: true, user: "alice", password: ""},
		{clean: true, user: "mallory", password: "s3cret"}, // unknown user
		{clean: true, user: user, password: pw + "x"},
	} {
		// Like Mosquitto, mochi answers MQTT 3.1.1 clients "not authorised".
		_, err := dial(t, b.URL(), fmt.Sprint("bad", i), bad)
		if !errors.Is(err, packets.ErrorRefusedNotAuthorised) {
			t.Errorf("case %d (%q/%q): got %v, want not authorised", i, bad.user, bad.password, err)
		}
	}
}

func TestPasswordFileErrors(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"plain":   "alice:secret\n",
		"argon":   "alice:$argon2id$v=19$m=65536,t=3,p=1$c2FsdA$aGFzaA\n",
		"noColon": "alice\n",
		"empty":   "# nobody\n\n",
		"dup":     "a:$6$c2FsdA==$" + strings.Repeat("A", 86) + "==\na:$6$c2FsdA==$" + strings.Repeat("A", 86) + "==\n",
		"iter":    "a:$7$0$c2FsdA==$" + strings.Repeat("A", 86) + "==\n",
		"short":   "a:$6$c2FsdA==$AAAA\n",
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := (Config{PasswordFile: path}).Check(); err == nil {
			t.Errorf("%s: Check accepted it", name)
		}
		b, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", PasswordFile: path, Logger: testLogger()})
		if err == nil {
			b.Close()
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
	if _, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", PasswordFile: filepath.Join(dir, "missing")}); err == nil {
		t.Error("missing password file accepted")
	}
}

func TestStartErrors(t *testing.T) {
	b := startBroker(t, Config{Dir: t.TempDir()})
	// The port is taken.
	if b2, err := Start(context.Background(), Config{Listen: b.Addr(), Logger: testLogger()}); err == nil {
		b2.Close()
		t.Fatal("second broker on the same port started")
	} else if !strings.Contains(err.Error(), b.Addr()) {
		t.Errorf("error %q does not name the address", err)
	}
	if _, err := Start(context.Background(), Config{Listen: "1883", Logger: testLogger()}); err == nil {
		t.Error("listen address without a colon accepted")
	}
	if err := (Config{Listen: "1883"}).Check(); err == nil {
		t.Error("Check accepted a listen address without a colon")
	}
	if err := (Config{}).Check(); err != nil {
		t.Errorf("Check of the defaults: %v", err)
	}
}

func TestStoreLocked(t *testing.T) {
	dir := t.TempDir()
	startBroker(t, Config{Dir: dir})
	b2, err := Start(context.Background(), Config{Listen: "127.0.0.1:0", Dir: dir, Logger: testLogger()})
	if err == nil {
		b2.Close()
		t.Fatal("a second broker opened the same store")
	}
	if !strings.Contains(err.Error(), "locked") {
		t.Fatalf("error %q does not say the store is locked", err)
	}
}

func TestContextStopsBroker(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	b, err := Start(ctx, Config{Listen: "127.0.0.1:0", Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	lost := make(chan error, 1)
	connect(t, b.URL(), "c", clientOpts{clean: true, lost: lost})
	cancel()
	select {
	case <-lost:
	case <-time.After(guard):
		t.Fatal("client still connected after the context was cancelled")
	}
	select {
	case <-b.Done():
	case <-time.After(guard):
		t.Fatal("Done not closed after the context was cancelled")
	}
	if _, err := net.DialTimeout("tcp", b.Addr(), time.Second); err == nil {
		t.Fatal("broker still listening after the context was cancelled")
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close after the context stopped it: %v", err)
	}
}

// TestDaemonClient runs edgellm's own MQTT client against the embedded
// broker with the broker's local credentials: it connects, publishes its
// retained "online", and its will marks it offline when it vanishes.
func TestDaemonClient(t *testing.T) {
	dir := t.TempDir()
	b := startBroker(t, Config{PasswordFile: writePasswords(t, dir), Dir: filepath.Join(dir, "state")})
	user, pw := b.Credentials()
	pwFile := filepath.Join(dir, "local-password")
	if err := os.WriteFile(pwFile, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	watch := connect(t, b.URL(), "watch", clientOpts{clean: true, user: "alice", password: "s3cret"})
	watch.subscribe("edgellm/pi1/#", 1)

	c, err := mqtt.NewClient(mqtt.ClientConfig{
		Broker: b.URL(), ClientID: mqtt.ClientID("pi1"), Username: user, PasswordFile: pwFile,
		Availability:  "edgellm/pi1/availability",
		Subscriptions: map[string]byte{"edgellm/pi1/request": 1},
		Logger:        testLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := c.Connect(ctx); err != nil {
		t.Fatalf("daemon client: %v", err)
	}
	watch.expect("edgellm/pi1/availability", mqtt.Online)
	watch.publish("edgellm/pi1/request", 1, false, "hello")
	// The broker sends a new subscription's retained messages after its
	// SUBACK; when "online" is published in between, the watcher gets it
	// live and as retained (in either order), which MQTT allows.
	m := watch.next()
	if m.Topic() == "edgellm/pi1/availability" && string(m.Payload()) == mqtt.Online {
		m = watch.next()
	}
	if m.Topic() != "edgellm/pi1/request" || string(m.Payload()) != "hello" {
		t.Fatalf("got %s %q, want edgellm/pi1/request \"hello\"", m.Topic(), m.Payload())
	}
	select {
	case m := <-c.Messages():
		if m.Topic != "edgellm/pi1/request" || string(m.Payload) != "hello" {
			t.Fatalf("daemon got %s %q", m.Topic, m.Payload)
		}
		m.Ack()
	case <-time.After(guard):
		t.Fatal("the daemon client got no request")
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	watch.expect("edgellm/pi1/availability", mqtt.Offline)
}
