package grammar_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/inference/grammar"
	"github.com/edgellm/edgellm/inference/sampler"
)

// Generations of TestModelGenerations, of each kind.
const generationsPerKind = 1000

// testModel is a model of testdata with its vocabulary index.
type testModel struct {
	name  string
	model *inference.Model
	vocab *grammar.Vocab
	// maxBudget bounds the token budgets of the model's generations.
	maxBudget int
}

// Every model of testdata takes part in the property test, but the forward
// pass of some costs 100 times that of stories260K (up to 10 ms a token), so
// most generations go to the fast models that cover both kinds of
// vocabulary: stories260K and tiny-q8_0 (SentencePiece, 512 tokens) and
// qwen2-tiny-q8_0 (byte-level BPE, 50257 tokens).
const (
	perModel    = 4   // generations of each kind on every model
	qwenExtra   = 76  // more on qwen2-tiny-q8_0
	tinyExtra   = 200 // more on tiny-q8_0; the rest go to stories260K
	otherBudget = 64  // largest budget but on stories260K and tiny-q8_0
)

// TestModelGenerations runs 1000 generations constrained to any JSON and
// 1000 constrained to assorted schemas, spread over every model of testdata,
// with random sampling settings (temperature 0.2 to 1.5) and token budgets
// (8 to 256), and checks that every output parses with encoding/json and
// validates against its schema.
func TestModelGenerations(t *testing.T) {
	models := loadTestModels(t)
	schemas := append([]string{""}, testSchemas(t)...) // "" is JSON mode
	grammars := make([]*grammar.Grammar, len(schemas))
	for i, s := range schemas {
		grammars[i] = compile(t, s)
	}
	var jobs []genJob
	for kind := range 2 {
		for i, m := range models.plan(generationsPerKind, perModel, qwenExtra, tinyExtra) {
			schema := 0 // JSON mode
			if kind == 1 {
				schema = 1 + i%(len(schemas)-1)
			}
			jobs = append(jobs, genJob{model: m, grammar: schema, seed: uint64(len(jobs))})
		}
	}
	runJobs(t, jobs, grammars, func(j genJob, out []byte) error { return checkOutput(schemas[j.grammar], out) })
}

// testModels are the models of testdata, by name too.
type testModels struct {
	all    []*testModel
	byName map[string]*testModel
}

// loadTestModels loads every model of testdata with its vocabulary index.
func loadTestModels(t *testing.T) testModels {
	t.Helper()
	paths, err := filepath.Glob("../../testdata/models/*.gguf")
	if err != nil {
		t.Fatal(err)
	}
	ms := testModels{byName: map[string]*testModel{}}
	for _, p := range paths {
		m := loadModel(t, p)
		tm := &testModel{name: strings.TrimSuffix(filepath.Base(p), ".gguf"), model: m,
			vocab: grammar.NewVocab(m.Tokenizer), maxBudget: otherBudget}
		ms.all = append(ms.all, tm)
		ms.byName[tm.name] = tm
	}
	for _, name := range []string{"tiny-q8_0", "stories260K", "qwen2-tiny-q8_0"} {
		if ms.byName[name] == nil {
			t.Fatalf("testdata/models/%s.gguf is missing", name)
		}
	}
	ms.byName["tiny-q8_0"].maxBudget = 256
	ms.byName["stories260K"].maxBudget = 256
	return ms
}

// plan returns the models of n generations: each on every model, qwen
// more on qwen2-tiny-q8_0, tiny more on tiny-q8_0 and the rest on
// stories260K.
func (ms testModels) plan(n, each, qwen, tiny int) []*testModel {
	var plan []*testModel
	for _, m := range ms.all {
		for range each {
			plan = append(plan, m)
		}
	}
	for range qwen {
		plan = append(plan, ms.byName["qwen2-tiny-q8_0"])
	}
	for range tiny {
		plan = append(plan, ms.byName["tiny-q8_0"])
	}
	for len(plan) < n {
		plan = append(plan, ms.byName["stories260K"])
	}
	return plan[:n]
}

// genJob is one generation of a property test: on model, constrained by
// the grammar of that index, with settings drawn from seed.
type genJob struct {
	model   *testModel
	grammar int
	seed    uint64
	budget  int // when positive, bounds the token budget below the model's maxBudget
}

// runJobs runs jobs on every CPU and checks each output with check,
// reporting the first ten failures and each model's statistics.
func runJobs(t *testing.T, jobs []genJob, grammars []*grammar.Grammar, check func(j genJob, out []byte) error) {
	t.Helper()
	var (
		next     atomic.Int64
		mu       sync.Mutex
		failures int
		stats    = map[string]*genStats{}
		wg       sync.WaitGroup
	)
	start := time.Now()
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := newWorker(grammars)
			defer w.close()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				j := jobs[i]
				res, err := w.run(j.model, j.grammar, j.seed, j.budget)
				if err == nil {
					err = check(j, res.out)
				}
				mu.Lock()
				if err != nil {
					if failures++; failures <= 10 {
						t.Errorf("%s, grammar %d, seed %d: %q: %v", j.model.name, j.grammar, j.seed, res.out, err)
					}
				}
				statsFor(stats, j.model.name).add(res)
				if testing.Verbose() && j.seed%97 == 0 {
					t.Logf("%s, grammar %d, %d tokens: %s", j.model.name, j.grammar, res.tokens, res.out)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	t.Logf("%d generations in %v", len(jobs), time.Since(start).Round(time.Millisecond))
	names := make([]string, 0, len(stats))
	for n := range stats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		t.Logf("%-16s %v", n, stats[n])
	}
}

// worker runs generations, with a state and matchers per model.
type worker struct {
	grammars []*grammar.Grammar
	states   map[*testModel]*inference.State
	matchers map[*testModel][]*grammar.Matcher
}

func newWorker(grammars []*grammar.Grammar) *worker {
	return &worker{grammars: grammars, states: map[*testModel]*inference.State{},
		matchers: map[*testModel][]*grammar.Matcher{}}
}

func (w *worker) close() {
	for _, st := range w.states {
		st.Close()
	}
}

// run generates once from the model's BOS token with grammar gi, sampling
// settings and budget drawn from seed, the budget at most maxBudget when it
// is positive.
func (w *worker) run(tm *testModel, gi int, seed uint64, maxBudget int) (genResult, error) {
	st := w.states[tm]
	if st == nil {
		var err error
		if st, err = tm.model.NewState(300, 1); err != nil {
			return genResult{}, err
		}
		w.states[tm] = st
		w.matchers[tm] = make([]*grammar.Matcher, len(w.grammars))
	}
	m := w.matchers[tm][gi]
	if m == nil {
		var err error
		if m, err = w.grammars[gi].NewMatcher(tm.vocab); err != nil {
			return genResult{}, err
		}
		w.matchers[tm][gi] = m
	}
	r := rand.New(rand.NewPCG(seed, 7))
	tok := tm.model.Tokenizer
	smp, err := sampler.New(randomParams(r, seed), tok.NumTokens())
	if err != nil {
		return genResult{}, err
	}
	m.Reset()
	limit := tm.maxBudget
	if maxBudget > 0 {
		limit = min(limit, maxBudget)
	}
	budget := min(randomBudget(r, m.CloseCost()), max(limit, m.CloseCost()))
	st.Reset()
	bos := max(tok.BOS(), 0)
	first, err := st.Forward(bos, true)
	if err != nil {
		return genResult{}, err
	}
	return constrained(m, tok, smp, budget, first, func(id int32) ([]float32, error) { return st.Forward(id, true) })
}

// genStats sums up the generations of a model.
type genStats struct {
	n, tokens, maxTokens, tight int
	ends                        map[string]int
}

func statsFor(m map[string]*genStats, name string) *genStats {
	if m[name] == nil {
		m[name] = &genStats{ends: map[string]int{}}
	}
	return m[name]
}

func (s *genStats) add(r genResult) {
	s.n++
	s.tokens += r.tokens
	s.maxTokens = max(s.maxTokens, r.tokens)
	s.ends[r.end]++
	if r.tight {
		s.tight++
	}
}

func (s *genStats) String() string {
	return fmt.Sprintf("%4d generations, %5.1f tokens on average (max %d), ended by: done %d, eog %d, budget %d; closing forced in %d",
		s.n, float64(s.tokens)/math.Max(1, float64(s.n)), s.maxTokens, s.ends["done"], s.ends["eog"], s.ends["budget"], s.tight)
}
