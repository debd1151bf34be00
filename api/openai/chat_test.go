package openai

import (
	"strings"
	"testing"

	"github.com/edgellm/edgellm/api"
)

func TestThinkingParameters(t *testing.T) {
	for _, tc := range []struct {
		body string
		want string // "on", "off", "unset" or an error's text
	}{
		{`{"messages":[]}`, "unset"},
		{`{"messages":[],"reasoning_effort":"none"}`, "off"},
		{`{"messages":[],"reasoning_effort":"minimal"}`, "off"},
		{`{"messages":[],"reasoning_effort":"medium"}`, "on"},
		{`{"messages":[],"chat_template_kwargs":{"enable_thinking":false}}`, "off"},
		{`{"messages":[],"chat_template_kwargs":{"enable_thinking":true},"reasoning_effort":"high"}`, "on"},
		{`{"messages":[],"chat_template_kwargs":{"enable_thinking":true},"reasoning_effort":"none"}`, "disagrees"},
		{`{"messages":[],"reasoning_effort":"max"}`, "must be none, minimal"},
		{`{"messages":[],"chat_template_kwargs":{"enable_thinking":"yes"}}`, "wrong type"},
	} {
		cr, err := decodeChat([]byte(tc.body))
		var got string
		if err == nil {
			var req *api.Request
			if req, err = cr.toRequest(); err == nil {
				switch {
				case req.Think == nil:
					got = "unset"
				case *req.Think:
					got = "on"
				default:
					got = "off"
				}
			}
		}
		if err != nil {
			got = err.Error()
		}
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: got %q, want %q", tc.body, got, tc.want)
		}
	}
}
