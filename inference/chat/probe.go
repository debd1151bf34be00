package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"runtime/debug"
	"strings"
	"time"
)

// ErrTemplateRefused is wrapped by Prober.Check's error for a template that
// did not pass the probe: it ran past the time limit, recursed without end,
// took more memory than allowed, or failed on every probe conversation.
var ErrTemplateRefused = errors.New("chat template refused")

// Defaults of Prober.
const (
	DefaultProbeTimeout = 3 * time.Second
	DefaultProbeMemory  = 256 << 20 // private writable memory: a real template needs a few MiB; a Pi Zero has 512
	// probeMaxStack is the child's goroutine stack limit: deep enough for
	// any real template, small enough that endless recursion ends at once
	// (Go's default of 1 GB takes seconds to fill).
	probeMaxStack = 64 << 20
)

// Prober renders a Jinja chat template over a few ordinary conversations in
// a child process with a time and a memory limit, before the template is
// used in this process. A Jinja template is code inside a downloaded file:
// the engine cannot be interrupted, a Go stack overflow kills the process
// (recover cannot catch it) and so does running out of memory, so a
// template that loops forever, recurses without end or allocates without
// bound must be found where it can only kill the child. The zero Prober is
// not usable: Command must be set.
type Prober struct {
	// Command is the child's command line: a program that calls ProbeChild
	// (edgellm re-executing itself with a hidden subcommand).
	Command []string
	// Env is added to the child's environment.
	Env []string
	// Timeout bounds the child's run; 0 means DefaultProbeTimeout.
	Timeout time.Duration
	// MemoryBytes bounds the child's writable memory (on Linux, its
	// RLIMIT_DATA); 0 means DefaultProbeMemory.
	MemoryBytes uint64
}

// probeRequest is what the parent sends the child on its standard input.
type probeRequest struct {
	Source      string `json:"source"`
	BOS         string `json:"bos"`
	EOS         string `json:"eos"`
	MemoryBytes uint64 `json:"memory_bytes"`
}

// probeReport is what the child writes on its standard output.
type probeReport struct {
	Rendered int    `json:"rendered"` // probe conversations rendered
	Tried    int    `json:"tried"`
	Error    string `json:"error,omitempty"` // the first failure's message
}

// Check probes the template src (with the BOS and EOS texts bos and eos).
// It returns nil when the child rendered at least one probe conversation
// within the limits (a template may refuse some, as one that requires
// tools or alternating roles does), an error wrapping ErrTemplateRefused
// that says why when it did not, and another error when the child could
// not be run.
func (p *Prober) Check(ctx context.Context, src, bos, eos string) error {
	if len(p.Command) == 0 {
		return errors.New("chat: probing a template: no child command")
	}
	timeout, mem := p.Timeout, p.MemoryBytes
	if timeout <= 0 {
		timeout = DefaultProbeTimeout
	}
	if mem == 0 {
		mem = DefaultProbeMemory
	}
	req, err := json.Marshal(probeRequest{Source: src, BOS: bos, EOS: eos, MemoryBytes: mem})
	if err != nil {
		return fmt.Errorf("chat: probing a template: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, p.Command[0], p.Command[1:]...)
	cmd.Env = append(cmd.Environ(), p.Env...)
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr limitedBuffer
	stdout.max, stderr.max = 64<<10, 64<<10
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	took := time.Since(start).Round(time.Millisecond)
	var rep probeReport
	switch {
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) && runErr != nil:
		return fmt.Errorf("%w: it did not finish rendering a short conversation within %v (an endless or huge loop?)", ErrTemplateRefused, timeout)
	case runErr != nil && strings.Contains(stderr.String(), "stack overflow"):
		return fmt.Errorf("%w: it recursed without end (stack overflow after %v)", ErrTemplateRefused, took)
	case runErr != nil && (strings.Contains(stderr.String(), "out of memory") || strings.Contains(stderr.String(), "cannot allocate memory")):
		return fmt.Errorf("%w: it needed more than %d MiB of memory to render a short conversation", ErrTemplateRefused, mem>>20)
	case crashed(runErr):
		// The Go runtime dies of a failed allocation in more than one way
		// (a fatal error, or a fault while it grows its heap): whatever the
		// message, the template took the renderer down.
		return fmt.Errorf("%w: it crashed the renderer (%s); it needs more than the %d MiB of memory or the stack a short conversation may use",
			ErrTemplateRefused, firstLine(stderr.String()), mem>>20)
	case runErr != nil:
		return fmt.Errorf("chat: probing a template: the child failed: %v: %s", runErr, lastLine(stderr.String()))
	case json.Unmarshal(stdout.Bytes(), &rep) != nil:
		return fmt.Errorf("chat: probing a template: the child's report %q is not JSON", lastLine(stdout.String()))
	case rep.Rendered == 0:
		return fmt.Errorf("%w: it failed on every one of %d ordinary conversations: %s", ErrTemplateRefused, rep.Tried, rep.Error)
	}
	return nil
}

// crashed reports whether the child died of a fatal error of the Go
// runtime (exit status 2) or of a signal, rather than reporting an error of
// its own (exit status 1) or not starting.
func crashed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	return ee.ExitCode() == 2 || ee.ExitCode() == -1 // -1: killed by a signal
}

// firstLine returns the first non-empty line of s.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// limitedBuffer keeps the first max bytes written to it and drops the rest.
type limitedBuffer struct {
	bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); room > 0 {
		b.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// probeConversations returns the ordinary conversations a template must be
// able to render (at least one of them): a system prompt, thinking on, tools
// and a tool round trip, a finished exchange without a generation prompt.
func probeConversations() []Input {
	return []Input{
		{Messages: json.RawMessage(`[{"role":"system","content":"You are helpful."},{"role":"user","content":"Hello"}]`), AddGenerationPrompt: true},
		{Messages: json.RawMessage(`[{"role":"user","content":"Hello"}]`), AddGenerationPrompt: true,
			Kwargs: map[string]any{"enable_thinking": true}},
		{Messages: json.RawMessage(`[{"role":"user","content":"Weather in Paris?"},` +
			`{"role":"assistant","content":"","tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":{"city":"Paris"}}}]},` +
			`{"role":"tool","tool_call_id":"call_1","name":"get_weather","content":"sunny"}]`),
			Tools: json.RawMessage(`[{"type":"function","function":{"name":"get_weather","description":"Current weather",` +
				`"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}]`),
			AddGenerationPrompt: true, Kwargs: map[string]any{"enable_thinking": false}},
		{Messages: json.RawMessage(`[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!","reasoning_content":"Greet back."},` +
			`{"role":"user","content":"Bye"},{"role":"assistant","content":"Bye!"}]`)},
	}
}

// ProbeChild is the child's side of Prober.Check: it reads the request
// from stdin, limits its own stack and memory, renders the probe
// conversations and writes its report to stdout. The process should exit
// with status 1 when it returns an error.
func ProbeChild(stdin io.Reader, stdout io.Writer) error {
	var req probeRequest
	if err := json.NewDecoder(stdin).Decode(&req); err != nil {
		return fmt.Errorf("chat: probe child: reading the request: %w", err)
	}
	debug.SetMaxStack(probeMaxStack)
	if req.MemoryBytes > 0 {
		if err := limitMemory(req.MemoryBytes); err != nil {
			return fmt.Errorf("chat: probe child: %w", err)
		}
	}
	convs := probeConversations()
	rep := probeReport{Tried: len(convs)}
	j, err := CompileJinja(req.Source)
	if err != nil {
		rep.Error = err.Error()
	} else {
		for _, in := range convs {
			in.BOS, in.EOS, in.Now = req.BOS, req.EOS, time.Date(2025, 3, 14, 0, 0, 0, 0, time.UTC)
			// The child has its own time limit from the parent; nothing to
			// gain from a second one here.
			if _, err := j.Render(context.Background(), in); err != nil {
				if rep.Error == "" {
					rep.Error = err.Error()
				}
				continue
			}
			rep.Rendered++
		}
	}
	return json.NewEncoder(stdout).Encode(rep)
}
