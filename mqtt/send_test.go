package mqtt

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// sendResult is what a Send running in the background ended with.
type sendResult struct {
	final  *Final
	err    error
	pieces []string // OnText's arguments, in order
}

// startSend runs Send against node pi1 on b and returns its result channel.
func startSend(ctx context.Context, t *testing.T, url string, mod func(*SendConfig), req Request) <-chan sendResult {
	t.Helper()
	tp, err := NewTopics("edgellm", "pi1")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan sendResult, 1)
	var pieces []string
	cfg := SendConfig{Broker: url, Topics: tp, Logger: quietLogger(), OnText: func(s string) { pieces = append(pieces, s) }}
	if mod != nil {
		mod(&cfg)
	}
	go func() {
		f, err := Send(ctx, cfg, req)
		done <- sendResult{f, err, pieces}
	}()
	return done
}

// fakeNode is the test's stand-in for a daemon: it reads requests and
// publishes chunks and answers by hand.
type fakeNode struct {
	t *testing.T
	*mqtttest.Peer
}

func newFakeNode(t *testing.T, b *mqtttest.Broker, opts mqtttest.PeerOptions) *fakeNode {
	n := &fakeNode{t, b.Peer(t, opts)}
	n.Subscribe("edgellm/pi1/request", 1)
	n.Subscribe("edgellm/pi1/cancel", 1)
	return n
}

// request waits for the next request and decodes it.
func (n *fakeNode) request() Request {
	n.t.Helper()
	m := n.Next(guard)
	if m.Topic != "edgellm/pi1/request" || m.QoS != 1 {
		n.t.Fatalf("got %s at QoS %d, want a request at QoS 1", m.Topic, m.QoS)
	}
	r, err := ParseRequest([]byte(m.Payload), RequestLimits{MaxBytes: 1 << 16, MaxTokens: 512})
	if err != nil {
		n.t.Fatalf("request %s: %v", m.Payload, err)
	}
	return *r
}

func (n *fakeNode) chunk(id string, seq int, text string) {
	n.t.Helper()
	b, _ := json.Marshal(StreamChunk{ID: id, Seq: seq, Text: text})
	n.Publish("edgellm/pi1/response/"+id+"/stream", 0, false, string(b))
}

func (n *fakeNode) final(f Final) {
	n.t.Helper()
	b, _ := json.Marshal(f)
	n.Publish("edgellm/pi1/response/"+f.ID, 1, false, string(b))
}

func wantResult(t *testing.T, done <-chan sendResult) sendResult {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(guard):
		t.Fatal("Send did not return")
		return sendResult{}
	}
}

func TestSendStreamsInOrder(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	node := newFakeNode(t, b, mqtttest.PeerOptions{})
	maxTokens, temp := 20, 0.0
	done := startSend(context.Background(), t, b.URL(), nil, Request{Request: api.Request{Prompt: "Say hello", MaxTokens: &maxTokens, Temperature: &temp}})

	req := node.request()
	if !req.Stream || req.GeneratedID || req.Prompt != "Say hello" || *req.MaxTokens != 20 || *req.Temperature != 0 {
		t.Fatalf("request %+v", req)
	}
	// Chunks out of order, one twice, and a stray one for another request.
	node.chunk(req.ID, 1, "world")
	node.chunk(req.ID, 0, "Hello ")
	node.chunk(req.ID, 0, "Hello ")
	node.chunk("other", 2, "!!!")
	node.chunk(req.ID, 2, "!")
	node.final(Final{ID: req.ID, Status: StatusOK, Text: "Hello world!", FinishReason: api.FinishStop,
		Usage: &api.Usage{PromptTokens: 3, CompletionTokens: 4}})

	r := wantResult(t, done)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if strings.Join(r.pieces, "|") != "Hello |world|!" {
		t.Fatalf("pieces %q", r.pieces)
	}
	if r.final.Text != "Hello world!" || r.final.Usage.CompletionTokens != 4 {
		t.Fatalf("final %+v", r.final)
	}
}

func TestSendLostChunk(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	node := newFakeNode(t, b, mqtttest.PeerOptions{})
	done := startSend(context.Background(), t, b.URL(), nil, Request{ID: "lost-1", Request: api.Request{Prompt: "x"}})
	req := node.request()
	if req.ID != "lost-1" {
		t.Fatalf("id %q, want the caller's", req.ID)
	}
	node.chunk(req.ID, 0, "Hel")
	node.chunk(req.ID, 2, "rld") // seq 1 never arrives
	node.final(Final{ID: req.ID, Status: StatusOK, Text: "Hello world"})
	r := wantResult(t, done)
	if r.err != nil {
		t.Fatal(r.err)
	}
	// What followed the gap comes from the final text.
	if strings.Join(r.pieces, "|") != "Hel|lo world" {
		t.Fatalf("pieces %q", r.pieces)
	}
}

func TestSendErrorAnswer(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	node := newFakeNode(t, b, mqtttest.PeerOptions{})
	done := startSend(context.Background(), t, b.URL(), nil, Request{Request: api.Request{Prompt: "x"}})
	req := node.request()
	node.final(ErrorFinal(req.ID, api.CodeBusy, errors.New("the queue is full")))
	r := wantResult(t, done)
	if r.err != nil || r.final.Status != StatusError || r.final.Error.Code != api.CodeBusy || len(r.pieces) != 0 {
		t.Fatalf("result %+v, final %+v", r, r.final)
	}
}

func TestSendTimeoutCancels(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	node := newFakeNode(t, b, mqtttest.PeerOptions{})
	node.Publish("edgellm/pi1/availability", 1, true, Offline)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	offline := make(chan struct{})
	done := startSend(ctx, t, b.URL(), func(c *SendConfig) { c.OnOffline = func() { close(offline) } }, Request{Request: api.Request{Prompt: "x"}})
	req := node.request()
	select {
	case <-offline:
	case <-time.After(guard):
		t.Fatal("OnOffline not called")
	}
	cancel() // as ^C or --timeout would
	r := wantResult(t, done)
	if !errors.Is(r.err, context.Canceled) || !strings.Contains(r.err.Error(), "offline") {
		t.Fatalf("error %v", r.err)
	}
	m := node.Next(guard)
	id, err := ParseCancel([]byte(m.Payload))
	if m.Topic != "edgellm/pi1/cancel" || err != nil || id != req.ID {
		t.Fatalf("got %s %q (%v), want a cancel of %s", m.Topic, m.Payload, err, req.ID)
	}
}

func TestSendAuthentication(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{Users: map[string]string{"dev": "pw1"}})
	node := newFakeNode(t, b, mqtttest.PeerOptions{Username: "dev", Password: "pw1"})
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	if err := os.WriteFile(good, []byte("pw1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("nope\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	done := startSend(context.Background(), t, b.URL(), func(c *SendConfig) { c.Username, c.PasswordFile = "dev", bad }, Request{Request: api.Request{Prompt: "x"}})
	if r := wantResult(t, done); r.err == nil || !strings.Contains(r.err.Error(), "connect") {
		t.Fatalf("wrong password: %v", r.err)
	}
	done = startSend(context.Background(), t, b.URL(), func(c *SendConfig) { c.Username, c.PasswordFile = "dev", good }, Request{Request: api.Request{Prompt: "x"}})
	req := node.request()
	node.final(Final{ID: req.ID, Status: StatusOK, Text: "ok"})
	if r := wantResult(t, done); r.err != nil || r.final.Text != "ok" {
		t.Fatalf("result %+v", r)
	}
}
