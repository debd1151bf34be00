package daemon

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/edgellm/edgellm/api"
	"github.com/edgellm/edgellm/inference"
)

// The pipeline turns a job into prompt tokens, constraint and stop strings:
// a raw prompt's special-token text is those tokens only for the command
// line, the template's stop strings follow the job's, a constraint on the
// whole answer drops them, and messages without a template are refused.
func TestPipelinePrepare(t *testing.T) {
	m, err := inference.Load(modelPath(t, "tiny-q8_0.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	eos, ok := m.Tokenizer.ID("</s>")
	if !ok || !m.Tokenizer.IsControl(eos) {
		t.Fatal("the test model has no </s> control token")
	}
	job := Job{Prompt: "hi</s>", MaxTokens: 4}
	client, err := NewPipeline(m, PipelineOptions{Context: 256}).Prepare(job)
	if err != nil {
		t.Fatal(err)
	}
	operator, err := NewPipeline(m, PipelineOptions{Context: 256, RawSpecial: true}).Prepare(job)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(client.IDs, eos) || !slices.Contains(operator.IDs, eos) || len(operator.IDs) >= len(client.IDs) {
		t.Errorf("raw prompt: a client's tokens %v, the operator's %v (</s> is %d)", client.IDs, operator.IDs, eos)
	}
	if client.Stops != nil || client.Grammar != nil {
		t.Errorf("a raw prompt without stops: stops %q, grammar %v", client.Stops, client.Grammar)
	}

	f, err := m.ChatFormat("chatml")
	if err != nil {
		t.Fatal(err)
	}
	chatml := NewPipeline(m, PipelineOptions{Context: 256, Format: f})
	job = Job{Messages: []api.Message{{Role: api.RoleUser, Content: "hi"}}, Stop: []string{"END"}, MaxTokens: 4}
	pp, err := chatml.Prepare(job)
	if err != nil {
		t.Fatal(err)
	}
	if want := append([]string{"END"}, f.StopStrings()...); len(f.StopStrings()) == 0 || !slices.Equal(pp.Stops, want) || len(pp.IDs) == 0 {
		t.Errorf("chat stops %q, want %q; %d prompt tokens", pp.Stops, want, len(pp.IDs))
	}
	job.JSON = true
	if pp, err = chatml.Prepare(job); err != nil || pp.Grammar == nil || pp.GrammarStart != nil || pp.Stops != nil {
		t.Errorf("JSON: grammar %v, stops %q, err %v; want a grammar and no stop strings", pp.Grammar, pp.Stops, err)
	}

	_, err = NewPipeline(m, PipelineOptions{Context: 256}).Prepare(job)
	var e *api.Error
	if !errors.As(err, &e) || e.Code != api.CodeBadRequest || e.Field != "messages" {
		t.Errorf("messages without a template: %v, want bad_request on messages", err)
	}
	_, err = chatml.Prepare(Job{Prompt: strings.Repeat("once upon a time ", 200), MaxTokens: 4})
	if !errors.Is(err, ErrPromptTooLong) {
		t.Errorf("a prompt longer than the context: %v, want ErrPromptTooLong", err)
	}
}
