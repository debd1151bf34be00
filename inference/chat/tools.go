package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// The ChatML/Hermes tool convention, in Qwen2.5's words.
const (
	hermesToolsHead = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n" +
		"You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	hermesToolsTail = "\n</tools>\n\nFor each function call, return a json object with function name and " +
		"arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n" +
		"{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
)

// The Llama 3.1 tool convention: the tools go in the first user message.
const llama31ToolsHead = "Given the following functions, please respond with a JSON for a function call " +
	"with its proper arguments that best answers the given prompt.\n\n" +
	"Respond in the format {\"name\": function name, \"parameters\": dictionary of argument name and its value}." +
	"Do not use variables.\n\n"

// withHermesTools rewrites a conversation in the ChatML/Hermes tool
// convention as system, user and assistant turns: the default system prompt
// if there is no system message, the tool list appended to the system
// message, tool calls appended to the assistant's text in <tool_call> tags,
// and each run of tool results as one user turn of <tool_response> blocks.
func (t Template) withHermesTools(msgs []Message, tools []Tool) ([]Message, error) {
	out := make([]Message, 0, len(msgs)+1)
	sys, hasSys, rest := t.DefaultSystem, t.DefaultSystem != "", msgs
	if msgs[0].Role == RoleSystem {
		sys, hasSys, rest = msgs[0].Content, true, msgs[1:]
	}
	if len(tools) > 0 {
		var b strings.Builder
		if sys != "" {
			b.WriteString(sys)
			b.WriteString("\n\n")
		}
		b.WriteString(hermesToolsHead)
		for _, tool := range tools {
			j, err := toolJSON(tool, 0)
			if err != nil {
				return nil, err
			}
			b.WriteString("\n")
			b.WriteString(j)
		}
		b.WriteString(hermesToolsTail)
		sys, hasSys = b.String(), true
	}
	if hasSys {
		out = append(out, Message{Role: RoleSystem, Content: sys})
	}
	for i := 0; i < len(rest); i++ {
		m := rest[i]
		switch {
		case m.Role == RoleTool:
			var b strings.Builder
			for ; i < len(rest) && rest[i].Role == RoleTool; i++ {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString("<tool_response>\n")
				b.WriteString(rest[i].Content)
				b.WriteString("\n</tool_response>")
			}
			i--
			out = append(out, Message{Role: RoleUser, Content: b.String()})
		case len(m.ToolCalls) > 0:
			var b strings.Builder
			b.WriteString(m.Content)
			for _, c := range m.ToolCalls {
				args, err := callArguments(c)
				if err != nil {
					return nil, err
				}
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				fmt.Fprintf(&b, "<tool_call>\n{\"name\": \"%s\", \"arguments\": %s}\n</tool_call>", c.Name, args)
			}
			out = append(out, Message{Role: RoleAssistant, Content: b.String()})
		default:
			out = append(out, Message{Role: m.Role, Content: m.Content})
		}
	}
	return out, nil
}

// renderLlama31 renders the Llama 3.1–3.3 template: a system header with
// the knowledge and current dates, the tools (if any) as JSON in the first
// user message, tool calls as {"name": …, "parameters": …} and tool results
// in ipython turns.
func (t Template) renderLlama31(b *strings.Builder, msgs []Message, tools []Tool, addGen bool) error {
	sys, rest := "", msgs
	if msgs[0].Role == RoleSystem {
		sys, rest = pyStrip(msgs[0].Content), msgs[1:]
	}
	date := t.Date
	if date == "" {
		date = "26 Jul 2024"
	}
	llama3Turns.header(b, RoleSystem)
	if len(tools) > 0 {
		b.WriteString("Environment: ipython\n")
	}
	b.WriteString("Cutting Knowledge Date: December 2023\nToday Date: " + date + "\n\n")
	b.WriteString(sys)
	b.WriteString(llama3Turns.close)
	if len(tools) > 0 {
		if len(rest) == 0 || rest[0].Role != RoleUser {
			return fmt.Errorf("chat: llama3.1: the tools go in the first user message, and the first message after the system message is not from the user: %w", ErrConversation)
		}
		var content strings.Builder
		content.WriteString(llama31ToolsHead)
		for _, tool := range tools {
			j, err := toolJSON(tool, 4)
			if err != nil {
				return err
			}
			content.WriteString(j)
			content.WriteString("\n\n")
		}
		content.WriteString(pyStrip(rest[0].Content))
		llama3Turns.header(b, RoleUser)
		b.WriteString(content.String())
		b.WriteString(llama3Turns.close)
		rest = rest[1:]
	}
	for _, m := range rest {
		switch {
		case m.Role == RoleTool:
			// The template writes a string result through tojson (strings
			// are iterable in Jinja), so it arrives as a quoted JSON string.
			llama3Turns.header(b, "ipython")
			b.WriteString(pyJSONString(m.Content))
			b.WriteString(llama3Turns.close)
		case len(m.ToolCalls) > 0:
			if len(m.ToolCalls) != 1 {
				return fmt.Errorf("chat: llama3.1: %d tool calls in one assistant turn; the template takes one: %w", len(m.ToolCalls), ErrConversation)
			}
			args, err := callArguments(m.ToolCalls[0])
			if err != nil {
				return err
			}
			llama3Turns.header(b, RoleAssistant)
			fmt.Fprintf(b, "{\"name\": \"%s\", \"parameters\": %s}", m.ToolCalls[0].Name, args)
			b.WriteString(llama3Turns.close)
		default:
			llama3Turns.turn(b, m.Role, m.Content)
		}
	}
	if addGen {
		llama3Turns.header(b, RoleAssistant)
	}
	return nil
}

// toolJSON returns a tool in the OpenAI shape {"type": "function",
// "function": {"name", "description", "parameters"}} as Python's json.dumps
// writes it (what the templates' tojson produces), indented by indent spaces
// per level or on one line for 0.
func toolJSON(t Tool, indent int) (string, error) {
	if t.Name == "" {
		return "", fmt.Errorf("chat: a tool without a name: %w", ErrConversation)
	}
	var raw bytes.Buffer
	raw.WriteString(`{"type":"function","function":{"name":`)
	name, _ := json.Marshal(t.Name) // strings always marshal
	raw.Write(name)
	if t.Description != "" {
		desc, _ := json.Marshal(t.Description)
		raw.WriteString(`,"description":`)
		raw.Write(desc)
	}
	if len(bytes.TrimSpace(t.Parameters)) > 0 {
		raw.WriteString(`,"parameters":`)
		raw.Write(t.Parameters)
	}
	raw.WriteString("}}")
	s, err := pyJSON(raw.Bytes(), indent)
	if err != nil {
		return "", fmt.Errorf("chat: tool %q: parameters: %v: %w", t.Name, err, ErrConversation)
	}
	return s, nil
}

// callArguments returns a tool call's arguments as Python's json.dumps
// writes them.
func callArguments(c ToolCall) (string, error) {
	raw := bytes.TrimSpace(c.Arguments)
	if len(raw) > 0 && raw[0] == '"' { // the OpenAI wire form: a string of JSON
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			raw = bytes.TrimSpace([]byte(s))
		}
	}
	if len(raw) == 0 {
		return "{}", nil
	}
	s, err := pyJSON(raw, 0)
	if err == nil && raw[0] != '{' {
		err = fmt.Errorf("not a JSON object")
	}
	if err != nil {
		return "", fmt.Errorf("chat: tool call %q: arguments: %v: %w", c.Name, err, ErrConversation)
	}
	return s, nil
}
