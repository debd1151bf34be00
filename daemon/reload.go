package daemon

import (
	"context"
	"fmt"
	"reflect"

	"github.com/edgellm/edgellm/mqtt"
)

// reload applies the configuration file again (SIGHUP): sampling defaults,
// limits, queue size, status interval and topics at once, without dropping
// the broker session; a changed model.path, context, threads or chat
// template, kv_type or queue.slots reloads the model once no job runs. A file with
// errors is reported and the running configuration stays.
func (s *server) reload(ctx context.Context) {
	s.notify.Reloading()
	s.setState(mqtt.StateReloading)
	ready := func() {
		s.setState(s.idleOrBusy())
		if err := s.notify.Ready(); err != nil {
			s.log.Warn("sd_notify READY failed", "err", err)
		}
	}
	cfg, err := LoadConfig(s.opts.ConfigPath)
	if err == nil {
		err = cfg.CheckFiles()
	}
	if err != nil {
		s.log.Error("reload: the configuration has errors; keeping the running one", "err", err)
		ready()
		return
	}
	old := s.config()
	if old.MQTT.Broker != cfg.MQTT.Broker || old.MQTT.Username != cfg.MQTT.Username ||
		old.MQTT.PasswordFile != cfg.MQTT.PasswordFile || old.MQTT.TLS != cfg.MQTT.TLS {
		s.log.Warn("reload: broker, credentials and TLS changes apply after a restart")
		cfg.MQTT.Broker, cfg.MQTT.Username, cfg.MQTT.PasswordFile, cfg.MQTT.TLS =
			old.MQTT.Broker, old.MQTT.Username, old.MQTT.PasswordFile, old.MQTT.TLS
	}
	if cfg.HTTP != old.HTTP {
		// The listener and its key were set up at the start.
		s.log.Warn("reload: http changes apply after a restart")
		cfg.HTTP = old.HTTP
	}
	if cfg.Model.Nice != old.Model.Nice {
		if err := setNice(cfg.Model.Nice); err != nil {
			s.log.Warn("reload: model.nice", "err", err)
		}
	}
	topics, err := mqtt.NewTopics(cfg.MQTT.BaseTopic, cfg.MQTT.NodeID)
	if err != nil { // validated by LoadConfig; kept for safety
		s.log.Error("reload: topics", "err", err)
		ready()
		return
	}
	s.mu.Lock()
	s.cfg = cfg
	s.mu.Unlock()
	s.queue.SetSize(cfg.Queue.Size)
	s.retopic(ctx, old, cfg, topics)
	s.log.Info("configuration reloaded", "file", s.opts.ConfigPath)

	if old.Model.Path == cfg.Model.Path && old.Model.Context == cfg.Model.Context &&
		old.Model.Threads == cfg.Model.Threads && old.Model.ChatTemplate == cfg.Model.ChatTemplate &&
		old.Model.KVType == cfg.Model.KVType && old.Model.Repack == cfg.Model.Repack && old.Queue.Slots == cfg.Queue.Slots {
		ready()
		s.kickStatus()
		return
	}
	s.log.Info("reload: the model settings changed; reloading the model once no job runs", "path", cfg.Model.Path)
	select {
	case s.modelKick <- struct{}{}:
	default:
	}
	go func() {
		select {
		case r := <-s.newEngine:
			if r.err != nil {
				s.log.Error("reload: loading the new model failed", "err", r.err)
			}
		case <-ctx.Done():
		}
		ready()
		s.kickStatus()
		go s.publishDiscovery()
	}()
}

// idleOrBusy is the node's state while it serves: busy while any job runs.
func (s *server) idleOrBusy() string {
	if s.queue.Active() > 0 {
		return mqtt.StateBusy
	}
	return mqtt.StateIdle
}

// retopic moves the node to new topics and subscriptions. A new base topic
// or node id needs a new connection (the will names the availability
// topic): the old one unsubscribes, publishes offline and disconnects, and
// the new one connects. Otherwise only the subscriptions change.
func (s *server) retopic(ctx context.Context, old, cfg *Config, t mqtt.Topics) {
	oldTopics, client := s.currentTopics(), s.currentClient()
	subs := subscriptions(cfg, t)
	if t == oldTopics {
		if !reflect.DeepEqual(subs, subscriptions(old, oldTopics)) {
			if err := client.SetSubscriptions(ctx, subs); err != nil {
				s.log.Error("reload: changing subscriptions failed", "err", err)
			}
		}
		oldHA, ha := old.MQTT.HomeAssistant, cfg.MQTT.HomeAssistant
		if oldHA.Enabled && (!ha.Enabled || oldHA.DiscoveryPrefix != ha.DiscoveryPrefix) {
			s.publishAll(client, []mqtt.DiscoveryMessage{s.discovery(old, oldTopics).Removal()})
		}
		if ha.Enabled && ha != oldHA {
			go s.publishDiscovery()
		}
		return
	}
	s.log.Info("reload: moving to new topics", "from", oldTopics.Request(), "to", t.Request())
	if old.MQTT.HomeAssistant.Enabled {
		s.publishAll(client, []mqtt.DiscoveryMessage{s.discovery(old, oldTopics).Removal()})
	}
	if err := client.SetSubscriptions(ctx, map[string]byte{}); err != nil {
		s.log.Warn("reload: unsubscribing the old topics failed", "err", err)
	}
	if err := client.Close(ctx); err != nil {
		s.log.Warn("reload: closing the old connection", "err", err)
	}
	next, err := s.newClient(cfg, t)
	if err == nil {
		s.mu.Lock()
		s.topics, s.client = t, next
		s.mu.Unlock()
		err = next.Connect(ctx)
	}
	if err != nil {
		s.log.Error("reload: connecting with the new topics failed", "err", err)
	}
}

// reloadModel replaces the engine with one for the current configuration;
// it runs on the worker goroutine while no job runs. When the new model
// cannot be loaded the previous configuration's model is loaded again.
func (s *server) reloadModel(ctx context.Context) error {
	cfg, prev := s.config(), s.loaded
	s.engine.Close()
	s.setState(mqtt.StateLoading)
	defer s.setState(mqtt.StateIdle)
	e, err := s.load(ctx, cfg)
	if err == nil {
		s.engine = e
		return nil
	}
	e, err2 := s.load(ctx, prev)
	if err2 != nil {
		// Without a model the daemon cannot serve: stop with an error, and
		// let systemd restart it with whatever the configuration says then.
		s.fatal <- fmt.Errorf("reload: loading %s failed (%v) and the previous model failed too: %w", cfg.Model.Path, err, err2)
		return err
	}
	s.engine = e
	return err
}
