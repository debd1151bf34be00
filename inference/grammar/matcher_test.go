package grammar

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/inference/tokenizer"
)

func TestDone(t *testing.T) {
	_, v := loadVocab(t, gpt2Vocab)
	eos := v.tok.EOS()
	for _, tc := range []struct {
		schema, text   string
		complete, done bool
	}{
		{"", `{}`, true, true},
		{"", `{"a":[1]}`, true, true},
		{"", `"a"`, true, true},
		{"", `1`, true, false},
		{"", `1234567890123456`, true, false}, // a digit more is not allowed, but "." is
		{"", `true`, true, true},
		{"", `[1`, false, false},
		{"", ``, false, false},
		{enumSchema, `1`, true, false},
		{enumSchema, `12`, true, true},
		{`{"type":"integer"}`, `-5`, true, false},
	} {
		m := mustMatcher(t, tc.schema, Options{}, v)
		if err := m.AcceptBytes([]byte(tc.text)); err != nil {
			t.Fatalf("%q: %v", tc.text, err)
		}
		if m.Complete() != tc.complete || m.Done() != tc.done {
			t.Errorf("%q: complete %v done %v, want %v %v", tc.text, m.Complete(), m.Done(), tc.complete, tc.done)
		}
		if (m.CloseCost() == 0) != tc.complete {
			t.Errorf("%q: close cost %d", tc.text, m.CloseCost())
		}
		err := m.Accept(eos)
		if (err == nil) != tc.complete {
			t.Errorf("%q: Accept(EOS): %v", tc.text, err)
		}
		if err == nil {
			if !m.Done() || m.Accept(v.single0(t, 'x')) == nil || m.AcceptBytes([]byte(" ")) == nil {
				t.Errorf("%q: text accepted after EOS", tc.text)
			}
			if err := m.Mask(make([]float32, v.n), 10); err != ErrNoToken {
				t.Errorf("%q: Mask after EOS: %v", tc.text, err)
			}
		}
		m.Reset()
		if m.Complete() || m.Done() {
			t.Errorf("%q: complete after Reset", tc.text)
		}
	}
}

// single0 returns the first text token whose piece is c.
func (v *Vocab) single0(t testing.TB, c byte) int32 {
	return byteTokens(t, v)[c]
}

func TestAcceptErrorKeepsState(t *testing.T) {
	tok, v := loadVocab(t, gpt2Vocab)
	m := mustMatcher(t, personSchema, Options{}, v)
	if err := m.AcceptBytes([]byte(`{"name":"ab`)); err != nil {
		t.Fatal(err)
	}
	before := allowedSet(t, m, 100)
	cost := m.CloseCost()
	for _, bad := range []string{`c"}`, `", "name`, "\x01"} {
		if err := m.AcceptBytes([]byte(bad)); err == nil {
			t.Fatalf("%q accepted", bad)
		}
	}
	for _, id := range []int32{-1, int32(v.n), v.tok.BOS()} {
		if err := m.Accept(id); err == nil {
			t.Fatalf("token %d accepted", id)
		}
	}
	after := allowedSet(t, m, 100)
	for id := range before {
		if before[id] != after[id] {
			t.Fatalf("token %d %q: allowed %v before a failed Accept, %v after", id, tok.Piece(int32(id)), before[id], after[id])
		}
	}
	if m.CloseCost() != cost {
		t.Fatalf("cost %d, was %d", m.CloseCost(), cost)
	}
	if err := m.AcceptBytes([]byte(`c", "age": 7}`)); err != nil || !m.Done() {
		t.Fatalf("%v, done %v", err, m.Done())
	}
}

// TestMidGeneration starts constraining in the middle of a generation, as
// tool calls in "auto" mode do: free text, then a call whose first byte
// shares a token with the text before it.
func TestMidGeneration(t *testing.T) {
	tok, v := loadVocab(t, gpt2Vocab)
	m := mustMatcher(t, toolSchema(t), Options{}, v)
	text := `I will check.<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}`
	ids, err := tok.Encode(text, false)
	if err != nil {
		t.Fatal(err)
	}
	var free []byte
	constrained := false
	for _, id := range ids {
		p := tok.Piece(id)
		if !constrained {
			free = append(free, p...)
			i := strings.Index(string(free), "<tool_call>")
			if i < 0 || !strings.Contains(string(free[i:]), "{") {
				continue
			}
			// The call starts at the "{": the rest of this token is the
			// start of the value.
			start := i + strings.Index(string(free[i:]), "{")
			m.Reset()
			if err := m.AcceptBytes(free[start:]); err != nil {
				t.Fatalf("start %q: %v", free[start:], err)
			}
			constrained = true
			continue
		}
		if !allowedSet(t, m, 100)[id] {
			t.Fatalf("token %q masked", p)
		}
		if err := m.Accept(id); err != nil {
			t.Fatal(err)
		}
	}
	if !constrained || !m.Done() {
		t.Fatalf("constrained %v, done %v", constrained, m.Done())
	}
}

// TestClosing starts from many states with a budget that just fits the
// bytes completing the value, or a few more, takes random allowed tokens,
// and checks that the value is complete when the budget runs out.
func TestClosing(t *testing.T) {
	for _, path := range []string{gpt2Vocab, llamaVocab} {
		tok, v := loadVocab(t, path)
		r := rand.New(rand.NewPCG(3, 4))
		for _, st := range maskStates(t) {
			for _, extra := range []int{0, 3} {
				for range 2 {
					m := mustMatcher(t, st.schema, Options{}, v)
					if err := m.AcceptBytes([]byte(st.text)); err != nil {
						t.Fatal(err)
					}
					text := []byte(st.text)
					remaining := m.CloseCost() + extra
					for ; remaining > 0 && !m.Done(); remaining-- {
						allowed := allowedSet(t, m, remaining)
						var ids []int32
						for id, ok := range allowed {
							if ok {
								ids = append(ids, int32(id))
							}
						}
						if len(ids) == 0 {
							t.Fatalf("%s %q: nothing allowed with %d tokens left", path, text, remaining)
						}
						id := ids[r.IntN(len(ids))]
						if err := m.Accept(id); err != nil {
							t.Fatalf("%s %q: %v", path, text, err)
						}
						if tok.IsEOG(id) {
							break
						}
						text = append(text, tok.Piece(id)...)
					}
					if !m.Complete() || !json.Valid(text) {
						t.Fatalf("%s %.30q: %q: complete %v, valid %v", path, st.schema, text, m.Complete(), json.Valid(text))
					}
				}
			}
		}
	}
}

func TestMissingByteTokens(t *testing.T) {
	voc := tokenizer.NewVocab(tokenizer.ModelSPM, []string{"<unk>", "<s>", "</s>", "{", "}", "▁a"})
	voc.Types = []tokenizer.TokenType{tokenizer.TypeUnknown, tokenizer.TypeControl, tokenizer.TypeControl,
		tokenizer.TypeNormal, tokenizer.TypeNormal, tokenizer.TypeNormal}
	voc.UNK, voc.BOS, voc.EOS = 0, 1, 2
	tok, err := tokenizer.New(voc)
	if err != nil {
		t.Fatal(err)
	}
	_, err = JSON(Options{}).NewMatcher(NewVocab(tok))
	if err == nil || !strings.Contains(err.Error(), "no token for the single byte 0x20") {
		t.Errorf("error %v", err)
	}
}

// TestManyAlternatives checks grammars with many alternatives open at once:
// up to maxThreads all of them can be written, beyond that what the matcher
// allows stays valid.
func TestManyAlternatives(t *testing.T) {
	_, v := loadVocab(t, gpt2Vocab)
	r := rand.New(rand.NewPCG(5, 6))
	for _, n := range []int{maxThreads, 3 * maxThreads} {
		var alts []string
		for i := range n {
			alts = append(alts, fmt.Sprintf(`{"type":"object","properties":{"k":{"const":"v%03d"}},"required":["k"],"additionalProperties":false}`, i))
		}
		m := mustMatcher(t, `{"anyOf":[`+strings.Join(alts, ",")+`]}`, Options{}, v)
		single := byteTokens(t, v)
		if n == maxThreads {
			for _, last := range []string{"000", fmt.Sprintf("%03d", n-1)} {
				m.Reset()
				if err := m.AcceptBytes([]byte(`{"k":"v` + last + `"}`)); err != nil || !m.Done() {
					t.Fatalf("%d alternatives, v%s: %v", n, last, err)
				}
			}
			continue
		}
		for range 20 {
			m.Reset()
			text := []byte{}
			for remaining := 30; !m.Done(); remaining-- {
				allowed := allowedSet(t, m, remaining)
				var ids []int32
				for _, id := range single {
					if allowed[id] {
						ids = append(ids, id)
					}
				}
				id := ids[r.IntN(len(ids))]
				if err := m.Accept(id); err != nil {
					t.Fatal(err)
				}
				text = append(text, v.tok.Piece(id)...)
			}
			var got struct{ K string }
			if err := json.Unmarshal(text, &got); err != nil || len(got.K) != 4 || got.K[0] != 'v' {
				t.Fatalf("%q: %v", text, err)
			}
		}
	}
}

func TestZeroAllocs(t *testing.T) {
	tok, v := loadVocab(t, gpt2Vocab)
	text := `{"name": "get_weather", "arguments": {"city": "Zürich \"old town\"", "days": 12}}`
	ids, err := tok.Encode(text, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{"", toolSchema(t)} {
		m := mustMatcher(t, schema, Options{}, v)
		logits := make([]float32, v.n)
		run := func() {
			m.Reset()
			for i, id := range ids {
				if err := m.Mask(logits, 200-i); err != nil {
					t.Fatal(err)
				}
				if err := m.Accept(id); err != nil {
					t.Fatal(err)
				}
				m.Done()
				m.CloseCost()
			}
		}
		run()
		if n := testing.AllocsPerRun(5, run); n != 0 {
			t.Errorf("%.20q: %v allocations per generation", schema, n)
		}
	}
}

func TestMaskLogitsLength(t *testing.T) {
	_, v := loadVocab(t, gpt2Vocab)
	m := mustMatcher(t, "", Options{}, v)
	if err := m.Mask(make([]float32, v.n-1), 10); err == nil {
		t.Error("short logits: no error")
	}
	logits := make([]float32, v.n+70)
	if err := m.Mask(logits, 10); err != nil {
		t.Fatal(err)
	}
	for i, l := range logits[v.n:] {
		if !math.IsInf(float64(l), -1) {
			t.Fatalf("logit %d beyond the vocabulary not masked", v.n+i)
		}
	}
}
