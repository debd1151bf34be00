package inference

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/kernels"
)

// naiveModel is a float64 reference forward pass written as plainly as
// possible: full attention with a score array, no KV cache tricks.
type naiveModel struct {
	nEmbd, nHead, nKV, hd, nFF, nVocab, nLayer int
	w                                          map[string][]float64
	eps, base                                  float64
	neox                                       bool
}

func (n *naiveModel) matvec(name string, x []float64, rows int) []float64 {
	w := n.w[name]
	out := make([]float64, rows)
	for r := range out {
		for c, v := range x {
			out[r] += w[r*len(x)+c] * v
		}
	}
	return out
}

func (n *naiveModel) norm(x []float64, name string) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	s := 1 / math.Sqrt(ss/float64(len(x))+n.eps)
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * s * n.w[name][i]
	}
	return out
}

func (n *naiveModel) rope(x []float64, heads, pos int) {
	for h := 0; h < heads; h++ {
		v := x[h*n.hd : (h+1)*n.hd]
		for i := 0; i < n.hd/2; i++ {
			th := float64(pos) * math.Pow(n.base, -2*float64(i)/float64(n.hd))
			a, b := 2*i, 2*i+1
			if n.neox {
				a, b = i, i+n.hd/2
			}
			x0, x1 := v[a], v[b]
			v[a] = x0*math.Cos(th) - x1*math.Sin(th)
			v[b] = x0*math.Sin(th) + x1*math.Cos(th)
		}
	}
}

// logits returns the logits after each of ids.
func (n *naiveModel) logits(ids []int32) [][]float64 {
	type kv struct{ k, v [][]float64 }
	cache := make([]kv, n.nLayer)
	var out [][]float64
	for pos, id := range ids {
		x := append([]float64(nil), n.w["token_embd.weight"][int(id)*n.nEmbd:(int(id)+1)*n.nEmbd]...)
		for l := 0; l < n.nLayer; l++ {
			p := "blk." + string(rune('0'+l)) + "."
			h := n.norm(x, p+"attn_norm.weight")
			q := n.matvec(p+"attn_q.weight", h, n.nHead*n.hd)
			k := n.matvec(p+"attn_k.weight", h, n.nKV*n.hd)
			v := n.matvec(p+"attn_v.weight", h, n.nKV*n.hd)
			n.rope(q, n.nHead, pos)
			n.rope(k, n.nKV, pos)
			// The KV cache is FP16 by design, and attention multiplies the
			// keys with the query rounded to FP16 (as the reference does):
			// round as they do.
			for i := range k {
				k[i] = float64(kernels.FP16ToFP32(kernels.FP32ToFP16(float32(k[i]))))
				v[i] = float64(kernels.FP16ToFP32(kernels.FP32ToFP16(float32(v[i]))))
			}
			for i := range q {
				q[i] = float64(kernels.FP16ToFP32(kernels.FP32ToFP16(float32(q[i]))))
			}
			cache[l].k = append(cache[l].k, k)
			cache[l].v = append(cache[l].v, v)
			att := make([]float64, n.nHead*n.hd)
			for hh := 0; hh < n.nHead; hh++ {
				kvh := hh / (n.nHead / n.nKV)
				scores := make([]float64, pos+1)
				mx := math.Inf(-1)
				for t := 0; t <= pos; t++ {
					for d := 0; d < n.hd; d++ {
						scores[t] += q[hh*n.hd+d] * cache[l].k[t][kvh*n.hd+d]
					}
					scores[t] /= math.Sqrt(float64(n.hd))
					mx = math.Max(mx, scores[t])
				}
				var sum float64
				for t := range scores {
					scores[t] = math.Exp(scores[t] - mx)
					sum += scores[t]
				}
				for t := range scores {
					// The softmax weights go to FP16, as in the reference.
					w := float64(kernels.FP16ToFP32(kernels.FP32ToFP16(float32(scores[t] / sum))))
					for d := 0; d < n.hd; d++ {
						att[hh*n.hd+d] += w * cache[l].v[t][kvh*n.hd+d]
					}
				}
			}
			o := n.matvec(p+"attn_output.weight", att, n.nEmbd)
			for i := range x {
				x[i] += o[i]
			}
			h = n.norm(x, p+"ffn_norm.weight")
			g := n.matvec(p+"ffn_gate.weight", h, n.nFF)
			u := n.matvec(p+"ffn_up.weight", h, n.nFF)
			for i := range g {
				g[i] = g[i] / (1 + math.Exp(-g[i])) * u[i]
			}
			d := n.matvec(p+"ffn_down.weight", g, n.nEmbd)
			for i := range x {
				x[i] += d[i]
			}
		}
		out = append(out, n.matvec("output.weight", n.norm(x, "output_norm.weight"), n.nVocab))
	}
	return out
}

// buildNaive writes a random F32 llama model with the given head layout and
// returns its path and the same weights for the naive reference.
func buildNaive(t *testing.T, nHead, nKV, hd int) (string, *naiveModel) {
	n := &naiveModel{nEmbd: nHead * hd, nHead: nHead, nKV: nKV, hd: hd, nFF: 64, nVocab: 64, nLayer: 2,
		w: map[string][]float64{}, eps: 1e-5, base: 10000}
	r := rand.New(rand.NewPCG(uint64(nHead), uint64(nKV)))
	b := gguf.NewBuilder()
	kvs := []gguf.KV{
		{Key: "general.architecture", Value: "llama"},
		{Key: "llama.context_length", Value: uint32(64)},
		{Key: "llama.embedding_length", Value: uint32(n.nEmbd)},
		{Key: "llama.block_count", Value: uint32(n.nLayer)},
		{Key: "llama.feed_forward_length", Value: uint32(n.nFF)},
		{Key: "llama.attention.head_count", Value: uint32(nHead)},
		{Key: "llama.attention.head_count_kv", Value: uint32(nKV)},
		{Key: "llama.attention.layer_norm_rms_epsilon", Value: float32(n.eps)},
		{Key: "llama.rope.freq_base", Value: float32(n.base)},
		{Key: "tokenizer.ggml.model", Value: "llama"},
	}
	tokens := make([]string, n.nVocab)
	for i := range tokens {
		tokens[i] = string(rune('a'+i%26)) + string(rune('A'+i/26))
	}
	kvs = append(kvs, gguf.KV{Key: "tokenizer.ggml.tokens", Value: tokens})
	for _, kv := range kvs {
		if err := b.AddKV(kv.Key, kv.Value); err != nil {
			t.Fatal(err)
		}
	}
	add := func(name string, dims ...uint64) {
		cnt := 1
		for _, d := range dims {
			cnt *= int(d)
		}
		w := make([]float64, cnt)
		data := make([]byte, 4*cnt)
		for i := range w {
			v := float32(r.NormFloat64() * 0.3)
			if len(dims) == 1 {
				v = float32(1 + r.NormFloat64()*0.1)
			}
			w[i] = float64(v)
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(v))
		}
		n.w[name] = w
		if err := b.AddTensor(name, kernels.F32, dims, data); err != nil {
			t.Fatal(err)
		}
	}
	e, q, kv, ff, voc := uint64(n.nEmbd), uint64(nHead*hd), uint64(nKV*hd), uint64(n.nFF), uint64(n.nVocab)
	add("token_embd.weight", e, voc)
	for l := 0; l < n.nLayer; l++ {
		p := "blk." + string(rune('0'+l)) + "."
		add(p+"attn_norm.weight", e)
		add(p+"attn_q.weight", e, q)
		add(p+"attn_k.weight", e, kv)
		add(p+"attn_v.weight", e, kv)
		add(p+"attn_output.weight", q, e)
		add(p+"ffn_norm.weight", e)
		add(p+"ffn_gate.weight", e, ff)
		add(p+"ffn_up.weight", e, ff)
		add(p+"ffn_down.weight", ff, e)
	}
	add("output_norm.weight", e)
	add("output.weight", e, voc)
	path := filepath.Join(t.TempDir(), "naive.gguf")
	if err := gguf.WriteFile(path, b); err != nil {
		t.Fatal(err)
	}
	return path, n
}

// TestHeadLayouts compares the engine with the naive float64 reference for
// multi-head, grouped-query (including 15/5, SmolLM's ratio) and multi-query
// attention, over enough positions that the online softmax rescales.
func TestHeadLayouts(t *testing.T) {
	for _, c := range []struct{ heads, kv, hd int }{{4, 4, 16}, {15, 5, 8}, {8, 2, 16}, {6, 1, 16}} {
		path, ref := buildNaive(t, c.heads, c.kv, c.hd)
		m, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		s, err := m.NewState(32, 2)
		if err != nil {
			t.Fatal(err)
		}
		ids := []int32{1, 5, 9, 33, 2, 60, 7, 7, 18, 40, 3, 11}
		want := ref.logits(ids)
		for i, id := range ids {
			got, err := s.Forward(id, true)
			if err != nil {
				t.Fatal(err)
			}
			g := make([]float32, len(got))
			w := make([]float32, len(got))
			for j := range got {
				g[j], w[j] = got[j], float32(want[i][j])
			}
			// Both round K/V, Q and the softmax weights to FP16; what is left
			// is float32 rounding.
			if e := nrmse(g, w); e > 1e-3 {
				t.Errorf("%d/%d heads, position %d: nrmse %.2g", c.heads, c.kv, i, e)
			}
		}
		s.Close()
		m.Close()
	}
}
