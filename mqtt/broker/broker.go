// Package broker runs an MQTT broker inside edgellm, for a Raspberry Pi that
// has no broker yet (mqtt.broker: embedded): devices connect to the Pi
// itself, and the daemon's own client connects to it over loopback.
//
// The broker is github.com/mochi-mqtt/server/v2. It speaks MQTT 3.1.1 (and
// 3.0 and 5), with QoS 0, 1 and 2, retained messages, wills, persistent
// sessions and $share subscriptions. With a state directory, sessions, queued
// QoS 1 messages and retained messages are kept in a bbolt file and survive
// a restart. Clients authenticate against a Mosquitto password file, or
// connect anonymously when there is none.
package broker

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// DefaultListen is the address the broker listens on when Config.Listen is
// empty: MQTT's port on every interface.
const DefaultListen = ":1883"

// StoreFile is the name of the persistence file in Config.Dir.
const StoreFile = "broker.db"

// sysInterval is how often the broker refreshes its $SYS topics, in
// seconds (Mosquitto's default).
const sysInterval = 10

// storeLockTimeout is how long Start waits for another process holding the
// store file before failing.
const storeLockTimeout = time.Second

// Config configures a broker.
type Config struct {
	// Listen is the TCP address to accept MQTT connections on, host:port
	// (default DefaultListen; ":0" picks a free port).
	Listen string
	// PasswordFile is a Mosquitto password file (see mosquitto_passwd):
	// when set, only the users in it may connect. Empty means anonymous
	// clients are accepted.
	PasswordFile string
	// Dir is where sessions, queued messages and retained messages are kept
	// across restarts (file StoreFile, created with the directory if
	// missing). Empty means they live in memory only.
	Dir string
	// Logger receives the broker's log; nil means slog.Default().
	Logger *slog.Logger
}

// Broker is a running embedded broker.
type Broker struct {
	srv       *mochi.Server
	addr      string
	url       string
	localUser string
	localPass string

	stopOnce sync.Once
	stopped  chan struct{}
}

// Start opens the store, starts listening and returns once the broker
// accepts connections. The broker runs until ctx is done or Close is
// called. A daemon that connects its own client should stop the broker
// after that client's Close (so its "offline" goes out), e.g. by passing
// context.Background() and calling Close last.
func Start(ctx context.Context, cfg Config) (*Broker, error) {
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	users, err := cfg.check()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("component", "mqtt-broker")
	auth := &authHook{users: users, localUser: "edgellm-local-" + randomHex(4), localPass: []byte(randomHex(16))}

	caps := mochi.NewDefaultServerCapabilities()
	// Mochi drops retained and queued messages older than this (24 h by
	// default) even for MQTT 3.1.1 clients; Mosquitto keeps them, and Home
	// Assistant relies on retained availability and discovery messages.
	caps.MaximumMessageExpiryInterval = 0
	srv := mochi.New(&mochi.Options{
		Capabilities:           caps,
		Logger:                 log,
		SysTopicResendInterval: sysInterval,
	})
	if err := srv.AddHook(auth, nil); err != nil {
		return nil, fmt.Errorf("broker: auth: %w", err)
	}
	if cfg.Dir != "" {
		if err := addStore(srv, cfg.Dir); err != nil {
			return nil, err
		}
	}
	tcp := listeners.NewTCP(listeners.Config{ID: "tcp", Address: cfg.Listen})
	if err := srv.AddListener(tcp); err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("broker: listen on %s: %w", cfg.Listen, err)
	}
	if err := srv.Serve(); err != nil {
		_ = srv.Close()
		return nil, fmt.Errorf("broker: start: %w", err)
	}
	b := &Broker{
		srv:       srv,
		addr:      tcp.Address(),
		localUser: auth.localUser,
		localPass: string(auth.localPass),
		stopped:   make(chan struct{}),
	}
	b.url = localURL(b.addr)
	go func() {
		select {
		case <-ctx.Done():
			_ = b.Close()
		case <-b.stopped:
		}
	}()
	return b, nil
}

// Check validates cfg without starting anything (for `serve --check`):
// the listen address and the password file.
func (c Config) Check() error {
	_, err := c.check()
	return err
}

// check validates cfg and returns the password file's users (nil for
// anonymous access).
func (c Config) check() (map[string]passwordHash, error) {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return nil, fmt.Errorf("broker: listen address %q: %v (want host:port, e.g. %s)", c.Listen, err, DefaultListen)
	}
	if c.PasswordFile == "" {
		return nil, nil
	}
	return readPasswordFile(c.PasswordFile)
}

// localURL is the URL a client on this machine uses to reach a listener
// on addr: an unspecified host (all interfaces) becomes 127.0.0.1.
func localURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "tcp://" + addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "tcp://" + net.JoinHostPort(host, port)
}

// URL is the broker URL for a client on this machine, such as the daemon's
// own: tcp://127.0.0.1:<port> when listening on every interface.
func (b *Broker) URL() string { return b.url }

// Addr is the address the broker listens on, host:port, with the port
// resolved when Config.Listen asked for ":0".
func (b *Broker) Addr() string { return b.addr }

// Credentials returns a user name and password, made up at Start, that this
// broker accepts besides the password file's users: the daemon's own client
// uses them so it needs no entry in the file. They are never written
// anywhere; with anonymous access they are accepted like any other.
func (b *Broker) Credentials() (username, password string) { return b.localUser, b.localPass }

// Close disconnects the clients, stops listening and closes the store.
// Sessions and retained messages stay in the store for the next Start.
// Whether the cut-off clients' wills are published is left to mochi's
// timing (usually they are not), so a client that must leave a retained
// state, like the daemon's own "offline", should publish it and disconnect
// before Close. Close is safe to call more than once.
func (b *Broker) Close() error {
	var err error
	b.stopOnce.Do(func() {
		err = b.srv.Close()
		close(b.stopped)
	})
	return err
}

// Done is closed once the broker has stopped: its listener is closed and
// its clients are cut off, whether by Close or by Start's context.
func (b *Broker) Done() <-chan struct{} { return b.stopped }

// authHook checks connections against the password file (or lets everyone
// in when there is none) and allows every topic to connected clients.
type authHook struct {
	mochi.HookBase
	users     map[string]passwordHash // nil: anonymous access
	localUser string
	localPass []byte
}

// ID names the hook in mochi's log.
func (h *authHook) ID() string { return "edgellm-auth" }

// Provides reports the hook methods implemented.
func (h *authHook) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}

// OnConnectAuthenticate accepts the local credentials, and either anyone
// (no password file) or the users of the file with their password.
func (h *authHook) OnConnectAuthenticate(cl *mochi.Client, pk packets.Packet) bool {
	user := string(pk.Connect.Username)
	if user == h.localUser {
		return subtle.ConstantTimeCompare(pk.Connect.Password, h.localPass) == 1
	}
	if h.users == nil {
		return true
	}
	if hash, ok := h.users[user]; ok && hash.matches(pk.Connect.Password) {
		return true
	}
	h.Log.Warn("MQTT client refused: bad user name or password", "client_id", cl.ID, "username", user, "remote", cl.Net.Remote)
	return false
}

// OnACLCheck allows every topic: authenticated clients are trusted.
func (h *authHook) OnACLCheck(*mochi.Client, string, bool) bool { return true }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}
