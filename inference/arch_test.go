package inference

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// newArchModels are the new architectures' test files, one per architecture
// and tensor mix.
var newArchModels = []string{
	"qwen3-tiny-q8_0", "qwen3-tiny-q4_k_m", "gemma3-tiny-q8_0", "gemma3-tiny-q4_k_m",
	"phi3-tiny-q8_0", "phi3-tiny-q4_k_m", "lfm2-tiny-q8_0", "lfm2-tiny-q4_k_m",
	"smollm3-tiny-q8_0", "smollm3-tiny-q4_k_m", "qwen35-tiny-q8_0", "qwen35-tiny-q4_k_m",
	"gemma4-tiny-q8_0", "gemma4-tiny-q4_k_m",
}

// The registry describes each architecture's layers as the reference
// computes them.
func TestArchitectureDescriptions(t *testing.T) {
	for _, tc := range []struct {
		name, summary string
		check         func(c *Config) bool
	}{
		{"qwen3-tiny-q8_0", "3 layers", func(c *Config) bool {
			a := c.Layers[0].Attn
			return a.QKNorm && a.HeadDim == 128 && a.QDim() == 512 && c.Ropes[0].Style == RopeNeox
		}},
		{"gemma3-tiny-q8_0", "7 layers: 6 sliding-window (16), 1 global", func(c *Config) bool {
			local, global := c.Layers[0], c.Layers[5]
			return c.EmbedScale == 16 && local.Attn.Window == 16 && global.Attn.Window == 0 &&
				c.Layers[6].Attn.Window == 16 && local.PostAttnNorm && local.PostFFNNorm && local.FFN.Act == ActGELU &&
				c.Ropes[local.Attn.Rope].Base == 10000 && c.Ropes[local.Attn.Rope].Scale == 1 &&
				c.Ropes[global.Attn.Rope].Base == 1e6 && c.Ropes[global.Attn.Rope].Scale == 0.125
		}},
		{"phi3-tiny-q8_0", "3 layers", func(c *Config) bool {
			r := c.Ropes[0]
			return c.Layers[0].Attn.FusedQKV && c.Layers[0].FFN.FusedUp && r.Dim == 48 && r.OrigCtx == 4096 &&
				len(r.Factors) == 24 && len(r.FactorsLong) == 24 && r.AttnFactor > 1.19 && r.AttnFactor < 1.191
		}},
		{"lfm2-tiny-q8_0", "6 layers: 4 short convolution, 2 attention", func(c *Config) bool {
			return c.Layers[0].Mixer == MixShortConv && c.Layers[0].ConvL == 3 && c.Layers[2].Mixer == MixAttention &&
				c.Layers[2].Attn.NHeadKV == 2 && c.Layers[2].Attn.QKNorm && c.FinalNorm == "token_embd_norm.weight"
		}},
		{"qwen35-tiny-q8_0", "4 layers: 3 Gated DeltaNet, 1 gated attention", func(c *Config) bool {
			d, a, r := c.Layers[0].Delta, c.Layers[3].Attn, c.Ropes[0]
			return c.Layers[0].Mixer == MixDeltaNet && c.Layers[2].Mixer == MixDeltaNet && c.Layers[3].Mixer == MixAttention &&
				d == DeltaSpec{NKHead: 2, NVHead: 4, StateDim: 64, ConvL: 4} && d.ConvDim() == 512 &&
				a.OutGate && a.QKNorm && a.NHead == 4 && a.NHeadKV == 2 && a.HeadDim == 64 &&
				r.Style == RopeNeox && r.Dim == 16 && r.Base == 1e7 && c.Layers[1].FFNNorm == "post_attention_norm"
		}},
		{"gemma4-tiny-q8_0", "10 layers: 8 sliding-window (16), 2 global, 5 reading an earlier layer's KV cache", func(c *Config) bool {
			local, global, full := c.Layers[0].Attn, c.Layers[4].Attn, c.Ropes[0]
			swa := c.Ropes[local.Rope]
			kvFrom := []int{0, 1, 2, 3, 4, 3, 3, 3, 3, 4}
			for i, l := range c.Layers {
				if l.Attn.KVLayer != kvFrom[i] || !l.PerLayerInput || !l.OutScale || !l.PostAttnNorm || !l.PostFFNNorm ||
					l.FFN.Act != ActGELU || !l.Attn.VNorm || l.Attn.Scale != 1 || l.Attn.QScale != 1 {
					return false
				}
			}
			return c.EmbedScale == 16 && c.PerLayerDim == 32 && c.FinalSoftcap == 30 &&
				local.Window == 16 && local.HeadDim == 64 && global.Window == 0 && global.HeadDim == 128 &&
				c.Layers[9].Attn.HeadDim == 128 && c.Layers[5].FFN.NFF == 256 && c.Layers[4].FFN.NFF == 128 &&
				swa.Base == 1e4 && swa.Dim == 64 && full.Base == 1e6 && full.Dim == 128 && len(full.Factors) == 64 &&
				full.Factors[15] == 1 && full.Factors[16] > 1e29
		}},
		{"smollm3-tiny-q8_0", "4 layers: 1 without RoPE", func(c *Config) bool {
			return c.Layers[3].Attn.Rope < 0 && c.Layers[2].Attn.Rope == 0 && c.Ropes[0].Style == RopeNorm
		}},
	} {
		m := loadTestModel(t, tc.name)
		if got := m.Config.Summary(); got != tc.summary {
			t.Errorf("%s: summary %q, want %q", tc.name, got, tc.summary)
		}
		if !tc.check(&m.Config) {
			t.Errorf("%s: layers described as %+v, ropes %+v", tc.name, m.Config.Layers, m.Config.Ropes)
		}
	}
}

// Gemma 3's sliding-window layers keep a ring of window + batch positions:
// over a prompt several times the window (and the ring) long, in batches and
// token by token, the logits are those of full caches masked to the window,
// and the ring layers take a fraction of the memory.
func TestSlidingWindowRing(t *testing.T) {
	m := loadTestModel(t, "gemma3-tiny-q8_0")
	const ctx = 256
	ring, err := m.NewState(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer ring.Close()
	full, err := m.NewState(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer full.Close()
	rings := 0
	for i := range full.caches {
		spec := full.caches[i].spec
		if spec.Ring(ctx) {
			rings++
			spec.Rows = ctx // the whole context, still masked to the window
			full.caches[i] = newLayerCache(spec)
		}
	}
	if rings != 6 {
		t.Fatalf("%d ring layers, want 6", rings)
	}
	if got, want := m.Config.CacheBytes(ctx, KVF16), int64(ctx)*7*256*4; got >= want/2 {
		t.Errorf("cache of %d bytes, full caches take %d", got, want)
	}
	ids := testIDs(t, "gemma3-tiny-q8_0", m.Config.NVocab, 150)
	// 100 tokens in batches, then one at a time.
	a, err := ring.Prefill(context.Background(), ids[:100], true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := full.Prefill(context.Background(), ids[:100], true)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "prefill of 100 tokens, ring vs full", a, b)
	for _, id := range ids[100:] {
		a, err = ring.Forward(id, true)
		if err != nil {
			t.Fatal(err)
		}
		b, err = full.Forward(id, true)
		if err != nil {
			t.Fatal(err)
		}
		sameBits(t, "forward, ring vs full", a, b)
	}
	// The window matters: without it (every layer global), the logits differ.
	noWindow, err := m.NewState(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer noWindow.Close()
	saved := slices.Clone(m.Config.Layers)
	for i := range m.Config.Layers {
		m.Config.Layers[i].Attn.Window = 0
	}
	c, err := noWindow.Prefill(context.Background(), ids, true)
	copy(m.Config.Layers, saved)
	if err != nil {
		t.Fatal(err)
	}
	if nrmse(c, a) < 1e-3 {
		t.Errorf("logits without the window are those with it (nrmse %g)", nrmse(c, a))
	}
}

// Phi-3's LongRoPE takes the short factors up to
// rope.scaling.original_context_length (4096 here) and the long ones above,
// as the reference chooses by the context: the short ones reproduce the
// reference (made at context 512), the long ones give other logits.
func TestLongRopeFactorsAtTheBoundary(t *testing.T) {
	m := loadTestModel(t, "phi3-tiny-q8_0")
	r := &m.Config.Ropes[0]
	prompt, _ := referenceIDs(t, "phi3-tiny-q8_0")
	ref := referenceLogits(t, "phi3-tiny-q8_0", m.Config.NVocab)
	last := map[int][]float32{}
	for _, tc := range []struct {
		ctx  int
		want []float32
	}{{4096, r.Factors}, {4097, r.FactorsLong}} {
		s, err := m.NewState(tc.ctx, 2)
		if err != nil {
			t.Fatal(err)
		}
		if &s.rope[0].factors[0] != &tc.want[0] {
			t.Errorf("context %d: the other factors", tc.ctx)
		}
		logits, err := s.Prefill(context.Background(), prompt, true)
		if err != nil {
			t.Fatal(err)
		}
		last[tc.ctx] = slices.Clone(logits)
		s.Close()
	}
	if e := nrmse(last[4096], ref[len(prompt)-1]); e > 0.03 {
		t.Errorf("context 4096 (short factors): nrmse %g against the reference", e)
	}
	if e := nrmse(last[4097], ref[len(prompt)-1]); e < 0.05 {
		t.Errorf("context 4097 (long factors): nrmse %g, as close as the short factors", e)
	}
}

// For every new architecture, the prefix cache and the prompt cache file
// give the greedy outputs of a fresh state: for a prompt extending a kept one
// (reused), and for one sharing only part of it (reused where the layers can
// rewind: full KV caches; prefilled again where a ring or a convolution state
// cannot).
func TestCachesKeepOutputsNewArchitectures(t *testing.T) {
	for _, name := range newArchModels {
		t.Run(name, func(t *testing.T) {
			_, s, g := newTestState(t, name+".gguf")
			_, _, fresh := newTestState(t, name+".gguf")
			rewinds := true
			for _, spec := range s.m.Config.CacheSpecs(s.Ctx(), s.KVType()) {
				rewinds = rewinds && (spec.Kind == CacheKV && spec.Window == 0 || spec.Kind == CacheNone)
			}
			base := cachePrompt(5, 60)
			longer := append(slices.Clone(base), 11, 12, 13, 14)
			branch := append(slices.Clone(base[:40]), 21, 22, 23)
			pc := NewPrefixCache(1 << 30)
			want := func(prompt []int32) []int32 {
				greedyText(t, fresh, prompt)
				return slices.Clone(fresh.Tokens())
			}
			run := func(prompt []int32) Result {
				if toks := pc.Restore(s, prompt, g.Tokens()); toks != nil {
					g.Adopt(toks)
				}
				res, err := g.Generate(context.Background(), prompt, GenerateOptions{MaxTokens: 20, Sampling: greedy(),
					ReusePrefix: true, OnPrefilled: func() { pc.Store(s, prompt) }})
				if err != nil {
					t.Fatal(err)
				}
				if got, w := g.Tokens(), want(prompt); !slices.Equal(got, w) {
					t.Fatalf("prompt of %d: with the prefix cache %v, fresh %v", len(prompt), got, w)
				}
				return res
			}
			run(base)
			if res := run(longer); res.CachedTokens != len(base) {
				t.Errorf("longer prompt: %d tokens reused, want %d", res.CachedTokens, len(base))
			}
			res := run(branch)
			if rewinds && res.CachedTokens != 40 || !rewinds && res.CachedTokens != 0 {
				t.Errorf("branching prompt: %d tokens reused (layers rewind: %v)", res.CachedTokens, rewinds)
			}

			// The prompt cache file: saved after a generation, loaded into a
			// new state, it serves a longer prompt.
			path := filepath.Join(t.TempDir(), "prompt.kv")
			greedyText(t, g, base)
			if err := s.SaveCache(path, g.Tokens()); err != nil {
				t.Fatal(err)
			}
			saved := slices.Clone(g.Tokens())
			_, s2, g2 := newTestState(t, name+".gguf")
			toks, err := s2.LoadCache(path)
			if err != nil {
				t.Fatal(err)
			}
			g2.Adopt(toks)
			next := append(slices.Clone(saved), 31, 32)
			_, res = greedyText(t, g2, next)
			if got, w := g2.Tokens(), want(next); !slices.Equal(got, w) {
				t.Fatalf("from the prompt cache file %v, fresh %v", got, w)
			}
			if res.CachedTokens != len(saved) {
				t.Errorf("from the prompt cache file: %d tokens reused, want %d", res.CachedTokens, len(saved))
			}
			// A loaded state holds only what its position needs: going back
			// a few tokens is reuse for full caches and a fresh prefill for
			// rings and convolution states, with the same outputs.
			_, s3, g3 := newTestState(t, name+".gguf")
			if toks, err = s3.LoadCache(path); err != nil {
				t.Fatal(err)
			}
			g3.Adopt(toks)
			if s3.CanRewind(len(saved)-2) != rewinds {
				t.Errorf("after loading, CanRewind(%d) = %v", len(saved)-2, !rewinds)
			}
			back := saved[:len(saved)-2]
			greedyText(t, g3, back)
			if got, w := g3.Tokens(), want(back); !slices.Equal(got, w) {
				t.Fatalf("back from the prompt cache file %v, fresh %v", got, w)
			}
		})
	}
}
