package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/mqtt"
	"github.com/edgellm/edgellm/mqtt/mqtttest"
)

// leadEngine is the real engine with a forced lead per request id: the
// random test models never write reasoning markers, so the tests make the
// generation begin with the text a thinking model would write, token by
// token through the real generator, splitter, streams and answers.
type leadEngine struct {
	Engine
	leads map[string]string // request id → lead; read only
}

func (e leadEngine) Run(ctx context.Context, job Job) (Outcome, error) {
	job.lead = e.leads[job.ID]
	return e.Engine.Run(ctx, job)
}

// thinkingLoader loads the model with LoadLLM and wraps it in a leadEngine.
// With own set, the engine takes the model for one whose vocabulary has the
// reasoning markers as tokens (a thinking model): the markers are then
// still the test vocabulary's several tokens each, but the engine opens a
// reasoning a constrained job asks for, as it does for Qwen3.
func thinkingLoader(leads map[string]string, own bool) Loader {
	return func(ctx context.Context, o LoadOptions) (Engine, error) {
		e, err := LoadLLM(ctx, o)
		if err != nil {
			return nil, err
		}
		e.(*llm).think.own = own
		return leadEngine{Engine: e, leads: leads}, nil
	}
}

// streamed collects a request's answer stream, reasoning stream and final
// answer (which comes after the last chunk of both streams).
type streamed struct {
	text, reasoning string
	textChunks      []string
	f               mqtt.Final
}

func (c *client) streamedFinal(id string) streamed {
	c.t.Helper()
	var s streamed
	var text, reasoning strings.Builder
	seq := map[string]int{}
	prefix := "edgellm/pi1/response/" + id
	for {
		m := c.next(func(topic string) bool { return strings.HasPrefix(topic, prefix) })
		if m.Topic == prefix {
			s.f = decodeFinal(c.t, m.Payload)
			s.text, s.reasoning = text.String(), reasoning.String()
			return s
		}
		var ch mqtt.StreamChunk
		if err := json.Unmarshal([]byte(m.Payload), &ch); err != nil || ch.ID != id || ch.Seq != seq[m.Topic] || ch.Text == "" {
			c.t.Fatalf("chunk on %s: %s (want seq %d, err %v)", m.Topic, m.Payload, seq[m.Topic], err)
		}
		seq[m.Topic]++
		switch m.Topic {
		case prefix + "/stream":
			text.WriteString(ch.Text)
			s.textChunks = append(s.textChunks, ch.Text)
		case prefix + "/reasoning":
			reasoning.WriteString(ch.Text)
		default:
			c.t.Fatalf("message on %s", m.Topic)
		}
	}
}

// tokensOf is the number of tokens a lead of text takes with the model.
func tokensOf(t *testing.T, model, text string) int {
	t.Helper()
	m, err := inference.Load(modelPath(t, model))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	tt, err := newThinkTokens(m.Tokenizer)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := encodeLead(m.Tokenizer, tt, text)
	if err != nil {
		t.Fatal(err)
	}
	return len(ids)
}

// thinkModel has a real vocabulary (GPT-2's), so forced text decodes to
// itself.
const thinkModel = "qwen3-gpt2-q8_0.gguf"

const (
	thought    = "I count the lamps in the hall."
	answerText = "There are two lamps."
)

// The reasoning of a generation goes to its field and stream, the answer to
// text: split correctly with think on, closed at once with think off, and
// with the budget ending inside it.
func TestServeThinking(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	long := strings.Repeat("one two three four five ", 8)
	leads := map[string]string{
		"on":     "<think>" + thought + "</think>" + answerText,
		"off":    "<think>" + thought + "</think>" + answerText,
		"budget": "<think>" + long + "</think>" + answerText,
		"stop":   "<think>" + thought + "</think>" + answerText,
		"plain":  answerText,
		// The prompt opened the reasoning (as DeepSeek-R1 distills'
		// template does): the output starts inside it.
		"opened-on":  thought + "</think>\n\n" + answerText,
		"opened-off": thought + "</think>\n\n" + answerText,
	}
	startServe(t, b, writeConfig(t, dir, b, map[string]any{"model.path": modelPath(t, thinkModel)}), Options{Load: thinkingLoader(leads, false)})
	c := newClient(t, b, "t-think", "edgellm/pi1/response/#")

	// think on: the reasoning and the answer, each on its own stream.
	c.publish(reqTopic, `{"id":"on","prompt":"How many lamps?","think":true,"stream":true,"max_tokens":48,"temperature":0}`)
	s := c.streamedFinal("on")
	if s.f.Status != mqtt.StatusOK || s.f.Reasoning != thought || s.reasoning != thought {
		t.Fatalf("think on: reasoning %q, streamed %q (%+v)", s.f.Reasoning, s.reasoning, s.f)
	}
	if !strings.HasPrefix(s.f.Text, answerText) || s.text != s.f.Text || strings.Contains(s.f.Text, "think>") {
		t.Fatalf("think on: text %q, streamed %q", s.f.Text, s.text)
	}
	reasoningTokens := tokensOf(t, thinkModel, "<think>"+thought+"</think>")
	if u := s.f.Usage; u.ReasoningTokens != reasoningTokens || u.CompletionTokens <= u.ReasoningTokens {
		t.Fatalf("think on: usage %+v, want %d reasoning tokens", u, reasoningTokens)
	}

	// think off (the default): the model opens a reasoning, it is closed at
	// once; nothing of the thought reaches the text, its stream or the
	// reasoning, and the model goes on with an answer.
	c.publish(reqTopic, `{"id":"off","prompt":"How many lamps?","stream":true,"max_tokens":48,"temperature":0}`)
	s = c.streamedFinal("off")
	if s.f.Status != mqtt.StatusOK || s.f.Reasoning != "" || s.reasoning != "" {
		t.Fatalf("think off: reasoning %q, streamed %q", s.f.Reasoning, s.reasoning)
	}
	for _, leak := range []string{"lamps", "think>", "count"} {
		if strings.Contains(s.f.Text, leak) || strings.Contains(s.text, leak) {
			t.Fatalf("think off: %q in text %q or its stream %q", leak, s.f.Text, s.text)
		}
	}
	if s.f.Text == "" || s.text != s.f.Text {
		t.Fatalf("think off: text %q, streamed %q", s.f.Text, s.text)
	}
	closed := tokensOf(t, thinkModel, "<think></think>")
	if u := s.f.Usage; u.ReasoningTokens != closed || u.CompletionTokens <= closed {
		t.Fatalf("think off: usage %+v, want the %d tokens of the closed reasoning", u, closed)
	}

	// The budget ends inside the reasoning: no text, the reasoning so far.
	c.publish(reqTopic, `{"id":"budget","prompt":"How many lamps?","think":true,"stream":true,"max_tokens":12,"temperature":0}`)
	s = c.streamedFinal("budget")
	if s.f.Status != mqtt.StatusOK || s.f.FinishReason != api.FinishLength || s.f.Text != "" || s.text != "" || len(s.textChunks) != 0 {
		t.Fatalf("budget: %+v, streamed text %q", s.f, s.text)
	}
	if s.f.Reasoning == "" || !strings.HasPrefix(long, s.f.Reasoning) || s.reasoning != s.f.Reasoning {
		t.Fatalf("budget: reasoning %q, streamed %q", s.f.Reasoning, s.reasoning)
	}
	if u := s.f.Usage; u.CompletionTokens != 12 || u.ReasoningTokens != 12 {
		t.Fatalf("budget: usage %+v", u)
	}

	// Stop sequences apply to the answer alone: "lamps" in the reasoning
	// does not stop it.
	c.publish(reqTopic, `{"id":"stop","prompt":"How many lamps?","think":true,"stop":["lamps"],"max_tokens":48,"temperature":0}`)
	if f := c.final("stop"); f.Reasoning != thought || f.Text != "There are two " || f.FinishReason != api.FinishStop {
		t.Fatalf("stop: reasoning %q text %q finish %s", f.Reasoning, f.Text, f.FinishReason)
	}

	// A prompt (here a plain completion) that ends by opening the
	// reasoning: with think on the output is reasoning up to </think>; with
	// think off the reasoning is closed before the model writes anything.
	const openingPrompt = `"How many lamps?\n<think>\n"`
	c.publish(reqTopic, `{"id":"opened-on","prompt":`+openingPrompt+`,"think":true,"stream":true,"max_tokens":48,"temperature":0}`)
	s = c.streamedFinal("opened-on")
	if s.f.Reasoning != thought || s.reasoning != thought || !strings.HasPrefix(s.f.Text, answerText) || s.text != s.f.Text ||
		s.f.Usage.ReasoningTokens != tokensOf(t, thinkModel, thought+"</think>") {
		t.Fatalf("opened, think on: reasoning %q text %q usage %+v", s.f.Reasoning, s.f.Text, s.f.Usage)
	}
	c.publish(reqTopic, `{"id":"opened-off","prompt":`+openingPrompt+`,"stream":true,"max_tokens":48,"temperature":0}`)
	s = c.streamedFinal("opened-off")
	if s.f.Reasoning != "" || s.reasoning != "" || s.f.Text == "" || s.text != s.f.Text || strings.Contains(s.f.Text, "lamps") ||
		s.f.Usage.ReasoningTokens != tokensOf(t, thinkModel, "</think>") {
		t.Fatalf("opened, think off: reasoning %q text %q usage %+v", s.f.Reasoning, s.f.Text, s.f.Usage)
	}

	// No reasoning: think on changes nothing, no reasoning tokens.
	c.publish(reqTopic, `{"id":"plain","prompt":"How many lamps?","think":true,"max_tokens":24,"temperature":0}`)
	if f := c.final("plain"); f.Reasoning != "" || !strings.HasPrefix(f.Text, answerText) || f.Usage.ReasoningTokens != 0 {
		t.Fatalf("plain: reasoning %q text %q usage %+v", f.Reasoning, f.Text, f.Usage)
	}
}

// Constraints apply to the answer after the reasoning: a JSON answer
// follows a reasoning that is closed in time to leave it room, and a tool
// call is taken from the answer only, not from the reasoning.
func TestServeThinkingConstrained(t *testing.T) {
	b := mqtttest.Start(t, mqtttest.Options{})
	dir := t.TempDir()
	leads := map[string]string{
		"json":  "I think of JSON, at length:" + strings.Repeat(" and more", 20),
		"tools": `<think>Maybe <tool_call>{"name": "nope", "arguments": {}}</tool_call></think><tool_call>`,
	}
	startServe(t, b, writeConfig(t, dir, b, map[string]any{"model.path": modelPath(t, thinkModel), "model.context": 1024}),
		Options{Load: thinkingLoader(leads, true)})
	c := newClient(t, b, "t-think-json", "edgellm/pi1/response/#")

	for _, think := range []bool{true, false} {
		id := "json"
		if !think {
			id = "json-off" // no lead: the model answers with JSON at once
		}
		c.publish(reqTopic, `{"id":"`+id+`","prompt":"Status?","json":true,"think":`+map[bool]string{true: "true", false: "false"}[think]+`,"max_tokens":40,"temperature":0}`)
		f := c.final(id)
		if f.Status != mqtt.StatusOK || !json.Valid([]byte(f.Text)) || strings.Contains(f.Text, "think") {
			t.Fatalf("%s: text %q (%+v, error %+v)", id, f.Text, f, f.Error)
		}
		switch {
		case think && (!strings.HasPrefix(f.Reasoning, "I think of JSON") || f.Usage.ReasoningTokens == 0 ||
			f.Usage.ReasoningTokens >= f.Usage.CompletionTokens):
			t.Fatalf("%s: reasoning %q, usage %+v", id, f.Reasoning, f.Usage)
		case !think && (f.Reasoning != "" || f.Usage.ReasoningTokens != 0):
			t.Fatalf("%s: reasoning %q, usage %+v", id, f.Reasoning, f.Usage)
		}
	}

	// A prompt that opened the reasoning, think off: the reasoning is
	// closed first, then the JSON answer is constrained.
	c.publish(reqTopic, `{"id":"opened","prompt":"Status?\n<think>\n","json":true,"max_tokens":40,"temperature":0}`)
	if f := c.final("opened"); f.Status != mqtt.StatusOK || !json.Valid([]byte(f.Text)) || f.Reasoning != "" ||
		f.Usage.ReasoningTokens != tokensOf(t, thinkModel, "</think>") {
		t.Fatalf("opened: %+v (usage %+v, error %+v)", f, f.Usage, f.Error)
	}

	c.publish(reqTopic, `{"id":"tools","prompt":"Turn on the kitchen light","chat_template":"chatml","think":true,"max_tokens":200,"temperature":0,
		"tools":[{"type":"function","function":{"name":"light","parameters":{"type":"object","properties":{"room":{"type":"string","maxLength":10},"on":{"type":"boolean"}},"required":["room","on"]}}}]}`)
	f := c.final("tools")
	if f.Status != mqtt.StatusOK || f.FinishReason != api.FinishToolCall || len(f.ToolCalls) != 1 || f.ToolCalls[0].Name != "light" {
		t.Fatalf("tools: %+v (error %+v)", f, f.Error)
	}
	if want := `Maybe <tool_call>{"name": "nope", "arguments": {}}</tool_call>`; f.Reasoning != want || strings.Contains(f.Text, "nope") {
		t.Fatalf("tools: reasoning %q, text %q", f.Reasoning, f.Text)
	}
}
