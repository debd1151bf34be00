package models

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// fakeClock returns a Reporter on buf whose clock advances by step at each
// reading.
func fakeClock(buf *bytes.Buffer, bar bool, step time.Duration) *Reporter {
	r := NewReporter(buf, "m.gguf", bar)
	now := time.Unix(1000, 0)
	r.now = func() time.Time { now = now.Add(step); return now }
	return r
}

func TestReporterPlainLines(t *testing.T) {
	var buf bytes.Buffer
	r := fakeClock(&buf, false, 50*time.Millisecond)
	r.Start(0, 100<<20)
	for i := int64(1); i <= 100; i++ {
		r.Update(i << 20)
	}
	r.Finish(100 << 20)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 11 || lines[0] != "m.gguf: downloading 100.0 MiB" {
		t.Fatalf("got %d lines:\n%s", len(lines), buf.String())
	}
	if !strings.HasPrefix(lines[1], "m.gguf: 10% (10.0 of 100.0 MiB) at ") || !strings.HasPrefix(lines[10], "m.gguf: 100% (100.0 of 100.0 MiB)") {
		t.Fatalf("unexpected lines:\n%s", buf.String())
	}
	if strings.Contains(buf.String(), "\r") {
		t.Fatal("plain output has carriage returns")
	}
}

func TestReporterResumeAndRetry(t *testing.T) {
	var buf bytes.Buffer
	r := fakeClock(&buf, false, time.Second)
	r.Start(60<<20, 100<<20)
	r.Update(65 << 20) // same tenth: no line
	r.Retry(errors.New("connection reset"), 2*time.Second)
	r.Start(65<<20, 100<<20)
	r.Update(70 << 20)
	want := "m.gguf: resuming at 60.0 MiB of 100.0 MiB\n" +
		"m.gguf: connection reset; resuming in 2s\n" +
		"m.gguf: resuming at 65.0 MiB of 100.0 MiB\n" +
		"m.gguf: 70% (70.0 of 100.0 MiB) at 5.0 MiB/s\n" // 5 MiB in the one clock second since Start
	if buf.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", buf.String(), want)
	}
}

func TestReporterUnknownSize(t *testing.T) {
	var buf bytes.Buffer
	r := fakeClock(&buf, false, time.Second)
	r.Start(0, 0)
	r.Update(100 << 20)
	r.Finish(130 << 20)
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 3 || lines[0] != "m.gguf: downloading (size unknown)" ||
		!strings.HasPrefix(lines[1], "m.gguf: 100.0 MiB") || !strings.HasPrefix(lines[2], "m.gguf: 130.0 MiB") {
		t.Fatalf("got:\n%s", buf.String())
	}
}

func TestReporterBar(t *testing.T) {
	var buf bytes.Buffer
	r := fakeClock(&buf, true, 10*time.Millisecond)
	r.Start(0, 100<<20)
	for i := int64(1); i <= 100; i++ {
		r.Update(i << 20)
	}
	r.Retry(errors.New("reset"), time.Second)
	r.Finish(100 << 20)
	out := buf.String()
	// 100 updates 10 ms apart: redrawn about every 200 ms, not each time.
	if n := strings.Count(out, "\r"); n < 3 || n > 12 {
		t.Fatalf("%d redraws:\n%q", n, out)
	}
	if !strings.Contains(out, "\n"+"m.gguf: reset; resuming in 1s\n") {
		t.Fatalf("the retry line does not start on a fresh line:\n%q", out)
	}
	last := out[strings.LastIndex(out, "\r"):]
	if !strings.HasPrefix(last, "\r100% ["+strings.Repeat("=", barWidth)+"] 100.0 / 100.0 MiB") || !strings.HasSuffix(last, "\n") {
		t.Fatalf("final bar %q", last)
	}
}
