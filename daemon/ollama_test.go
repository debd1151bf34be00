package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// startOllamaDaemon starts the daemon with the Ollama API on a free
// loopback port (and the OpenAI API off) and the given extra keys, and
// returns the API's base URL.
func startOllamaDaemon(t *testing.T, set map[string]any, opts Options) (string, *daemonUnderTest) {
	t.Helper()
	b := mqtttest.Start(t, mqtttest.Options{})
	addr := freeAddr(t)
	// The tiny test model has no chat template of its own.
	keys := map[string]any{"http.ollama_listen": addr, "model.chat_template": "chatml"}
	for k, v := range set {
		keys[k] = v
	}
	d := startServe(t, b, writeConfig(t, t.TempDir(), b, keys), opts)
	d.broker = b
	return "http://" + addr, d
}

// TestOllamaClient runs the official ollama npm client's checks against the
// daemon: every scenario the harness runs must pass.
func TestOllamaClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), harnessDeadline)
	defer cancel()
	clients := npmClients(t, ctx)
	const key = "ollama-test-key"
	scenarios := []string{"version", "tags", "ps", "show", "chat", "chat_stream", "chat_tools", "chat_format_schema",
		"chat_format_json", "chat_options", "generate", "pull_unknown_model"}
	url, _ := startOllamaDaemon(t, map[string]any{"http.api_key_file": writeKey(t, key), "model.context": 2048, "limits.max_tokens": 128}, Options{Load: toolLoader()})
	runHarness(t, ctx, scenarios, []string{"EDGELLM_TIMEOUT_MS=" + fmt.Sprint(harnessDeadline.Milliseconds()), "EDGELLM_SCENARIOS=" + strings.Join(scenarios, ",")},
		filepath.Join(clients, "ollama_check.mjs"), url, key)
}

// leadLoader loads the model with LoadLLM and makes every job begin with
// the text lead gives it (none for ""), forced token by token through the
// real generator, as a model that chose to write it would.
func leadLoader(lead func(Job) string) Loader {
	return func(ctx context.Context, o LoadOptions) (Engine, error) {
		e, err := LoadLLM(ctx, o)
		if err != nil {
			return nil, err
		}
		return leadFuncEngine{e, lead}, nil
	}
}

type leadFuncEngine struct {
	Engine
	lead func(Job) string
}

func (e leadFuncEngine) Run(ctx context.Context, job Job) (Outcome, error) {
	job.lead = e.lead(job)
	return e.Engine.Run(ctx, job)
}

// toolLoader makes every job that offers tools after a user's message
// begin with the template's tool-call marker: the random test model never
// chooses to call a tool, and the Ollama API has no tool_choice to make it;
// the grammar then holds the call to the tools' schemas.
func toolLoader() Loader {
	return leadLoader(func(job Job) string {
		if n := len(job.Messages); len(job.Tools) > 0 && n > 0 && job.Messages[n-1].Role == "user" {
			return "<tool_call>"
		}
		return ""
	})
}

// TestOllamaHomeAssistantReplay replays what Home Assistant's ollama
// integration sends (api/testdata/ha/ollama_*.json: the setup's tags and
// pull, a turn with tools, a tool result without ids) and folds the NDJSON
// answers as it does: tool calls with arguments as objects.
func TestOllamaHomeAssistantReplay(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), harnessDeadline)
	defer cancel()
	clients := npmClients(t, ctx)
	// Home Assistant's system prompt and tools take some 5000 tokens of the
	// test model's tokenizer; it asks num_ctx 8192.
	url, _ := startOllamaDaemon(t, map[string]any{"model.context": 8192, "limits.max_tokens": 128}, Options{Load: toolLoader()})
	want := []string{"ollama_setup/validate_connection", "ollama_setup/setup_entry_list", "ollama_setup/subentry_list_models",
		"ollama_setup/subentry_check_downloaded", "ollama_setup/pull_missing_model", "ollama_turn_tools/turn", "ollama_tool_result/tool_result"}
	runHarness(t, ctx, want, nil, filepath.Join(clients, "ha_replay.mjs"), "-", url)
}

// ollamaError returns the "error" of an Ollama error body, failing the
// test when the body is not one.
func ollamaError(t *testing.T, v map[string]any) string {
	t.Helper()
	msg, ok := v["error"].(string)
	if !ok || msg == "" || len(v) != 1 {
		t.Fatalf("not an Ollama error body: %v", v)
	}
	return msg
}

// TestOllamaBadInput sends malformed requests to every endpoint that takes
// a body: each is answered with a 4xx {"error"}, and the next request is
// served.
func TestOllamaBadInput(t *testing.T) {
	base, _ := startOllamaDaemon(t, map[string]any{"http.max_body_bytes": 4096}, Options{})
	user := `"messages":[{"role":"user","content":"hi"}]`
	for _, c := range []struct {
		name, path, body string
		status           int
		want             string // in error
	}{
		{"chat: broken JSON", "/api/chat", `{"messages":[`, 400, "not a valid JSON"},
		{"chat: no body", "/api/chat", ``, 400, "missing request body"},
		{"chat: wrong type", "/api/chat", `{"messages":"hi"}`, 400, "wrong type"},
		{"chat: wrong type of an option", "/api/chat", `{` + user + `,"options":{"temperature":"hot"}}`, 400, "options.temperature"},
		{"chat: negative num_predict", "/api/chat", `{` + user + `,"options":{"num_predict":-5}}`, 400, "num_predict"},
		{"chat: zero num_predict", "/api/chat", `{` + user + `,"options":{"num_predict":0}}`, 400, "num_predict"},
		{"chat: negative num_ctx", "/api/chat", `{` + user + `,"options":{"num_ctx":-1}}`, 400, "num_ctx"},
		{"chat: temperature out of range", "/api/chat", `{` + user + `,"options":{"temperature":9}}`, 400, "temperature"},
		{"chat: repeat_penalty out of range", "/api/chat", `{` + user + `,"options":{"repeat_penalty":0}}`, 400, "repeat_penalty"},
		{"chat: stop of numbers", "/api/chat", `{` + user + `,"options":{"stop":[1]}}`, 400, "stop"},
		{"chat: unknown format", "/api/chat", `{` + user + `,"format":"xml"}`, 400, "format"},
		{"chat: unsupported schema", "/api/chat", `{` + user + `,"format":{"type":"string","pattern":"^a"}}`, 400, "pattern"},
		{"chat: think of a number", "/api/chat", `{` + user + `,"think":3}`, 400, "think"},
		{"chat: keep_alive object", "/api/chat", `{` + user + `,"keep_alive":{}}`, 400, "keep_alive"},
		{"chat: unknown role", "/api/chat", `{"messages":[{"role":"robot","content":"hi"}]}`, 400, "robot"},
		{"chat: images", "/api/chat", `{"messages":[{"role":"user","content":"hi","images":["aGk="]}]}`, 400, "text only"},
		{"chat: bad tool name", "/api/chat", `{` + user + `,"tools":[{"type":"function","function":{"name":"a b"}}]}`, 400, "tools"},
		{"chat: oversized body", "/api/chat", `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, 413, "4096"},
		{"generate: broken JSON", "/api/generate", `{"prompt":`, 400, "not a valid JSON"},
		{"generate: wrong type", "/api/generate", `{"prompt":1}`, 400, "wrong type"},
		{"generate: negative num_predict", "/api/generate", `{"prompt":"a","options":{"num_predict":-3}}`, 400, "num_predict"},
		{"generate: suffix", "/api/generate", `{"prompt":"a","suffix":"b"}`, 400, "suffix"},
		{"generate: template", "/api/generate", `{"prompt":"a","template":"{{ .Prompt }}"}`, 400, "template"},
		{"show: broken JSON", "/api/show", `{"model":`, 400, "not a valid JSON"},
		{"show: no model", "/api/show", `{}`, 400, "model is required"},
		{"show: unknown model", "/api/show", `{"model":"llama3.2:latest"}`, 404, "model.path"},
		{"pull: wrong type", "/api/pull", `{"model":7}`, 400, "wrong type"},
		{"pull: unknown model", "/api/pull", `{"model":"llama3.2:latest","stream":false}`, 404, "edgellm pull"},
		{"pull: oversized body", "/api/pull", `{"model":"` + strings.Repeat("x", 5000) + `"}`, 413, "http.max_body_bytes"},
	} {
		status, v := post(t, base+c.path, "", c.body)
		if status != c.status {
			t.Errorf("%s: status %d, want %d (%v)", c.name, status, c.status, v)
			continue
		}
		if msg := ollamaError(t, v); !strings.Contains(msg, c.want) {
			t.Errorf("%s: error %q does not say %q", c.name, msg, c.want)
		}
	}
	// A good request after the bad ones, naming another model (served by
	// the loaded one) with a num_ctx above the loaded context (capped).
	status, v := post(t, base+"/api/chat", "", `{"model":"llama3.2:latest",`+user+`,"stream":false,"options":{"num_predict":4,"temperature":0,"num_ctx":131072}}`)
	if status != 200 {
		t.Fatalf("a good request after the bad ones: status %d: %v", status, v)
	}
	msg, _ := v["message"].(map[string]any)
	if v["done"] != true || msg["role"] != "assistant" || v["model"] != "tiny-test-f32:latest" {
		t.Fatalf("not a chat answer of the loaded model: %v", v)
	}
	if n := v["eval_count"].(float64); n < 1 || n > 4 {
		t.Errorf("eval_count %v: want 1 to 4", n)
	}
	// raw runs the prompt without the chat template: fewer prompt tokens
	// than the same prompt as a user turn of chatml.
	counts := map[bool]float64{}
	for _, raw := range []bool{false, true} {
		status, v := post(t, base+"/api/generate", "", fmt.Sprintf(`{"prompt":"Once upon a time","raw":%v,"stream":false,"options":{"num_predict":2}}`, raw))
		if status != 200 {
			t.Fatalf("raw %v: status %d: %v", raw, status, v)
		}
		counts[raw] = v["prompt_eval_count"].(float64)
	}
	if counts[true] < 1 || counts[true] >= counts[false] {
		t.Errorf("prompt tokens: raw %v, templated %v", counts[true], counts[false])
	}
	// Ollama's num_predict -1 ("no limit") is limits.max_tokens.
	status, v = post(t, base+"/api/generate", "", `{"prompt":"Once upon a time","stream":false,"options":{"num_predict":-1,"temperature":0}}`)
	if status != 200 || v["eval_count"].(float64) > 256 {
		t.Errorf("num_predict -1: status %d: %v", status, v)
	}
}

// TestOllamaModelEndpoints: / answers as Ollama does (GET and HEAD), pull
// of the loaded model succeeds at once (whole and streamed, by its name
// with or without the tag), a chat or generate without messages or prompt
// "loads" the model, and with http.api_key_file set the /api endpoints
// want the key.
func TestOllamaModelEndpoints(t *testing.T) {
	base, _ := startOllamaDaemon(t, map[string]any{"http.api_key_file": writeKey(t, "s3cret")}, Options{})
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		req, _ := http.NewRequest(method, base+"/", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if want := map[string]string{"GET": "Ollama is running", "HEAD": ""}[method]; resp.StatusCode != 200 || string(b) != want {
			t.Errorf("%s /: %d %q", method, resp.StatusCode, b)
		}
	}
	for _, key := range []string{"", "wrong"} {
		if status, v := get(t, base+"/api/tags", key); status != 401 {
			t.Errorf("tags with key %q: status %d", key, status)
		} else {
			ollamaError(t, v)
		}
	}
	for _, name := range []string{"tiny-test-f32:latest", "tiny-test-f32", "Tiny-Test-F32:latest"} {
		if status, v := post(t, base+"/api/pull", "s3cret", `{"model":"`+name+`","insecure":false,"stream":false}`); status != 200 || v["status"] != "success" || len(v) != 1 {
			t.Errorf("pull %s: status %d: %v", name, status, v)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/api/pull", strings.NewReader(`{"name":"tiny-test-f32:latest"}`))
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if resp.StatusCode != 200 || len(lines) < 2 || lines[len(lines)-1] != `{"status":"success"}` {
		t.Errorf("streamed pull: %d %s", resp.StatusCode, b)
	}
	for _, c := range []struct{ path, body string }{{"/api/chat", `{"model":"x"}`}, {"/api/generate", `{"model":"x"}`}} {
		if status, v := post(t, base+c.path, "s3cret", c.body); status != 200 || v["done"] != true || v["done_reason"] != "load" {
			t.Errorf("%s without input: status %d: %v", c.path, status, v)
		}
	}
}

// TestOllamaAbortedStreamCancelsJob: a client that drops a chat stream
// after its first text cancels the job (the worker reports it cancelled,
// having generated far fewer tokens than asked), and the next request is
// served.
func TestOllamaAbortedStreamCancelsJob(t *testing.T) {
	lw := &logWatch{done: make(chan map[string]string, 16)}
	base, _ := startOllamaDaemon(t, map[string]any{"limits.max_tokens": 400}, Options{Logger: slog.New(lw)})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/chat",
		strings.NewReader(`{"messages":[{"role":"user","content":"tell a long story"}],"options":{"num_predict":400,"temperature":0}}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("stream: status %d, %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var o struct {
			Message struct{ Content string } `json:"message"`
		}
		if json.Unmarshal(sc.Bytes(), &o) == nil && o.Message.Content != "" {
			break // the first text: the job runs
		}
	}
	cancel()
	resp.Body.Close()
	lw.cancelled(t, 400)
	status, v := post(t, base+"/api/generate", "", `{"prompt":"hi","stream":false,"options":{"num_predict":3}}`)
	if status != 200 || v["done"] != true {
		t.Fatalf("the request after the aborted stream: status %d: %v", status, v)
	}
}

// TestOllamaThinking: with think the reasoning comes in message.thinking
// (streamed in its own pieces, whole in the final object), never in the
// content; without it the reasoning the model opens is closed at once.
func TestOllamaThinking(t *testing.T) {
	lead := leadLoader(func(Job) string { return "<think>" + thought + "</think>" + answerText })
	base, _ := startOllamaDaemon(t, map[string]any{"model.path": modelPath(t, thinkModel)}, Options{Load: lead})
	const ask = `"messages":[{"role":"user","content":"How many lamps?"}],"options":{"num_predict":48,"temperature":0}`
	status, v := post(t, base+"/api/chat", "", `{`+ask+`,"think":true,"stream":false}`)
	msg, _ := v["message"].(map[string]any)
	if content, _ := msg["content"].(string); status != 200 || msg["thinking"] != thought || !strings.HasPrefix(content, answerText) {
		t.Fatalf("think, whole: status %d: %v", status, v)
	}

	// streamed folds a streamed chat's thinking and content.
	streamed := func(body string) (thinking, content string) {
		resp, err := http.Post(base+"/api/chat", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var th, co strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			var o struct {
				Message struct{ Content, Thinking string } `json:"message"`
			}
			if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
				t.Fatalf("line %s: %v", sc.Bytes(), err)
			}
			th.WriteString(o.Message.Thinking)
			co.WriteString(o.Message.Content)
		}
		return th.String(), co.String()
	}
	thinking, content := streamed(`{` + ask + `,"think":true}`)
	if thinking != thought || !strings.HasPrefix(content, answerText) || strings.Contains(content, "think>") {
		t.Fatalf("think, streamed: thinking %q, content %q", thinking, content)
	}
	// The budget ends inside the reasoning: it streams once, and the last
	// object does not repeat it (nor does it with tools, whose text is
	// held for the last object).
	for _, extra := range []string{``, `,"tools":[{"type":"function","function":{"name":"f"}}]`} {
		thinking, content = streamed(`{"messages":[{"role":"user","content":"How many lamps?"}],"think":true,"options":{"num_predict":6,"temperature":0}` + extra + `}`)
		if thinking == "" || !strings.HasPrefix(thought, thinking) || content != "" {
			t.Errorf("think, budget in the reasoning%s: thinking %q, content %q", extra, thinking, content)
		}
	}

	status, v = post(t, base+"/api/chat", "", `{`+ask+`,"think":false,"stream":false}`)
	msg, _ = v["message"].(map[string]any)
	if content, _ := msg["content"].(string); status != 200 || msg["thinking"] != nil || strings.Contains(content, "lamps") || content == "" {
		t.Fatalf("think off: status %d: %v", status, v)
	}
}

// TestOllamaOpenAIAndMQTTShareTheQueue: with both HTTP APIs on, Ollama,
// OpenAI and MQTT requests sent at once are each answered exactly once, and
// the status counts them all.
func TestOllamaOpenAIAndMQTTShareTheQueue(t *testing.T) {
	ollamaAddr := freeAddr(t)
	openaiURL, d := startHTTPDaemonD(t, map[string]any{"http.ollama_listen": ollamaAddr, "queue.size": 16}, Options{})
	var posts [][2]string
	for range 3 {
		posts = append(posts, [2]string{openaiURL + "/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"max_tokens":8,"temperature":0}`},
			[2]string{"http://" + ollamaAddr + "/api/chat", `{"messages":[{"role":"user","content":"hi"}],"stream":false,"options":{"num_predict":8,"temperature":0}}`})
	}
	shareQueue(t, d, 3, posts)
}
