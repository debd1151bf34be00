package daemon

import (
	"fmt"
	"slices"
	"strings"

	"github.com/edgellm/edgellm/inference/tokenizer"
)

// thinkTokens are the tokens that write the reasoning markers with a model's
// vocabulary.
type thinkTokens struct {
	open, close []int32
	// own is true when the vocabulary has each marker as a token of its
	// own: the model was trained to reason (Qwen3, SmolLM3, DeepSeek-R1
	// distills, LFM2.5-thinking).
	own bool
	// show lists the markers that are control tokens: decoded text leaves
	// control tokens out, and the splitter must see them.
	show []int32
}

// newThinkTokens finds the markers' tokens: the vocabulary's own tokens
// when it has them, else the markers' text encoded.
func newThinkTokens(tok *tokenizer.Tokenizer) (thinkTokens, error) {
	var tt thinkTokens
	o, okOpen := tok.ID(thinkOpen)
	c, okClose := tok.ID(thinkClose)
	if okOpen && okClose {
		tt.open, tt.close, tt.own = []int32{o}, []int32{c}, true
		for _, id := range []int32{o, c} {
			if tok.IsControl(id) {
				tt.show = append(tt.show, id)
			}
		}
		return tt, nil
	}
	var err error
	if tt.open, err = tok.Encode(thinkOpen, false); err != nil {
		return tt, fmt.Errorf("daemon: encoding the reasoning marker %q: %w", thinkOpen, err)
	}
	if tt.close, err = tok.Encode(thinkClose, false); err != nil {
		return tt, fmt.Errorf("daemon: encoding the reasoning marker %q: %w", thinkClose, err)
	}
	return tt, nil
}

// encodeLead tokenizes a forced lead (Job.lead), writing the reasoning
// markers in it with their tokens, as a thinking model writes them.
func encodeLead(tok *tokenizer.Tokenizer, tt thinkTokens, text string) ([]int32, error) {
	var ids []int32
	for text != "" {
		i, marker := len(text), []int32(nil)
		if j := strings.Index(text, thinkOpen); j >= 0 {
			i, marker = j, tt.open
		}
		if j := strings.Index(text, thinkClose); j >= 0 && j < i {
			i, marker = j, tt.close
		}
		var err error
		if i > 0 {
			if ids, err = tok.AppendEncode(ids, text[:i], false); err != nil {
				return nil, fmt.Errorf("daemon: encoding the lead: %w", err)
			}
		}
		ids = append(ids, marker...)
		text = text[i:]
		switch {
		case strings.HasPrefix(text, thinkOpen):
			text = text[len(thinkOpen):]
		case strings.HasPrefix(text, thinkClose):
			text = text[len(thinkClose):]
		}
	}
	return ids, nil
}

// promptOpensThinking reports whether a prompt ends inside a reasoning
// block, the generation prompt of a template that opens it for the model
// (DeepSeek-R1 distills end it with "<think>\n"). Qwen3's template with
// thinking off writes an empty block, "<think>\n\n</think>\n\n": closed.
func promptOpensThinking(tok *tokenizer.Tokenizer, ids []int32) bool {
	tail := tok.Decode(ids[max(0, len(ids)-8):], true)
	return strings.HasSuffix(strings.TrimRight(tail, " \t\r\n"), thinkOpen)
}

// thinkRun is one generation's reasoning: the splitter and the tokens the
// engine forces (opening a reasoning the request asked for, closing one it
// did not ask for or that must end to leave room for a constrained answer).
type thinkRun struct {
	split  *thinkSplitter
	tokens thinkTokens
	think  bool // the job asked for reasoning
	// queue holds the tokens still to force (a slice of a marker's or of
	// lead's tokens, so taking one does not allocate).
	queue   []int32
	lead    []int32 // forced text the generation begins with (Job.lead), after queue
	closing bool    // the closing marker was queued
	// reserve, when positive, is how many tokens the answer needs after
	// the reasoning (the closing marker and the shortest constrained
	// value): the reasoning is closed when no more are left.
	reserve int
	count   int // tokens chosen so far
	// reasonTokens is how many tokens the reasoning took, markers included,
	// once it closed.
	reasonTokens int
}

// force is the generation's Force hook: it counts tokens and hands out the
// queued ones, closing the reasoning when the budget leaves just room for
// the answer.
func (r *thinkRun) force(left int) int32 {
	r.count++
	if r.reserve > 0 && !r.closing && r.split.reasoning() && left <= r.reserve {
		r.close()
	}
	if len(r.queue) == 0 && len(r.lead) > 0 {
		r.queue, r.lead = r.lead, nil
	}
	if len(r.queue) == 0 {
		return -1
	}
	id := r.queue[0]
	r.queue = r.queue[1:]
	return id
}

// noEnd is the generation's NoEnd hook: a reasoning that a constrained
// answer must follow (reserve set) may not end the output before it closes.
func (r *thinkRun) noEnd() bool { return r.reserve > 0 && r.split.closedAt < 0 }

// close queues the closing marker (once) in place of anything else queued:
// what is left of a forced lead stands for what the model would have
// reasoned, and closing overrides it.
func (r *thinkRun) close() {
	if r.closing {
		return
	}
	r.closing = true
	r.queue, r.lead = r.tokens.close, nil
}

// opened is the splitter's onOpen hook: a reasoning the job did not ask for
// is closed at once.
func (r *thinkRun) opened() {
	if !r.think {
		r.close()
	}
}

// closed is the splitter's onClose hook.
func (r *thinkRun) closed() { r.reasonTokens = r.count }

// reasoningTokens is how many of n generated tokens were reasoning.
func (r *thinkRun) reasoningTokens(n int) int {
	switch {
	case r.split.reasoning():
		return n // the budget or the end of text came inside the reasoning
	case r.split.hadReasoning():
		return r.reasonTokens
	}
	return 0
}

// answerStart is a GrammarStart that finds the constrained value's start
// with start in the answer only, never in the reasoning before it.
func (r *thinkRun) answerStart(start func([]byte) int) func([]byte) int {
	return func(out []byte) int {
		at := r.split.answerAt
		if at < 0 || at > len(out) {
			return -1
		}
		if off := start(out[at:]); off >= 0 {
			return at + off
		}
		return -1
	}
}

// afterReasoning is a GrammarStart for a value that makes up the whole
// answer: it starts right after the closing marker.
func (r *thinkRun) afterReasoning(out []byte) int {
	if at := r.split.closedAt; at >= 0 && at <= len(out) {
		return at
	}
	return -1
}

// showTokens joins the control tokens whose text the output must keep: the
// reasoning markers and the marks of the job's tool-call syntax.
func showTokens(markers, marks []int32) []int32 {
	if len(marks) == 0 {
		return markers
	}
	return append(slices.Clip(markers), marks...)
}
