package api

import "testing"

func TestUnsent(t *testing.T) {
	for _, tc := range []struct{ final, streamed, want string }{
		{"Hello world", "Hello world", ""},
		{"Hello world", "Hello", " world"},
		{"Hello world", "", "Hello world"},
		{"\n Hello \n", "\n Hello \n", ""},
		{"Turning it on.", "Turning it on.\n", ""},             // calls followed; content trimmed
		{"Turning it on.", "\nTurning it on. ", ""},            // leading space streamed
		{"Sure. <toolbox> ok", "Sure. ", "<toolbox> ok"},       // a held partial trigger was text
		{"Sure.\n<tool_call>bad", "Sure.\n", "<tool_call>bad"}, // calls that did not parse
		{"other", "something else", ""},
	} {
		if got := unsent(tc.final, tc.streamed); got != tc.want {
			t.Errorf("unsent(%q, %q) = %q, want %q", tc.final, tc.streamed, got, tc.want)
		}
	}
}
