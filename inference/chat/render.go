package chat

import (
	"fmt"
	"strings"
	"unicode"
)

// Render formats msgs as the model's prompt. With addGenerationPrompt the
// prompt ends with the opening of an assistant turn for the model to write;
// without it the conversation is rendered as the template renders it for
// training (Phi-3 then ends with EOS). The leading BOS token is never written
// (see the package documentation). Conversations the family cannot express
// are errors wrapping ErrConversation.
func (t Template) Render(msgs []Message, addGenerationPrompt bool) (string, error) {
	return t.RenderTools(msgs, nil, addGenerationPrompt)
}

// RenderTools is Render with tools the model may call, presented in the
// family's convention: ChatML puts them in a <tools> block in the system
// message (as Qwen2.5 does), llama3.1 lists them as JSON in the first user
// message (as Llama 3.1–3.3 do), and the other families get the ChatML block
// in their system message. Assistant tool calls and tool results in msgs are
// written in the same convention.
func (t Template) RenderTools(msgs []Message, tools []Tool, addGenerationPrompt bool) (string, error) {
	if err := check(msgs); err != nil {
		return "", err
	}
	var b strings.Builder
	var err error
	switch t.Family {
	case Llama31:
		err = t.renderLlama31(&b, msgs, tools, addGenerationPrompt)
	case ChatML, Zephyr, Llama2, Llama3, Phi3:
		if msgs, err = t.withHermesTools(msgs, tools); err == nil {
			err = t.renderTurns(&b, msgs, addGenerationPrompt)
		}
	default:
		return "", fmt.Errorf("chat: template family %v: %w", t.Family, ErrUnknownTemplate)
	}
	if err != nil {
		return "", err
	}
	return b.String(), nil
}

// check rejects what no family can render: no messages, unknown roles, tool
// calls outside assistant turns and unnamed calls.
func check(msgs []Message) error {
	if len(msgs) == 0 {
		return fmt.Errorf("chat: no messages: %w", ErrConversation)
	}
	for i, m := range msgs {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant, RoleTool:
		default:
			return fmt.Errorf("chat: message %d: role %q is not system, user, assistant or tool: %w", i, m.Role, ErrConversation)
		}
		if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
			return fmt.Errorf("chat: message %d: a %s message has tool calls; only assistant messages can: %w", i, m.Role, ErrConversation)
		}
		for _, c := range m.ToolCalls {
			if c.Name == "" {
				return fmt.Errorf("chat: message %d: tool call without a name: %w", i, ErrConversation)
			}
		}
	}
	return nil
}

// turnFormat is how a family writes a turn: open(role) content close, where
// open(role) is pre + role + post.
type turnFormat struct {
	pre, post, close string
	trim             bool // content is stripped of surrounding white space
}

// header writes the opening of a role's turn.
func (f turnFormat) header(b *strings.Builder, role string) {
	b.WriteString(f.pre)
	b.WriteString(role)
	b.WriteString(f.post)
}

// turn writes a whole turn.
func (f turnFormat) turn(b *strings.Builder, role, content string) {
	f.header(b, role)
	if f.trim {
		content = pyStrip(content)
	}
	b.WriteString(content)
	b.WriteString(f.close)
}

// llama3Turns is the turn format of both Llama 3 families.
var llama3Turns = turnFormat{pre: "<|start_header_id|>", post: "<|end_header_id|>\n\n", close: "<|eot_id|>", trim: true}

// renderTurns renders a conversation whose tool calls and results have been
// rewritten as text (system, user and assistant turns only).
func (t Template) renderTurns(b *strings.Builder, msgs []Message, addGen bool) error {
	var f turnFormat
	switch t.Family {
	case Llama2:
		return t.renderLlama2(b, msgs, addGen)
	case ChatML:
		f = turnFormat{pre: "<|im_start|>", post: "\n", close: "<|im_end|>\n"}
	case Zephyr:
		f = turnFormat{pre: "<|", post: "|>\n", close: t.EOS + "\n"}
	case Phi3:
		f = turnFormat{pre: "<|", post: "|>\n", close: "<|end|>\n"}
	case Llama3:
		f = llama3Turns
	}
	for _, m := range msgs {
		if t.Family == Phi3 && m.Role == RoleSystem && m.Content == "" {
			continue // Phi-3.5 leaves out empty system messages
		}
		f.turn(b, m.Role, m.Content)
	}
	if addGen {
		f.header(b, RoleAssistant)
	} else if t.Family == Phi3 {
		b.WriteString(t.EOS)
	}
	return nil
}

// renderLlama2 renders Llama 2 chat: an optional system message first, then
// turns alternating user/assistant; the system message goes inside the first
// [INST] between <<SYS>> and <</SYS>>.
func (t Template) renderLlama2(b *strings.Builder, msgs []Message, addGen bool) error {
	sys, hasSys, rest := "", false, msgs
	if msgs[0].Role == RoleSystem {
		sys, hasSys, rest = msgs[0].Content, true, msgs[1:]
	}
	if len(rest) == 0 {
		return fmt.Errorf("chat: llama2: a system message alone; it needs a user message after it: %w", ErrConversation)
	}
	for i, m := range rest {
		want := RoleUser
		if i%2 == 1 {
			want = RoleAssistant
		}
		switch {
		case m.Role == RoleSystem:
			return fmt.Errorf("chat: llama2: a system message can only be the first message: %w", ErrConversation)
		case m.Role != want:
			return fmt.Errorf("chat: llama2: turns must alternate user/assistant (starting with user); turn %d is %s: %w",
				i+1, m.Role, ErrConversation)
		case m.Role == RoleUser:
			content := m.Content
			if i == 0 && hasSys {
				content = "<<SYS>>\n" + sys + "\n<</SYS>>\n\n" + content
			}
			if i > 0 {
				b.WriteString(t.BOS) // each later [INST] starts a new sequence
			}
			b.WriteString("[INST] ")
			b.WriteString(pyStrip(content))
			b.WriteString(" [/INST]")
		default:
			b.WriteString(" ")
			b.WriteString(pyStrip(m.Content))
			b.WriteString(" ")
			b.WriteString(t.EOS)
		}
	}
	if addGen && rest[len(rest)-1].Role != RoleUser {
		return fmt.Errorf("chat: llama2: an assistant turn can only follow a user message: %w", ErrConversation)
	}
	return nil
}

// pyStrip removes leading and trailing white space as Python's str.strip
// (and Jinja's trim) do.
func pyStrip(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f })
}
