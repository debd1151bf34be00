package daemon

import (
	"strings"
	"testing"
)

func TestStopMatcher(t *testing.T) {
	cases := []struct {
		stops  []string
		chunks []string
		want   string
		stop   bool
	}{
		{nil, []string{"a", "b"}, "ab", false},
		{[]string{"\n"}, []string{"hello", " world\nmore"}, "hello world", true},
		{[]string{"END"}, []string{"abc E", "N", "D tail"}, "abc ", true},
		{[]string{"END"}, []string{"abc E", "N", "x"}, "abc ENx", false},
		{[]string{"END"}, []string{"abc EN"}, "abc EN", false}, // flushed at the end
		{[]string{"xyz", "y"}, []string{"axy"}, "ax", true},
		{[]string{"ab", "b"}, []string{"a", "b"}, "", true}, // "ab" starts first
		{[]string{"é!"}, []string{"caf", "é", "!"}, "caf", true},
		{[]string{"aaa"}, []string{"aa", "aa"}, "", true},
	}
	for _, c := range cases {
		m := StopMatcher{Stops: c.stops}
		var out strings.Builder
		stopped := false
		for _, ch := range c.chunks {
			e, s := m.Feed(ch)
			out.WriteString(e)
			if s {
				stopped = true
				break
			}
		}
		if !stopped {
			out.WriteString(m.Flush())
		}
		if out.String() != c.want || stopped != c.stop {
			t.Errorf("stops %q chunks %q: got %q stopped=%v, want %q stopped=%v", c.stops, c.chunks, out.String(), stopped, c.want, c.stop)
		}
	}
}

// Nothing of a stop sequence is ever emitted before it is complete.
func TestStopMatcherHoldsBackPrefixes(t *testing.T) {
	m := StopMatcher{Stops: []string{"<|end|>"}}
	for _, ch := range []string{"ok <", "|e", "nd"} {
		if e, _ := m.Feed(ch); strings.Contains(e, "<") {
			t.Fatalf("emitted %q, part of a possible stop sequence", e)
		}
	}
	if e, s := m.Feed("|>"); !s || e != "" {
		t.Fatalf("feed = %q, %v", e, s)
	}
}
