package daemon

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/mqtt"
	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// doorPayload is the README's Home Assistant automation's request: the same
// id and payload on every door event.
const doorPayload = `{"id":"door","prompt":"Write a one-line welcome home message.","max_tokens":32}`

// A new request is answered whatever its id: the same payload three times
// gets three answers, and a retry after busy or bad_request is answered.
func TestServeReusedIDAnsweredEveryTime(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	startServe(t, b, writeConfig(t, dir, b, map[string]any{"queue.size": 1, "model.context": 2048, "limits.max_tokens": 1024}), Options{})
	c := newClient(t, b, "t-reuse", "edgellm/pi1/response/#")
	for i := range 3 {
		c.publish(reqTopic, doorPayload)
		if f := c.final("door"); f.Status != mqtt.StatusOK || f.Usage.CompletionTokens == 0 {
			t.Fatalf("door event %d: %+v", i+1, f)
		}
	}

	// A retry after bad_request.
	c.publish(reqTopic, `{"id":"again","prompt":"x","top_p":0}`)
	if f := c.final("again"); f.Error == nil || f.Error.Code != api.CodeBadRequest {
		t.Fatalf("top_p 0: %+v", f)
	}
	c.publish(reqTopic, `{"id":"again","prompt":"x","max_tokens":2}`)
	if f := c.final("again"); f.Status != mqtt.StatusOK {
		t.Fatalf("retry after bad_request: %+v", f)
	}

	// A retry after busy: one job runs, one waits, the third is busy.
	c.publish(reqTopic, `{"id":"run","prompt":"Once upon a time","max_tokens":500,"temperature":0,"stream":true}`)
	c.firstChunk("run")
	c.publish(reqTopic, `{"id":"wait","prompt":"x","max_tokens":2}`)
	c.publish(reqTopic, `{"id":"busy","prompt":"x","max_tokens":2}`)
	if f := c.final("busy"); f.Error == nil || f.Error.Code != api.CodeBusy {
		t.Fatalf("third request: %+v, want busy", f)
	}
	c.publish(cancelTopic, "run")
	c.final("run")
	c.final("wait")
	c.publish(reqTopic, `{"id":"busy","prompt":"x","max_tokens":2}`)
	if f := c.final("busy"); f.Status != mqtt.StatusOK {
		t.Fatalf("retry after busy: %+v", f)
	}

	// Two requests with one id queued together are both answered, and a
	// cancel of that id cancels both.
	c.publish(reqTopic, `{"id":"run2","prompt":"Once upon a time","max_tokens":500,"temperature":0,"stream":true}`)
	c.firstChunk("run2")
	c.publish(reqTopic, `{"id":"run2","prompt":"x","max_tokens":2}`)
	c.publish(cancelTopic, "run2")
	for range 2 {
		if f := c.final("run2"); f.Error == nil || f.Error.Code != api.CodeCancelled {
			t.Fatalf("cancelled run2: %+v", f)
		}
	}
}

// A SIGKILL after answering but before the acknowledgement reached the
// broker: the broker delivers the request again (DUP), and it is not
// answered twice. The daemon's answer is published, its delivery recorded,
// and then the process is killed between recording and acknowledging, which
// a test can only make happen by stopping the acknowledgement: here the
// request's delivery is recorded as answered ahead of the restart, as the
// killed daemon would have left it.
func TestServeRedeliveryOfAnsweredRequestNotAnsweredAgain(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	path := writeConfig(t, dir, b, long)
	p := startProcess(t, b, path)
	c := newClient(t, b, "t-dup", "edgellm/pi1/response/#")
	// Three requests with one id: "a" runs, the same door payload twice
	// waits. All three are delivered to the node and unacknowledged when it
	// is killed.
	c.publish(reqTopic, `{"id":"a","prompt":"Once upon a time","max_tokens":500,"temperature":0,"stream":true}`)
	c.publish(reqTopic, doorPayload)
	c.publish(reqTopic, doorPayload)
	c.firstChunk("a")
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	p.waitExit()
	// The killed daemon had answered the first door request and recorded
	// it, but its acknowledgement was lost: the broker numbered the three
	// deliveries 1, 2, 3 on this fresh session.
	f, err := os.OpenFile(filepath.Join(dir, "state", AnsweredFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	d := DeliveryOf(2, []byte(doorPayload))
	if _, err := f.WriteString(answeredEntry{key: d, id: "door"}.line()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	startProcess(t, b, path)
	got := c.finals([]string{"a", "door"})
	if fs := got["a"]; len(fs) != 1 || fs[0].Status != mqtt.StatusOK {
		t.Fatalf("a: %+v, want one answer", fs)
	}
	// Packet 2 was answered before the kill; packet 3, the same payload, is
	// a request of its own.
	if fs := got["door"]; len(fs) != 1 || fs[0].Status != mqtt.StatusOK {
		t.Fatalf("door: %d answers %+v, want one (the second event's)", len(fs), fs)
	}
}

// The answered deliveries survive a crash in <state_dir>, one line each, and
// a clean stop clears them.
func TestAnsweredFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, legacyAnsweredFile), []byte("door\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	a, err := OpenAnswered(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, legacyAnsweredFile)); !os.IsNotExist(err) {
		t.Errorf("the bare-id file of older versions is still there: %v", err)
	}
	for i := range 5 {
		if err := a.Add(DeliveryOf(uint16(i+1), []byte(doorPayload)), "door"); err != nil {
			t.Fatal(err)
		}
	}
	a.Close()
	// A torn last line (a crash while appending) is skipped.
	f, _ := os.OpenFile(filepath.Join(dir, AnsweredFile), os.O_WRONLY|os.O_APPEND, 0)
	f.WriteString("6 0123")
	f.Close()
	b, err := OpenAnswered(dir, 3)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		if got, want := b.Has(DeliveryOf(uint16(i), []byte(doorPayload))), i > 2; got != want {
			t.Errorf("packet %d: remembered %v, want %v (the newest 3 are kept)", i, got, want)
		}
	}
	if b.Has(DeliveryOf(3, []byte(`{"id":"door","prompt":"other"}`))) {
		t.Error("another payload under the same packet id matched")
	}
	lines := readLines(t, filepath.Join(dir, AnsweredFile))
	if len(lines) != 4 || lines[0] != answeredHeader || !strings.HasPrefix(lines[1], "3 ") || !strings.HasSuffix(lines[1], " door") {
		t.Errorf("file after reopening: %q", lines)
	}
	if err := b.Clear(); err != nil || b.Len() != 0 {
		t.Fatalf("Clear: %v, %d left", err, b.Len())
	}
	b.Close()
	if lines := readLines(t, filepath.Join(dir, AnsweredFile)); len(lines) != 1 {
		t.Errorf("file after Clear: %q", lines)
	}

	// A file that is not ours is refused, not misread.
	if err := os.WriteFile(filepath.Join(dir, AnsweredFile), []byte("door\nkitchen\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenAnswered(dir, 3); err == nil || !strings.Contains(err.Error(), answeredHeader) {
		t.Errorf("foreign file: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, AnsweredFile), []byte(answeredHeader+"\nbad\n1 "+strings.Repeat("0", 64)+" x\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenAnswered(dir, 3); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("malformed line inside: %v", err)
	}
}

func readLines(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines
}

// vmHWM reads a process's peak resident set size (VmHWM) and current one
// (VmRSS), in bytes.
func vmHWM(t *testing.T, pid int) (peak, rss int64) {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "VmHWM" && k != "VmRSS") {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		if k == "VmHWM" {
			peak = n << 10
		} else {
			rss = n << 10
		}
	}
	return peak, rss
}

// Hostile payloads are refused with bad_request or too_long, and none takes
// the daemon's peak memory more than 64 MiB above its idle size, with
// limits.max_prompt_bytes at its ceiling so that every payload passes the
// size check.
func TestServeHostilePayloadsBoundedMemory(t *testing.T) {
	deep := `{"id":"deep","prompt":"x","schema":` + strings.Repeat(`{"type":"array","items":`, 9000) + `{"type":"string"}` + strings.Repeat(`}`, 9000) + `}`
	var tools []map[string]any
	for i := range 10000 {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": fmt.Sprint("f", i),
			"parameters": map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}}})
	}
	manyTools, _ := json.Marshal(map[string]any{"id": "tools", "prompt": "x", "chat_template": "chatml", "tools": tools})
	bigPrompt, _ := json.Marshal(map[string]any{"id": "big", "prompt": strings.Repeat("word ", 200000)})
	bigChat, _ := json.Marshal(map[string]any{"id": "bigchat", "chat_template": "chatml",
		"messages": []api.Message{{Role: "system", Content: strings.Repeat("be brief ", 50000)}, {Role: "user", Content: "hi"}}})
	cases := []struct{ name, payload, topic, code string }{
		{"schema nested 9000 deep", deep, "edgellm/pi1/response/deep", api.CodeBadRequest},
		{"10000 tools", string(manyTools), "edgellm/pi1/response/tools", api.CodeBadRequest},
		{"1 MB prompt", string(bigPrompt), "edgellm/pi1/response/big", api.CodeTooLong},
		{"450 KB system message", string(bigChat), "edgellm/pi1/response/bigchat", api.CodeTooLong},
		{"null", "null", "edgellm/pi1/error", api.CodeBadRequest},
		{"array", "[]", "edgellm/pi1/error", api.CodeBadRequest},
	}
	b := mqtttest.Start(t, mqtttest.Options{})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A daemon of its own for each, so the peak is this payload's.
			dir := t.TempDir()
			p := startProcess(t, b, writeConfig(t, dir, b, map[string]any{"limits.max_prompt_bytes": maxPromptBytesCeiling}))
			_, idle := vmHWM(t, p.cmd.Process.Pid)
			c := newClient(t, b, "t-hostile", tc.topic)
			c.publish(reqTopic, tc.payload)
			f := decodeFinal(t, c.next(topicIs(tc.topic)).Payload)
			if f.Error == nil || f.Error.Code != tc.code {
				t.Fatalf("answer %+v (error %+v), want %s", f, f.Error, tc.code)
			}
			peak, _ := vmHWM(t, p.cmd.Process.Pid)
			t.Logf("%s: %s; peak RSS %d MiB above idle %d MiB", tc.name, f.Error.Message, (peak-idle)>>20, idle>>20)
			if peak-idle > 64<<20 {
				t.Errorf("peak RSS %d MiB above idle, want at most 64", (peak-idle)>>20)
			}
			p.cmd.Process.Kill()
			p.waitExit()
		})
	}
}

// A job that ends during the shutdown does not make the node idle again, and
// the status loop is stopped before the final status: the retained status
// after the stop is "stopping", never an older state.
func TestServeFinalStatusIsStopping(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	d := startServe(t, b, writeConfig(t, dir, b, map[string]any{"model.context": 2048, "limits.max_tokens": 1024, "mqtt.status_interval": "1s"}), Options{})
	c := newClient(t, b, "t-final", "edgellm/pi1/response/#")
	c.publish(reqTopic, `{"id":"last","prompt":"Once upon a time","max_tokens":300,"temperature":0,"stream":true}`)
	c.firstChunk("last")
	if err := d.stop(); err != nil {
		t.Fatal(err)
	}
	if f := c.final("last"); f.Status != mqtt.StatusOK || f.Usage.CompletionTokens != 300 {
		t.Fatalf("the running job, finished during the shutdown: %+v", f)
	}
	if got := retained(t, b, "edgellm/pi1/status", ""); !strings.Contains(got, `"state":"stopping"`) || !strings.Contains(got, `"jobs_ok":1`) {
		t.Errorf("retained status after the stop: %s", got)
	}
	if got := retained(t, b, "edgellm/pi1/availability", ""); got != mqtt.Offline {
		t.Errorf("availability after the stop: %q", got)
	}
}
