package daemon

import "strings"

// StopMatcher finds stop sequences in streamed text. It holds back the end
// of the text that could be the start of a stop sequence, so that no part
// of a stop sequence is ever streamed, and cuts the text where the first
// one begins.
type StopMatcher struct {
	Stops []string // the stop sequences (Prepared.Stops)
	held  string
}

// Feed adds text and returns what may be emitted now; stopped is true when
// a stop sequence was found, in which case emit is the text before it and
// the generation should end.
func (m *StopMatcher) Feed(text string) (emit string, stopped bool) {
	if len(m.Stops) == 0 {
		return text, false
	}
	buf := m.held + text
	cut := -1
	for _, s := range m.Stops {
		if i := strings.Index(buf, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		m.held = ""
		return buf[:cut], true
	}
	keep := 0
	for _, s := range m.Stops {
		for n := min(len(s)-1, len(buf)); n > keep; n-- {
			if strings.HasSuffix(buf, s[:n]) {
				keep = n
				break
			}
		}
	}
	m.held = buf[len(buf)-keep:]
	return buf[:len(buf)-keep], false
}

// Flush returns the held-back text at the end of the generation.
func (m *StopMatcher) Flush() string {
	h := m.held
	m.held = ""
	return h
}
