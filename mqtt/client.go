package mqtt

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// ClientID is the MQTT client id of node: "edgellm-<node>". It must be
// stable across restarts so the broker keeps the persistent session.
func ClientID(node string) string { return "edgellm-" + node }

// ClientConfig configures a Client.
type ClientConfig struct {
	// Broker is the broker URL (see NormalizeBrokerURL).
	Broker string
	// ClientID identifies the persistent session (see ClientID).
	ClientID string
	// Username and PasswordFile authenticate; the file's trailing newline is
	// ignored. Both empty means anonymous.
	Username     string
	PasswordFile string
	// Password is used instead of PasswordFile when that is empty.
	Password string
	// CAFile, CertFile and KeyFile are PEM files for TLS: the CA that signs
	// the broker (empty = system roots) and an optional client certificate.
	CAFile, CertFile, KeyFile string
	// Availability is the topic of the retained "online"/"offline" state; the
	// will message publishes "offline" there when the connection dies.
	Availability string
	// Subscriptions maps topic filters to QoS. They are (re)subscribed on
	// every connection.
	Subscriptions map[string]byte
	// KeepAlive is the MQTT keep-alive (default 30s).
	KeepAlive time.Duration
	// ConnectTimeout bounds one connection attempt (default 10s).
	ConnectTimeout time.Duration
	// MaxReconnectInterval caps the backoff between reconnection attempts
	// (default 30s).
	MaxReconnectInterval time.Duration
	// InboxLimit is how many received messages may wait for the consumer
	// before new ones are dropped unacknowledged (default 1024). With QoS 1
	// and manual acks the broker bounds this by its in-flight window anyway.
	InboxLimit int
	// BeforeOnline, when set, is called after each successful connection
	// once the subscriptions are in place and before "online" is published:
	// what it publishes (at QoS 1, waiting for the broker's PUBACK) is on
	// the broker before "online", so a subscriber that sees "online" also
	// finds it (the retained status). It runs on a connection goroutine.
	BeforeOnline func(ctx context.Context, c *Client)
	// OnReady, when set, is called after each successful connection once
	// "online" is published and the subscriptions are in place; n counts
	// connections from 1. It runs on a connection goroutine: do not block.
	OnReady func(n int)
	// OnConnectionLost, when set, is called when an established connection
	// drops (the client then reconnects by itself). Do not block in it.
	OnConnectionLost func(err error)
	// Logger receives connection events; nil means slog.Default().
	Logger *slog.Logger
}

// Message is a received message. Call Ack once it is handled: QoS 1
// messages that are not acknowledged are delivered again (Duplicate set)
// after the next reconnection, so a crash never loses a request; the
// consumer must therefore recognise ids it has already answered.
type Message struct {
	Topic     string // the topic it was published to (for $share subscriptions, the real topic)
	Payload   []byte // the payload as received
	QoS       byte   // the delivery QoS
	Retained  bool   // a retained message delivered on subscribing
	Duplicate bool   // a redelivery of a message not acknowledged before
	// PacketID is the MQTT packet identifier of a QoS 1 or 2 delivery (0 for
	// QoS 0). A broker re-sends an unacknowledged message with its original
	// packet identifier and Duplicate set.
	PacketID uint16
	ack      func()
}

// Ack acknowledges the message to the broker. It is safe to call more than
// once and on messages that need no acknowledgement.
func (m Message) Ack() {
	if m.ack != nil {
		m.ack()
	}
}

// Client is an MQTT connection with a persistent session (clean session off),
// a will that marks the node offline, automatic reconnection with backoff,
// and resubscription on every connection. Received messages are handed to a
// channel by a goroutine of the client's own, never processed on Paho's.
type Client struct {
	cfg  ClientConfig
	log  *slog.Logger
	paho paho.Client

	setupResult chan error // first result of onConnect's setup, for Connect

	mu       sync.Mutex
	subs     map[string]byte
	inbox    []Message
	ready    int
	closed   bool
	wake     chan struct{}
	out      chan Message
	done     chan struct{}
	pumpDone chan struct{}
}

// Defaults for ClientConfig's zero values.
const (
	defaultKeepAlive      = 30 * time.Second
	defaultConnectTimeout = 10 * time.Second
	defaultMaxReconnect   = 30 * time.Second
	defaultInboxLimit     = 1024
)

// NewClient reads the password and TLS files and prepares the client; it
// does not connect (see Connect).
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Broker == "" || cfg.ClientID == "" || cfg.Availability == "" {
		return nil, errors.New("mqtt: client: Broker, ClientID and Availability are required")
	}
	if cfg.KeepAlive <= 0 {
		cfg.KeepAlive = defaultKeepAlive
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = defaultConnectTimeout
	}
	if cfg.MaxReconnectInterval <= 0 {
		cfg.MaxReconnectInterval = defaultMaxReconnect
	}
	if cfg.InboxLimit <= 0 {
		cfg.InboxLimit = defaultInboxLimit
	}
	c := &Client{
		cfg:         cfg,
		log:         cfg.Logger,
		setupResult: make(chan error, 1),
		subs:        map[string]byte{},
		wake:        make(chan struct{}, 1),
		out:         make(chan Message),
		done:        make(chan struct{}),
		pumpDone:    make(chan struct{}),
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("broker", cfg.Broker, "client_id", cfg.ClientID)
	for t, q := range cfg.Subscriptions {
		c.subs[t] = q
	}

	opts := paho.NewClientOptions().
		AddBroker(cfg.Broker).
		SetClientID(cfg.ClientID).
		SetProtocolVersion(4).
		SetCleanSession(false).
		SetStore(copyingStore{paho.NewMemoryStore()}).
		SetAutoAckDisabled(true).
		SetOrderMatters(true).
		SetKeepAlive(cfg.KeepAlive).
		SetConnectTimeout(cfg.ConnectTimeout).
		SetWriteTimeout(cfg.ConnectTimeout).
		SetAutoReconnect(true).
		SetConnectRetry(false).
		SetMaxReconnectInterval(cfg.MaxReconnectInterval).
		SetBinaryWill(cfg.Availability, []byte(Offline), 1, true).
		SetDefaultPublishHandler(c.onMessage).
		SetOnConnectHandler(c.onConnect).
		SetConnectionLostHandler(c.onConnectionLost)
	if cfg.Username != "" {
		opts.SetUsername(cfg.Username)
	}
	if cfg.PasswordFile != "" {
		pw, err := readPassword(cfg.PasswordFile, c.log)
		if err != nil {
			return nil, err
		}
		opts.SetPassword(pw)
	} else if cfg.Password != "" {
		opts.SetPassword(cfg.Password)
	}
	tlsCfg, err := loadTLS(cfg)
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		opts.SetTLSConfig(tlsCfg)
	}
	c.paho = paho.NewClient(opts)
	go c.pump()
	return c, nil
}

// readPassword reads a password file, dropping the trailing newline.
func readPassword(path string, log *slog.Logger) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("mqtt: password file: %w", err)
	}
	pw := strings.TrimRight(string(data), "\r\n")
	if pw == "" {
		return "", fmt.Errorf("mqtt: password file %s is empty", path)
	}
	if st, err := os.Stat(path); err == nil && st.Mode().Perm()&0o077 != 0 {
		log.Warn("the MQTT password file is readable by other users; chmod 600 it", "file", path, "mode", st.Mode().Perm().String())
	}
	return pw, nil
}

// loadTLS builds the TLS configuration from the CA and client certificate
// files, or returns nil when the broker URL is not encrypted and no file is
// set.
func loadTLS(cfg ClientConfig) (*tls.Config, error) {
	secure := strings.HasPrefix(cfg.Broker, "ssl://") || strings.HasPrefix(cfg.Broker, "wss://")
	if !secure && cfg.CAFile == "" && cfg.CertFile == "" && cfg.KeyFile == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt: tls ca: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("mqtt: tls ca: no PEM certificate in %s", cfg.CAFile)
		}
		t.RootCAs = pool
	}
	if (cfg.CertFile == "") != (cfg.KeyFile == "") {
		return nil, errors.New("mqtt: tls: a client certificate needs both the cert and the key file")
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("mqtt: tls client certificate: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// Connect connects to the broker, publishes "online" (retained) and
// subscribes, returning once all of that is done. Unreachable brokers are
// retried with backoff until ctx is done; a refusal that retrying cannot fix
// (bad credentials, not authorised, a TLS certificate problem) is returned
// at once. After Connect succeeds the client reconnects by itself.
func (c *Client) Connect(ctx context.Context) error {
	backoff := 250 * time.Millisecond
	var lastErr error
	for {
		select { // drop a stale result of an earlier attempt
		case <-c.setupResult:
		default:
		}
		err := c.connectOnce(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() == nil {
			lastErr = err
			if permanent(err) {
				return c.explain(err)
			}
			c.log.Warn("MQTT connection failed; retrying", "err", err, "in", backoff)
			timer := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				timer.Stop()
			case <-timer.C:
			}
			backoff = min(backoff*2, c.cfg.MaxReconnectInterval)
		}
		if ctx.Err() != nil {
			if lastErr == nil {
				return fmt.Errorf("mqtt: connect to %s: %w", c.cfg.Broker, ctx.Err())
			}
			return fmt.Errorf("mqtt: connect to %s: %w (last error: %v)", c.cfg.Broker, ctx.Err(), lastErr)
		}
	}
}

func (c *Client) connectOnce(ctx context.Context) error {
	tok := c.paho.Connect()
	select {
	case <-tok.Done():
	case <-ctx.Done():
		return ctx.Err()
	}
	if err := tok.Error(); err != nil {
		return err
	}
	select {
	case err := <-c.setupResult:
		if err != nil {
			c.paho.Disconnect(0)
			return err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errSubscribeRefused marks a SUBACK failure (usually the broker's ACL).
var errSubscribeRefused = errors.New("the broker refused the subscription")

// permanent reports whether retrying the connection cannot help.
func permanent(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verifyErr *tls.CertificateVerificationError
	return errors.Is(err, packets.ErrorRefusedBadUsernameOrPassword) ||
		errors.Is(err, packets.ErrorRefusedNotAuthorised) ||
		errors.Is(err, packets.ErrorRefusedIDRejected) ||
		errors.Is(err, packets.ErrorRefusedBadProtocolVersion) ||
		errors.Is(err, errSubscribeRefused) ||
		errors.As(err, &unknownCA) || errors.As(err, &hostErr) || errors.As(err, &invalid) || errors.As(err, &verifyErr)
}

// explain wraps a permanent connection error with what to check.
func (c *Client) explain(err error) error {
	var hint string
	switch {
	case errors.Is(err, packets.ErrorRefusedBadUsernameOrPassword), errors.Is(err, packets.ErrorRefusedNotAuthorised):
		hint = "check mqtt.username and mqtt.password_file"
	case errors.Is(err, packets.ErrorRefusedIDRejected):
		hint = "the broker rejected client id " + c.cfg.ClientID + "; check mqtt.node_id"
	case errors.Is(err, errSubscribeRefused):
		hint = "check the broker's ACL for this user"
	default:
		hint = "check mqtt.tls.ca and that the broker's certificate names the host in mqtt.broker"
	}
	return fmt.Errorf("mqtt: connect to %s refused: %w (%s)", c.cfg.Broker, err, hint)
}

// onConnect runs (on its own goroutine, started by Paho) after every
// successful connection: subscribe, BeforeOnline, then publish "online".
func (c *Client) onConnect(paho.Client) {
	err := c.setup()
	select {
	case c.setupResult <- err:
	default:
	}
	if err == nil {
		return
	}
	c.log.Error("MQTT setup after connecting failed", "err", err)
	// A later (re)connection retries the setup; only Connect's first
	// attempt gives up on a refused subscription.
}

// setup subscribes to the current subscriptions, runs BeforeOnline and
// publishes online.
func (c *Client) setup() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ConnectTimeout)
	defer cancel()
	c.mu.Lock()
	subs := make(map[string]byte, len(c.subs))
	for t, q := range c.subs {
		subs[t] = q
	}
	c.mu.Unlock()
	// Subscribe first: a device that sees "online" may publish at once.
	if err := c.subscribe(ctx, subs); err != nil {
		return err
	}
	if c.cfg.BeforeOnline != nil {
		c.cfg.BeforeOnline(ctx, c)
	}
	if err := c.Publish(ctx, c.cfg.Availability, 1, true, []byte(Online)); err != nil {
		return err
	}
	c.mu.Lock()
	c.ready++
	n := c.ready
	c.mu.Unlock()
	c.log.Info("MQTT connected and subscribed", "connection", n, "subscriptions", len(subs))
	if c.cfg.OnReady != nil {
		c.cfg.OnReady(n)
	}
	return nil
}

// subscribe subscribes to filters (without a per-topic callback: every
// message goes through onMessage, including those the broker sends from the
// persistent session before the SUBSCRIBE is done).
func (c *Client) subscribe(ctx context.Context, filters map[string]byte) error {
	if len(filters) == 0 {
		return nil
	}
	tok := c.paho.SubscribeMultiple(filters, nil)
	if err := wait(ctx, tok); err != nil {
		return fmt.Errorf("mqtt: subscribe: %w", err)
	}
	if st, ok := tok.(*paho.SubscribeToken); ok {
		for topic, code := range st.Result() {
			if code == 0x80 {
				return fmt.Errorf("mqtt: subscribe %s: %w", topic, errSubscribeRefused)
			}
		}
	}
	return nil
}

// wait waits for a Paho token or ctx.
func wait(ctx context.Context, tok paho.Token) error {
	select {
	case <-tok.Done():
		return tok.Error()
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *Client) onConnectionLost(_ paho.Client, err error) {
	c.log.Warn("MQTT connection lost; reconnecting", "err", err)
	if c.cfg.OnConnectionLost != nil {
		c.cfg.OnConnectionLost(err)
	}
}

// onMessage is Paho's handler, called on Paho's router goroutine: it only
// queues the message (never blocks) for pump to deliver.
func (c *Client) onMessage(_ paho.Client, pm paho.Message) {
	m := Message{Topic: pm.Topic(), Payload: pm.Payload(), QoS: pm.Qos(), Retained: pm.Retained(), Duplicate: pm.Duplicate(),
		PacketID: pm.MessageID(), ack: pm.Ack}
	c.mu.Lock()
	if c.closed || len(c.inbox) >= c.cfg.InboxLimit {
		closed := c.closed
		c.mu.Unlock()
		if !closed {
			c.log.Warn("MQTT inbox full; dropping message unacknowledged", "topic", m.Topic, "limit", c.cfg.InboxLimit)
		}
		return
	}
	c.inbox = append(c.inbox, m)
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// pump moves messages from the inbox to the Messages channel in order.
func (c *Client) pump() {
	defer close(c.pumpDone)
	defer close(c.out)
	for {
		c.mu.Lock()
		if len(c.inbox) == 0 {
			c.mu.Unlock()
			select {
			case <-c.wake:
				continue
			case <-c.done:
				return
			}
		}
		m := c.inbox[0]
		c.inbox[0] = Message{}
		c.inbox = c.inbox[1:]
		c.mu.Unlock()
		select {
		case c.out <- m:
		case <-c.done:
			return
		}
	}
}

// Messages returns the channel of received messages, in the order the broker
// sent them. It is closed by Close.
func (c *Client) Messages() <-chan Message { return c.out }

// Publish publishes payload and waits until the broker has it (QoS 1: the
// PUBACK) or ctx is done. While the client is reconnecting, QoS 1 messages
// are kept in the session store and sent once the connection is back (Paho
// then completes the wait when it re-sends them; until the PUBACK they stay
// stored and are re-sent after any further reconnection). QoS 0 messages
// published while disconnected are dropped.
func (c *Client) Publish(ctx context.Context, topic string, qos byte, retain bool, payload []byte) error {
	if err := wait(ctx, c.paho.Publish(topic, qos, retain, payload)); err != nil {
		return fmt.Errorf("mqtt: publish %s: %w", topic, err)
	}
	return nil
}

// SetSubscriptions replaces the subscriptions: filters no longer wanted are
// unsubscribed, new ones subscribed, and the set is what later reconnections
// use. When the client is not connected the change applies on connection.
func (c *Client) SetSubscriptions(ctx context.Context, filters map[string]byte) error {
	c.mu.Lock()
	var gone []string
	for t := range c.subs {
		if _, ok := filters[t]; !ok {
			gone = append(gone, t)
		}
	}
	added := map[string]byte{}
	for t, q := range filters {
		if old, ok := c.subs[t]; !ok || old != q {
			added[t] = q
		}
	}
	c.subs = make(map[string]byte, len(filters))
	for t, q := range filters {
		c.subs[t] = q
	}
	c.mu.Unlock()
	if !c.paho.IsConnectionOpen() {
		return nil
	}
	if len(gone) > 0 {
		if err := wait(ctx, c.paho.Unsubscribe(gone...)); err != nil {
			return fmt.Errorf("mqtt: unsubscribe: %w", err)
		}
	}
	return c.subscribe(ctx, added)
}

// IsConnected reports whether the connection is up right now.
func (c *Client) IsConnected() bool { return c.paho.IsConnectionOpen() }

// Close publishes "offline" (retained) if connected, disconnects cleanly
// (so the broker does not send the will) and closes Messages. The broker
// keeps the session: QoS 1 messages for it are queued until the next
// Connect with the same client id.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var err error
	if c.paho.IsConnectionOpen() {
		err = c.Publish(ctx, c.cfg.Availability, 1, true, []byte(Offline))
	}
	c.paho.Disconnect(250)
	close(c.done)
	<-c.pumpDone
	return err
}
