package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// freeAddr returns a loopback address with a port free at the time of the
// call, for http.listen.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// startHTTPDaemon starts the daemon with the OpenAI API on a free loopback
// port and the given extra keys, and returns the API's base URL.
func startHTTPDaemon(t *testing.T, set map[string]any, opts Options) string {
	url, _ := startHTTPDaemonD(t, set, opts)
	return url
}

// harnessDeadline bounds a run of a client harness and each of its
// requests: a guard against a hang, not a speed limit. The harnesses take
// seconds alone but many minutes on a 2-core machine running the other
// packages' tests (and helpers) at once.
const harnessDeadline = 20 * time.Minute

// startHTTPDaemonD is startHTTPDaemon returning the daemon too.
func startHTTPDaemonD(t *testing.T, set map[string]any, opts Options) (string, *daemonUnderTest) {
	t.Helper()
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	addr := freeAddr(t)
	// The tiny test model has no chat template of its own.
	keys := map[string]any{"http.listen": addr, "model.chat_template": "chatml"}
	for k, v := range set {
		keys[k] = v
	}
	d := startServe(t, b, writeConfig(t, dir, b, keys), opts)
	d.broker = b
	return "http://" + addr, d
}

// writeKey writes an API key file and returns its path.
func writeKey(t *testing.T, key string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "api-key")
	if err := os.WriteFile(p, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOpenAIClient runs the official openai npm client's checks against the
// daemon: every scenario the harness runs must pass.
func TestOpenAIClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), harnessDeadline)
	defer cancel()
	clients := npmClients(t, ctx)
	const key = "sk-test-key"
	scenarios := []string{"models_list", "chat", "completion", "chat_text_parts_and_max_completion_tokens", "stream", "tool_round_trip",
		"tool_stream_deltas", "json_schema_strict", "json_object", "bad_request_is_openai_error", "wrong_api_key_is_401"}
	url := startHTTPDaemon(t, map[string]any{"http.api_key_file": writeKey(t, key), "model.context": 1024, "limits.max_tokens": 128}, Options{})
	runHarness(t, ctx, scenarios, []string{"EDGELLM_TIMEOUT_MS=" + fmt.Sprint(harnessDeadline.Milliseconds()), "EDGELLM_SCENARIOS=" + strings.Join(scenarios, ",")},
		filepath.Join(clients, "openai_check.mjs"), url, key)
}

// post sends a JSON body to the API and returns the status and the decoded
// body.
func post(t *testing.T, url, key, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return do(t, req)
}

// get sends a GET, with the bearer key unless it is "", and returns the
// status and the decoded body.
func get(t *testing.T, url, key string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, map[string]any) {
	t.Helper()
	resp, err := (&http.Client{Timeout: wait}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("%s %s: status %d, body not JSON: %v", req.Method, req.URL, resp.StatusCode, err)
	}
	return resp.StatusCode, v
}

// errorMessage returns error.message of an OpenAI error body, failing the
// test when the body is not one.
func errorMessage(t *testing.T, v map[string]any) string {
	t.Helper()
	e, ok := v["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object in %v", v)
	}
	msg, _ := e["message"].(string)
	if msg == "" || e["type"] == nil {
		t.Fatalf("error without message or type: %v", e)
	}
	return msg
}

// TestOpenAIBadInput sends malformed requests: each is answered with a 4xx
// JSON error in OpenAI's shape, and a good request after them is served.
func TestOpenAIBadInput(t *testing.T) {
	base := startHTTPDaemon(t, map[string]any{"http.max_body_bytes": 4096}, Options{})
	chat := base + "/v1/chat/completions"
	user := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		name, body string
		status     int
		want       string // in error.message
	}{
		{"broken JSON", `{"messages":[`, 400, "not a valid JSON"},
		{"wrong type", `{"messages":"hi"}`, 400, "wrong type"},
		{"wrong type of max_tokens", `{` + user + `,"max_tokens":"ten"}`, 400, "wrong type"},
		{"negative max_tokens", `{` + user + `,"max_tokens":-1}`, 400, "at least 1"},
		{"zero max_completion_tokens", `{` + user + `,"max_completion_tokens":0}`, 400, "at least 1"},
		{"temperature out of range", `{` + user + `,"temperature":9}`, 400, "temperature"},
		{"no messages", `{"model":"x"}`, 400, "messages"},
		{"image part", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "text"},
		{"unknown response_format", `{` + user + `,"response_format":{"type":"xml"}}`, 400, "xml"},
		{"tool_choice without tools", `{` + user + `,"tool_choice":"required"}`, 400, "tools"},
		{"n of 2", `{` + user + `,"n":2}`, 400, "n = 1"},
		{"unknown reasoning_effort", `{` + user + `,"reasoning_effort":"extreme"}`, 400, "reasoning_effort"},
		{"schema the grammar lacks", `{` + user + `,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"string","pattern":"^a+$"}}}}`, 400, "pattern"},
		{"oversized body", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "4096"},
		{"text: broken JSON", `{"prompt":`, 400, "not a valid JSON"},
		{"text: no prompt", `{"max_tokens":4}`, 400, "prompt"},
		{"text: token ids", `{"prompt":[[1,2,3]]}`, 400, "token ids"},
		{"text: two prompts", `{"prompt":["a","b"]}`, 400, "one prompt at a time"},
		{"text: suffix", `{"prompt":"a","suffix":"b"}`, 400, "suffix"},
		{"text: logprobs", `{"prompt":"a","logprobs":3}`, 400, "log probabilities"},
		{"text: negative max_tokens", `{"prompt":"a","max_tokens":-5}`, 400, "at least 1"},
		{"text: wrong type of stop", `{"prompt":"a","stop":7}`, 400, "stop"},
		{"text: oversized body", `{"prompt":"` + strings.Repeat("x", 5000) + `"}`, 413, "4096"},
	} {
		url := chat
		if strings.HasPrefix(c.name, "text: ") {
			url = base + "/v1/completions"
		}
		status, v := post(t, url, "", c.body)
		if status != c.status {
			t.Errorf("%s: status %d, want %d (%v)", c.name, status, c.status, v)
			continue
		}
		if msg := errorMessage(t, v); !strings.Contains(msg, c.want) {
			t.Errorf("%s: error.message %q does not say %q", c.name, msg, c.want)
		}
	}
	status, v := post(t, chat, "", `{"model":"some-other-model",`+user+`,"max_tokens":4,"temperature":0}`)
	if status != 200 {
		t.Fatalf("a good request after the bad ones: status %d: %v", status, v)
	}
	choices, _ := v["choices"].([]any)
	if len(choices) != 1 || v["object"] != "chat.completion" || !strings.HasPrefix(v["model"].(string), "tiny") {
		t.Fatalf("not a chat completion of the loaded model: %v", v)
	}
	if fr := choices[0].(map[string]any)["finish_reason"]; fr != "length" && fr != "stop" {
		t.Errorf("finish_reason %v", fr)
	}
	if u, _ := v["usage"].(map[string]any); u == nil || u["completion_tokens"].(float64) < 1 || u["completion_tokens"].(float64) > 4 {
		t.Errorf("usage %v: want 1 to 4 completion tokens", v["usage"])
	}
	// A max_tokens above limits.max_tokens (256 here) is lowered to it, as
	// llama.cpp's server bounds n_predict.
	status, v = post(t, chat, "", `{`+user+`,"max_tokens":100000,"temperature":0}`)
	if u, _ := v["usage"].(map[string]any); status != 200 || u == nil || u["completion_tokens"].(float64) > 256 {
		t.Errorf("max_tokens 100000: status %d: %v", status, v)
	}
}

// TestOpenAIAPIKey: with http.api_key_file set, /v1 requests without the
// key or with a wrong one get 401 in OpenAI's shape; with it they are served;
// /health needs none.
func TestOpenAIAPIKey(t *testing.T) {
	base := startHTTPDaemon(t, map[string]any{"http.api_key_file": writeKey(t, "s3cret")}, Options{})
	for _, key := range []string{"", "wrong"} {
		status, v := get(t, base+"/v1/models", key)
		if status != 401 {
			t.Errorf("key %q: status %d, want 401", key, status)
		}
		errorMessage(t, v)
	}
	if status, v := post(t, base+"/v1/chat/completions", "wrong", `{"messages":[{"role":"user","content":"hi"}]}`); status != 401 {
		t.Errorf("chat with a wrong key: status %d: %v", status, v)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/models", nil)
	req.Header.Set("Authorization", "Bearer s3cret")
	status, v := do(t, req)
	data, _ := v["data"].([]any)
	if status != 200 || len(data) != 1 || data[0].(map[string]any)["id"] == "" {
		t.Errorf("models with the key: status %d: %v", status, v)
	}
	req, _ = http.NewRequest(http.MethodGet, base+"/health", nil)
	if status, v := do(t, req); status != 200 || v["status"] != "ok" {
		t.Errorf("health: status %d: %v", status, v)
	}
}

// logWatch is a slog handler that hands "job done" records to a test.
type logWatch struct {
	done chan map[string]string
}

func (l *logWatch) Enabled(context.Context, slog.Level) bool { return true }
func (l *logWatch) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logWatch) WithGroup(string) slog.Handler            { return l }
func (l *logWatch) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "job done" {
		return nil
	}
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	l.done <- m
	return nil
}

// cancelled waits for the next job to end and fails the test unless it was
// cancelled before it generated the asked tokens.
func (l *logWatch) cancelled(t *testing.T, asked int) {
	t.Helper()
	select {
	case m := <-l.done:
		if m["status"] != "cancelled" {
			t.Fatalf("the aborted job ended %v, want cancelled", m)
		}
		var n int
		fmt.Sscan(m["tokens"], &n)
		if n >= asked {
			t.Errorf("the aborted job generated %d tokens, all it was asked", n)
		}
	case <-time.After(wait):
		t.Fatal("the aborted job did not end")
	}
}

// TestOpenAIAbortedStreamCancelsJob: a client that drops a stream after its
// first text cancels the job (the worker reports it cancelled, having
// generated far fewer tokens than asked), and the next request is served.
func TestOpenAIAbortedStreamCancelsJob(t *testing.T) {
	lw := &logWatch{done: make(chan map[string]string, 16)}
	base := startHTTPDaemon(t, map[string]any{"limits.max_tokens": 400}, Options{Logger: slog.New(lw)})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"messages":[{"role":"user","content":"tell a long story"}],"max_tokens":400,"temperature":0,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: status %d, %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "data: ") && strings.Contains(sc.Text(), `"content":"`) && !strings.Contains(sc.Text(), `"role"`) {
			break // the first text chunk: the job runs
		}
	}
	cancel()
	resp.Body.Close()
	lw.cancelled(t, 400)
	status, v := post(t, base+"/v1/chat/completions", "", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":3}`)
	if status != 200 {
		t.Fatalf("the request after the aborted stream: status %d: %v", status, v)
	}
}

// TestOpenAIJSONSchema: a strict json_schema the grammar supports yields
// content that is a JSON object of that schema even from the random test
// model; a schema with a keyword the grammar does not support is a 400
// naming it, and the next request is served.
func TestOpenAIJSONSchema(t *testing.T) {
	base := startHTTPDaemon(t, nil, Options{})
	chat := base + "/v1/chat/completions"
	const schema = `{"type":"object","properties":{"room":{"type":"string","enum":["kitchen","hall"]},"on":{"type":"boolean"}},"required":["room","on"],"additionalProperties":false}`
	status, v := post(t, chat, "", `{"messages":[{"role":"user","content":"kitchen light?"}],"temperature":0,"max_tokens":60,`+
		`"response_format":{"type":"json_schema","json_schema":{"name":"light","strict":true,"schema":`+schema+`}}}`)
	if status != 200 {
		t.Fatalf("status %d: %v", status, v)
	}
	msg := v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	content, _ := msg["content"].(string)
	var got map[string]any
	if err := json.Unmarshal([]byte(content), &got); err != nil {
		t.Fatalf("content %q is not JSON: %v", content, err)
	}
	if room := got["room"]; (room != "kitchen" && room != "hall") || len(got) != 2 {
		t.Errorf("content %s does not follow the schema", content)
	}
	if _, ok := got["on"].(bool); !ok {
		t.Errorf("content %s: on is not a boolean", content)
	}

	status, v = post(t, chat, "", `{"messages":[{"role":"user","content":"x"}],"response_format":{"type":"json_schema","json_schema":{"name":"n","schema":{"type":"string","pattern":"^a"}}}}`)
	if status != 400 || !strings.Contains(errorMessage(t, v), "pattern") {
		t.Errorf("unsupported schema: status %d: %v", status, v)
	}
	if status, v := post(t, chat, "", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}`); status != 200 {
		t.Errorf("the request after the bad schema: status %d: %v", status, v)
	}
}

// postResult is what postAsync got.
type postResult struct {
	status     int
	retryAfter string
	body       map[string]any
	err        error
}

// postAsync posts a chat completion body and sends the outcome to results;
// for goroutines, which must not call t.Fatal.
func postAsync(base, body string, results chan<- postResult) {
	postURLAsync(base+"/v1/chat/completions", body, results)
}

// postURLAsync is postAsync to any URL.
func postURLAsync(url, body string, results chan<- postResult) {
	resp, err := (&http.Client{Timeout: wait}).Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		results <- postResult{err: err}
		return
	}
	defer resp.Body.Close()
	var v map[string]any
	err = json.NewDecoder(resp.Body).Decode(&v)
	results <- postResult{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), body: v, err: err}
}

// TestOpenAIQueueFullIs503: twenty requests at once against a queue of one
// are each answered exactly once: served (all their tokens) or 503 with
// Retry-After and an OpenAI error; some are served and some refused. (How
// many are served depends on whether the worker takes the first job before
// the others arrive: one, or the running one and the queued one.)
func TestOpenAIQueueFullIs503(t *testing.T) {
	base := startHTTPDaemon(t, map[string]any{"queue.size": 1}, Options{})
	results := make(chan postResult, 20)
	for range 20 {
		go postAsync(base, `{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":200,"temperature":0}`, results)
	}
	ok, busy := 0, 0
	for range 20 {
		r := <-results
		switch {
		case r.err != nil:
			t.Fatalf("request failed: %v", r.err)
		case r.status == 200:
			if u := r.body["usage"].(map[string]any); u["completion_tokens"].(float64) < 1 {
				t.Errorf("served without tokens: %v", r.body)
			}
			ok++
		case r.status == 503:
			if r.retryAfter == "" {
				t.Errorf("503 without Retry-After")
			}
			errorMessage(t, r.body)
			busy++
		default:
			t.Fatalf("unexpected answer %d: %v", r.status, r.body)
		}
	}
	if ok < 1 || busy == 0 {
		t.Fatalf("%d served, %d busy", ok, busy)
	}
	t.Logf("%d served, %d busy", ok, busy)
}

// npmClients installs the pinned npm clients (from the npm cache when it holds them)
// and returns their directory.
func npmClients(t *testing.T, ctx context.Context) string {
	t.Helper()
	clients, err := filepath.Abs("../api/testdata/clients")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(ctx, "npm", "ci", "--prefer-offline", "--prefix", clients).CombinedOutput(); err != nil {
		t.Fatalf("npm ci: %v\n%s", err, out)
	}
	return clients
}

// runHarness runs a client harness and fails the test on every ok:false
// line it prints, on a scenario of want that did not run, and on a non-zero
// exit without a failed line.
func runHarness(t *testing.T, ctx context.Context, want []string, env []string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, runErr := cmd.Output()
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Scenario string `json:"scenario"`
			OK       bool   `json:"ok"`
			Detail   string `json:"detail"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Errorf("not a result line: %q", line)
			continue
		}
		seen[r.Scenario] = true
		if !r.OK {
			t.Errorf("%s: %s", r.Scenario, r.Detail)
		} else {
			t.Logf("%s: ok: %s", r.Scenario, r.Detail)
		}
	}
	for _, s := range want {
		if !seen[s] {
			t.Errorf("scenario %s did not run", s)
		}
	}
	if runErr != nil && !t.Failed() {
		t.Errorf("%s: %v\n%s", args[0], runErr, stderr.String())
	}
}

// TestOpenAIHomeAssistantReplay replays what Home Assistant's llama_cpp
// integration sends (api/testdata/ha) and folds the answers as it does.
func TestOpenAIHomeAssistantReplay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), harnessDeadline)
	defer cancel()
	clients := npmClients(t, ctx)
	url := startHTTPDaemon(t, map[string]any{"model.context": 8192, "limits.max_tokens": 128}, Options{})
	// Home Assistant's long system prompt and tools take some 5000 tokens
	// of the test model's tokenizer; it asks max_tokens 3000, lowered to
	// limits.max_tokens.
	want := []string{"llama_cpp_setup_probe/list_models", "llama_cpp_setup_probe/validate_completions",
		"llama_cpp_setup_probe/validate_completions_stream", "llama_cpp_setup_probe/setup_entry_list_models",
		"llama_cpp_stream/turn_stream", "llama_cpp_tool_result/tool_result", "llama_cpp_tool_result/tool_result_stream",
		"llama_cpp_turn_tools/turn"}
	runHarness(t, ctx, want, nil, filepath.Join(clients, "ha_replay.mjs"), url, "-")
}

// TestOpenAIGracefulShutdown: a stream running when the daemon stops is
// finished (finish chunk and [DONE]), Serve returns nil, and the listener
// is closed afterwards.
func TestOpenAIGracefulShutdown(t *testing.T) {
	base, d := startHTTPDaemonD(t, map[string]any{"model.context": 2048, "limits.max_tokens": 300}, Options{})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions",
		strings.NewReader(`{"messages":[{"role":"user","content":"Once upon a time"}],"max_tokens":300,"temperature":0,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: wait}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), `"content":"`) {
	}
	stopped := make(chan error, 1)
	go func() { stopped <- d.stop() }()
	var finish, done bool
	for sc.Scan() {
		line := sc.Text()
		finish = finish || strings.Contains(line, `"finish_reason":"`)
		done = done || line == "data: [DONE]"
	}
	if !finish || !done {
		t.Errorf("the running stream was cut by the shutdown: finish chunk %v, [DONE] %v (%v)", finish, done, sc.Err())
	}
	if err := <-stopped; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := http.Get(base + "/health"); err == nil {
		t.Error("the HTTP API still answers after the daemon stopped")
	}
}

// TestOpenAIToolStreamHasNoCallText: a streamed answer that calls a tool
// carries the call only as tool_calls fragments, never its text (the
// template's <tool_call> markup) as content.
func TestOpenAIToolStreamHasNoCallText(t *testing.T) {
	base := startHTTPDaemon(t, map[string]any{"model.context": 2048}, Options{})
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(`{"messages":[{"role":"user","content":"weather?"}],`+
		`"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}],`+
		`"tool_choice":"required","max_tokens":128,"temperature":0,"stream":true}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: wait}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	var content strings.Builder
	var calls, finish string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content   string          `json:"content"`
					ToolCalls json.RawMessage `json:"tool_calls"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("chunk %s: %v", data, err)
		}
		for _, c := range ch.Choices {
			content.WriteString(c.Delta.Content)
			calls += string(c.Delta.ToolCalls)
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
	}
	if finish != "tool_calls" || !strings.Contains(calls, `"get_weather"`) {
		t.Fatalf("finish %q, tool_calls %s", finish, calls)
	}
	if strings.Contains(content.String(), "tool_call") || strings.Contains(content.String(), "get_weather") {
		t.Errorf("the call's text reached the content: %q", content.String())
	}
}

// TestOpenAIAndMQTTShareTheQueue: MQTT and HTTP requests sent at once are
// each answered exactly once, and the status counts both.
func TestOpenAIAndMQTTShareTheQueue(t *testing.T) {
	base, d := startHTTPDaemonD(t, map[string]any{"queue.size": 16}, Options{})
	var posts [][2]string
	for range 4 {
		posts = append(posts, [2]string{base + "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"temperature":0}`})
	}
	shareQueue(t, d, 4, posts)
}

// shareQueue sends the HTTP posts (URL and body) and mqttN MQTT requests
// at once, and checks that each is answered exactly once (HTTP with 200)
// and that the status counts them all.
func shareQueue(t *testing.T, d *daemonUnderTest, mqttN int, posts [][2]string) {
	t.Helper()
	c := newClient(t, d.broker, "t-mixed", "edgellm/pi1/response/#")
	results := make(chan postResult, len(posts))
	for _, p := range posts {
		go postURLAsync(p[0], p[1], results)
	}
	var ids []string
	for i := range mqttN {
		id := fmt.Sprintf("m%d", i)
		ids = append(ids, id)
		c.publish(reqTopic, `{"id":"`+id+`","prompt":"hi","max_tokens":8}`)
	}
	for range posts {
		if r := <-results; r.err != nil || r.status != 200 {
			t.Errorf("HTTP request: status %d: %v %v", r.status, r.body, r.err)
		}
	}
	for id, fs := range c.finals(ids) {
		if len(fs) != 1 || fs[0].Status != "ok" {
			t.Errorf("MQTT %s: %d answers: %+v", id, len(fs), fs)
		}
	}
	// The MQTT answers were published before the status counted them (and
	// finals' last request); the HTTP ones before their responses were
	// written.
	st := retained(t, d.broker, "edgellm/pi1/status", `"jobs_ok":`+fmt.Sprint(len(posts)+mqttN+1))
	if !strings.Contains(st, fmt.Sprintf(`"jobs_http":%d`, len(posts))) {
		t.Errorf("the status does not count the %d HTTP requests as such: %s", len(posts), st)
	}
}

// TestOpenAIOverTLS serves the API over HTTPS (http.tls) and runs the
// openai npm client's model list and chat against it, trusting the test CA;
// a plain-HTTP request to the TLS port is refused.
func TestOpenAIOverTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), harnessDeadline)
	defer cancel()
	clients := npmClients(t, ctx)
	b := mqtttest.Start(t, mqtttest.Options{TLS: true})
	addr := freeAddr(t)
	startServe(t, b, writeConfig(t, t.TempDir(), b, map[string]any{
		"http.listen": addr, "model.chat_template": "chatml",
		"http.tls.cert": b.ServerCertFile, "http.tls.key": b.ServerKeyFile,
	}), Options{})
	_, port, _ := net.SplitHostPort(addr)
	scenarios := []string{"models_list", "chat"}
	runHarness(t, ctx, scenarios, []string{"NODE_EXTRA_CA_CERTS=" + b.CAFile, "EDGELLM_TIMEOUT_MS=" + fmt.Sprint(harnessDeadline.Milliseconds()), "EDGELLM_SCENARIOS=" + strings.Join(scenarios, ",")},
		filepath.Join(clients, "openai_check.mjs"), "https://localhost:"+port)

	resp, err := http.Get("http://" + addr + "/v1/models")
	if err != nil {
		t.Fatalf("plain HTTP to the TLS port: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("plain HTTP to the TLS port answered %d, want 400", resp.StatusCode)
	}
}
