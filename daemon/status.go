package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/mqtt"
)

// statusDebounce is the shortest time between two status publications
// caused by changes (the queue moving, a job starting or ending).
const statusDebounce = 250 * time.Millisecond

// statusLoop publishes the retained status on every change (at most every
// statusDebounce) and every mqtt.status_interval.
func (s *server) statusLoop(ctx context.Context) {
	interval := s.config().MQTT.StatusInterval
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-s.statusKick:
			// Let a burst of changes settle into one message.
			t := time.NewTimer(statusDebounce)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
		s.publishStatus()
		if iv := s.config().MQTT.StatusInterval; iv != interval {
			interval = iv
			tick.Reset(iv)
		}
	}
}

// status gathers the node's current status.
func (s *server) status() mqtt.Status {
	info, _ := s.model.Load().(ModelInfo)
	state := s.state.Load().(string)
	if state == mqtt.StateIdle || state == mqtt.StateBusy {
		state = s.idleOrBusy() // busy while any job runs
	}
	st := mqtt.Status{
		Model:           info.Name,
		State:           state,
		Version:         s.opts.Version,
		Started:         s.start.UTC().Format(time.RFC3339),
		UptimeS:         int64(time.Since(s.start).Seconds()),
		QueueDepth:      s.queue.Depth(),
		Slots:           int(s.slots.Load()),
		ActiveSlots:     s.queue.Active(),
		JobsOK:          s.jobsOK.Load(),
		JobsFailed:      s.jobsFailed.Load(),
		JobsCancelled:   s.jobsCancelled.Load(),
		JobsHTTP:        s.jobsHTTP.Load(),
		TokensGenerated: s.tokens.Load(),
		MemoryLimit:     s.budget.Limit,
		KVType:          info.KVType,
		KVCacheBytes:    info.KVCacheBytes,
	}
	if tps, ok := s.decodeRates.rate(time.Now()); ok {
		tps = math.Round(tps*10) / 10
		st.DecodeTPS = &tps
	}
	if used, err := s.opts.System.MemoryUsed(); err == nil {
		st.MemoryUsed = used
	}
	if c, ok := s.opts.System.CPUTemperature(); ok {
		c = math.Round(c*10) / 10
		st.CPUTempC = &c
	}
	if th, ok := s.opts.System.Throttled(); ok {
		st.Throttled = &th
	}
	return st
}

// count counts a final answer: ok, cancelled (a user's own cancel is not a
// failure) or failed.
func (s *server) count(f mqtt.Final) {
	switch {
	case f.Status == mqtt.StatusOK:
		s.jobsOK.Add(1)
	case f.Error != nil && f.Error.Code == api.CodeCancelled:
		s.jobsCancelled.Add(1)
	default:
		s.jobsFailed.Add(1)
	}
}

// publishStatus publishes the retained status and tells systemd the same
// in one line.
func (s *server) publishStatus() {
	if client := s.currentClient(); client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s.publishStatusOn(ctx, client, s.currentTopics())
		return
	}
	s.notifyStatus(s.status())
}

// publishStatusOn publishes the retained status with client on t's status
// topic: on every change, and on each connection before "online".
func (s *server) publishStatusOn(ctx context.Context, client *mqtt.Client, t mqtt.Topics) {
	st := s.status()
	s.notifyStatus(st)
	payload, err := marshalJSON(st)
	if err != nil {
		s.log.Error("encoding the status failed", "err", err)
		return
	}
	if err := client.Publish(ctx, t.Status(), 1, true, payload); err != nil {
		s.log.Warn("publishing the status failed", "err", err)
	}
}

func (s *server) notifyStatus(st mqtt.Status) {
	tps := 0.0
	if st.DecodeTPS != nil {
		tps = *st.DecodeTPS
	}
	s.notify.Status(fmt.Sprintf("%s; model %s; slots %d/%d; queue %d; %d ok, %d failed, %d cancelled; %.1f tok/s",
		st.State, st.Model, st.ActiveSlots, st.Slots, st.QueueDepth, st.JobsOK, st.JobsFailed, st.JobsCancelled, tps))
}

// publishLastResponse publishes a final answer, retained, on the
// last_response topic (Home Assistant's last-response sensor reads it).
func (s *server) publishLastResponse(ctx context.Context, f mqtt.Final) {
	payload, err := marshalJSON(f)
	if err != nil {
		return
	}
	pubCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	if err := s.currentClient().Publish(pubCtx, s.currentTopics().LastResponse(), 1, true, payload); err != nil {
		s.log.Warn("publishing the last response failed", "id", f.ID, "err", err)
	}
}

// decodeRates remembers the decoding of the jobs that finished within
// mqtt.DecodeWindow, for the status's decode_tps: their tokens over the
// time during which any of them decoded, so jobs decoding at once (slots)
// add up to the node's aggregate rate.
type decodeRates struct {
	mu   sync.Mutex
	jobs []decodedJob // oldest first
}

type decodedJob struct {
	end     time.Time
	tokens  float64
	seconds float64
}

// maxDecodedJobs bounds what decodeRates keeps whatever the job rate.
const maxDecodedJobs = 256

// add records a job that decoded tokens at tps tokens per second.
func (r *decodeRates) add(now time.Time, tokens int, tps float64) {
	if tokens <= 0 || tps <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.jobs) == maxDecodedJobs {
		r.jobs = append(r.jobs[:0], r.jobs[1:]...)
	}
	r.jobs = append(r.jobs, decodedJob{end: now, tokens: float64(tokens), seconds: float64(tokens) / tps})
}

// rate is the tokens of the jobs that finished since now-DecodeWindow over
// the union of their decoding spans (a span ends when its job does); ok is
// false when none did.
func (r *decodeRates) rate(now time.Time) (tps float64, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := 0
	for i < len(r.jobs) && now.Sub(r.jobs[i].end) > mqtt.DecodeWindow {
		i++
	}
	r.jobs = append(r.jobs[:0], r.jobs[i:]...)
	var tokens float64
	spans := make([]decodeSpan, len(r.jobs))
	for i, j := range r.jobs {
		tokens += j.tokens
		spans[i] = decodeSpan{from: j.end.Add(-time.Duration(j.seconds * float64(time.Second))), to: j.end}
	}
	seconds := spanUnion(spans).Seconds()
	if seconds <= 0 {
		return 0, false
	}
	return tokens / seconds, true
}

// decodeSpan is when a job decoded.
type decodeSpan struct{ from, to time.Time }

// spanUnion is the time covered by any of spans (which it sorts).
func spanUnion(spans []decodeSpan) time.Duration {
	slices.SortFunc(spans, func(a, b decodeSpan) int { return a.from.Compare(b.from) })
	var total time.Duration
	var cur decodeSpan
	for i, sp := range spans {
		switch {
		case i == 0:
			cur = sp
		case !sp.from.After(cur.to):
			if sp.to.After(cur.to) {
				cur.to = sp.to
			}
		default:
			total += cur.to.Sub(cur.from)
			cur = sp
		}
	}
	if len(spans) > 0 {
		total += cur.to.Sub(cur.from)
	}
	return total
}

// haDiscovery describes the node on topics t for Home Assistant, without
// the parts that depend on the running daemon.
func haDiscovery(cfg *Config, t mqtt.Topics) mqtt.Discovery {
	return mqtt.Discovery{Prefix: cfg.MQTT.HomeAssistant.DiscoveryPrefix, Topics: t,
		ConfigurationURL: cfg.MQTT.HomeAssistant.ConfigurationURL}
}

// discovery describes the node for Home Assistant: the model, the version
// and the sensors this board has.
func (s *server) discovery(cfg *Config, t mqtt.Topics) mqtt.Discovery {
	d := haDiscovery(cfg, t)
	info, _ := s.model.Load().(ModelInfo)
	d.Version, d.Model = s.opts.Version, info.Name
	_, d.CPUTemperature = s.opts.System.CPUTemperature()
	_, d.Throttled = s.opts.System.Throttled()
	return d
}

// publishDiscovery publishes the Home Assistant device config (retained)
// when discovery is enabled.
func (s *server) publishDiscovery() {
	cfg, t, client := s.config(), s.currentTopics(), s.currentClient()
	if !cfg.MQTT.HomeAssistant.Enabled || client == nil {
		return
	}
	msg, err := s.discovery(cfg, t).Config()
	if err != nil {
		s.log.Error("Home Assistant discovery", "err", err)
		return
	}
	s.publishAll(client, []mqtt.DiscoveryMessage{msg})
}

// migrateDiscovery moves Home Assistant from the per-entity configs an
// earlier edgellm retained to the device config, keeping the entities'
// registry entries; once per process, unless it fails.
func (s *server) migrateDiscovery() {
	cfg, t, client := s.config(), s.currentTopics(), s.currentClient()
	if !s.migrating.CompareAndSwap(false, true) {
		return
	}
	msgs, err := s.discovery(cfg, t).Migration()
	if err != nil {
		s.log.Error("Home Assistant discovery", "err", err)
		s.migrating.Store(false)
		return
	}
	s.log.Info("moving Home Assistant to device-based discovery", "device_topic", s.discovery(cfg, t).Topic())
	if !s.publishAll(client, msgs) {
		s.migrating.Store(false)
	}
}

// publishAll publishes discovery messages in order at QoS 1 and reports
// whether all went out.
func (s *server) publishAll(client *mqtt.Client, msgs []mqtt.DiscoveryMessage) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, m := range msgs {
		if err := client.Publish(ctx, m.Topic, 1, m.Retain, m.Payload); err != nil {
			s.log.Warn("publishing Home Assistant discovery failed", "topic", m.Topic, "err", err)
			return false
		}
	}
	return true
}

// publishToolCalls publishes each tool call of a job on the tool_call topic.
func (s *server) publishToolCalls(ctx context.Context, id string, calls []api.ToolCall) {
	topic := s.currentTopics().ToolCall()
	for _, c := range calls {
		payload, err := marshalJSON(struct {
			RequestID string `json:"request_id"`
			api.ToolCall
		}{id, c})
		if err != nil {
			continue
		}
		pubCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
		if err := s.currentClient().Publish(pubCtx, topic, 1, false, payload); err != nil {
			s.log.Warn("publishing a tool call failed", "id", id, "err", err)
		}
		cancel()
	}
}

// marshalJSON encodes v without HTML escaping (answers carry text with <, >
// and & that must arrive as written).
func marshalJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}
