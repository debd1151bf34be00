package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/mqtt"
	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// gate holds every job of a gatedLoader's engines in its slot before its
// generation starts, so a test knows jobs are in their slots at once (a job
// held inside its generation would hold up the steps all slots share).
type gate struct {
	started chan string   // a held job's id
	release chan struct{} // each value lets one held job go on
	running atomic.Int32  // jobs inside Run, over every engine loaded
	// loads receives, per model load, how many jobs were running then.
	loads chan int32
	// hold, when set, says which jobs are held (by id); nil holds all.
	hold func(id string) bool
}

func newGate() *gate {
	return &gate{started: make(chan string, 16), release: make(chan struct{}), loads: make(chan int32, 16)}
}

// loader loads the model with LoadLLM and holds its jobs at the gate.
func (g *gate) loader() Loader {
	return func(ctx context.Context, o LoadOptions) (Engine, error) {
		g.loads <- g.running.Load()
		e, err := LoadLLM(ctx, o)
		if err != nil {
			return nil, err
		}
		return gatedEngine{e, g}, nil
	}
}

// waitStarted waits for n jobs to be held and returns their ids.
func (g *gate) waitStarted(t *testing.T, n int) []string {
	t.Helper()
	var ids []string
	deadline := time.After(wait)
	for len(ids) < n {
		select {
		case id := <-g.started:
			ids = append(ids, id)
		case <-deadline:
			t.Fatalf("%d of %d jobs started: %v", len(ids), n, ids)
		}
	}
	return ids
}

// open lets one held job go on.
func (g *gate) open(t *testing.T) {
	t.Helper()
	select {
	case g.release <- struct{}{}:
	case <-time.After(wait):
		t.Fatal("no job is held")
	}
}

type gatedEngine struct {
	Engine
	g *gate
}

func (e gatedEngine) Run(ctx context.Context, job Job) (Outcome, error) {
	e.g.running.Add(1)
	defer e.g.running.Add(-1)
	if e.g.hold == nil || e.g.hold(job.ID) {
		job.inSlot = func(ctx context.Context) error {
			e.g.started <- job.ID
			select {
			case <-e.g.release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return e.Engine.Run(ctx, job)
}

// untilStatus waits for a status on the status topic that contains every
// one of parts; c reads nothing but statuses (next drops what does not
// match).
func untilStatus(t *testing.T, c *client, parts ...string) string {
	t.Helper()
	for {
		m := c.next(topicIs("edgellm/pi1/status"))
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(m.Payload, p)
		}
		if ok {
			return m.Payload
		}
	}
}

// finalsOf waits for the final answers to ids, in whatever order they come.
func finalsOf(c *client, ids ...string) map[string]mqtt.Final {
	c.t.Helper()
	got := map[string]mqtt.Final{}
	for len(got) < len(ids) {
		m := c.next(func(topic string) bool {
			id, ok := strings.CutPrefix(topic, "edgellm/pi1/response/")
			return ok && slices.Contains(ids, id)
		})
		f := decodeFinal(c.t, m.Payload)
		got[f.ID] = f
	}
	return got
}

const slotPrompt = `"prompt":"Once upon a time","max_tokens":40,"temperature":0`

// slotsDaemon is a daemon with queue.slots 2 whose jobs wait at a gate,
// with a client of its answers (c) and one of its statuses (st).
type slotsDaemon struct {
	*daemonUnderTest
	g     *gate
	dir   string
	b     *mqtttest.Broker
	c, st *client
}

// startSlots starts a slotsDaemon and sends it the jobs named ids.
func startSlots(t *testing.T, ids ...string) *slotsDaemon {
	t.Helper()
	return startSlotsWith(t, newGate(), map[string]any{"queue.slots": 2}, ids...)
}

// startSlotsWith starts a slotsDaemon with gate g and configuration keys
// set, and sends it the jobs named ids.
func startSlotsWith(t *testing.T, g *gate, set map[string]any, ids ...string) *slotsDaemon {
	t.Helper()
	s := &slotsDaemon{b: mqtttest.Start(t, mqtttest.Options{}), dir: t.TempDir(), g: g}
	s.daemonUnderTest = startServe(t, s.b, writeConfig(t, s.dir, s.b, set), Options{Load: s.g.loader()})
	<-s.g.loads // the first load
	s.c = newClient(t, s.b, "t-slots", "edgellm/pi1/response/#")
	s.st = newClient(t, s.b, "t-slots-status", "edgellm/pi1/status")
	for _, id := range ids {
		s.c.publish(reqTopic, `{"id":"`+id+`",`+slotPrompt+`}`)
	}
	return s
}

func TestServeSlotsRunJobsAtOnce(t *testing.T) {
	s := startSlots(t, "a", "b", "c")
	g, c, st := s.g, s.c, s.st
	// Two jobs generate at once (neither can end while held); the third
	// waits for a slot.
	first := g.waitStarted(t, 2)
	untilStatus(t, st, `"state":"busy"`, `"slots":2`, `"active_slots":2`, `"queue_depth":1`)
	g.open(t)
	g.open(t)
	third := g.waitStarted(t, 1)
	if strings.Contains(strings.Join(first, ","), third[0]) || third[0] != "c" {
		t.Fatalf("started %v, then %v", first, third)
	}
	g.open(t)
	// The same greedy prompt gives the same answer in any slot, alone or
	// beside another job.
	finals := finalsOf(c, "a", "b", "c")
	for id, f := range finals {
		if f.Status != mqtt.StatusOK || f.Text == "" || f.Text != finals["a"].Text {
			t.Fatalf("%s: %+v, a's text %q", id, f, finals["a"].Text)
		}
	}
	untilStatus(t, st, `"state":"idle"`, `"active_slots":0`)
}

func TestServeSlotsCancelOneOfTwo(t *testing.T) {
	s := startSlots(t, "a", "b")
	g, c := s.g, s.c
	g.waitStarted(t, 2)
	c.publish(cancelTopic, `{"id":"a"}`)
	if f := c.final("a"); f.Status != mqtt.StatusError || f.Error.Code != api.CodeCancelled || f.FinishReason != api.FinishCancelled {
		t.Fatalf("cancelled job: %+v", f)
	}
	g.open(t) // b, the one held
	if f := c.final("b"); f.Status != mqtt.StatusOK || f.Text == "" || f.Usage.CompletionTokens != 40 {
		t.Fatalf("the other job: %+v", f)
	}
}

func TestServeSlotsReloadWaitsForEveryJob(t *testing.T) {
	s := startSlots(t, "a", "b")
	g, c, st := s.g, s.c, s.st
	g.waitStarted(t, 2)
	// A new context reloads the model, once no job runs; one slot now.
	writeConfig(t, s.dir, s.b, map[string]any{"queue.slots": 1, "model.context": 1024})
	s.reload <- struct{}{}
	untilStatus(t, st, `"state":"reloading"`)
	g.open(t)
	g.open(t)
	for id, f := range finalsOf(c, "a", "b") {
		if f.Status != mqtt.StatusOK || f.Usage.CompletionTokens != 40 {
			t.Fatalf("%s: %+v", id, f)
		}
	}
	select {
	case running := <-g.loads:
		if running != 0 {
			t.Fatalf("the model reloaded while %d jobs ran", running)
		}
	case <-time.After(wait):
		t.Fatal("the model did not reload")
	}
	untilStatus(t, st, `"state":"idle"`, `"slots":1,`)
	c.publish(reqTopic, `{"id":"after",`+slotPrompt+`}`)
	g.waitStarted(t, 1)
	g.open(t)
	if f := c.final("after"); f.Status != mqtt.StatusOK {
		t.Fatalf("after the reload: %+v", f)
	}
}

// The watchdog counts every running job: one job's progress keeps the pings
// while another is stuck, and once that one is done the stuck one stops
// them, until it goes on.
func TestServeSlotsWatchdogCountsEveryJob(t *testing.T) {
	n := listenNotify(t)
	t.Setenv("NOTIFY_SOCKET", n.path)
	t.Setenv("WATCHDOG_USEC", "200000") // ping every 100 ms; 3 stalled checks stop the pings
	g := newGate()
	g.hold = func(id string) bool { return id == "stuck" }
	s := startSlotsWith(t, g, map[string]any{"queue.slots": 2, "model.context": 1024, "limits.max_tokens": 512}, "stuck")
	n.until(t, "READY=1")
	g.waitStarted(t, 1)
	s.c.publish(reqTopic, `{"id":"runs","prompt":"Once upon a time","max_tokens":300,"temperature":0}`)
	if f := s.c.final("runs"); f.Status != mqtt.StatusOK || f.Usage.CompletionTokens != 300 {
		t.Fatalf("the running job beside the stuck one: %+v", f)
	}
	// Only the stuck job is left: the pings stop, a full second (ten
	// intervals) without one.
	deadline := time.Now().Add(wait)
	for {
		m := n.read(t, time.Second)
		if m == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("pings went on while the only running job was stuck")
		}
	}
	g.open(t)
	n.until(t, "WATCHDOG=1")
	if f := s.c.final("stuck"); f.Status != mqtt.StatusOK {
		t.Fatalf("the stuck job once it went on: %+v", f)
	}
}

// slotsSystem is a Pi-class board (4 GiB of RAM) whose service may use
// limit bytes.
func slotsSystem(t *testing.T, limit uint64) System {
	return fakeSystem(t, map[string]string{
		"proc/self/cgroup":                         "0::/edgellm.service\n",
		"proc/meminfo":                             meminfo4G,
		"sys/fs/cgroup/cgroup.controllers":         "memory\n",
		"sys/fs/cgroup/edgellm.service/memory.max": fmt.Sprint(limit),
	})
}

func TestServeRefusesSlotsOverBudget(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	// 2 MiB beside the overhead: one slot's caches at context 1024.
	path := writeConfig(t, t.TempDir(), b, map[string]any{"model.context": 1024, "limits.max_tokens": 64, "queue.slots": 2})
	err := Serve(context.Background(), Options{ConfigPath: path, System: slotsSystem(t, 66*MiB), Logger: testLogger(t)})
	if err == nil || !strings.Contains(err.Error(), "queue.slots 2 at context 1024 needs") ||
		!strings.Contains(err.Error(), "slots that fit at this context: 1") || !strings.Contains(err.Error(), "lower queue.slots") {
		t.Fatalf("Serve = %v", err)
	}
}

// queue.slots 0 on a Pi-class board with room for more: 4 slots, as the
// status says.
func TestServeAutoSlotsOnAPi(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	path := writeConfig(t, t.TempDir(), b, map[string]any{"queue.slots": 0})
	startServe(t, b, path, Options{System: slotsSystem(t, GiB)})
	if got := retained(t, b, "edgellm/pi1/status", `"slots":4,`); !strings.Contains(got, `"active_slots":0`) {
		t.Fatalf("status: %s", got)
	}
}
