package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// Loading the model warms it up with a short prompt through a slot, says so
// in the log, and leaves every slot empty: the first job then starts from
// position 0 and gets what it gets in an engine loaded for it alone.
func TestLoadLLMWarmsUp(t *testing.T) {
	var log bytes.Buffer
	e, err := LoadLLM(context.Background(), LoadOptions{Path: modelPath(t, "tiny-q8_0.gguf"), Context: 256, Threads: 2, Slots: 3,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !strings.Contains(log.String(), `msg="model warmed up" tokens=8`) {
		t.Errorf("no warm-up of 8 tokens in the log:\n%s", log.String())
	}
	l := e.(*llm)
	for i, sl := range l.slots {
		if p := sl.state.Pos(); p != 0 {
			t.Errorf("slot %d holds %d tokens after the warm-up", i, p)
		}
	}

	// The warm-up's slot (the last) serves like the others: three jobs at
	// once, each answered as alone.
	job := Job{ID: "w", Prompt: "Once upon a time", Raw: true, MaxTokens: 12, Sampling: Sampling{TopK: 1, TopP: 1, RepeatPenalty: 1}}
	want, err := e.Run(context.Background(), job)
	if err != nil {
		t.Fatal(err)
	}
	outs := make(chan Outcome, 3)
	errs := make(chan error, 3)
	for range 3 {
		go func() {
			out, err := e.Run(context.Background(), job)
			outs <- out
			errs <- err
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		if out := <-outs; out.Text != want.Text || out.Usage.CompletionTokens != want.Usage.CompletionTokens {
			t.Errorf("a job at once: %q (%d tokens), alone %q (%d tokens)", out.Text, out.Usage.CompletionTokens, want.Text, want.Usage.CompletionTokens)
		}
	}
}
