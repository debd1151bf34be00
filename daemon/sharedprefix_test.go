package daemon

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Four jobs that arrive at once with a long common system prompt (Home
// Assistant's instructions and tools) prefill it once: the first job
// prefills it, the other three wait for its caches and restore them
// (usage.cached_tokens), and every answer is the one the job gets alone.
func TestSlotsPrefillSharedPrefixOnce(t *testing.T) {
	const n = 4
	load := func(slots int) *llm {
		e, err := LoadLLM(context.Background(), LoadOptions{Path: modelPath(t, "tiny-q8_0.gguf"), Context: 512, Threads: 2, Slots: slots,
			PrefixCacheBytes: func() int64 { return 64 << 20 }})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		return e.(*llm)
	}
	system := strings.Repeat("You control the lights, the heating and the blinds of this home. ", 8)
	job := func(i int) Job {
		return Job{ID: fmt.Sprint("job", i), Prompt: system + fmt.Sprintf("Question %d: is the kitchen light on?", i), Raw: true,
			MaxTokens: 8, Sampling: Sampling{TopK: 1, TopP: 1, RepeatPenalty: 1}}
	}

	// Alone, one after another in a fresh engine each: the answers to match.
	var alone [n]Outcome
	for i := range n {
		out, err := load(1).Run(context.Background(), job(i))
		if err != nil {
			t.Fatal(err)
		}
		alone[i] = out
	}

	// At once: job 0 is held in its slot until the three others wait for
	// its prompt.
	e := load(n)
	waiting := make(chan struct{}, n)
	e.sharedWait = func() { waiting <- struct{}{} }
	var outs [n]Outcome
	var errs [n]error
	var wg sync.WaitGroup
	inSlot := make(chan struct{})
	for i := range n {
		j := job(i)
		if i == 0 {
			j.inSlot = func(ctx context.Context) error {
				close(inSlot) // job 0 is in flight: the others may come
				for k := range n - 1 {
					select {
					case <-waiting:
					case <-time.After(wait):
						return fmt.Errorf("%d of the %d other jobs wait for this one's prompt", k, n-1)
					}
				}
				return nil
			}
		}
		wg.Go(func() { outs[i], errs[i] = e.Run(context.Background(), j) })
		if i == 0 {
			<-inSlot
		}
	}
	wg.Wait()
	shared := alone[0].Usage.PromptTokens - 20 // the system prompt, in tokens, give or take the question's
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("job %d: %v", i, errs[i])
		}
		u := outs[i].Usage
		switch {
		case i == 0 && u.CachedTokens != 0:
			t.Errorf("job 0 reused %d tokens, want 0: it prefills the prompt", u.CachedTokens)
		case i > 0 && u.CachedTokens < shared:
			t.Errorf("job %d reused %d of its %d prompt tokens, want the %d or so of the system prompt", i, u.CachedTokens, u.PromptTokens, shared)
		}
		if outs[i].Text != alone[i].Text {
			t.Errorf("job %d: %q beside the others, %q alone", i, outs[i].Text, alone[i].Text)
		}
	}
}
