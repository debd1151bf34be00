package daemon

import (
	"strings"
	"testing"

	"github.com/edgellm/edgellm/inference/chat/toolcall"
)

// TestCallSplitter feeds answers in every chunking and checks what streams:
// the text before the calls, never a byte of a call, and all the text of an
// answer without calls.
func TestCallSplitter(t *testing.T) {
	for _, tc := range []struct {
		syn        toolcall.Syntax
		text, want string
	}{
		{toolcall.Hermes, "Sure, turning it on.\n<tool_call>\n{\"name\":\"on\",\"arguments\":{}}\n</tool_call>", "Sure, turning it on.\n"},
		{toolcall.Hermes, "<tool_call>{\"name\":\"on\",\"arguments\":{}}</tool_call>", ""},
		{toolcall.Hermes, "No tools needed: a <tool is not a <tool_call", "No tools needed: a <tool is not a <tool_call"},
		{toolcall.Hermes, "ends with <tool_ca", "ends with <tool_ca"},
		{toolcall.MistralArgs, "ok[TOOL_CALLS]on[ARGS]{}", "ok"},
		{toolcall.Phi4Mini, "fun times functools[{\"name\":\"on\"}]", "fun times "},
		{toolcall.JSON, "  {\"name\":\"on\",\"arguments\":{}}", ""},
		{toolcall.JSON, "\n[{\"name\":\"on\"}]", ""},
		{toolcall.JSON, "  The light is on. {not a call}", "  The light is on. {not a call}"},
		{toolcall.Llama3JSON, strings.Repeat(" ", 100) + "text", strings.Repeat(" ", 100) + "text"},
		{toolcall.JSON, "   ", "   "},
	} {
		for size := 1; size <= len(tc.text); size++ {
			var got strings.Builder
			c := newCallSplitter(tc.syn, func(s string) error {
				if s == "" {
					t.Errorf("%v %q: an empty chunk", tc.syn, tc.text)
				}
				got.WriteString(s)
				return nil
			})
			for i := 0; i < len(tc.text); i += size {
				if err := c.feed(tc.text[i:min(i+size, len(tc.text))]); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.flush(); err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Errorf("%v %q in chunks of %d: streamed %q, want %q", tc.syn, tc.text, size, got.String(), tc.want)
				break
			}
		}
	}
}
