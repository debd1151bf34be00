package chat

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// probeChildEnv makes the test binary the probe's child (TestMain).
const probeChildEnv = "EDGELLM_CHAT_PROBE_CHILD"

// TestMain lets the test binary serve as Prober's child: re-executed with
// probeChildEnv set, it runs ProbeChild instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv(probeChildEnv) == "1" {
		if err := ProbeChild(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testProber re-executes the test binary as the child.
func testProber() *Prober {
	return &Prober{Command: []string{os.Args[0]}, Env: []string{probeChildEnv + "=1"}}
}

// Hostile templates are refused within seconds, each for its reason, and
// this process survives them all.
func TestProbeRefusesHostileTemplates(t *testing.T) {
	p := testProber()
	// Any limit may stop a template first: the engine builds range() lists
	// and macro scopes on the heap as it goes, and on a busy machine the
	// time limit may come before the memory or the stack is used up.
	const memory = "more than 256 MiB"     // the runtime said out of memory
	const crashed = "crashed the renderer" // or died otherwise in the attempt
	const slow = "did not finish"
	for _, c := range []struct{ name, src, why, or string }{
		{"a 10^10-step loop", "{% for i in range(10**10) %}x{% endfor %}", "did not finish", memory},
		{"a 10^12-step loop over small lists", "{% for i in range(10**6) %}{% for j in range(10**6) %}{% endfor %}{% endfor %}", "did not finish", memory},
		{"a recursive macro", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "recursed without end", memory},
		{"'x' * 10**10", "{{ 'x' * 10**10 }}", "failed on every one", "failed on every one"},
		{"a string doubled 40 times", "{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
			memory, memory},
		{"a syntax error", "{% if %}", "failed on every one", "failed on every one"},
	} {
		start := time.Now()
		err := p.Check(context.Background(), c.src, "<s>", "</s>")
		took := time.Since(start)
		hostile := c.why != "failed on every one" // the others exhaust a limit
		if !errors.Is(err, ErrTemplateRefused) || !strings.Contains(err.Error(), c.why) && !strings.Contains(err.Error(), c.or) &&
			!(hostile && (strings.Contains(err.Error(), slow) || strings.Contains(err.Error(), crashed))) {
			t.Errorf("%s: %v, want a refusal saying %q or %q", c.name, err, c.why, c.or)
		}
		if took > DefaultProbeTimeout+5*time.Second {
			t.Errorf("%s: refused after %v", c.name, took)
		}
		t.Logf("%s: %v (%v)", c.name, err, took.Round(time.Millisecond))
	}
}

// Every published template of testdata passes the probe.
func TestProbePassesRealTemplates(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "templates", "*.jinja"))
	if err != nil || len(files) < 10 {
		t.Fatalf("templates: %v, %v", files, err)
	}
	p := testProber()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Check(context.Background(), string(src), "<s>", "</s>"); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
	if err := (&Prober{}).Check(context.Background(), "x", "", ""); err == nil || errors.Is(err, ErrTemplateRefused) {
		t.Errorf("no command: %v", err)
	}
}

// A child that the Go runtime takes down (exit status 2) or a signal kills
// refuses the template; one that reports an error of its own (status 1) is
// a failure of the probe, not a verdict on the template.
func TestProbeCrashIsARefusal(t *testing.T) {
	for _, c := range []struct {
		script  string
		refused bool
		says    string
	}{
		{"echo 'unexpected fault address 0x0' >&2; echo 'gs 0x0' >&2; exit 2", true, "crashed the renderer (unexpected fault address 0x0)"},
		{"kill -SEGV $$", true, "crashed the renderer"},
		{"echo 'cannot read the request' >&2; exit 1", false, "the child failed: exit status 1: cannot read the request"},
	} {
		p := &Prober{Command: []string{"/bin/sh", "-c", c.script}}
		err := p.Check(context.Background(), "{{ 'x' }}", "", "")
		if err == nil || errors.Is(err, ErrTemplateRefused) != c.refused || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%q: %v, want refused=%v saying %q", c.script, err, c.refused, c.says)
		}
	}
}
