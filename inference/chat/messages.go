package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// MessagesJSON writes msgs as the JSON array of OpenAI-style messages
// Input.Messages takes: {"role", "content"} then, where set,
// "reasoning_content" and "thinking" (the same text under both names the
// templates use), "tool_calls" ([{"id", "type": "function", "function":
// {"name", "arguments": object}}], arguments given as a string of JSON
// decoded into the object), "tool_call_id" and "name".
func MessagesJSON(msgs []Message) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('[')
	str := func(key, val string) {
		k, _ := json.Marshal(key) // strings always marshal
		v, _ := json.Marshal(val)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	// opt writes ,"key":val when val is set.
	opt := func(key, val string) {
		if val != "" {
			b.WriteByte(',')
			str(key, val)
		}
	}
	for i, m := range msgs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('{')
		str("role", m.Role)
		b.WriteByte(',')
		str("content", m.Content)
		opt("reasoning_content", m.Reasoning)
		opt("thinking", m.Reasoning)
		if len(m.ToolCalls) > 0 {
			b.WriteString(`,"tool_calls":[`)
			for j, c := range m.ToolCalls {
				if c.Name == "" {
					return nil, fmt.Errorf("chat: message %d: tool call without a name: %w", i, ErrConversation)
				}
				args, err := callArguments(c)
				if err != nil {
					return nil, fmt.Errorf("chat: message %d: %w", i, err)
				}
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteByte('{')
				if c.ID != "" {
					str("id", c.ID)
					b.WriteByte(',')
				}
				b.WriteString(`"type":"function","function":{`)
				str("name", c.Name)
				b.WriteString(`,"arguments":`)
				b.WriteString(args)
				b.WriteString("}}")
			}
			b.WriteByte(']')
		}
		opt("tool_call_id", m.ToolCallID)
		opt("name", m.Name)
		b.WriteByte('}')
	}
	b.WriteByte(']')
	return b.Bytes(), nil
}

// ToolsJSON writes tools as the JSON array Input.Tools takes, each in the
// OpenAI shape {"type": "function", "function": {"name", "description",
// "parameters"}}; no tools give nil.
func ToolsJSON(tools []Tool) (json.RawMessage, error) {
	if len(tools) == 0 {
		return nil, nil
	}
	parts := make([]string, len(tools))
	for i, t := range tools {
		j, err := toolJSON(t, 0)
		if err != nil {
			return nil, err
		}
		parts[i] = j
	}
	return json.RawMessage("[" + strings.Join(parts, ", ") + "]"), nil
}

// wireMessage is an OpenAI-style message as ParseMessages reads it.
type wireMessage struct {
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
	Reasoning  string `json:"reasoning_content"`
	Thinking   string `json:"thinking"`
}

// ParseMessages reads a JSON array of OpenAI-style messages (the form of
// Input.Messages) into Messages, for the hand-written families. Content
// given as an array of parts keeps the text parts, joined by newlines.
// Malformed messages are errors wrapping ErrConversation.
func ParseMessages(raw json.RawMessage) ([]Message, error) {
	var wire []wireMessage
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, fmt.Errorf("chat: messages: %v: %w", err, ErrConversation)
	}
	msgs := make([]Message, len(wire))
	for i, w := range wire {
		m := Message{Role: w.Role, ToolCallID: w.ToolCallID, Name: w.Name, Reasoning: w.Reasoning}
		if m.Reasoning == "" {
			m.Reasoning = w.Thinking
		}
		var err error
		if m.Content, err = contentText(w.Content); err != nil {
			return nil, fmt.Errorf("chat: message %d: content: %v: %w", i, err, ErrConversation)
		}
		for _, c := range w.ToolCalls {
			m.ToolCalls = append(m.ToolCalls, ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		msgs[i] = m
	}
	return msgs, nil
}

// contentText returns a message's content as text: a string as it is, null
// as "", the text parts of an array joined by newlines.
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// ParseTools reads a JSON array of OpenAI-style tools (the form of
// Input.Tools; a bare {"name", "description", "parameters"} is accepted
// too) into Tools, for the hand-written families.
func ParseTools(raw json.RawMessage) ([]Tool, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	var wire []struct {
		function
		Function *function `json:"function"`
	}
	if err := json.Unmarshal(raw, &wire); err != nil {
		return nil, fmt.Errorf("chat: tools: %v: %w", err, ErrConversation)
	}
	tools := make([]Tool, len(wire))
	for i, w := range wire {
		f := w.function
		if w.Function != nil {
			f = *w.Function
		}
		tools[i] = Tool(f)
	}
	return tools, nil
}

// NewInput returns the Input that asks for the assistant's next turn
// (AddGenerationPrompt) after msgs, with tools: msgs and tools written as
// MessagesJSON and ToolsJSON write them. Thinking is off (enable_thinking
// false) and Now is today (Day), so prompts of one day share their text;
// callers change the fields they want otherwise.
func NewInput(msgs []Message, tools []Tool) (Input, error) {
	rawMsgs, err := MessagesJSON(msgs)
	if err != nil {
		return Input{}, err
	}
	rawTools, err := ToolsJSON(tools)
	if err != nil {
		return Input{}, err
	}
	return Input{Messages: rawMsgs, Tools: rawTools, AddGenerationPrompt: true,
		Kwargs: map[string]any{"enable_thinking": false}, Now: Day(time.Now())}, nil
}
