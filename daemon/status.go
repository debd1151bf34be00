package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

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
	st := mqtt.Status{
		Model:           info.Name,
		State:           s.state.Load().(string),
		Version:         s.opts.Version,
		UptimeS:         int64(time.Since(s.start).Seconds()),
		QueueDepth:      s.queue.Depth(),
		JobsOK:          s.jobsOK.Load(),
		JobsFailed:      s.jobsFailed.Load(),
		TokensGenerated: s.tokens.Load(),
		DecodeTPS:       math.Round(math.Float64frombits(s.decodeTPS.Load())*10) / 10,
		MemoryLimit:     s.budget.Limit,
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

// publishStatus publishes the retained status and tells systemd the same
// in one line.
func (s *server) publishStatus() {
	st := s.status()
	s.notify.Status(fmt.Sprintf("%s; model %s; queue %d; %d ok, %d failed; %.1f tok/s",
		st.State, st.Model, st.QueueDepth, st.JobsOK, st.JobsFailed, st.DecodeTPS))
	client := s.currentClient()
	if client == nil {
		return
	}
	payload, err := marshalJSON(st)
	if err != nil {
		s.log.Error("encoding the status failed", "err", err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := client.Publish(ctx, s.currentTopics().Status(), 1, true, payload); err != nil {
		s.log.Warn("publishing the status failed", "err", err)
	}
}

// discovery describes the node for Home Assistant.
func (s *server) discovery(cfg *Config, t mqtt.Topics) mqtt.Discovery {
	info, _ := s.model.Load().(ModelInfo)
	return mqtt.Discovery{Prefix: cfg.MQTT.HomeAssistant.DiscoveryPrefix, Topics: t, Version: s.opts.Version, Model: info.Name}
}

// publishDiscovery publishes the Home Assistant discovery configs (retained)
// when discovery is enabled.
func (s *server) publishDiscovery() {
	cfg, t, client := s.config(), s.currentTopics(), s.currentClient()
	if !cfg.MQTT.HomeAssistant.Enabled || client == nil {
		return
	}
	msgs, err := s.discovery(cfg, t).Configs()
	if err != nil {
		s.log.Error("Home Assistant discovery", "err", err)
		return
	}
	s.publishAll(client, msgs)
}

func (s *server) publishAll(client *mqtt.Client, msgs []mqtt.DiscoveryMessage) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, m := range msgs {
		if err := client.Publish(ctx, m.Topic, 1, true, m.Payload); err != nil {
			s.log.Warn("publishing Home Assistant discovery failed", "topic", m.Topic, "err", err)
			return
		}
	}
}

// publishToolCalls publishes each tool call of a job on the tool_call topic.
func (s *server) publishToolCalls(ctx context.Context, id string, calls []mqtt.ToolCall) {
	topic := s.currentTopics().ToolCall()
	for _, c := range calls {
		payload, err := marshalJSON(struct {
			RequestID string `json:"request_id"`
			mqtt.ToolCall
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
