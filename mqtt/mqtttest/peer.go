package mqtttest

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
)

// Received is a message a Peer got.
type Received struct {
	Topic    string // the topic it was published to
	Payload  string // the payload
	QoS      byte   // the delivery QoS
	Retained bool   // delivered from the retained store on subscribing
}

// Peer is a plain clean-session Paho client on the broker's plain listener:
// the test's side of a conversation (a device sending requests, Home
// Assistant reading states, a fresh subscriber checking retained messages).
type Peer struct {
	t    testing.TB
	c    paho.Client
	msgs chan Received
}

// PeerOptions configures a Peer.
type PeerOptions struct {
	// Username and Password authenticate (brokers with Options.Users).
	Username, Password string
}

// nextPeerID returns a client id no other peer of this broker has.
func (b *Broker) nextPeerID() string {
	return fmt.Sprintf("mqtttest-peer-%d-%d", b.Port, atomic.AddInt64(&b.peers, 1))
}

// Peer connects a new peer and registers its disconnection with t.Cleanup.
func (b *Broker) Peer(t testing.TB, opts PeerOptions) *Peer {
	t.Helper()
	p := &Peer{t: t, msgs: make(chan Received, 1000)}
	o := paho.NewClientOptions().AddBroker(b.URL()).SetClientID(b.nextPeerID()).
		SetCleanSession(true).SetProtocolVersion(4).SetAutoReconnect(false).
		SetConnectTimeout(5 * time.Second).SetOrderMatters(true).
		SetDefaultPublishHandler(func(_ paho.Client, m paho.Message) {
			r := Received{Topic: m.Topic(), Payload: string(m.Payload()), QoS: m.Qos(), Retained: m.Retained()}
			select {
			case p.msgs <- r:
			default:
				t.Errorf("mqtttest: peer inbox full, dropped %s", r.Topic)
			}
		})
	if opts.Username != "" {
		o.SetUsername(opts.Username).SetPassword(opts.Password)
	}
	p.c = paho.NewClient(o)
	if tok := p.c.Connect(); !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		t.Fatalf("mqtttest: peer connect: %v", tok.Error())
	}
	t.Cleanup(func() { p.c.Disconnect(0) })
	return p
}

// Subscribe subscribes to filter and waits for the SUBACK; retained messages
// on matching topics arrive right after.
func (p *Peer) Subscribe(filter string, qos byte) {
	p.t.Helper()
	tok := p.c.Subscribe(filter, qos, nil)
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		p.t.Fatalf("mqtttest: peer subscribe %s: %v", filter, tok.Error())
	}
}

// Publish publishes and waits until the broker has the message (for QoS 1,
// its PUBACK).
func (p *Peer) Publish(topic string, qos byte, retain bool, payload string) {
	p.t.Helper()
	tok := p.c.Publish(topic, qos, retain, payload)
	if !tok.WaitTimeout(10*time.Second) || tok.Error() != nil {
		p.t.Fatalf("mqtttest: peer publish %s: %v", topic, tok.Error())
	}
}

// Next returns the next message, failing the test if none arrives within
// the time limit (a guard against a hung test, not a synchronisation).
func (p *Peer) Next(within time.Duration) Received {
	p.t.Helper()
	select {
	case r := <-p.msgs:
		return r
	case <-time.After(within):
		p.t.Fatalf("mqtttest: peer got no message within %v", within)
		return Received{}
	}
}

// Disconnect disconnects the peer cleanly.
func (p *Peer) Disconnect() { p.c.Disconnect(0) }
