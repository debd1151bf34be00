package daemon

import (
	"strings"
	"testing"
)

// splitAll feeds chunks to a splitter and returns the reasoning and answer it
// passed on, the answer's offset and the number of sink calls.
func splitAll(t *testing.T, opened bool, chunks ...string) (reasoning, answer string, answerAt int) {
	t.Helper()
	var r, a strings.Builder
	s := newThinkSplitter(thinkOpen, thinkClose, opened,
		func(b []byte) error { r.Write(b); return nil },
		func(b []byte) error { a.Write(b); return nil })
	for _, c := range chunks {
		if err := s.feed([]byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	return r.String(), a.String(), s.answerAt
}

func TestThinkSplitter(t *testing.T) {
	cases := []struct {
		name   string
		opened bool
		chunks []string
		reason string
		answer string
	}{
		{"no markers", false, []string{"Hello", " world"}, "", "Hello world"},
		{"leading space, no marker", false, []string{"  Hi"}, "", "  Hi"},
		{"one chunk", false, []string{"<think>\nLet me see.\n</think>\n\nIt is 4."}, "Let me see.", "It is 4."},
		{"marker split across chunks", false, []string{"<th", "ink>", "a", "b</", "thi", "nk", ">", "\n", "ok"}, "ab", "ok"},
		{"byte by byte", false, strings.Split("<think> x y </think> z", ""), "x y", "z"},
		{"whitespace before the marker", false, []string{"\n ", "<think>r</think>a"}, "r", "a"},
		{"not a marker at the start", false, []string{"<thin", "g>"}, "", "<thing>"},
		{"marker later is answer text", false, []string{"Yes <think>no</think>"}, "", "Yes <think>no</think>"},
		{"unterminated", false, []string{"<think>still ", "thinking\n\n"}, "still thinking", ""},
		{"unterminated in the marker", false, []string{"<think>hmm</thi"}, "hmm</thi", ""},
		{"false start of the closing marker", false, []string{"<think>a<", "/b</thi", "x</think>c"}, "a</b</thix", "c"},
		{"opened in the prompt", true, []string{"\nFirst, ", "add.</think>\n\n", "4"}, "First, add.", "4"},
		{"opened in the prompt, closed at once", true, []string{"</think>\n\nHi"}, "", "Hi"},
		{"opened, unterminated", true, []string{"one ", "two"}, "one two", ""},
		{"empty reasoning", false, []string{"<think>\n\n</think>\n\nAnswer"}, "", "Answer"},
		{"space inside the reasoning kept", false, []string{"<think>a", "\n\n", "b</think>c"}, "a\n\nb", "c"},
		{"answer ends before anything", false, []string{"<thi"}, "", "<thi"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, a, at := splitAll(t, tc.opened, tc.chunks...)
			wantAt := -1 // the answer is the end of the output
			if tc.answer != "" {
				wantAt = strings.LastIndex(strings.Join(tc.chunks, ""), tc.answer)
			}
			if r != tc.reason || a != tc.answer || at != wantAt {
				t.Fatalf("reasoning %q answer %q at %d; want %q, %q at %d", r, a, at, tc.reason, tc.answer, wantAt)
			}
		})
	}
}

// Every way of cutting a text into two chunks splits it the same way.
func TestThinkSplitterEveryCut(t *testing.T) {
	const text = " <think>\n I think </thi</think>\n\n about </think> it"
	for i := 0; i <= len(text); i++ {
		for j := i; j <= len(text); j++ {
			r, a, _ := splitAll(t, false, text[:i], text[i:j], text[j:])
			if r != "I think </thi" || a != "about </think> it" {
				t.Fatalf("cut at %d,%d: reasoning %q answer %q", i, j, r, a)
			}
		}
	}
}

// A long run of whitespace is not held back without bound.
func TestThinkSplitterLongWhitespace(t *testing.T) {
	r, a, _ := splitAll(t, false, strings.Repeat("\n", 100)+"<think>x</think>y")
	if r != "" || a != strings.Repeat("\n", 100)+"<think>x</think>y" {
		t.Fatalf("reasoning %q answer %q", r, a)
	}
	// Inside the reasoning, whitespace beyond the bound is passed on in
	// pieces of maxHeldSpace; only the last piece before the marker is
	// dropped.
	long := strings.Repeat(" ", 100)
	r, a, _ = splitAll(t, true, "a"+long+"b"+long+"</think>c")
	if r != "a"+long+"b"+long[:maxHeldSpace] || a != "c" {
		t.Fatalf("reasoning %q answer %q", r, a)
	}
}

// Splitting a token's worth of text allocates nothing.
func TestThinkSplitterAllocs(t *testing.T) {
	sink := func([]byte) error { return nil }
	chunks := [][]byte{[]byte("<th"), []byte("ink>"), []byte(" some"), []byte(" thought </"), []byte("think>"), []byte("\n\nanswer"), []byte(" more")}
	s := newThinkSplitter(thinkOpen, thinkClose, false, sink, sink)
	allocs := testing.AllocsPerRun(100, func() {
		*s = thinkSplitter{open: s.open, close: s.close, fail: s.fail, held: s.held[:0], out: s.out[:0],
			answerAt: -1, closedAt: -1, reason: sink, answer: sink}
		for _, c := range chunks {
			if err := s.feed(c); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.flush(); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run", allocs)
	}
}
