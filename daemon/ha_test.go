package daemon

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/mqtt"
	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

const statusTopic = "edgellm/pi1/status"

func decodeStatus(t testing.TB, payload string) mqtt.Status {
	t.Helper()
	var st mqtt.Status
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("status %q: %v", payload, err)
	}
	return st
}

// statusWhere waits for a status that satisfies ok.
func (c *client) statusWhere(ok func(mqtt.Status) bool) mqtt.Status {
	c.t.Helper()
	for {
		if st := decodeStatus(c.t, c.next(topicIs(statusTopic)).Payload); ok(st) {
			return st
		}
	}
}

// untilSentinel returns the retained messages a fresh subscriber to filter
// gets: the broker sends them right after the SUBACK, before the echo of a
// message the subscriber publishes afterwards.
func untilSentinel(t *testing.T, b *mqtttest.Broker, filter string) map[string]string {
	t.Helper()
	p := b.Peer(t, mqtttest.PeerOptions{})
	defer p.Disconnect()
	p.Subscribe(filter, 1)
	p.Subscribe("test/sentinel", 1)
	p.Publish("test/sentinel", 1, false, "end")
	got := map[string]string{}
	for {
		m := p.Next(wait)
		if m.Topic == "test/sentinel" {
			return got
		}
		if !m.Retained {
			t.Fatalf("%s: a live message among the retained ones", m.Topic)
		}
		got[m.Topic] = m.Payload
	}
}

func TestServeStatusBeforeOnline(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	path := writeConfig(t, dir, b, nil)
	watch := newClient(t, b, "t-watch", statusTopic, "edgellm/pi1/availability")
	check := func(run int) {
		t.Helper()
		// The message before "online" is the idle status of this run.
		var last string
		for {
			m := watch.next(func(string) bool { return true })
			if m.Topic == "edgellm/pi1/availability" && m.Payload == mqtt.Online {
				break
			}
			last = m.Payload
		}
		if st := decodeStatus(t, last); st.State != mqtt.StateIdle || st.Version != "test" {
			t.Fatalf("run %d: before online: %s", run, last)
		}
		// A fresh subscriber that sees online finds the status too.
		got := untilSentinel(t, b, "edgellm/pi1/+")
		if got["edgellm/pi1/availability"] != mqtt.Online || got[statusTopic] == "" {
			t.Fatalf("run %d: retained %v", run, got)
		}
	}
	d := startServe(t, b, path, Options{})
	check(1)
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	startServe(t, b, path, Options{})
	check(2)
}

func TestServeLastResponseRetained(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	path := writeConfig(t, dir, b, nil)
	d := startServe(t, b, path, Options{})
	c := newClient(t, b, "t-last", "edgellm/pi1/response/#", "edgellm/pi1/last_response")
	last := func() mqtt.Final {
		t.Helper()
		return decodeFinal(t, c.next(topicIs("edgellm/pi1/last_response")).Payload)
	}

	// A JSON request updates it…
	c.publish(reqTopic, `{"id":"j1","prompt":"Once upon a time","max_tokens":4,"temperature":0}`)
	f := c.final("j1")
	if l := last(); l.ID != "j1" || l.Status != mqtt.StatusOK || l.Text != f.Text || l.Usage == nil {
		t.Fatalf("last response after a JSON request: %+v (answer %+v)", l, f)
	}
	// …and so does a plain-text one (the prompt entity sends these).
	c.publish(reqTopic, "Once upon a time")
	plain := c.next(topicIs("edgellm/pi1/response")).Payload
	l := last()
	// (JSON carries each invalid UTF-8 byte the tiny model writes as U+FFFD.)
	if l.Status != mqtt.StatusOK || l.Text != string([]rune(plain)) || l.ID == "" {
		t.Fatalf("last response after a plain request: %+v (answer %q)", l, plain)
	}
	// So does an error.
	c.publish(reqTopic, `{"id":"bad","prompt":"x","max_tokens":-1}`)
	if l := last(); l.ID != "bad" || l.Status != mqtt.StatusError || l.Error.Code != api.CodeBadRequest {
		t.Fatalf("last response after a bad request: %+v", l)
	}

	// Retained, across a restart of edgellm: Home Assistant restarting at
	// any time finds it.
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	startServe(t, b, path, Options{})
	got := untilSentinel(t, b, "edgellm/pi1/last_response")
	if r := decodeFinal(t, got["edgellm/pi1/last_response"]); r.ID != "bad" || r.Status != mqtt.StatusError {
		t.Fatalf("retained last response: %+v", r)
	}
}

func TestServeCancelIsNotAFailedJob(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, long), Options{})
	c := newClient(t, b, "t-count", "edgellm/pi1/response/#", statusTopic)
	c.publish(reqTopic, `{"id":"run","prompt":"Once upon a time","max_tokens":500,"temperature":0,"stream":true}`)
	c.publish(reqTopic, `{"id":"wait","prompt":"Once upon a time","max_tokens":500}`)
	c.firstChunk("run")
	c.publish(cancelTopic, "wait")
	if f := c.final("wait"); f.Error == nil || f.Error.Code != api.CodeCancelled {
		t.Fatalf("queued job: %+v", f)
	}
	c.publish(cancelTopic, `{"id":"*"}`)
	if f := c.final("run"); f.Error == nil || f.Error.Code != api.CodeCancelled {
		t.Fatalf("running job: %+v", f)
	}
	st := c.statusWhere(func(st mqtt.Status) bool { return st.JobsCancelled == 2 && st.State == mqtt.StateIdle })
	if st.JobsFailed != 0 || st.JobsOK != 0 {
		t.Fatalf("after two cancels: %+v", st)
	}
	// A real failure still counts as one, an answer as ok.
	c.publish(reqTopic, `{"id":"bad","prompt":"x","max_tokens":-1}`)
	c.final("bad")
	c.publish(reqTopic, `{"id":"ok","prompt":"x","max_tokens":2}`)
	c.final("ok")
	st = c.statusWhere(func(st mqtt.Status) bool { return st.JobsOK == 1 })
	if st.JobsFailed != 1 || st.JobsCancelled != 2 {
		t.Fatalf("counts: %+v", st)
	}
}

func TestServeDecodeSpeedOnlyFromRecentJobs(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, nil), Options{})
	// After a start nothing has been decoded: no speed, not a 0.
	got := untilSentinel(t, b, statusTopic)
	if strings.Contains(got[statusTopic], "decode_tps") {
		t.Fatalf("status after start: %s", got[statusTopic])
	}
	c := newClient(t, b, "t-tps", "edgellm/pi1/response/#", statusTopic)
	c.publish(reqTopic, `{"id":"a","prompt":"Once upon a time","max_tokens":20,"temperature":0}`)
	f := c.final("a")
	st := c.statusWhere(func(st mqtt.Status) bool { return st.DecodeTPS != nil })
	if want := float64(int(f.Timings.DecodeTPS*10+0.5)) / 10; *st.DecodeTPS != want {
		t.Fatalf("decode_tps %v after one job at %v tok/s", *st.DecodeTPS, f.Timings.DecodeTPS)
	}
}

// Jobs that decode at once add up: the rate is their tokens over the time
// any of them decoded.
func TestDecodeRatesAggregate(t *testing.T) {
	var r decodeRates
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	r.add(t0.Add(10*time.Second), 100, 10) // 0–10 s
	r.add(t0.Add(10*time.Second), 100, 10) // 0–10 s, at the same time
	if tps, ok := r.rate(t0.Add(time.Minute)); !ok || tps != 20 {
		t.Fatalf("two jobs at once: %v %v, want 200 tokens / 10 s", tps, ok)
	}
	r.add(t0.Add(15*time.Second), 100, 10) // 5–15 s, overlapping
	r.add(t0.Add(30*time.Second), 50, 10)  // 25–30 s, alone
	if tps, ok := r.rate(t0.Add(time.Minute)); !ok || tps != 350.0/20 {
		t.Fatalf("overlapping jobs: %v %v, want 350 tokens / 20 s", tps, ok)
	}
}

func TestDecodeRatesWindow(t *testing.T) {
	var r decodeRates
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, ok := r.rate(t0); ok {
		t.Fatal("a rate before any job")
	}
	r.add(t0, 100, 10)                  // 10 s
	r.add(t0.Add(time.Minute), 300, 30) // 10 s
	r.add(t0, 0, 5)                     // nothing decoded: ignored
	if tps, ok := r.rate(t0.Add(2 * time.Minute)); !ok || tps != 20 {
		t.Fatalf("two jobs: %v %v, want 400 tokens / 20 s", tps, ok)
	}
	if tps, ok := r.rate(t0.Add(mqtt.DecodeWindow + 30*time.Second)); !ok || tps != 30 {
		t.Fatalf("after the first left the window: %v %v", tps, ok)
	}
	if _, ok := r.rate(t0.Add(time.Minute + mqtt.DecodeWindow + time.Second)); ok {
		t.Fatal("a rate with no job in the window")
	}
	for i := range 1000 {
		r.add(t0.Add(time.Duration(i)*time.Millisecond), 1, 1)
	}
	if len(r.jobs) != maxDecodedJobs {
		t.Fatalf("%d jobs kept", len(r.jobs))
	}
}

// TestStatesPublishedAreEnumOptions: every state the daemon sets is one of
// the state sensor's options (Home Assistant refuses any other value).
func TestStatesPublishedAreEnumOptions(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	values := map[string]string{"StateStarting": mqtt.StateStarting, "StateLoading": mqtt.StateLoading,
		"StateIdle": mqtt.StateIdle, "StateBusy": mqtt.StateBusy, "StateReloading": mqtt.StateReloading, "StateStopping": mqtt.StateStopping}
	calls := 0
	for _, f := range files {
		{
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				if sel, ok := call.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "setState" || len(call.Args) != 1 {
					return true
				}
				calls++
				switch a := call.Args[0].(type) {
				case *ast.SelectorExpr: // mqtt.StateX
					v, ok := values[a.Sel.Name]
					if !ok || !slices.Contains(mqtt.States, v) {
						t.Errorf("%s: setState(%s) is not an enum option", fset.Position(a.Pos()), a.Sel.Name)
					}
				case *ast.CallExpr: // s.idleOrBusy()
					if sel, ok := a.Fun.(*ast.SelectorExpr); !ok || sel.Sel.Name != "idleOrBusy" {
						t.Errorf("%s: setState of an unchecked value", fset.Position(a.Pos()))
					}
				default:
					t.Errorf("%s: setState of an unchecked value", fset.Position(a.Pos()))
				}
				return true
			})
		}
	}
	if calls < 5 {
		t.Fatalf("found %d setState calls", calls)
	}
	for _, v := range []string{mqtt.StateIdle, mqtt.StateBusy} { // idleOrBusy's values
		if !slices.Contains(mqtt.States, v) {
			t.Errorf("%s is not an enum option", v)
		}
	}
}

// boardSystem is a board with 2 GiB of memory and, when asked, a CPU
// thermal zone and the Raspberry Pi firmware's throttled flags.
func boardSystem(t *testing.T, thermal, firmware bool) System {
	files := map[string]string{"proc/self/cgroup": "0::/\n", "proc/meminfo": meminfo4G}
	if thermal {
		files["sys/class/thermal/thermal_zone0/type"] = "cpu-thermal\n"
		files["sys/class/thermal/thermal_zone0/temp"] = "51234\n"
	}
	if firmware {
		files["sys/devices/platform/soc/soc:firmware/get_throttled"] = "0x50005\n"
	}
	return fakeSystem(t, files)
}

func TestServeDiscoveryHasWhatTheBoardHas(t *testing.T) {
	for _, c := range []struct {
		name              string
		thermal, firmware bool
	}{{"bare", false, false}, {"raspberry pi", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			b := mqtttest.Start(t, mqtttest.Options{})
			dir := t.TempDir()
			startServe(t, b, writeConfig(t, dir, b, map[string]any{"mqtt.homeassistant.configuration_url": "http://pi1.local/"}),
				Options{System: boardSystem(t, c.thermal, c.firmware)})
			cl := newClient(t, b, "t-board", "homeassistant/device/pi1/config", statusTopic)
			var cfg struct {
				Dev  map[string]any            `json:"dev"`
				Cmps map[string]map[string]any `json:"cmps"`
			}
			if err := json.Unmarshal([]byte(cl.next(topicIs("homeassistant/device/pi1/config")).Payload), &cfg); err != nil {
				t.Fatal(err)
			}
			_, cpu := cfg.Cmps["cpu_temp"]
			_, thr := cfg.Cmps["throttled"]
			if cpu != c.thermal || thr != c.firmware || cfg.Dev["configuration_url"] != "http://pi1.local/" {
				t.Fatalf("cpu_temp %v, throttled %v, device %v", cpu, thr, cfg.Dev)
			}
			st := decodeStatus(t, cl.next(topicIs(statusTopic)).Payload)
			if (st.CPUTempC != nil) != c.thermal || (st.Throttled != nil) != c.firmware {
				t.Fatalf("status %+v", st)
			}
			if c.thermal && (*st.CPUTempC != 51.2 || !*st.Throttled) {
				t.Fatalf("sensors: %v °C, throttled %v", *st.CPUTempC, *st.Throttled)
			}
		})
	}
}

// legacyConfig is what edgellm published per entity before device-based
// discovery.
func legacyConfig(component, object string) string {
	return fmt.Sprintf(`{"name":%q,"unique_id":"edgellm_pi1_%s","default_entity_id":"%s.edgellm_pi1_%s",`+
		`"availability":[{"topic":"edgellm/pi1/availability","payload_available":"online","payload_not_available":"offline"}],`+
		`"device":{"identifiers":["edgellm_pi1"],"name":"edgellm pi1","model":"tiny","manufacturer":"edgellm"},`+
		`"origin":{"name":"edgellm","sw_version":"0.2.0"},"state_topic":"edgellm/pi1/status"}`, object, object, component, object)
}

func TestServeMigratesPerEntityDiscovery(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	legacy := []string{"sensor/state", "sensor/decode_tps", "sensor/queue_depth", "sensor/memory_used",
		"sensor/cpu_temp", "sensor/last_response", "text/prompt", "button/cancel"}
	old := b.Peer(t, mqtttest.PeerOptions{})
	topic := func(e string) string {
		component, object, _ := strings.Cut(e, "/")
		return "homeassistant/" + component + "/pi1/" + object + "/config"
	}
	for _, e := range legacy {
		component, object, _ := strings.Cut(e, "/")
		old.Publish(topic(e), 1, true, legacyConfig(component, object))
	}
	// Another program's config under the same node id is left alone.
	old.Publish("homeassistant/sensor/pi1/other/config", 1, true, `{"unique_id":"x","origin":{"name":"other"}}`)
	watch := newClient(t, b, "t-migrate", "homeassistant/#")
	startServe(t, b, writeConfig(t, dir, b, nil), Options{System: boardSystem(t, false, false)})

	// Home Assistant's documented order: markers (a deletion for the CPU
	// temperature this board does not have), the device config, then the
	// per-entity topics emptied.
	var seq []string
	for len(seq) == 0 || seq[len(seq)-1] != "clear "+topic("button/cancel") {
		m := watch.next(func(s string) bool { return s != "homeassistant/status" })
		switch {
		case m.Topic == "homeassistant/device/pi1/config":
			seq = append(seq, "device")
		case m.Payload == `{"migrate_discovery":true}`:
			seq = append(seq, "migrate "+m.Topic)
		case m.Payload == "":
			seq = append(seq, "clear "+m.Topic)
		}
	}
	var want []string
	for _, e := range legacy {
		if e == "sensor/cpu_temp" {
			want = append(want, "clear "+topic(e))
		} else {
			want = append(want, "migrate "+topic(e))
		}
	}
	want = append(want, "device")
	for _, e := range legacy {
		want = append(want, "clear "+topic(e))
	}
	// The device config published on connecting may come anywhere.
	match := slices.Equal(seq, want)
	for i := range seq {
		if !match && seq[i] == "device" && len(seq) == len(want)+1 {
			match = slices.Equal(slices.Delete(slices.Clone(seq), i, i+1), want)
		}
	}
	if !match {
		t.Fatalf("migration\n got %q\nwant %q", seq, want)
	}
	got := untilSentinel(t, b, "homeassistant/#")
	if len(got) != 2 || got["homeassistant/device/pi1/config"] == "" || got["homeassistant/sensor/pi1/other/config"] == "" {
		t.Fatalf("retained after the migration: %v", got)
	}
}

func TestServeReloadMovesAndRemovesDiscovery(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	d, n, _ := startNotified(t, b, dir)
	c := newClient(t, b, "t-ha-reload", "homeassistant/device/pi1/config", "ha2/device/pi1/config")
	if m := c.next(topicIs("homeassistant/device/pi1/config")); m.Payload == "" {
		t.Fatal("no device config")
	}

	// A new prefix: the device leaves the old one and appears on the new.
	writeConfig(t, dir, b, map[string]any{"mqtt.homeassistant.discovery_prefix": "ha2"})
	d.reload <- struct{}{}
	n.until(t, "READY=1")
	got := map[string]string{}
	for len(got) < 2 {
		m := c.next(func(string) bool { return true })
		got[m.Topic] = m.Payload
	}
	if got["homeassistant/device/pi1/config"] != "" || !strings.Contains(got["ha2/device/pi1/config"], `"cmps"`) {
		t.Fatalf("after the prefix change: %v", got)
	}

	// Discovery off: the device is removed.
	writeConfig(t, dir, b, map[string]any{"mqtt.homeassistant.discovery_prefix": "ha2", "mqtt.homeassistant.enabled": false})
	d.reload <- struct{}{}
	n.until(t, "READY=1")
	if m := c.next(topicIs("ha2/device/pi1/config")); m.Payload != "" {
		t.Fatalf("discovery off: %q", m.Payload)
	}
	if r := untilSentinel(t, b, "+/device/pi1/config"); len(r) != 0 {
		t.Fatalf("retained after discovery was turned off: %v", r)
	}
}
