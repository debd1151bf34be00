package daemon

import (
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// notifySocket binds a unixgram socket in a temp dir, points NOTIFY_SOCKET
// at it and returns a function reading the next datagram.
func notifySocket(t *testing.T) func() string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify.sock")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return func() string {
		t.Helper()
		buf := make([]byte, 4096)
		// The deadline only bounds a broken test; the datagram was sent
		// before this read, so it is already queued.
		if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, err := conn.Read(buf)
		if err != nil {
			t.Fatalf("reading sd_notify datagram: %v", err)
		}
		return string(buf[:n])
	}
}

func TestNotifierMessages(t *testing.T) {
	next := notifySocket(t)
	var n Notifier
	if !n.Enabled() {
		t.Fatal("Enabled() = false with NOTIFY_SOCKET set")
	}
	steps := []struct {
		send func() error
		want string
	}{
		{n.Ready, "READY=1"},
		{func() error { return n.Status("idle, model tiny, queue 0/8") }, "STATUS=idle, model tiny, queue 0/8"},
		{func() error { return n.Status("two\nlines") }, "STATUS=two lines"},
		{n.Watchdog, "WATCHDOG=1"},
		{n.Stopping, "STOPPING=1"},
	}
	for _, s := range steps {
		if err := s.send(); err != nil {
			t.Fatal(err)
		}
		if got := next(); got != s.want {
			t.Errorf("datagram %q, want %q", got, s.want)
		}
	}
	if err := n.Reloading(); err != nil {
		t.Fatal(err)
	}
	got := next()
	reload, usec, ok := strings.Cut(got, "\nMONOTONIC_USEC=")
	if !ok || reload != "RELOADING=1" {
		t.Fatalf("reload datagram %q", got)
	}
	if v, err := strconv.ParseUint(usec, 10, 64); err != nil || v == 0 {
		t.Errorf("MONOTONIC_USEC %q is not a positive number", usec)
	}
}

func TestNotifierWithoutSocket(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	var n Notifier
	if n.Enabled() {
		t.Error("Enabled() = true without NOTIFY_SOCKET")
	}
	if err := n.Ready(); err != nil {
		t.Errorf("Ready without NOTIFY_SOCKET: %v", err)
	}
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "absent.sock"))
	err := n.Ready()
	if err == nil || !strings.HasPrefix(err.Error(), "daemon: notify READY=1: ") {
		t.Errorf("Ready to a missing socket: %v", err)
	}
}

func TestWatchdogInterval(t *testing.T) {
	t.Setenv("WATCHDOG_USEC", "")
	t.Setenv("WATCHDOG_PID", "")
	if d, err := WatchdogInterval(); d != 0 || err != nil {
		t.Errorf("unset: %v, %v", d, err)
	}
	t.Setenv("WATCHDOG_USEC", "4000000")
	if d, err := WatchdogInterval(); d != 4*time.Second || err != nil {
		t.Errorf("4s: %v, %v", d, err)
	}
	t.Setenv("WATCHDOG_PID", "1") // someone else's watchdog
	if d, err := WatchdogInterval(); d != 0 || err != nil {
		t.Errorf("other pid: %v, %v", d, err)
	}
	t.Setenv("WATCHDOG_PID", "")
	t.Setenv("WATCHDOG_USEC", "soon")
	if _, err := WatchdogInterval(); err == nil || !strings.HasPrefix(err.Error(), "daemon: watchdog: ") {
		t.Errorf("bad value: %v", err)
	}
}

type check struct {
	healthy bool
	err     error
}

func TestWatchdogPingsOnlyWhileWorkerProgresses(t *testing.T) {
	next := notifySocket(t)
	var n Notifier
	hb := &Heartbeat{Grace: 1}
	ticks := make(chan time.Time)
	checks := make(chan check)
	w := &Watchdog{
		Pinger:  n,
		Healthy: hb.Healthy,
		Ticks:   ticks,
		OnCheck: func(h bool, err error) { checks <- check{h, err} },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()

	// tick drives one check and returns its verdict.
	tick := func() bool {
		t.Helper()
		ticks <- time.Now()
		c := <-checks
		if c.err != nil {
			t.Fatalf("ping error: %v", c.err)
		}
		return c.healthy
	}
	// expectPing: this tick pinged.
	expectPing := func(what string) {
		t.Helper()
		if !tick() {
			t.Fatalf("%s: judged wedged", what)
		}
		if got := next(); got != "WATCHDOG=1" {
			t.Fatalf("%s: datagram %q, want WATCHDOG=1", what, got)
		}
	}
	// expectNoPing: this tick sent nothing. A marker sent after the check
	// must be the next datagram; a ping would have been queued before it.
	expectNoPing := func(what string) {
		t.Helper()
		if tick() {
			t.Fatalf("%s: judged healthy", what)
		}
		if err := n.Status("marker " + what); err != nil {
			t.Fatal(err)
		}
		if got := next(); got != "STATUS=marker "+what {
			t.Fatalf("%s: datagram %q, want only the marker (no ping)", what, got)
		}
	}

	expectPing("idle worker")
	expectPing("idle worker again")
	hb.Start()
	expectPing("job started")
	hb.Beat()
	hb.Beat()
	expectPing("tokens decoded")
	expectPing("one stalled check is within grace")
	expectNoPing("wedged")
	expectNoPing("still wedged")
	hb.Beat()
	expectPing("progress again")
	hb.Done()
	expectPing("job done, idle")
	expectPing("idle stays healthy")

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run returned %v", err)
	}
}

func TestWatchdogTicksAtHalfInterval(t *testing.T) {
	next := notifySocket(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &Watchdog{Healthy: (&Heartbeat{}).Healthy, Interval: 20 * time.Millisecond} // nil Pinger: a Notifier
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	for i := 0; i < 3; i++ {
		if got := next(); got != "WATCHDOG=1" {
			t.Fatalf("datagram %d = %q", i, got)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	// Without an interval or ticks the watchdog is off and Run returns.
	if err := (&Watchdog{Pinger: Notifier{}}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestHeartbeatGraceZero(t *testing.T) {
	hb := &Heartbeat{}
	if !hb.Healthy() {
		t.Fatal("fresh heartbeat unhealthy")
	}
	hb.Start()
	if !hb.Healthy() {
		t.Fatal("Start did not count as progress")
	}
	if hb.Healthy() {
		t.Fatal("busy without progress judged healthy with Grace 0")
	}
	hb.Beat()
	if !hb.Healthy() {
		t.Fatal("Beat did not restore health")
	}
	if hb.Beats() != 2 {
		t.Errorf("Beats() = %d, want 2", hb.Beats())
	}
}

// Jobs that run at once share the heartbeat: the workers are busy until the
// last one ends, and healthy while any of them makes progress.
func TestHeartbeatConcurrentJobs(t *testing.T) {
	hb := &Heartbeat{}
	hb.Start()
	hb.Start()
	if !hb.Healthy() || hb.Busy() != 2 {
		t.Fatalf("two jobs started: busy %d", hb.Busy())
	}
	if hb.Healthy() {
		t.Fatal("two jobs without progress judged healthy with Grace 0")
	}
	hb.Beat() // one of them decodes a token
	if !hb.Healthy() {
		t.Fatal("one job's progress did not count")
	}
	hb.Done() // one ends; the other is still busy
	if !hb.Healthy() || hb.Busy() != 1 {
		t.Fatalf("an ending job is progress: busy %d", hb.Busy())
	}
	if hb.Healthy() {
		t.Fatal("the job left without progress judged healthy")
	}
	hb.Done()
	for range 2 { // idle stays healthy however often it is asked
		if !hb.Healthy() || hb.Busy() != 0 {
			t.Fatalf("idle workers unhealthy (busy %d)", hb.Busy())
		}
	}
}
