package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/kernels"
)

// model.repack interleaves a Q4_0 model's weights where the CPU has the
// kernels: the memory plan is told how many bytes (ModelInfo.RepackBytes),
// the log says so, and greedy answers are those without it.
func TestLoadLLMRepack(t *testing.T) {
	job := Job{ID: "r", Prompt: "Once upon a time", Raw: true, MaxTokens: 24, Sampling: Sampling{TopK: 1, TopP: 1, RepeatPenalty: 1}}
	answer := func(repack bool) (Outcome, ModelInfo, string) {
		var log bytes.Buffer
		var info ModelInfo
		e, err := LoadLLM(context.Background(), LoadOptions{Path: modelPath(t, "tiny-q4_0.gguf"), Context: 128, Threads: 2, Slots: 1, Repack: repack,
			Logger: slog.New(slog.NewTextHandler(&log, nil)), Check: func(m ModelInfo) error { info = m; return nil }})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		out, err := e.Run(context.Background(), job)
		if err != nil {
			t.Fatal(err)
		}
		return out, info, log.String()
	}
	want, plainInfo, _ := answer(false)
	got, info, log := answer(true)
	if got.Text != want.Text || got.Usage.CompletionTokens != want.Usage.CompletionTokens {
		t.Errorf("repacked: %q (%d tokens), not %q (%d tokens)", got.Text, got.Usage.CompletionTokens, want.Text, want.Usage.CompletionTokens)
	}
	if plainInfo.RepackBytes != 0 {
		t.Errorf("RepackBytes %d without model.repack", plainInfo.RepackBytes)
	}
	if kernels.Interleaves(kernels.Q4_0) {
		if info.RepackBytes == 0 || info.RepackBytes >= info.FileBytes || !strings.Contains(log, `msg="model weights repacked" bytes=`) {
			t.Errorf("RepackBytes %d of a %d-byte file; log:\n%s", info.RepackBytes, info.FileBytes, log)
		}
	} else if info.RepackBytes != 0 {
		t.Errorf("RepackBytes %d on a CPU without the kernels", info.RepackBytes)
	}
}
