// Package mqtttest runs a real Mosquitto broker for tests: each test gets its
// own on a free loopback port, from a configuration generated in
// t.TempDir(), optionally with a password file and a TLS listener.
package mqtttest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Options configures a broker.
type Options struct {
	// Users maps user names to passwords. When set, anonymous clients are
	// refused and a password file is generated with mosquitto_passwd.
	Users map[string]string
	// TLS adds a TLS listener (see Broker.TLSURL) with a CA and a server
	// certificate for 127.0.0.1 and localhost generated for the test.
	TLS bool
	// RequireClientCert makes the TLS listener demand a client certificate
	// signed by the test CA (see Broker.ClientCert).
	RequireClientCert bool
}

// Broker is a running Mosquitto. Persistence is on, so Restart keeps the
// sessions and retained messages (Kill may lose what was not saved yet).
type Broker struct {
	t    testing.TB
	dir  string
	conf string
	bin  string
	log  string

	// Port is the plain listener's port, TLSPort the TLS one (0 without TLS).
	Port, TLSPort int
	// CAFile is the test CA's certificate (PEM), when TLS is on.
	CAFile string
	// ServerCertFile and ServerKeyFile are the broker's certificate (for
	// localhost and 127.0.0.1, signed by the test CA) and key, when TLS is
	// on; other servers under test may serve them too.
	ServerCertFile, ServerKeyFile string
	// ClientCertFile and ClientKeyFile are a client certificate signed by
	// the test CA, when TLS is on.
	ClientCertFile, ClientKeyFile string

	peers int64 // atomic: peers started, for unique client ids

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// InstallHint is the message a test fails with when Mosquitto is missing.
const InstallHint = "mosquitto is not installed; the MQTT tests need a real broker: " +
	"apt-get install -y mosquitto mosquitto-clients (Debian/Ubuntu), or put mosquitto and mosquitto_passwd on PATH"

// MosquittoEnv, when set, is the path of the mosquitto binary to use.
const MosquittoEnv = "MOSQUITTO"

// lookPath finds a Mosquitto program: $MOSQUITTO for the broker, else PATH,
// else /usr/sbin (where Debian installs the broker, often not on a normal
// user's PATH).
func lookPath(name string) (string, error) {
	if env := os.Getenv(MosquittoEnv); env != "" && name == "mosquitto" {
		if st, err := os.Stat(env); err != nil || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("$%s=%s is not an executable", MosquittoEnv, env)
		}
		return env, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range []string{"/usr/sbin", "/usr/local/sbin", "/usr/bin"} {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found", name)
}

// Start starts a broker and registers its shutdown with t.Cleanup. It fails
// the test (never skips) when Mosquitto is not installed.
func Start(t testing.TB, opts Options) *Broker {
	t.Helper()
	bin, err := lookPath("mosquitto")
	if err != nil {
		t.Fatalf("mqtttest: %v. %s", err, InstallHint)
	}
	b := &Broker{t: t, dir: t.TempDir(), bin: bin}
	b.log = filepath.Join(b.dir, "mosquitto.log")
	if opts.TLS || opts.RequireClientCert {
		if err := b.writeCerts(); err != nil {
			t.Fatalf("mqtttest: certificates: %v", err)
		}
	}
	var passwd string
	if len(opts.Users) > 0 {
		passwd = filepath.Join(b.dir, "passwd")
		if err := writePasswords(passwd, opts.Users); err != nil {
			t.Fatalf("mqtttest: %v", err)
		}
	}
	// Ports are picked free, then handed to mosquitto; another process could
	// take one in between, so a failed start is retried with new ports.
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		if b.Port, err = freePort(); err != nil {
			t.Fatalf("mqtttest: %v", err)
		}
		if opts.TLS || opts.RequireClientCert {
			if b.TLSPort, err = freePort(); err != nil {
				t.Fatalf("mqtttest: %v", err)
			}
		}
		if err := b.writeConfig(passwd, opts); err != nil {
			t.Fatalf("mqtttest: %v", err)
		}
		if lastErr = b.start(); lastErr == nil {
			t.Cleanup(b.cleanup)
			return b
		}
	}
	t.Fatalf("mqtttest: mosquitto did not start: %v\n%s", lastErr, b.Log())
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func writePasswords(path string, users map[string]string) error {
	tool, err := lookPath("mosquitto_passwd")
	if err != nil {
		return fmt.Errorf("%v. %s", err, InstallHint)
	}
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		return err
	}
	for user, pw := range users {
		out, err := exec.Command(tool, "-b", path, user, pw).CombinedOutput()
		if err != nil {
			return fmt.Errorf("mosquitto_passwd %s: %v: %s", user, err, out)
		}
	}
	return nil
}

func (b *Broker) writeConfig(passwd string, opts Options) error {
	var c strings.Builder
	fmt.Fprintf(&c, "per_listener_settings false\n")
	// As root, mosquitto would switch to the mosquitto user, which cannot
	// read the test's temp dir; "user root" keeps the current user.
	if os.Geteuid() == 0 {
		fmt.Fprintf(&c, "user root\n")
	}
	fmt.Fprintf(&c, "persistence true\npersistence_location %s/\nautosave_interval 1\n", b.dir)
	fmt.Fprintf(&c, "log_dest file %s\nlog_type all\nconnection_messages true\n", b.log)
	fmt.Fprintf(&c, "max_queued_messages 1000\n")
	if passwd != "" {
		fmt.Fprintf(&c, "allow_anonymous false\npassword_file %s\n", passwd)
	} else {
		fmt.Fprintf(&c, "allow_anonymous true\n")
	}
	fmt.Fprintf(&c, "listener %d 127.0.0.1\n", b.Port)
	if b.TLSPort != 0 {
		fmt.Fprintf(&c, "listener %d 127.0.0.1\ncafile %s\ncertfile %s\nkeyfile %s\n",
			b.TLSPort, b.CAFile, b.ServerCertFile, b.ServerKeyFile)
		if opts.RequireClientCert {
			fmt.Fprintf(&c, "require_certificate true\n")
		}
	}
	b.conf = filepath.Join(b.dir, "mosquitto.conf")
	return os.WriteFile(b.conf, []byte(c.String()), 0o600)
}

// start runs mosquitto and waits until its listeners accept connections.
func (b *Broker) start() error {
	cmd := exec.Command(b.bin, "-c", b.conf)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	b.mu.Lock()
	b.cmd, b.exited = cmd, exited
	b.mu.Unlock()

	ports := []int{b.Port}
	if b.TLSPort != 0 {
		ports = append(ports, b.TLSPort)
	}
	deadline := time.Now().Add(10 * time.Second)
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for _, port := range ports {
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		for {
			err := b.ready(addr, port == b.Port)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				_ = cmd.Process.Kill()
				<-exited
				return fmt.Errorf("no listener on %s after 10s: %v; %s", addr, err, stderr.String())
			}
			select {
			case <-exited:
				return fmt.Errorf("mosquitto exited at start: %s", stderr.String())
			case <-poll.C:
			}
		}
	}
	return nil
}

// ready reports whether mosquitto serves addr. On the plain port it waits
// for a CONNACK: the kernel accepts TCP connections as soon as the socket
// listens, before mosquitto's main loop runs, and a SIGTERM that arrives in
// between is lost (mosquitto 2.0 sets its run flag after installing the
// signal handlers), so a broker stopped right after a bare TCP check would
// never stop.
func (b *Broker) ready(addr string, plain bool) error {
	conn, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
	if err != nil {
		return err
	}
	defer conn.Close()
	if !plain {
		return nil
	}
	if err := conn.SetDeadline(time.Now().Add(time.Second)); err != nil {
		return err
	}
	// MQTT 3.1.1 CONNECT: clean session, keep-alive 0, client id
	// "mqtttest-ready", no credentials (a broker that wants them still
	// answers with a refusing CONNACK, which is enough).
	const id = "mqtttest-ready"
	connect := []byte{0x10, byte(10 + 2 + len(id)), 0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 0, 0, byte(len(id))}
	connect = append(connect, id...)
	if _, err := conn.Write(connect); err != nil {
		return err
	}
	ack := make([]byte, 4)
	if _, err := io.ReadFull(conn, ack); err != nil {
		return fmt.Errorf("no CONNACK: %w", err)
	}
	if ack[0] != 0x20 {
		return fmt.Errorf("answer to CONNECT starts with %#x, not CONNACK", ack[0])
	}
	if ack[3] == 0 {
		_, _ = conn.Write([]byte{0xe0, 0}) // DISCONNECT, so no will or session lingers
	}
	return nil
}

// URL is the plain listener's URL, tcp://127.0.0.1:<port>.
func (b *Broker) URL() string { return fmt.Sprintf("tcp://127.0.0.1:%d", b.Port) }

// Addr is the plain listener's host:port.
func (b *Broker) Addr() string { return fmt.Sprintf("127.0.0.1:%d", b.Port) }

// TLSURL is the TLS listener's URL, ssl://localhost:<port> (the server
// certificate names localhost and 127.0.0.1).
func (b *Broker) TLSURL() string { return fmt.Sprintf("ssl://localhost:%d", b.TLSPort) }

// Log returns mosquitto's log so far.
func (b *Broker) Log() string {
	data, _ := os.ReadFile(b.log)
	return string(data)
}

// Stop stops the broker with SIGTERM (it saves its persistence file) and
// waits for it to exit.
func (b *Broker) Stop() {
	b.t.Helper()
	b.signal(syscall.SIGTERM)
}

// Kill stops the broker with SIGKILL, as a crash would.
func (b *Broker) Kill() {
	b.t.Helper()
	b.signal(syscall.SIGKILL)
}

func (b *Broker) signal(sig syscall.Signal) {
	b.mu.Lock()
	cmd, exited := b.cmd, b.exited
	b.mu.Unlock()
	if cmd == nil {
		return
	}
	select {
	case <-exited:
		return
	default:
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		b.t.Fatalf("mqtttest: signal mosquitto: %v", err)
	}
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		b.t.Fatalf("mqtttest: mosquitto ignored %v for 10s", sig)
	}
}

// Restart stops the broker and starts it again on the same ports.
func (b *Broker) Restart() {
	b.t.Helper()
	b.Stop()
	if err := b.start(); err != nil {
		b.t.Fatalf("mqtttest: restart: %v\n%s", err, b.Log())
	}
}

// Start starts a stopped broker again on the same ports.
func (b *Broker) Start() {
	b.t.Helper()
	if err := b.start(); err != nil {
		b.t.Fatalf("mqtttest: start: %v\n%s", err, b.Log())
	}
}

func (b *Broker) cleanup() {
	b.Stop()
	if b.t.Failed() {
		b.t.Logf("mosquitto log:\n%s", b.Log())
	}
}
