package models

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress receives a download's progress. Download calls its methods from
// the goroutine that called Download.
type Progress interface {
	// Start is called when bytes start arriving: have is how many bytes of
	// the file are already present (kept from an earlier attempt), total
	// the file's size (0 when the server does not say).
	Start(have, total int64)
	// Update is called as bytes arrive, with how many are present now.
	Update(have int64)
	// Retry is called when a transfer broke and is resumed after wait.
	Retry(err error, wait time.Duration)
	// Finish is called once the whole file is present, before it is
	// verified.
	Finish(have int64)
}

// Reporter is a Progress that writes to an io.Writer: a redrawn progress
// bar for a terminal, or plain lines (one per tenth of the file) for logs
// and pipes.
type Reporter struct {
	w    io.Writer
	bar  bool
	now  func() time.Time
	name string

	total     int64
	start     time.Time // when the current transfer started
	startHave int64     // bytes present at start
	lastDraw  time.Time
	lastTenth int64 // last tenth (or 64 MiB step) reported in plain mode
	drawn     bool  // a bar line is on screen
}

// NewReporter returns a Reporter for the file called name, writing a
// progress bar (bar true: the writer is a terminal) or plain lines to w.
func NewReporter(w io.Writer, name string, bar bool) *Reporter {
	return &Reporter{w: w, bar: bar, now: time.Now, name: name}
}

// barRedraw is the shortest time between two redraws of the bar.
const barRedraw = 200 * time.Millisecond

// plainStep is the plain-mode reporting step when the size is unknown.
const plainStep = 64 << 20

// Start implements Progress.
func (r *Reporter) Start(have, total int64) {
	r.total, r.startHave, r.start = total, have, r.now()
	r.lastTenth = r.step(have)
	switch {
	case have > 0 && total > 0:
		r.line(fmt.Sprintf("%s: resuming at %s of %s", r.name, mib(have), mib(total)))
	case have > 0:
		r.line(fmt.Sprintf("%s: resuming at %s", r.name, mib(have)))
	case total > 0:
		r.line(fmt.Sprintf("%s: downloading %s", r.name, mib(total)))
	default:
		r.line(fmt.Sprintf("%s: downloading (size unknown)", r.name))
	}
	if r.bar {
		r.draw(have, true)
	}
}

// Update implements Progress.
func (r *Reporter) Update(have int64) {
	if r.bar {
		r.draw(have, false)
		return
	}
	if s := r.step(have); s > r.lastTenth {
		r.lastTenth = s
		r.line(r.status(have))
	}
}

// Retry implements Progress.
func (r *Reporter) Retry(err error, wait time.Duration) {
	r.line(fmt.Sprintf("%s: %v; resuming in %v", r.name, err, wait.Round(time.Millisecond)))
}

// Finish implements Progress.
func (r *Reporter) Finish(have int64) {
	if r.bar {
		r.draw(have, true)
		fmt.Fprintln(r.w)
		r.drawn = false
		return
	}
	if r.step(have) > r.lastTenth || r.total == 0 {
		r.line(r.status(have))
	}
}

// step is the plain-mode step have is in: tenths of the total, or 64 MiB
// steps when the total is unknown.
func (r *Reporter) step(have int64) int64 {
	if r.total > 0 {
		return have * 10 / r.total
	}
	return have / plainStep
}

// line writes a whole line, ending a bar line first.
func (r *Reporter) line(s string) {
	if r.drawn {
		fmt.Fprintln(r.w)
		r.drawn = false
	}
	fmt.Fprintln(r.w, s)
}

// status is "<name>: 40% (196.6 of 491.4 MiB) at 5.2 MiB/s".
func (r *Reporter) status(have int64) string {
	var b strings.Builder
	b.WriteString(r.name + ": ")
	if r.total > 0 {
		fmt.Fprintf(&b, "%d%% (%s of %s)", have*100/r.total, mibNumber(have), mib(r.total))
	} else {
		b.WriteString(mib(have))
	}
	if rate := r.rate(have); rate > 0 {
		fmt.Fprintf(&b, " at %s/s", mib(int64(rate)))
	}
	return b.String()
}

// rate is the transfer speed in bytes per second since Start.
func (r *Reporter) rate(have int64) float64 {
	secs := r.now().Sub(r.start).Seconds()
	if secs <= 0 {
		return 0
	}
	return float64(have-r.startHave) / secs
}

// barWidth is the number of cells of the bar.
const barWidth = 30

// draw redraws the bar line, at most every barRedraw unless force.
func (r *Reporter) draw(have int64, force bool) {
	now := r.now()
	if !force && now.Sub(r.lastDraw) < barRedraw {
		return
	}
	r.lastDraw = now
	var b strings.Builder
	b.WriteString("\r")
	if r.total > 0 {
		filled := int(min(have, r.total) * barWidth / r.total)
		fmt.Fprintf(&b, "%3d%% [%s%s] %s / %s", have*100/r.total,
			strings.Repeat("=", filled), strings.Repeat(" ", barWidth-filled), mibNumber(have), mib(r.total))
	} else {
		b.WriteString(mib(have))
	}
	if rate := r.rate(have); rate > 0 {
		fmt.Fprintf(&b, "  %s/s", mib(int64(rate)))
		if r.total > have {
			eta := time.Duration(float64(r.total-have) / rate * float64(time.Second))
			fmt.Fprintf(&b, "  ETA %v", eta.Round(time.Second))
		}
	}
	b.WriteString("\x1b[K") // clear what a longer previous line left
	io.WriteString(r.w, b.String())
	r.drawn = true
}

// mib formats a byte count as "12.3 MiB".
func mib(n int64) string { return mibNumber(n) + " MiB" }

func mibNumber(n int64) string { return fmt.Sprintf("%.1f", float64(n)/(1<<20)) }
