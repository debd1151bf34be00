package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
)

// Notifier speaks systemd's sd_notify protocol over $NOTIFY_SOCKET (set by
// systemd for Type=notify services). Without that variable every method is a
// no-op that returns nil, so the daemon runs the same outside systemd.
type Notifier struct{}

func (Notifier) send(state string) error {
	if _, err := sd.SdNotify(false, state); err != nil {
		first, _, _ := strings.Cut(state, "\n")
		return fmt.Errorf("daemon: notify %s: %w", first, err)
	}
	return nil
}

// Enabled reports whether $NOTIFY_SOCKET is set.
func (Notifier) Enabled() bool { return os.Getenv("NOTIFY_SOCKET") != "" }

// Ready sends READY=1: startup (or a reload) is complete. The daemon sends it
// once the model is loaded and MQTT is connected and subscribed.
func (n Notifier) Ready() error { return n.send(sd.SdNotifyReady) }

// Status sends STATUS=text, the one-line status `systemctl status` shows.
// Newlines in text become spaces.
func (n Notifier) Status(text string) error {
	return n.send("STATUS=" + strings.NewReplacer("\r", " ", "\n", " ").Replace(text))
}

// Watchdog sends WATCHDOG=1, resetting systemd's watchdog timer.
func (n Notifier) Watchdog() error { return n.send(sd.SdNotifyWatchdog) }

// Reloading sends RELOADING=1 with the MONOTONIC_USEC timestamp that
// Type=notify-reload services must include; send Ready when the reload is
// done.
func (n Notifier) Reloading() error {
	return n.send(sd.SdNotifyReloading + "\n" + strings.TrimSuffix(sd.SdNotifyMonotonicUsec(), "\n"))
}

// Stopping sends STOPPING=1: shutdown has begun.
func (n Notifier) Stopping() error { return n.send(sd.SdNotifyStopping) }

// WatchdogInterval returns systemd's watchdog timeout (WATCHDOG_USEC, for
// this process per WATCHDOG_PID), or 0 when the watchdog is off. Ping at
// least twice per interval.
func WatchdogInterval() (time.Duration, error) {
	d, err := sd.SdWatchdogEnabled(false)
	if err != nil {
		return 0, fmt.Errorf("daemon: watchdog: %w", err)
	}
	return d, nil
}

// Pinger sends one watchdog ping; Notifier is one.
type Pinger interface {
	Watchdog() error
}

// Watchdog pings systemd's watchdog while Healthy says the worker makes
// progress. A wedged worker stops the pings, and systemd restarts the
// service once WatchdogSec passes without one.
type Watchdog struct {
	// Pinger sends the pings; nil means a Notifier.
	Pinger Pinger
	// Healthy is asked once per tick; false withholds that tick's ping.
	// Heartbeat.Healthy is the usual choice.
	Healthy func() bool
	// Interval is the watchdog timeout (WatchdogInterval). Run ticks at half
	// of it unless Ticks is set.
	Interval time.Duration
	// Ticks, when set, drives the loop instead of a ticker.
	Ticks <-chan time.Time
	// OnCheck, when set, is called after each tick with the health verdict
	// and the ping's error (nil when no ping was sent).
	OnCheck func(healthy bool, err error)
	// Logger receives a warning when pings stop and a note when they resume;
	// nil means slog.Default().
	Logger *slog.Logger
}

// Run pings until ctx is done, then returns nil. With neither Ticks nor an
// Interval (the watchdog is off) it returns at once.
func (w *Watchdog) Run(ctx context.Context) error {
	ticks := w.Ticks
	if ticks == nil {
		if w.Interval <= 0 {
			return nil
		}
		t := time.NewTicker(w.Interval / 2)
		defer t.Stop()
		ticks = t.C
	}
	log := w.Logger
	if log == nil {
		log = slog.Default()
	}
	pinger := w.Pinger
	if pinger == nil {
		pinger = Notifier{}
	}
	wasHealthy := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticks:
		}
		healthy := w.Healthy == nil || w.Healthy()
		var err error
		if healthy {
			err = pinger.Watchdog()
			if err != nil {
				log.Warn("watchdog ping failed", "err", err)
			}
		}
		if healthy != wasHealthy {
			if healthy {
				log.Info("worker is making progress again; watchdog pings resumed")
			} else {
				log.Warn("worker made no progress; withholding watchdog pings so systemd restarts the service")
			}
			wasHealthy = healthy
		}
		if w.OnCheck != nil {
			w.OnCheck(healthy, err)
		}
	}
}

// Heartbeat tracks the workers' progress for the watchdog. A worker calls
// Start when a job begins, Beat whenever it makes progress (a token decoded,
// a prefill chunk done) and Done when the job ends; several jobs may run at
// once, each between its own Start and Done. Idle workers are healthy; busy
// ones are healthy while the beats of any of their jobs advance between
// checks. Its methods are safe for concurrent use.
type Heartbeat struct {
	// Grace is how many consecutive checks may find a busy worker without
	// progress before it counts as wedged. Set it before use.
	Grace int

	beats atomic.Uint64
	busy  atomic.Int64 // jobs between Start and Done

	mu     sync.Mutex // guards seen and stalls, which only Healthy uses
	seen   uint64
	stalls int
}

// Start marks a new job busy (which counts as progress).
func (h *Heartbeat) Start() {
	h.beats.Add(1)
	h.busy.Add(1)
}

// Beat records progress.
func (h *Heartbeat) Beat() { h.beats.Add(1) }

// Done marks a job of Start's ended; with none left the workers are idle.
func (h *Heartbeat) Done() {
	h.beats.Add(1)
	h.busy.Add(-1)
}

// Busy is the number of jobs between Start and Done.
func (h *Heartbeat) Busy() int { return int(h.busy.Load()) }

// Beats returns how many times progress was recorded.
func (h *Heartbeat) Beats() uint64 { return h.beats.Load() }

// Healthy is the watchdog's progress check: true when the workers are idle
// or any job has made progress since the previous call, or has been stalled for at most
// Grace consecutive calls. It keeps state between calls, so exactly one
// watchdog loop should call it.
func (h *Heartbeat) Healthy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	b := h.beats.Load()
	if h.busy.Load() <= 0 || b != h.seen {
		h.seen, h.stalls = b, 0
		return true
	}
	h.stalls++
	return h.stalls <= h.Grace
}
