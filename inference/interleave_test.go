package inference

import (
	"math"
	"testing"

	"github.com/edgellm/edgellm/kernels"
)

// TestInterleaveKeepsLogits interleaves the Q4_0 and Q4_K matrices of
// models of each kind and checks that the logits are the same bits as with
// the file's layout, after a batched prefill and then token by token, and
// that decoding allocates nothing; which matrices were interleaved (those
// of the layers where the CPU has the kernels, never the token embeddings
// read by rows); and that a second Interleave copies nothing.
func TestInterleaveKeepsLogits(t *testing.T) {
	for _, name := range []string{"tiny-q4_0", "tiny-q4_k_m", "qwen3-tiny-q4_k_m", "gemma3-tiny-q4_k_m", "lfm2-tiny-q4_k_m"} {
		t.Run(name, func(t *testing.T) { testInterleave(t, "../testdata/models/"+name+".gguf") })
	}
}

func testInterleave(t *testing.T, path string) {
	plain, x8 := loadRewritten(t, path), loadRewritten(t, path)
	want, file := x8.InterleaveBytes()
	n, err := x8.Interleave()
	if err != nil {
		t.Fatal(err)
	}
	if n != want || (n > 0) != kernels.Interleaves(kernels.Q4_0) || file > n {
		t.Fatalf("Interleave copied %d bytes, InterleaveBytes said %d (of %d in the file; kernels for interleaved rows: %v)", n, want, file, kernels.Interleaves(kernels.Q4_0))
	}
	if n > 0 {
		for l := range x8.Layers {
			for i, w := range x8.Layers[l].Matrices() {
				p := plain.Layers[l].Matrices()[i]
				if it := kernels.Interleaved(p.Type); it != 0 && p.Rows%8 == 0 && w.Type != it {
					t.Errorf("layer %d: %s is %v, not %v", l, w.Name, w.Type, it)
				}
			}
		}
	}
	if x8.Embed.Type != plain.Embed.Type {
		t.Errorf("token embeddings are %v", x8.Embed.Type)
	}
	if again, err := x8.Interleave(); again != 0 || err != nil {
		t.Errorf("a second Interleave copied %d bytes (%v)", again, err)
	}

	prompt := make([]int32, 40)
	for i := range prompt {
		prompt[i] = int32(1 + i*37%500)
	}
	states := [2]*State{}
	for i, m := range []*Model{plain, x8} {
		s, err := m.NewState(64, 2)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		states[i] = s
	}
	same := func(step string, a, b []float32) {
		t.Helper()
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				t.Fatalf("%s: logit %d is %v interleaved, %v from the file's layout", step, i, b[i], a[i])
			}
		}
	}
	a := prefillLogits(t, plain, prompt)
	same("prefill", a, prefillLogits(t, x8, prompt))
	for i, tok := range prompt[:8] {
		la, err := states[0].Forward(tok, true)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := states[1].Forward(tok, true)
		if err != nil {
			t.Fatal(err)
		}
		same("token "+string(rune('0'+i)), la, lb)
	}
	tok := int32(2)
	if allocs := testing.AllocsPerRun(5, func() {
		if _, err := states[1].Forward(tok, true); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("%v allocations per decoded token interleaved", allocs)
	}
}
