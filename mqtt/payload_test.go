package mqtt

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/api"
)

var testLimits = RequestLimits{MaxBytes: 4096, MaxTokens: 256, NoReplyTo: []string{"edgellm/pi/request", "edgellm/pool/request"}}

func TestParseRequestFull(t *testing.T) {
	payload := `{
		"id": "req-1", "messages": [{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},
		{"role":"assistant","content":"Hello"},{"role":"user","content":"Weather?"}],
		"max_tokens": 64, "temperature": 0, "top_p": 1, "top_k": 0, "min_p": 0.1, "seed": 7,
		"stop": ["\n\n", "User:"], "stream": true, "reply_to": "app/answers/1",
		"schema": {"type":"object"}, "tools": [{"type":"function","function":{"name":"get_weather",
		"description":"d","parameters":{"type":"object"}}}], "tool_choice": {"type":"function","function":{"name":"get_weather"}},
		"chat_template": "chatml", "think": true}`
	r, err := ParseRequest([]byte(payload), testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID != "req-1" || r.GeneratedID || r.Plain || len(r.Messages) != 4 || *r.MaxTokens != 64 || *r.Temperature != 0 ||
		*r.TopP != 1 || *r.TopK != 0 || *r.MinP != 0.1 || *r.Seed != 7 || !reflect.DeepEqual(r.Stop, []string{"\n\n", "User:"}) ||
		!r.Stream || r.ReplyTo != "app/answers/1" || !r.JSON || string(r.Schema) != `{"type":"object"}` ||
		r.Tools[0].Function.Name != "get_weather" || *r.ToolChoice != (api.ToolChoice{Mode: api.ToolChoiceFunction, Function: "get_weather"}) ||
		r.ChatTemplate != "chatml" || r.Think == nil || !*r.Think {
		t.Errorf("parsed %+v", r)
	}
	// Unset sampling fields stay nil so the configured defaults apply.
	r, err = ParseRequest([]byte(`{"prompt":"hello","system":"s","json":true,"tool_choice":"none"}`), testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxTokens != nil || r.Temperature != nil || r.Seed != nil || r.Think != nil || !r.GeneratedID || ValidateRequestID(r.ID) != nil || !r.JSON || r.ToolChoice.Mode != "none" {
		t.Errorf("parsed %+v", r)
	}
}

func TestParseRequestPlainText(t *testing.T) {
	r, err := ParseRequest([]byte("What is the capital of France?"), testLimits)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Plain || r.Prompt != "What is the capital of France?" || !r.GeneratedID || ValidateRequestID(r.ID) != nil {
		t.Errorf("parsed %+v", r)
	}
	r2, _ := ParseRequest([]byte("  [not json] either"), testLimits)
	if !r2.Plain || r2.ID == r.ID {
		t.Errorf("second plain request %+v (ids must differ from %s)", r2, r.ID)
	}
}

func TestParseRequestErrors(t *testing.T) {
	long := strings.Repeat("a", 4097)
	cases := []struct {
		name, payload string
		code, field   string
		msg           string
		// routing recovered for the error answer
		id, replyTo string
	}{
		{"empty payload", "", api.CodeBadRequest, "", "empty payload", "", ""},
		{"blank payload", " \n\t", api.CodeBadRequest, "", "empty payload", "", ""},
		{"too long plain", long, api.CodeTooLong, "", "4097 bytes, more than the limit of 4096", "", ""},
		{"too long json keeps id", `{"id":"big","reply_to":"a/b","prompt":"` + long + `"}`, api.CodeTooLong, "", "limits.max_prompt_bytes", "big", "a/b"},
		{"invalid utf-8 plain", "caf\xc3(", api.CodeBadRequest, "", "not valid UTF-8 (bad byte at offset 3)", "", ""},
		{"invalid utf-8 json", `{"id":"u1","prompt":"caf` + "\xff" + `"}`, api.CodeBadRequest, "", "not valid UTF-8", "u1", ""},
		{"syntax error", `{"id":"s1", "prompt": }`, api.CodeBadRequest, "", "invalid JSON at byte", "s1", ""},
		{"truncated", `{"id":"t1","prompt":"hi"`, api.CodeBadRequest, "", "ends in the middle", "t1", ""}, // fields before the error still route
		{"trailing data", `{"prompt":"hi"} {"prompt":"again"}`, api.CodeBadRequest, "", "trailing data", "", ""},
		{"unknown field", `{"id":"k1","prompt":"hi","temprature":0.5}`, api.CodeBadRequest, "temprature", "unknown field; the fields are: chat_template, id,", "k1", ""},
		{"nested unknown field", `{"id":"k2","messages":[{"role":"user","content":"x","nmae":"bob"}]}`, api.CodeBadRequest, "nmae", "unknown field", "k2", ""},
		{"tool calls on a user turn", `{"messages":[{"role":"user","content":"x","tool_calls":[{"id":"c","name":"f","arguments":{}}]}]}`, api.CodeBadRequest, "messages", "only assistant turns have tool_calls", "", ""},
		{"tool_call_id on a user turn", `{"messages":[{"role":"user","content":"x","tool_call_id":"c"}]}`, api.CodeBadRequest, "messages", "only tool turns have tool_call_id", "", ""},
		{"tool call arguments a number", `{"messages":[{"role":"assistant","content":"","tool_calls":[{"name":"f","arguments":5}]},{"role":"tool","content":"ok"}]}`, api.CodeBadRequest, "messages", "arguments must be a JSON object", "", ""},
		{"tool call both shapes", `{"messages":[{"role":"assistant","content":"","tool_calls":[{"name":"f","function":{"name":"f"}}]},{"role":"tool","content":"ok"}]}`, api.CodeBadRequest, "", "either at the top or in function", "", ""},
		{"tool call unknown field", `{"messages":[{"role":"assistant","content":"","tool_calls":[{"name":"f","args":{}}]},{"role":"tool","content":"ok"}]}`, api.CodeBadRequest, "", "unknown field", "", ""},
		{"prompt wrong type", `{"id":"w1","prompt":42}`, api.CodeBadRequest, "prompt", "want a string, got number", "w1", ""},
		{"max_tokens string", `{"id":"w2","prompt":"x","max_tokens":"10"}`, api.CodeBadRequest, "max_tokens", "want an integer, got string", "w2", ""},
		{"max_tokens fraction", `{"prompt":"x","max_tokens":1.5}`, api.CodeBadRequest, "max_tokens", "want an integer, got number 1.5", "", ""},
		{"temperature string", `{"prompt":"x","temperature":"hot"}`, api.CodeBadRequest, "temperature", "want a number, got string", "", ""},
		{"stream not bool", `{"prompt":"x","stream":"yes"}`, api.CodeBadRequest, "stream", "want true or false", "", ""},
		{"stop not array", `{"prompt":"x","stop":"END"}`, api.CodeBadRequest, "stop", "want an array, got string", "", ""},
		{"messages not array", `{"messages":{"role":"user"}}`, api.CodeBadRequest, "messages", "want an array, got object", "", ""},
		{"message content not string", `{"messages":[{"role":"user","content":5}]}`, api.CodeBadRequest, "messages.0.content", "want a string", "", ""},
		{"id not string", `{"id":5,"prompt":"x"}`, api.CodeBadRequest, "id", "want a string, got number", "", ""},
		{"id with slash", `{"id":"a/b","prompt":"x","reply_to":"r/t"}`, api.CodeBadRequest, "id", "has '/'", "", "r/t"},
		{"id with wildcard", `{"id":"a+","prompt":"x"}`, api.CodeBadRequest, "id", "has '+'", "", ""},
		{"id too long", `{"id":"` + strings.Repeat("i", 129) + `","prompt":"x"}`, api.CodeBadRequest, "id", "longer than 128", "", ""},
		{"neither prompt nor messages", `{"id":"n1"}`, api.CodeBadRequest, "prompt", "give prompt (a string) or messages", "n1", ""},
		{"both prompt and messages", `{"id":"b1","prompt":"x","messages":[{"role":"user","content":"y"}]}`, api.CodeBadRequest, "messages", "not both", "b1", ""},
		{"blank prompt", `{"prompt":"   "}`, api.CodeBadRequest, "prompt", "blank", "", ""},
		{"empty messages", `{"messages":[]}`, api.CodeBadRequest, "messages", "must not be empty", "", ""},
		{"bad role", `{"messages":[{"role":"robot","content":"x"}]}`, api.CodeBadRequest, "messages", `messages[0].role "robot" is not system, user, assistant or tool`, "", ""},
		{"system not first", `{"messages":[{"role":"user","content":"x"},{"role":"system","content":"y"},{"role":"user","content":"z"}]}`, api.CodeBadRequest, "messages", "messages[1]: a system message must come first", "", ""},
		{"system twice", `{"system":"a","messages":[{"role":"system","content":"b"},{"role":"user","content":"c"}]}`, api.CodeBadRequest, "system", "given twice", "", ""},
		{"last from assistant", `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"}]}`, api.CodeBadRequest, "messages", "last message must be from user or tool", "", ""},
		{"last content blank", `{"messages":[{"role":"user","content":" "}]}`, api.CodeBadRequest, "messages", "content must not be blank", "", ""},
		{"max_tokens zero", `{"prompt":"x","max_tokens":0}`, api.CodeBadRequest, "max_tokens", "between 1 and 256 (limits.max_tokens), got 0", "", ""},
		{"max_tokens above limit", `{"prompt":"x","max_tokens":257}`, api.CodeBadRequest, "max_tokens", "got 257", "", ""},
		{"temperature negative", `{"prompt":"x","temperature":-0.5}`, api.CodeBadRequest, "temperature", "between 0 and 5", "", ""},
		{"temperature huge", `{"prompt":"x","temperature":50}`, api.CodeBadRequest, "temperature", "got 50", "", ""},
		{"top_p zero", `{"prompt":"x","top_p":0}`, api.CodeBadRequest, "top_p", "in (0, 1]", "", ""},
		{"top_p above one", `{"prompt":"x","top_p":1.01}`, api.CodeBadRequest, "top_p", "got 1.01", "", ""},
		{"top_k negative", `{"prompt":"x","top_k":-1}`, api.CodeBadRequest, "top_k", "0 (off) or more", "", ""},
		{"min_p above one", `{"prompt":"x","min_p":1.5}`, api.CodeBadRequest, "min_p", "in [0, 1)", "", ""},
		{"min_p one", `{"prompt":"x","min_p":1}`, api.CodeBadRequest, "min_p", "in [0, 1)", "", ""},
		{"top_p zero", `{"prompt":"x","top_p":0}`, api.CodeBadRequest, "top_p", "(0, 1]", "", ""},
		{"top_p zero in float32", `{"prompt":"x","top_p":1e-50}`, api.CodeBadRequest, "top_p", "(0, 1]", "", ""},
		{"null", `null`, api.CodeBadRequest, "", "must be an object, got null", "", ""},
		{"array", ` [{"id":"a","prompt":"x"}]`, api.CodeBadRequest, "", "must be an object, got an array", "", ""},
		{"string", `"hello"`, api.CodeBadRequest, "", "must be an object, got a string", "", ""},
		{"too deep", `{"id":"d","prompt":"x","schema":` + strings.Repeat(`{"items":`, 100) + `{}` + strings.Repeat(`}`, 100) + `}`, api.CodeBadRequest, "", "more than 64 levels", "d", ""},
		{"too many tools", `{"prompt":"x","tools":[` + strings.Repeat(`{"type":"function","function":{"name":"f"}},`, 64) + `{"type":"function","function":{"name":"g"}}]}`, api.CodeBadRequest, "tools", "at most 64 tools, got 65", "", ""},
		{"too many messages", `{"messages":[` + strings.Repeat(`{},`, 256) + `{"role":"user","content":"hi"}]}`, api.CodeBadRequest, "messages", "at most 256 messages, got 257", "", ""},
		{"seed below -1", `{"prompt":"x","seed":-2}`, api.CodeBadRequest, "seed", "-1 (random)", "", ""},
		{"too many stops", `{"prompt":"x","stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}`, api.CodeBadRequest, "stop", "at most 16", "", ""},
		{"empty stop", `{"prompt":"x","stop":["a",""]}`, api.CodeBadRequest, "stop", "stop[1] must be 1 to 256 bytes, got 0", "", ""},
		{"reply_to wildcard", `{"id":"r1","prompt":"x","reply_to":"a/#"}`, api.CodeBadRequest, "reply_to", "wildcard", "r1", ""},
		{"reply_to plus", `{"prompt":"x","reply_to":"a/+/b"}`, api.CodeBadRequest, "reply_to", "wildcard", "", ""},
		{"reply_to empty level ok but dollar not", `{"prompt":"x","reply_to":"$SYS/x"}`, api.CodeBadRequest, "reply_to", "reserved", "", ""},
		{"reply_to own request topic", `{"prompt":"x","reply_to":"edgellm/pi/request"}`, api.CodeBadRequest, "reply_to", "would loop", "", ""},
		{"reply_to not string", `{"prompt":"x","reply_to":["a"]}`, api.CodeBadRequest, "reply_to", "want a string, got array", "", ""},
		{"schema not object", `{"prompt":"x","schema":[1]}`, api.CodeBadRequest, "schema", "JSON Schema object, got [1]", "", ""},
		{"schema string", `{"prompt":"x","schema":"{}"}`, api.CodeBadRequest, "schema", "JSON Schema object", "", ""},
		{"json not bool", `{"prompt":"x","json":1}`, api.CodeBadRequest, "json", "want true or false, got number", "", ""},
		{"tool type", `{"prompt":"x","tools":[{"type":"code","function":{"name":"f"}}]}`, api.CodeBadRequest, "tools", `tools[0].type must be "function"`, "", ""},
		{"tool name", `{"prompt":"x","tools":[{"type":"function","function":{"name":"a b"}}]}`, api.CodeBadRequest, "tools", "tools[0].function.name", "", ""},
		{"tool twice", `{"prompt":"x","tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"f"}}]}`, api.CodeBadRequest, "tools", "defined twice", "", ""},
		{"tool parameters", `{"prompt":"x","tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]}`, api.CodeBadRequest, "tools", "parameters must be a JSON Schema object", "", ""},
		{"tool unknown field", `{"prompt":"x","tools":[{"type":"function","function":{"name":"f","strict":true}}]}`, api.CodeBadRequest, "strict", "unknown field", "", ""},
		{"tool_choice bad string", `{"prompt":"x","tool_choice":"always"}`, api.CodeBadRequest, "tool_choice", `"always" is not auto, none, required`, "", ""},
		{"tool_choice bad object", `{"prompt":"x","tool_choice":{"type":"function"}}`, api.CodeBadRequest, "tool_choice", "must be", "", ""},
		{"tool_choice without tools", `{"prompt":"x","tool_choice":"required"}`, api.CodeBadRequest, "tool_choice", "needs tools", "", ""},
		{"tool_choice unknown function", `{"prompt":"x","tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`, api.CodeBadRequest, "tool_choice", `"g", which is not in tools`, "", ""},
		{"chat_template blank", `{"prompt":"x","chat_template":"  "}`, api.CodeBadRequest, "chat_template", "blank", "", ""},
		{"chat_template wrong type", `{"prompt":"x","chat_template":true}`, api.CodeBadRequest, "chat_template", "want a string", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRequest([]byte(tc.payload), testLimits)
			if err == nil {
				t.Fatalf("no error; parsed %+v", r)
			}
			var re *api.Error
			if !errors.As(err, &re) {
				t.Fatalf("error %v is a %T, not *api.Error", err, err)
			}
			if re.Code != tc.code || re.Field != tc.field || !strings.Contains(re.Message, tc.msg) {
				t.Errorf("got code=%s field=%q msg=%q\nwant code=%s field=%q msg containing %q", re.Code, re.Field, re.Message, tc.code, tc.field, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "mqtt: request: ") || (tc.field != "" && !strings.Contains(err.Error(), `"`+tc.field+`"`)) {
				t.Errorf("error text %q should start with mqtt: request: and name the field", err)
			}
			if r == nil {
				t.Fatal("no request returned to route the error answer")
			}
			if tc.id != "" && (r.ID != tc.id || r.GeneratedID) {
				t.Errorf("routing id = %q (generated %v), want %q", r.ID, r.GeneratedID, tc.id)
			}
			if tc.id == "" && (ValidateRequestID(r.ID) != nil || !r.GeneratedID) {
				t.Errorf("routing id = %q (generated %v), want a valid generated id", r.ID, r.GeneratedID)
			}
			if r.ReplyTo != tc.replyTo {
				t.Errorf("routing reply_to = %q, want %q", r.ReplyTo, tc.replyTo)
			}
		})
	}
}

func TestParseCancel(t *testing.T) {
	for payload, want := range map[string]string{`{"id":"abc"}`: "abc", "abc\n": "abc", `{"id":"*"}`: CancelRunning, " *": CancelRunning} {
		if got, err := ParseCancel([]byte(payload)); err != nil || got != want {
			t.Errorf("ParseCancel(%q) = %q, %v; want %q", payload, got, err, want)
		}
	}
	for payload, want := range map[string]string{
		`{"id":"a/b"}`:         `field "id": has '/'`,
		`{"id":"a","why":"x"}`: `field "why": unknown field; a cancel is {"id":"<request id>"}`,
		`{"id":5}`:             `field "id": want a string`,
		``:                     `field "id": must not be empty`,
		`{"id":`:               `ends in the middle`,
		"\xff":                 `not valid UTF-8`,
	} {
		if _, err := ParseCancel([]byte(payload)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCancel(%q) error %v, want %q", payload, err, want)
		}
	}
}

func TestFinalJSONShape(t *testing.T) {
	f := Final{ID: "x", Status: StatusOK, Text: "Paris", FinishReason: api.FinishStop,
		Usage:   &api.Usage{PromptTokens: 12, CompletionTokens: 3, CachedTokens: 4},
		Timings: &api.Timings{TTFTMs: 120.5, PrefillTPS: 80, DecodeTPS: 9.5}}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"x","status":"ok","text":"Paris","finish_reason":"stop","usage":{"prompt_tokens":12,"completion_tokens":3,"cached_tokens":4},"timings":{"ttft_ms":120.5,"prefill_tps":80,"decode_tps":9.5}}`
	if string(b) != want {
		t.Errorf("final JSON\n got %s\nwant %s", b, want)
	}
	if string(f.PlainText()) != "Paris" {
		t.Errorf("PlainText = %q", f.PlainText())
	}

	_, perr := ParseRequest([]byte(`{"prompt":"x","top_p":2}`), testLimits)
	e := ErrorFinal("y", "", perr)
	b, _ = json.Marshal(e)
	want = `{"id":"y","status":"error","text":"","finish_reason":"error","error":{"code":"bad_request","message":"mqtt: request: field \"top_p\": must be in (0, 1], got 2"}}`
	if string(b) != want {
		t.Errorf("error JSON\n got %s\nwant %s", b, want)
	}
	if got := string(e.PlainText()); !strings.HasPrefix(got, "error: bad_request: ") {
		t.Errorf("PlainText of an error = %q", got)
	}
	for code, finish := range map[string]string{api.CodeCancelled: api.FinishCancelled, api.CodeTimeout: api.FinishTimeout, api.CodeBusy: api.FinishError, "": api.FinishError} {
		f := ErrorFinal("z", code, errors.New("boom"))
		wantCode := code
		if code == "" {
			wantCode = api.CodeInternal
		}
		if f.FinishReason != finish || f.Error.Code != wantCode || f.Status != StatusError {
			t.Errorf("ErrorFinal(code %q) = %+v", code, f)
		}
	}

	tc := Final{ID: "t", Status: StatusOK, FinishReason: api.FinishToolCall, ToolCalls: []api.ToolCall{{ID: "c1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)}}}
	b, _ = json.Marshal(tc)
	if !strings.Contains(string(b), `"tool_calls":[{"id":"c1","name":"get_weather","arguments":{"city":"Paris"}}]`) {
		t.Errorf("tool call JSON %s", b)
	}

	// A thinking model's answer: the reasoning apart from the text, its
	// tokens counted.
	th := Final{ID: "r", Status: StatusOK, Text: "Two.", Reasoning: "Two lamps.", FinishReason: api.FinishStop,
		Usage: &api.Usage{PromptTokens: 9, CompletionTokens: 8, ReasoningTokens: 6}}
	b, _ = json.Marshal(th)
	if want := `{"id":"r","status":"ok","text":"Two.","reasoning":"Two lamps.","finish_reason":"stop","usage":{"prompt_tokens":9,"completion_tokens":8,"cached_tokens":0,"reasoning_tokens":6}}`; string(b) != want {
		t.Errorf("reasoning JSON\n got %s\nwant %s", b, want)
	}

	chunk, _ := json.Marshal(StreamChunk{ID: "x", Seq: 3, Text: " Par"})
	if string(chunk) != `{"id":"x","seq":3,"text":" Par"}` {
		t.Errorf("chunk JSON %s", chunk)
	}
}

func TestStatusJSONShape(t *testing.T) {
	temp, thr, tps := 51.5, false, 7.5
	s := Status{State: StateIdle, Model: "tiny", Version: "0.1.0", Started: "2026-03-01T12:00:00Z", UptimeS: 60, QueueDepth: 1, Slots: 4, ActiveSlots: 2,
		JobsOK: 5, JobsFailed: 1, JobsCancelled: 2, TokensGenerated: 900, JobsHTTP: 3, DecodeTPS: &tps, MemoryUsed: 100, MemoryLimit: 200,
		CPUTempC: &temp, Throttled: &thr}
	b, _ := json.Marshal(s)
	want := `{"state":"idle","model":"tiny","version":"0.1.0","started":"2026-03-01T12:00:00Z","uptime_s":60,"queue_depth":1,"slots":4,"active_slots":2,"jobs_ok":5,"jobs_failed":1,"jobs_cancelled":2,"tokens_generated":900,"jobs_http":3,"decode_tps":7.5,"memory_used":100,"memory_limit":200,"cpu_temp_c":51.5,"throttled":false}`
	if string(b) != want {
		t.Errorf("status JSON\n got %s\nwant %s", b, want)
	}
	b, _ = json.Marshal(Status{State: StateBusy})
	if strings.Contains(string(b), "cpu_temp_c") || strings.Contains(string(b), "throttled") || strings.Contains(string(b), "decode_tps") {
		t.Errorf("absent sensors and speed should be omitted: %s", b)
	}
}

func TestToolChoiceRoundTrip(t *testing.T) {
	for _, in := range []string{`"auto"`, `"none"`, `"required"`, `{"function":{"name":"f"},"type":"function"}`} {
		var tc api.ToolChoice
		if err := json.Unmarshal([]byte(in), &tc); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(tc)
		if err != nil || string(out) != in {
			t.Errorf("round trip %s → %+v → %s (%v)", in, tc, out, err)
		}
	}
}
