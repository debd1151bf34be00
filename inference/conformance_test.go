package inference

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// testdataDir is the repository's testdata folder.
const testdataDir = "../testdata"

// referenceIDs reads NAME.ids.txt: the prompt ids and the reference's greedy ids.
func referenceIDs(t testing.TB, name string) (prompt, gen []int32) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir, "reference", name+".ids.txt"))
	if err != nil {
		t.Fatalf("conformance data missing: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		var ids []int32
		for _, f := range fields[1:] {
			v, err := strconv.Atoi(f)
			if err != nil {
				t.Fatalf("%s.ids.txt: %v", name, err)
			}
			ids = append(ids, int32(v))
		}
		switch fields[0] {
		case "prompt_ids":
			prompt = ids
		case "gen_ids":
			gen = ids
		}
	}
	if len(prompt) == 0 || len(gen) == 0 {
		t.Fatalf("%s.ids.txt: missing prompt_ids or gen_ids", name)
	}
	return prompt, gen
}

// referenceLogits reads NAME.logits.f32 as rows of nVocab values.
func referenceLogits(t testing.TB, name string, nVocab int) [][]float32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testdataDir, "reference", name+".logits.f32"))
	if err != nil {
		t.Fatalf("conformance data missing: %v", err)
	}
	if len(b)%(4*nVocab) != 0 {
		t.Fatalf("%s.logits.f32: %d bytes is not a whole number of %d-value rows", name, len(b), nVocab)
	}
	rows := make([][]float32, len(b)/(4*nVocab))
	for i := range rows {
		rows[i] = make([]float32, nVocab)
		for j := range rows[i] {
			rows[i][j] = math.Float32frombits(binary.LittleEndian.Uint32(b[(i*nVocab+j)*4:]))
		}
	}
	return rows
}

// nrmse is sqrt(mean((a-ref)²)) / std(ref).
func nrmse(a, ref []float32) float64 {
	var mean float64
	for _, r := range ref {
		mean += float64(r)
	}
	mean /= float64(len(ref))
	var se, variance float64
	for i := range ref {
		d := float64(a[i]) - float64(ref[i])
		se += d * d
		v := float64(ref[i]) - mean
		variance += v * v
	}
	return math.Sqrt(se/float64(len(ref))) / math.Sqrt(variance/float64(len(ref)))
}

// referenceRun returns the ids the reference fed model name (its prompt,
// then its greedy ids) and its logits after each.
func referenceRun(t testing.TB, m *Model, name string) (ids []int32, ref [][]float32) {
	t.Helper()
	prompt, gen := referenceIDs(t, name)
	ref = referenceLogits(t, name, m.Config.NVocab)
	ids = append(append([]int32{}, prompt...), gen...)
	if len(ref) != len(ids) {
		t.Fatalf("reference has %d rows for %d ids", len(ref), len(ids))
	}
	return ids, ref
}

func loadTestModel(t testing.TB, name string) *Model {
	t.Helper()
	m, err := Load(filepath.Join(testdataDir, "models", name+".gguf"))
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// firstRowTol is the limit for the first row (see TestConformanceLogits).
const firstRowTol = 1e-5

// conformanceModels lists every model with the limit for its rows.
var conformanceModels = []struct {
	name string
	tol  float64
}{
	{"tiny-f32", 0.01},
	{"tiny-f16", 0.01}, {"tiny-bf16", 0.01},
	{"tiny-q4_0", 0.03}, {"tiny-q4_1", 0.03}, {"tiny-q5_0", 0.03}, {"tiny-q5_1", 0.03},
	{"tiny-q8_0", 0.03},
	{"tiny-q2_k", 0.03}, {"tiny-q3_k_s", 0.03}, {"tiny-q4_k_s", 0.03}, {"tiny-q4_k_m", 0.03},
	{"tiny-q5_k_s", 0.03}, {"tiny-q6_k", 0.03},
	{"qwen2-tiny-q8_0", 0.03},
	{"stories260K", 0.01},
	// The new architectures (llama.cpp 3f545be; ../shared/testdata/README.md,
	// "New architectures").
	{"qwen3-tiny-q8_0", 0.03}, {"qwen3-tiny-q4_k_m", 0.03}, {"qwen3-gpt2-q8_0", 0.03},
	// Q4_K: our kernels follow the arithmetic of this build's repacked 8×8
	// Q4_K kernels (per super-block one exact integer sum of the scaled
	// products and one of the minimums, each taken into a scalar chain with
	// one fused multiply-add by d_w·d_a, the minimums subtracted at the end;
	// kernels.dotQ4_KGeneric), not the older build's (c392e50, which made the
	// tiny-* files; those move from 0.013–0.015 to 0.016–0.020, within
	// their 0.03). gemma3-tiny-q4_k_m, at 0.033 with the older arithmetic,
	// is at 0.026 with it: the 0.03.
	{"gemma3-tiny-q8_0", 0.03}, {"gemma3-tiny-q4_k_m", 0.03},
	{"phi3-tiny-q8_0", 0.03}, {"phi3-tiny-q4_k_m", 0.03},
	{"lfm2-tiny-q8_0", 0.03}, {"lfm2-tiny-q4_k_m", 0.03},
	{"smollm3-tiny-q8_0", 0.03}, {"smollm3-tiny-q4_k_m", 0.03},
	// New architectures (2) of the shared test data: the limits,
	// 0.03 per row and firstRowTols on the first.
	{"qwen35-tiny-q8_0", 0.03}, {"qwen35-tiny-q4_k_m", 0.03},
	// gemma4: the 0.05 (its reference moves by 0.03–0.04 under a
	// change of KV precision alone, see the shared README). The q8_0 file
	// matches to < 5e-4 on rows 0–30 but for one (0.010), then 0.019–0.036
	// once attention sums 32 or more positions (the reference's vector
	// order). gemma4-tiny-q4_k_m, whose rows landed at 0.026–0.064 with the
	// older build's Q4_K arithmetic (that difference amplified by this
	// architecture), is at 0.032 worst with the repacked arithmetic (see
	// gemma3-tiny-q4_k_m above); row 0 matches to 1.6e-7.
	{"gemma4-tiny-q8_0", 0.05}, {"gemma4-tiny-q4_k_m", 0.05},
}

// firstRowTols are the first-row limits of the models whose limit is not
// firstRowTol (issue 18's 1e-3 for the new architectures of its section).
var firstRowTols = map[string]float64{"qwen35-tiny-q8_0": 1e-3, "qwen35-tiny-q4_k_m": 1e-3,
	"gemma4-tiny-q8_0": 1e-3, "gemma4-tiny-q4_k_m": 1e-3}

// TestConformanceLogits feeds each model the reference's ids one at a time and
// compares every row of logits with the reference implementation's.
//
// The first row, where attention sees a single position, must agree to 1e-5:
// there every matmul quantizes its input and sums its products exactly as the
// reference's x86 build does. Later rows differ more because the
// reference's exp and sums round differently in places; each such difference
// can flip the rounding of a Q8 activation, so quantized models land around
// 0.01–0.03. Attention rounds the query and the softmax weights to FP16 as
// the reference does, and RoPE rounds as its fused multiply-adds do, which
// makes several files (tiny-q4_0, tiny-q8_0, tiny-q3_k_s, tiny-q6_k,
// qwen2-tiny-q8_0, qwen3-gpt2-q8_0) bit-identical on every row.
func TestConformanceLogits(t *testing.T) {
	for _, tc := range conformanceModels {
		t.Run(tc.name, func(t *testing.T) {
			m := loadTestModel(t, tc.name)
			ids, ref := referenceRun(t, m, tc.name)
			s, err := m.NewState(len(ids), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			worst, first := 0.0, firstRowTol
			if v, ok := firstRowTols[tc.name]; ok {
				first = v
			}
			for i, id := range ids {
				logits, err := s.Forward(id, true)
				if err != nil {
					t.Fatal(err)
				}
				e := nrmse(logits, ref[i])
				worst = max(worst, e)
				if i == 0 && e > first {
					t.Errorf("position 0: nrmse %.3g > %.0e: single-position logits must match the reference closely", e, first)
				}
				if i == 0 {
					t.Logf("position 0: nrmse %.3g", e)
				}
				if e > tc.tol {
					t.Errorf("position %d: nrmse %.5f > %.3f", i, e, tc.tol)
				}
			}
			t.Logf("%s: %d positions, worst nrmse %.6f (limit %.3f)", tc.name, len(ids), worst, tc.tol)
		})
	}
}

// q8KVModels are the testdata models with attention that a Q8_0 KV cache
// runs (stories260K's head dimension, 8, is not a multiple of Q8_0's
// 32-value blocks: TestQ8_0KVRefused), every architecture: llama in each
// weight type, qwen2, qwen3, gemma3 (sliding-window rings), phi3, lfm2,
// smollm3, qwen35 and gemma4 (shared-KV layers).
//
// The reference's logits were computed with an FP16 cache (testdata/
// README.md); against them a Q8_0 cache differs by what storing keys and
// values in 8 bits costs, and on these random-weight models that cost is
// larger than on trained ones: each rounding difference can flip the 8-bit
// rounding of the next matmul's input. ref is what it costs the reference
// itself: llama.cpp 3f545be run on this project's machine (AVX2, 2 threads,
// the ids one at a time, n_ctx 512) with -ctk q8_0 -ctv q8_0 (and flash
// attention, which its quantized V cache needs), the worst row's nrmse
// against its FP16 logits in testdata. On 11 of these 19 files the reference
// is more than 0.03 away itself, and on these models a change of arithmetic
// alone moves the logits by as much (the same build on this AVX2 machine
// against its logits made on AVX-512, FP16 cache both times: 0.015–0.038 on
// 9 of the files). So a file's limit is 0.03, or 1.2 × ref where the
// reference's own Q8_0 cache costs more; edgellm's worst row, the same on
// every kernel tier, is in the comment.
var q8KVModels = []struct {
	name string
	ref  float64 // the reference's own Q8_0-cache nrmse, see above
}{
	{"tiny-f32", 0.0093},            // 0.0080
	{"tiny-f16", 0.0080},            // 0.0083
	{"tiny-q4_0", 0.0220},           // 0.0222
	{"tiny-q8_0", 0.0236},           // 0.0220
	{"tiny-q4_k_m", 0.0317},         // 0.0296
	{"tiny-q6_k", 0.0294},           // 0.0328
	{"qwen2-tiny-q8_0", 0.0186},     // 0.0199
	{"qwen3-tiny-q8_0", 0.0339},     // 0.0337
	{"qwen3-tiny-q4_k_m", 0.0466},   // 0.0505
	{"gemma3-tiny-q8_0", 0.0421},    // 0.0415 (sliding-window rings)
	{"gemma3-tiny-q4_k_m", 0.0548},  // 0.0591
	{"phi3-tiny-q8_0", 0.0370},      // 0.0380
	{"phi3-tiny-q4_k_m", 0.0448},    // 0.0491
	{"lfm2-tiny-q8_0", 0.0262},      // 0.0239
	{"lfm2-tiny-q4_k_m", 0.0350},    // 0.0384
	{"smollm3-tiny-q8_0", 0.0370},   // 0.0306
	{"smollm3-tiny-q4_k_m", 0.0496}, // 0.0495
	{"qwen35-tiny-q8_0", 0.0103},    // 0.0199
	{"gemma4-tiny-q8_0", 0.0858},    // 0.0762
}

// q8KVLimit is the nrmse a Q8_0 cache may reach on a file whose reference
// Q8_0 cache reaches ref (see q8KVModels).
func q8KVLimit(ref float64) float64 { return max(0.03, 1.2*ref) }

// TestConformanceQ8_0KV runs TestConformanceLogits' ids through a Q8_0 KV
// cache, in batches (Eval) as a prompt is prefilled, and requires every row
// within the model's limit (q8KVLimit) of the reference's logits (made with
// an FP16 cache): what storing keys and values in 8 bits costs, no more
// than it costs the reference.
func TestConformanceQ8_0KV(t *testing.T) {
	for _, tc := range q8KVModels {
		name, tol := tc.name, q8KVLimit(tc.ref)
		t.Run(name, func(t *testing.T) {
			m := loadTestModel(t, name)
			ids, ref := referenceRun(t, m, name)
			s, err := m.NewStateKV(len(ids), 0, KVQ8_0)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			worst := 0.0
			err = s.Eval(ids, func(i int, logits []float32) error {
				e := nrmse(logits, ref[i])
				worst = max(worst, e)
				if e > tol {
					t.Errorf("position %d: nrmse %.5f > %.3f", i, e, tol)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: Q8_0 KV, %d positions, worst nrmse %.6f (limit %.3f)", name, len(ids), worst, tol)
		})
	}
}

// TestQ8_0KVRefused: a model whose head dimension is not a multiple of 32
// (stories260K's is 8) cannot store its keys and values in Q8_0 blocks; the
// state is refused with an error that says why, and FP16 still runs.
func TestQ8_0KVRefused(t *testing.T) {
	m := loadTestModel(t, "stories260K")
	if err := m.Config.CheckKVType(KVQ8_0); err == nil {
		t.Fatal("CheckKVType(q8_0) accepted head dimension 8")
	}
	s, err := m.NewStateKV(64, 1, KVQ8_0)
	if err == nil {
		s.Close()
		t.Fatal("NewStateKV(q8_0) accepted head dimension 8")
	}
	if !strings.Contains(err.Error(), "head dimension 8") || !strings.Contains(err.Error(), "q8_0") {
		t.Errorf("error %q does not name the type and the head dimension", err)
	}
	s, err = m.NewStateKV(64, 1, KVF16)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Forward(1, true); err != nil {
		t.Fatal(err)
	}
}
