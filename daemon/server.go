package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/inference/chat"
	"github.com/edgellm/edgellm/mqtt"
	"github.com/edgellm/edgellm/mqtt/broker"
)

// Notifications is the part of systemd's notify protocol the daemon speaks;
// Notifier implements it.
type Notifications interface {
	Ready() error
	Reloading() error
	Stopping() error
	Status(text string) error
	Watchdog() error
}

// Options configures Serve.
type Options struct {
	// ConfigPath is the YAML configuration file.
	ConfigPath string
	// Version is edgellm's version, for the status and discovery.
	Version string
	// Load loads the model; nil means LoadLLM (the inference engine).
	Load Loader
	// Reload receives a value for each SIGHUP.
	Reload <-chan struct{}
	// StopTimeout is how long the running job may go on after Serve's
	// context is done before it is cancelled (default 10s). A job cut short
	// by shutdown is not answered and not acknowledged, so the broker
	// delivers it again after the restart.
	StopTimeout time.Duration
	// System locates /proc and /sys (the zero value: the real ones).
	System System
	// Notify speaks to systemd; nil means Notifier{}.
	Notify Notifications
	// Logger receives the daemon's log; nil means slog.Default().
	Logger *slog.Logger
	// TemplateProbe probes Jinja chat templates in a child process before
	// they are used (see LoadOptions); nil uses them unprobed.
	TemplateProbe *chat.Prober
}

// Defaults of Options.
const (
	DefaultStopTimeout = 10 * time.Second
	// overheadBytes is the memory planned for besides model and KV cache:
	// the Go runtime, scratch buffers, MQTT and the tokenizer.
	overheadBytes = 64 * MiB
	// answeredKeep is how many answered deliveries are remembered.
	answeredKeep = 4096
	// watchdogGrace is how many watchdog checks (half the WatchdogSec each)
	// may find the worker without progress before the pings stop.
	watchdogGrace = 3
)

// server is one running daemon.
type server struct {
	opts   Options
	log    *slog.Logger
	notify Notifications
	start  time.Time

	mu     sync.Mutex // guards cfg, topics and client across reloads
	cfg    *Config
	topics mqtt.Topics
	client *mqtt.Client

	embedded *broker.Broker // the built-in broker, when mqtt.broker is embedded
	engine   Engine         // replaced by the worker goroutine when no job runs
	slots    atomic.Int64   // jobs the engine runs at once (its Model().Slots, ≥ 1)
	model    atomic.Value   // ModelInfo of the engine, for other goroutines
	loaded   *Config        // the configuration the engine was loaded with
	fatal    chan error     // the worker cannot go on
	budget   MemoryBudget
	queue    *Queue
	answered *Answered
	beat     Heartbeat

	state         atomic.Value // string: one of mqtt's State constants
	jobsOK        atomic.Uint64
	jobsFailed    atomic.Uint64
	jobsCancelled atomic.Uint64
	jobsHTTP      atomic.Uint64 // of the three above, those that came over HTTP
	tokens        atomic.Uint64
	decodeRates   decodeRates // the decoding speeds of recent jobs
	migrating     atomic.Bool // the move to device-based discovery runs or ran
	stopping      atomic.Bool // the shutdown began: HTTP requests are refused

	statusKick chan struct{}
	modelKick  chan struct{} // asks the worker to reload the model
	newEngine  chan reloadResult
}

type reloadResult struct{ err error }

// Serve runs the daemon until ctx is done: load the configuration and the
// model inside the memory budget, connect to MQTT, tell systemd READY=1, and
// answer requests. On ctx's end it sends STOPPING=1, lets the running job
// finish for up to StopTimeout, publishes offline and returns nil. Errors
// before READY (configuration, memory, model, a broker refusing us) are
// returned.
func Serve(ctx context.Context, opts Options) error {
	s := &server{opts: opts, log: opts.Logger, notify: opts.Notify, start: time.Now(),
		statusKick: make(chan struct{}, 1), modelKick: make(chan struct{}, 1), newEngine: make(chan reloadResult, 1), fatal: make(chan error, 1)}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.notify == nil {
		s.notify = Notifier{}
	}
	if s.opts.Load == nil {
		s.opts.Load = LoadLLM
	}
	if s.opts.StopTimeout <= 0 {
		s.opts.StopTimeout = DefaultStopTimeout
	}
	s.setState(mqtt.StateStarting)

	cfg, err := LoadConfig(opts.ConfigPath)
	if err != nil {
		return err
	}
	if err := cfg.CheckFiles(); err != nil {
		return err
	}
	s.cfg = cfg
	if s.topics, err = mqtt.NewTopics(cfg.MQTT.BaseTopic, cfg.MQTT.NodeID); err != nil {
		return err
	}
	if err := setNice(cfg.Model.Nice); err != nil {
		s.log.Warn("could not set the scheduling priority (model.nice)", "nice", cfg.Model.Nice, "err", err)
	}
	if s.budget, err = opts.System.MemoryBudget(); err != nil {
		return err
	}
	s.log.Info("memory budget", "bytes", s.budget.Limit, "source", s.budget.Source)

	s.setState(mqtt.StateLoading)
	s.notify.Status("loading " + cfg.Model.Path)
	if s.engine, err = s.load(ctx, cfg); err != nil {
		return err
	}
	defer func() { s.engine.Close() }()

	if s.answered, err = OpenAnswered(cfg.StateDir, answeredKeep); err != nil {
		s.log.Warn("answered deliveries are kept in memory only", "err", err)
		s.answered, _ = OpenAnswered("", answeredKeep)
	}
	defer s.answered.Close()
	s.queue = NewQueue(cfg.Queue.Size, s.kickStatus)

	if cfg.MQTT.Broker == EmbeddedBroker {
		// Not ctx: the broker must outlive the client's goodbye.
		b, err := broker.Start(context.WithoutCancel(ctx), broker.Config{Listen: cfg.MQTT.Embedded.Listen, PasswordFile: cfg.MQTT.Embedded.PasswordFile,
			Dir: filepath.Join(cfg.StateDir, "broker"), Logger: s.log})
		if err != nil {
			return err
		}
		// Closed after the client (deferred later, run earlier): the offline
		// message must reach the retained store first.
		defer b.Close()
		s.embedded = b
		s.log.Info("embedded MQTT broker listening", "addr", b.Addr())
	}
	client, err := s.newClient(cfg, s.topics)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.client = client // before Connect: OnReady uses it
	s.mu.Unlock()
	// Idle before connecting: the status published before "online" says
	// what the node is once it is online.
	s.setState(mqtt.StateIdle)
	// The HTTP listener is bound before MQTT says "online": a client that
	// sees the node online (or systemd READY) can reach every transport, and
	// a port in use fails the start before anything is announced.
	stopHTTP, err := s.startHTTP(cfg)
	if err != nil {
		return err
	}
	if err := client.Connect(ctx); err != nil {
		if stopHTTP != nil {
			// Requests that came over HTTP meanwhile never reach a
			// worker: answer them before the listener closes.
			s.stopping.Store(true)
			for _, e := range s.queue.Drain() {
				e.Responder.Final(api.ErrorAnswer(api.CodeUnavailable, ErrShutdown))
			}
			httpCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			stopHTTP(httpCtx)
			cancel()
		}
		client.Close(context.Background())
		return err
	}

	if err := s.notify.Ready(); err != nil {
		s.log.Warn("sd_notify READY failed", "err", err)
	}
	s.log.Info("ready", "model", s.engine.Model().Name, "slots", s.engineSlots(), "node", s.topics.Node, "request_topic", s.topics.Request())

	var wg sync.WaitGroup
	workCtx, stopWork := context.WithCancel(context.Background())
	defer stopWork()
	wg.Add(1)
	go func() { defer wg.Done(); s.worker(workCtx, ctx) }()
	bgCtx, stopBg := context.WithCancel(context.Background())
	var bg sync.WaitGroup
	bg.Add(2)
	go func() { defer bg.Done(); s.statusLoop(bgCtx) }()
	go func() { defer bg.Done(); s.watchdog(bgCtx) }()

	fatal := s.loop(ctx)

	// Shutdown: stop taking requests, let the running jobs finish or cancel them.
	s.setState(mqtt.StateStopping)
	s.notify.Stopping()
	s.log.Info("stopping", "running", s.queue.RunningIDs(), "queued", s.queue.Depth())
	s.stopping.Store(true)
	httpDone := make(chan struct{})
	go func() {
		defer close(httpDone)
		if stopHTTP != nil {
			// New connections are refused at once; the requests in
			// flight end with their jobs (queued ones are answered 503
			// below), so this waits at most for the running job.
			httpCtx, cancel := context.WithTimeout(context.Background(), s.opts.StopTimeout+5*time.Second)
			defer cancel()
			stopHTTP(httpCtx)
		}
	}()
	left := s.queue.Drain()
	if len(left) > 0 {
		s.log.Info("queued requests left for after the restart", "count", len(left))
	}
	for _, e := range left {
		e.Responder.Final(api.ErrorAnswer(api.CodeUnavailable, ErrShutdown))
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	stopWork() // the worker ends after its running jobs
	select {
	case <-done:
	case <-time.After(s.opts.StopTimeout):
		s.log.Warn("the running jobs did not finish in time; cancelling them", "timeout", s.opts.StopTimeout)
		s.queue.CancelRunning(ErrShutdown)
		<-done
	}
	<-httpDone
	// The status loop ends before the final status, so none of its
	// publications (an older state) can land after it.
	stopBg()
	bg.Wait()
	s.publishStatus()
	closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.currentClient().Close(closeCtx); err != nil {
		s.log.Warn("publishing offline failed", "err", err)
	} else if err := s.answered.Clear(); err != nil {
		s.log.Warn("clearing the answered deliveries failed", "err", err)
	}
	s.log.Info("stopped")
	return fatal
}

// load loads the model inside the memory budget and sets the Go heap limit.
func (s *server) load(ctx context.Context, cfg *Config) (Engine, error) {
	var plan MemoryPlan
	e, err := s.opts.Load(ctx, LoadOptions{
		Path:          cfg.Model.Path,
		Context:       cfg.Model.Context,
		Threads:       cfg.Model.Threads,
		ChatTemplate:  cfg.Model.ChatTemplate,
		KVType:        cfg.Model.KVType,
		Repack:        cfg.Model.Repack,
		Slots:         cfg.Queue.Slots,
		PlannedSlots:  func() int { return plan.Slots },
		TemplateProbe: s.opts.TemplateProbe,
		CacheFile:     s.promptCacheFile(cfg),
		PrefixCacheBytes: func() int64 {
			// Half of what the budget leaves beside the model, the slots'
			// KV caches and buffers and the overhead, at most 512 MiB.
			left := int64(plan.Budget) - int64(plan.Overhead) - int64(plan.KVBytes) - int64(plan.SlotBytes)
			if plan.ModelResident {
				left -= int64(plan.ModelBytes)
			}
			return min(max(left/2, 0), 512*MiB)
		},
		Logger: s.log,
		Check: func(m ModelInfo) error {
			var err error
			// The model takes its file, but the repacked weights on the heap
			// instead of in the file's pages.
			modelBytes := m.FileBytes + m.RepackBytes - m.RepackFileBytes
			plan, err = Plan(PlanInput{Budget: s.budget.Limit, ModelBytes: modelBytes, RepackBytes: m.RepackBytes, Context: cfg.Model.Context,
				KVBytesPerToken: m.CacheBytesPerToken, KVBytesFixed: m.CacheBytesFixed, Overhead: overheadBytes,
				Slots: cfg.Queue.Slots, SlotBytes: m.StateBytes, MaxAutoSlots: AutoSlots(availableCPUs(), s.budget.Total, s.budget.Limit)})
			if err != nil {
				return fmt.Errorf("%w (budget from %s)", err, s.budget.Source)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if plan.Warning != "" {
		s.log.Warn(plan.Warning)
	}
	debug.SetMemoryLimit(plan.HeapLimit)
	m := e.Model()
	s.model.Store(m)
	s.slots.Store(int64(max(m.Slots, 1)))
	s.loaded = cfg
	s.log.Info("model loaded", "model", m.Name, "path", m.Path, "context", cfg.Model.Context, "threads", cfg.Model.Threads,
		"slots", s.engineSlots(), "slots_config", cfg.Queue.Slots, "max_slots", plan.MaxSlots,
		"kv_type", m.KVType, "kv_cache_bytes", plan.KVBytes, "heap_limit", plan.HeapLimit, "model_resident", plan.ModelResident)
	return e, nil
}

// promptCacheFile is where the prompt cache persists, or "" when it does not.
func (s *server) promptCacheFile(cfg *Config) string {
	if !cfg.Cache.Persist {
		return ""
	}
	if err := os.MkdirAll(cfg.StateDir, 0o750); err != nil {
		s.log.Warn("the prompt cache will not persist", "err", err)
		return ""
	}
	return filepath.Join(cfg.StateDir, PromptCacheFile)
}

func (s *server) config() *Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg
}

func (s *server) currentTopics() mqtt.Topics {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.topics
}

func (s *server) currentClient() *mqtt.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

func (s *server) setState(st string) {
	// Stopping is final: a job ending during the shutdown does not make
	// the node idle again.
	if old, _ := s.state.Load().(string); old == st || old == mqtt.StateStopping {
		return
	}
	s.state.Store(st)
	s.kickStatus()
}

func (s *server) kickStatus() {
	select {
	case s.statusKick <- struct{}{}:
	default:
	}
}

// subscriptions are the topic filters the node reads, with their QoS.
func subscriptions(cfg *Config, t mqtt.Topics) map[string]byte {
	subs := map[string]byte{t.Request(): 1, t.Cancel(): 1}
	if cfg.MQTT.Pool != "" {
		subs[t.PoolSubscription(cfg.MQTT.Pool)] = 1
	}
	if cfg.MQTT.HomeAssistant.Enabled {
		subs[mqtt.HAStatusTopic(cfg.MQTT.HomeAssistant.DiscoveryPrefix)] = 1
		subs[haDiscovery(cfg, t).LegacyFilter()] = 1
	}
	return subs
}

func (s *server) newClient(cfg *Config, t mqtt.Topics) (*mqtt.Client, error) {
	url, user, password := cfg.MQTT.Broker, cfg.MQTT.Username, ""
	if s.embedded != nil {
		url = s.embedded.URL()
		user, password = s.embedded.Credentials()
	}
	return mqtt.NewClient(mqtt.ClientConfig{
		Broker:        url,
		ClientID:      mqtt.ClientID(t.Node),
		Username:      user,
		Password:      password,
		PasswordFile:  cfg.MQTT.PasswordFile,
		CAFile:        cfg.MQTT.TLS.CA,
		CertFile:      cfg.MQTT.TLS.Cert,
		KeyFile:       cfg.MQTT.TLS.Key,
		Availability:  t.Availability(),
		Subscriptions: subscriptions(cfg, t),
		BeforeOnline:  func(ctx context.Context, c *mqtt.Client) { s.publishStatusOn(ctx, c, t) },
		OnReady:       func(int) { go s.publishDiscovery() },
		Logger:        s.log,
	})
}

// loop reads messages until ctx is done or the worker fails for good.
func (s *server) loop(ctx context.Context) error {
	for {
		client := s.currentClient()
		select {
		case <-ctx.Done():
			return nil
		case err := <-s.fatal:
			s.log.Error("stopping after a fatal error", "err", err)
			return err
		case <-s.opts.Reload:
			s.reload(ctx)
		case m, ok := <-client.Messages():
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				continue // the client was replaced by a reload
			}
			s.handle(ctx, m)
		}
	}
}

// handle routes one received message. It never blocks on the worker.
func (s *server) handle(ctx context.Context, m mqtt.Message) {
	cfg, t := s.config(), s.currentTopics()
	switch {
	case m.Topic == t.Request() || m.Topic == t.PoolRequest():
		s.handleRequest(ctx, cfg, t, m)
	case m.Topic == t.Cancel():
		s.handleCancel(t, m)
	case cfg.MQTT.HomeAssistant.Enabled && m.Topic == mqtt.HAStatusTopic(cfg.MQTT.HomeAssistant.DiscoveryPrefix):
		if string(m.Payload) == mqtt.HAOnline {
			s.log.Info("Home Assistant is online; sending discovery again")
			go s.publishDiscovery()
			s.kickStatus()
		}
		m.Ack()
	case cfg.MQTT.HomeAssistant.Enabled && haDiscovery(cfg, t).IsLegacyTopic(m.Topic):
		// Retained per-entity configs of an earlier edgellm: move Home
		// Assistant to the device config (our own markers and deletions
		// echo back here too, never retained).
		if m.Retained && haDiscovery(cfg, t).IsLegacyConfig(m.Topic, m.Payload) {
			go s.migrateDiscovery()
		}
		m.Ack()
	default:
		s.log.Warn("message on a topic we do not serve; ignored", "topic", m.Topic, "bytes", len(m.Payload))
		m.Ack()
	}
}

// watchdog pings systemd while the worker makes progress.
func (s *server) watchdog(ctx context.Context) {
	iv, err := WatchdogInterval()
	if err != nil {
		s.log.Warn("watchdog", "err", err)
		return
	}
	if iv <= 0 {
		return
	}
	s.beat.Grace = watchdogGrace
	w := Watchdog{Pinger: s.notify, Healthy: s.beat.Healthy, Interval: iv, Logger: s.log}
	w.Run(ctx)
}
