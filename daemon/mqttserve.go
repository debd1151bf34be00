package daemon

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/mqtt"
)

// The MQTT adapter: each request message becomes a job whose responder
// publishes the stream and reasoning chunks, the final answer (with the
// tool_call topic and last_response), records the delivery as answered and
// acknowledges the message. The queue and the worker know only the
// api.Responder.

// mqttResponder answers one MQTT request. Text and Reasoning publish QoS 0
// chunks when the request asked to stream (and drop them otherwise); Final
// publishes the final answer. It never fails a chunk: a slow broker makes
// chunks bigger, and an MQTT client that went away is no reason to stop.
type mqttResponder struct {
	s   *server
	ctx context.Context // the serve context, for logging and publishing answers
	id  string          // the request id
	rp  reply
	st  *streamer // the answer's chunks, started at the first one
	rs  *streamer // the reasoning's chunks, started at the first one
}

// Text publishes a chunk of the answer on the stream topic.
func (r *mqttResponder) Text(chunk string) error {
	r.publish(&r.st, r.rp.stream, chunk)
	return nil
}

// Reasoning publishes a chunk of the reasoning on the reasoning topic.
func (r *mqttResponder) Reasoning(chunk string) error {
	r.publish(&r.rs, r.rp.reasoning, chunk)
	return nil
}

// publish adds chunk to the stream *st on topic, starting it at the first
// chunk; without a topic (no streaming asked) the chunk is dropped.
func (r *mqttResponder) publish(st **streamer, topic, chunk string) {
	if topic == "" {
		return
	}
	if *st == nil {
		*st = newStreamer(r.s.currentClient(), topic, r.id, r.s.log)
	}
	(*st).add(chunk)
}

// Final publishes the final answer after the last chunks, then each tool
// call on the tool_call topic. An answer with CodeUnavailable (the daemon
// is stopping) is not published: the request stays unacknowledged, so the
// broker delivers it again after the restart.
func (r *mqttResponder) Final(a api.Answer) {
	if r.rs != nil {
		r.rs.close() // the reasoning's last chunk goes out before the answer's
	}
	if r.st != nil {
		r.st.close()
	}
	if a.Error != nil && a.Error.Code == api.CodeUnavailable {
		r.s.log.Info("request left unanswered for after the restart", "id", r.id)
		return
	}
	f := mqtt.FinalOf(r.id, a)
	r.s.answer(r.ctx, r.id, r.rp, f)
	if len(f.ToolCalls) > 0 {
		r.s.publishToolCalls(r.ctx, r.id, f.ToolCalls)
	}
}

// reply is where and how an MQTT request is answered.
type reply struct {
	plain    bool   // answer bare text on Topics.Response()
	topic    string // where the final answer goes
	errTopic string // where an error answer goes instead ("" = topic)
	stream   string // where chunks go ("" = no streaming)
	// reasoning is where chunks of the reasoning go (set with stream).
	reasoning string
	msg       mqtt.Message
	delivery  Delivery // recorded as answered once the answer is out
}

func (s *server) replyFor(req *mqtt.Request, t mqtt.Topics, m mqtt.Message, d Delivery) reply {
	r := reply{plain: req.Plain, msg: m, delivery: d}
	switch {
	case req.Plain:
		r.topic = t.Response()
	case req.ReplyTo != "":
		r.topic = req.ReplyTo
	default:
		r.topic = t.ResponseFor(req.ID)
		if req.GeneratedID {
			// No one can know the generated id's topic in advance.
			r.errTopic = t.Error()
		}
	}
	if req.Stream && !req.Plain {
		r.stream, r.reasoning = t.Stream(req.ID), t.ReasoningStream(req.ID)
	}
	return r
}

// handleRequest parses a request message and queues its job with a
// responder that answers on MQTT; a request that cannot be queued is
// answered at once.
func (s *server) handleRequest(ctx context.Context, cfg *Config, t mqtt.Topics, m mqtt.Message) {
	lim := mqtt.RequestLimits{MaxBytes: cfg.Limits.MaxPromptBytes, MaxTokens: cfg.Limits.MaxTokens,
		NoReplyTo: []string{t.Request(), t.PoolRequest(), t.Cancel()}}
	// Only a message the broker flags as a repeat (DUP) can be one we
	// answered already: a new request is answered whatever its id.
	d := DeliveryOf(m.PacketID, m.Payload)
	if m.Duplicate && s.answered.Has(d) {
		s.log.Info("redelivery of an answered request; acknowledging it", "packet_id", m.PacketID)
		m.Ack()
		return
	}
	req, err := mqtt.ParseRequest(m.Payload, lim)
	rsp := &mqttResponder{s: s, ctx: ctx, id: req.ID, rp: s.replyFor(req, t, m, d)}
	var job Job
	if err == nil {
		job = NewJob(req.ID, &req.Request, cfg)
		err = checkJob(&job)
	}
	if err != nil {
		s.log.Warn("bad request", "topic", m.Topic, "id", req.ID, "err", err)
		rsp.Final(api.ErrorAnswer("", err))
		return
	}
	now := time.Now()
	e := &Entry{Job: job, Arrived: now, Deadline: now.Add(cfg.Queue.JobTimeout), Delivery: d, Redelivery: m.Duplicate, Responder: rsp}
	switch err := s.queue.Push(e); {
	case errors.Is(err, ErrDuplicate):
		// A redelivery of a request we are handling (after a reconnection):
		// its answer acknowledges the packet id both share.
		s.log.Info("request already queued or running; ignoring the redelivery", "id", req.ID)
	case errors.Is(err, ErrQueueFull):
		s.log.Warn("queue full; answering busy", "id", req.ID, "size", cfg.Queue.Size)
		rsp.Final(api.ErrorAnswer(api.CodeBusy, err))
	case err != nil:
		rsp.Final(api.ErrorAnswer(api.CodeInternal, err))
	default:
		s.log.Info("request queued", "id", req.ID, "depth", s.queue.Depth())
	}
}

// handleCancel cancels the jobs a cancel message names: a queued one is
// answered cancelled at once, a running one by its worker.
func (s *server) handleCancel(t mqtt.Topics, m mqtt.Message) {
	defer m.Ack()
	id, err := mqtt.ParseCancel(m.Payload)
	if err != nil {
		s.log.Warn("bad cancel request", "err", err)
		return
	}
	if id == mqtt.CancelRunning {
		// Every running job (with several slots, all of them).
		ids := s.queue.RunningIDs()
		if len(ids) == 0 {
			s.log.Info("cancel: no job is running")
			return
		}
		for _, id := range ids {
			s.queue.Cancel(id, ErrCancelled)
			s.log.Info("cancelling the running job", "id", id)
		}
		return
	}
	removed, running := s.queue.Cancel(id, ErrCancelled)
	if !running && len(removed) == 0 {
		s.log.Info("cancel: no such job queued or running", "id", id)
	}
	for _, e := range removed {
		s.log.Info("cancelled a queued job", "id", id)
		e.Responder.Final(api.ErrorAnswer(api.CodeCancelled, errors.New("cancelled before it started")))
	}
	if running {
		s.log.Info("cancelling the running job", "id", id)
	}
}

// answer publishes a final answer (QoS 1), records the delivery as answered
// and acknowledges the request. When publishing fails the request stays
// unacknowledged, so the broker delivers it again.
func (s *server) answer(ctx context.Context, id string, rp reply, f mqtt.Final) {
	var payload []byte
	if rp.plain {
		payload = f.PlainText()
	} else {
		var err error
		if payload, err = marshalJSON(f); err != nil {
			s.log.Error("encoding an answer failed", "id", id, "err", err)
			return
		}
	}
	topic := rp.topic
	if f.Status != mqtt.StatusOK && rp.errTopic != "" {
		topic = rp.errTopic
	}
	pubCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	if err := s.currentClient().Publish(pubCtx, topic, 1, false, payload); err != nil {
		s.log.Error("publishing the answer failed; the request stays unacknowledged", "id", id, "err", err)
		return
	}
	// Every answer that went out counts, errors and busy included: a
	// redelivery of that request is not answered again. A new request
	// that reuses the id is.
	if rp.msg.QoS > 0 {
		if err := s.answered.Add(rp.delivery, id); err != nil {
			s.log.Warn("recording the answered delivery failed", "id", id, "err", err)
		}
	}
	rp.msg.Ack()
	s.count(f) // once per answer that went out, not per attempt
	s.publishLastResponse(ctx, f)
	s.kickStatus()
}

// publishTimeout bounds the wait for a QoS 1 answer's acknowledgement; the
// client keeps the message and sends it after a reconnection anyway.
const publishTimeout = 2 * time.Minute

// streamer publishes a job's text as QoS 0 chunks. Text is appended to a
// pending buffer; one goroutine publishes whatever accumulated since its
// previous publish, so a slow broker makes chunks bigger, never decoding
// slower.
type streamer struct {
	client *mqtt.Client
	topic  string
	id     string
	log    *slog.Logger

	mu      sync.Mutex
	pending strings.Builder
	closing bool
	wake    chan struct{}
	done    chan struct{}
}

// streamPublishTimeout bounds one chunk's publish.
const streamPublishTimeout = 5 * time.Second

func newStreamer(c *mqtt.Client, topic, id string, log *slog.Logger) *streamer {
	st := &streamer{client: c, topic: topic, id: id, log: log, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go st.run()
	return st
}

func (st *streamer) add(text string) {
	st.mu.Lock()
	st.pending.WriteString(text)
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

func (st *streamer) run() {
	defer close(st.done)
	seq := 0
	for range st.wake {
		st.mu.Lock()
		text := st.pending.String()
		st.pending.Reset()
		closing := st.closing
		st.mu.Unlock()
		if text != "" {
			payload, err := marshalJSON(mqtt.StreamChunk{ID: st.id, Seq: seq, Text: text})
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), streamPublishTimeout)
				err = st.client.Publish(ctx, st.topic, 0, false, payload)
				cancel()
			}
			if err != nil {
				st.log.Warn("stream chunk not published", "id", st.id, "seq", seq, "err", err)
			}
			seq++
		}
		if closing {
			return
		}
	}
}

// close publishes what is pending and waits until the last chunk is out.
func (st *streamer) close() {
	st.mu.Lock()
	st.closing = true
	st.mu.Unlock()
	// The wake channel holds one signal; run sees closing on its next turn.
	select {
	case st.wake <- struct{}{}:
	default:
	}
	<-st.done
}
