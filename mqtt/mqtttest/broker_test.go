package mqtttest

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"strconv"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

func sessionClient(t *testing.T, b *Broker, id string, got chan<- string) paho.Client {
	t.Helper()
	o := paho.NewClientOptions().AddBroker(b.URL()).SetClientID(id).SetCleanSession(false).
		SetProtocolVersion(4).SetAutoReconnect(false).SetConnectTimeout(5 * time.Second).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) { got <- string(m.Payload()) })
	c := paho.NewClient(o)
	if tok := c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("connect %s: %v", id, tok.Error())
	}
	return c
}

func TestRestartKeepsRetainedMessagesAndSessions(t *testing.T) {
	b := Start(t, Options{})
	got := make(chan string, 10)
	s := sessionClient(t, b, "sess", got)
	if tok := s.Subscribe("t/q", 1, nil); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatal(tok.Error())
	}
	s.Disconnect(0)

	p := b.Peer(t, PeerOptions{})
	p.Publish("t/retained", 1, true, "kept")
	p.Publish("t/q", 1, false, "queued for sess")
	p.Disconnect()

	b.Restart()

	s = sessionClient(t, b, "sess", got)
	defer s.Disconnect(0)
	select {
	case m := <-got:
		if m != "queued for sess" {
			t.Errorf("session got %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the queued message did not survive the broker restart")
	}
	fresh := b.Peer(t, PeerOptions{})
	fresh.Subscribe("t/retained", 1)
	if r := fresh.Next(10 * time.Second); r.Payload != "kept" || !r.Retained {
		t.Errorf("retained after restart: %+v", r)
	}
}

func TestKillAndStart(t *testing.T) {
	b := Start(t, Options{})
	b.Kill()
	if c, err := net.DialTimeout("tcp", b.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatal("broker still accepts connections after Kill")
	}
	b.Start()
	c, err := net.DialTimeout("tcp", b.Addr(), time.Second)
	if err != nil {
		t.Fatalf("after Start: %v", err)
	}
	c.Close()
	if b.Log() == "" {
		t.Error("empty mosquitto log")
	}
}

func TestPasswordsAndTLS(t *testing.T) {
	b := Start(t, Options{Users: map[string]string{"u": "right"}, TLS: true})

	wrong := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("w").SetProtocolVersion(4).
		SetUsername("u").SetPassword("wrong").SetConnectTimeout(5 * time.Second))
	if tok := wrong.Connect(); tok.WaitTimeout(10*time.Second) && tok.Error() == nil {
		wrong.Disconnect(0)
		t.Fatal("connected with a wrong password")
	}
	anon := paho.NewClient(paho.NewClientOptions().AddBroker(b.URL()).SetClientID("a").SetProtocolVersion(4).
		SetConnectTimeout(5 * time.Second))
	if tok := anon.Connect(); tok.WaitTimeout(10*time.Second) && tok.Error() == nil {
		anon.Disconnect(0)
		t.Fatal("connected anonymously to a broker with users")
	}
	p := b.Peer(t, PeerOptions{Username: "u", Password: "right"})
	p.Publish("x", 1, false, "ok")

	pem, err := os.ReadFile(b.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		t.Fatal("CA file holds no certificate")
	}
	for _, host := range []string{"localhost", "127.0.0.1"} {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp",
			net.JoinHostPort("127.0.0.1", strconv.Itoa(b.TLSPort)), &tls.Config{RootCAs: pool, ServerName: host})
		if err != nil {
			t.Fatalf("TLS handshake as %s: %v", host, err)
		}
		conn.Close()
	}
	if b.TLSURL() != "ssl://localhost:"+strconv.Itoa(b.TLSPort) {
		t.Errorf("TLSURL %s", b.TLSURL())
	}
}
