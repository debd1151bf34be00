package daemon

// Reasoning markers: the texts thinking models (Qwen3, SmolLM3, DeepSeek-R1
// distills, LFM2.5-thinking) put around their reasoning.
const (
	thinkOpen  = "<think>"
	thinkClose = "</think>"
)

// maxHeldSpace bounds the whitespace the splitter holds back (before an
// opening marker, at the end of the reasoning): more than that is passed on,
// so a model writing nothing but newlines is not held forever.
const maxHeldSpace = 64

// splitPhase is where the splitter is in the output.
type splitPhase uint8

const (
	phaseStart  splitPhase = iota // nothing but whitespace yet: an opening marker may come
	phaseReason                   // inside the reasoning
	phaseClosed                   // right after the closing marker: whitespace is dropped
	phaseAnswer                   // the answer: everything passes to the answer sink
)

// thinkSplitter splits generated text into reasoning and answer as it
// streams. An opening marker at the very start of the output (whitespace
// before it allowed) begins the reasoning, the closing marker ends it; the
// markers and the whitespace around the reasoning are in neither part. When
// the prompt already opened the reasoning (a template that ends with
// "<think>\n"), the output starts inside it. A marker split across chunks is
// recognised: the bytes that may be its beginning are held back until the
// next chunk settles them.
//
// feed and flush do not allocate: the held bytes live in a buffer made with
// the splitter, and the parts are handed to the sinks as slices of the input
// or of that buffer, valid only during the call.
type thinkSplitter struct {
	open, close string
	fail        []int // KMP failure function of close
	phase       splitPhase
	n           int    // bytes of the marker matched at the end of held
	held        []byte // held back: whitespace, then open[:n] (start) or close[:n] (reasoning)
	lead        bool   // no reasoning text yet: its leading whitespace is dropped
	out         []byte // reasoning text of the current feed, passed to reason at its end

	fed      int // bytes fed so far
	answerAt int // offset of the answer in the fed bytes, -1 until it begins
	closedAt int // offset right after the closing marker, -1 until it is seen

	reason, answer func([]byte) error // the sinks
	onOpen         func()             // called when the reasoning begins (in the prompt or the output)
	onClose        func()             // called when the closing marker is seen
}

// newThinkSplitter returns a splitter for the markers open and close (which
// must not contain whitespace), sending reasoning to reason and the answer to
// answer. opened says the prompt ended inside a reasoning block.
func newThinkSplitter(open, close string, opened bool, reason, answer func([]byte) error) *thinkSplitter {
	s := &thinkSplitter{
		open: open, close: close, fail: kmpFailure(close),
		held:     make([]byte, 0, maxHeldSpace+max(len(open), len(close))),
		out:      make([]byte, 0, 64),
		answerAt: -1, closedAt: -1,
		reason: reason, answer: answer,
	}
	if opened {
		s.phase, s.lead = phaseReason, true
	}
	return s
}

// kmpFailure returns, for each prefix m[:i+1], the length of its longest
// proper suffix that is also a prefix of m.
func kmpFailure(m string) []int {
	f := make([]int, len(m))
	k := 0
	for i := 1; i < len(m); i++ {
		for k > 0 && m[i] != m[k] {
			k = f[k-1]
		}
		if m[i] == m[k] {
			k++
		}
		f[i] = k
	}
	return f
}

// reasoning reports whether the output is inside the reasoning now.
func (s *thinkSplitter) reasoning() bool { return s.phase == phaseReason }

// hadReasoning reports whether a reasoning block began (in the prompt or the
// output).
func (s *thinkSplitter) hadReasoning() bool {
	return s.phase == phaseReason || s.phase == phaseClosed || s.closedAt >= 0
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// feed splits the next chunk of output. It returns the first error of a sink.
func (s *thinkSplitter) feed(b []byte) error {
	base := s.fed
	s.fed += len(b)
	if s.phase == phaseAnswer {
		return s.answer(b)
	}
	s.out = s.out[:0]
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch s.phase {
		case phaseStart:
			switch {
			case s.n == 0 && isSpace(c) && len(s.held) < maxHeldSpace:
				s.held = append(s.held, c)
			case c == s.open[s.n]:
				s.held = append(s.held, c)
				if s.n++; s.n == len(s.open) {
					s.phase, s.n, s.held, s.lead = phaseReason, 0, s.held[:0], true
					if s.onOpen != nil {
						s.onOpen()
					}
				}
			default: // no marker: everything so far is the answer
				s.phase, s.answerAt = phaseAnswer, base+i-len(s.held)
				if err := s.flushOut(); err != nil {
					return err
				}
				if len(s.held) > 0 {
					if err := s.answer(s.held); err != nil {
						return err
					}
				}
				s.held, s.n = s.held[:0], 0
				return s.answer(b[i:])
			}
		case phaseReason:
			s.reasonByte(c)
			if s.n == len(s.close) {
				s.phase, s.n, s.held = phaseClosed, 0, s.held[:0]
				s.closedAt = base + i + 1
				if s.onClose != nil {
					s.onClose()
				}
			}
		case phaseClosed:
			if !isSpace(c) {
				s.phase, s.answerAt = phaseAnswer, base+i
				if err := s.flushOut(); err != nil {
					return err
				}
				return s.answer(b[i:])
			}
		}
	}
	return s.flushOut()
}

// reasonByte takes one byte of reasoning: it extends the match of the
// closing marker, or settles held bytes as reasoning text.
func (s *thinkSplitter) reasonByte(c byte) {
	if s.n == 0 && isSpace(c) {
		switch {
		case s.lead: // whitespace opening the reasoning is dropped
		case len(s.held) < maxHeldSpace:
			s.held = append(s.held, c)
		default:
			s.out = append(s.out, s.held...)
			s.held = append(s.held[:0], c)
		}
		return
	}
	k := s.n
	for k > 0 && s.close[k] != c {
		k = s.fail[k-1]
	}
	if s.close[k] == c {
		k++
	}
	if k == s.n+1 { // the match goes on
		s.held = append(s.held, c)
		s.n = k
		return
	}
	// The match shrank to close[:k], the end of held+c; the rest is text.
	s.lead = false
	if k == 0 {
		s.out = append(s.out, s.held...)
		s.held = s.held[:0]
		s.n = 0
		if isSpace(c) {
			s.held = append(s.held, c)
		} else {
			s.out = append(s.out, c)
		}
		return
	}
	keep := len(s.held) + 1 - k
	s.out = append(s.out, s.held[:min(keep, len(s.held))]...)
	s.held = append(s.held[:0], s.close[:k]...)
	s.n = k
}

// flushOut passes the reasoning text collected in this feed to its sink.
func (s *thinkSplitter) flushOut() error {
	if len(s.out) == 0 {
		return nil
	}
	s.lead = false
	return s.reason(s.out)
}

// flush ends the output: held bytes that turned out to be no marker are
// passed on (to the answer before anything else came, to the reasoning
// inside it), whitespace held at the end of the reasoning is dropped.
func (s *thinkSplitter) flush() error {
	held := s.held
	s.held, s.out = s.held[:0], s.out[:0]
	switch s.phase {
	case phaseStart:
		if len(held) > 0 {
			s.phase, s.answerAt = phaseAnswer, s.fed-len(held)
			return s.answer(held)
		}
	case phaseReason:
		if s.n > 0 { // an unfinished marker: the model wrote it
			return s.reason(held)
		}
	}
	return nil
}
