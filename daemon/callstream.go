package daemon

import (
	"strings"

	"github.com/edgellm/edgellm/inference/chat/toolcall"
)

// callPhase is where a callSplitter is in the answer.
type callPhase uint8

const (
	callsUndecided callPhase = iota // a syntax without trigger, only whitespace so far
	callsText                       // free text: it streams on
	callsBegun                      // the calls have begun: nothing more streams
)

// callSplitter streams the free text of an answer that may hold tool calls
// and withholds the calls: clients see the text the model writes before its
// calls as it comes (Home Assistant speaks it while the model writes), and
// the calls only in the final answer, parsed. With a trigger syntax
// (hermes' "<tool_call>", mistral's "[TOOL_CALLS]", …) the text streams up
// to the trigger; the bytes at the end of a chunk that may begin the
// trigger are held until the next chunk settles them. With the syntaxes
// whose calls open the answer ("{" or "[" as its first non-space byte) an
// answer that opens so is withheld whole, any other streams.
//
// What is withheld is not lost: the final answer carries the text the
// calls did not take (Answer.Text), and the transports send what of it has
// not streamed.
type callSplitter struct {
	phase   callPhase
	held    string      // whitespace before a syntax without trigger decides
	trigger StopMatcher // the trigger, held back while it may be forming
	out     func(string) error
}

// newCallSplitter returns a splitter for syntax syn that passes the text
// that streams to out.
func newCallSplitter(syn toolcall.Syntax, out func(string) error) *callSplitter {
	c := &callSplitter{out: out}
	if t := syn.Trigger(); t != "" {
		c.phase, c.trigger.Stops = callsText, []string{t}
	}
	return c
}

// feed takes the next chunk of the answer.
func (c *callSplitter) feed(s string) error {
	switch c.phase {
	case callsBegun:
		return nil
	case callsUndecided:
		buf := c.held + s
		body := strings.TrimLeft(buf, " \t\r\n")
		switch {
		case body == "":
			if len(buf) <= maxHeldSpace {
				c.held = buf
				return nil
			}
			c.held = ""
			return c.send(buf)
		case body[0] == '{' || body[0] == '[':
			c.phase, c.held = callsBegun, ""
			return nil
		}
		c.phase, c.held = callsText, ""
		return c.send(buf)
	}
	text, begun := c.trigger.Feed(s)
	if begun {
		c.phase = callsBegun
	}
	return c.send(text)
}

// flush ends the answer: held bytes that did not become a trigger are text.
func (c *callSplitter) flush() error {
	if c.phase == callsBegun {
		return nil
	}
	h := c.held + c.trigger.Flush()
	c.held = ""
	return c.send(h)
}

func (c *callSplitter) send(s string) error {
	if s == "" {
		return nil
	}
	return c.out(s)
}
