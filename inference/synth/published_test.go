package synth

import (
	"strings"
	"testing"

	hub "github.com/edgellm/edgellm/inference/models"
	"github.com/edgellm/edgellm/kernels"
)

// The Q4_K_M and Q8_0 files a repository publishes of one model come from one
// conversion and carry the same metadata, so their headers have the same
// length and their sizes differ by exactly the difference of their tensor
// data. With the pull catalogue's published sizes, that checks synth's type
// of every tensor of those models in both types, to the byte.
//
// The exception proves the rule: unsloth's Phi-4-mini files were quantized
// before llama.cpp 1dab5f5 (March 2026) gave phi3's fused attn_qkv the attn_v
// rule (Q6_K in the layers that get more bits, Q4_K otherwise); that
// llama-quantize made every attn_qkv Q5_K in Q4_K_M, and with that one change
// their sizes agree to the byte too.
func TestPublishedPairSizes(t *testing.T) {
	type pair struct{ q4, q8 hub.Model }
	pairs := map[string]*pair{}
	for _, m := range hub.Catalogue() {
		key := m.Repo + " " + m.Shape
		if pairs[key] == nil {
			pairs[key] = &pair{}
		}
		switch m.Quant {
		case "Q4_K_M":
			pairs[key].q4 = m
		case "Q8_0":
			pairs[key].q8 = m
		}
	}
	oldQKV := map[string]bool{"unsloth/Phi-4-mini-instruct-GGUF": true}
	n := 0
	for _, p := range pairs {
		if p.q4.Name == "" || p.q8.Name == "" {
			continue
		}
		n++
		s := mustShape(t, p.q4.Shape)
		q4 := dataBytes(t, &s, MostlyQ4_KM, oldQKV[p.q4.Repo])
		q8 := dataBytes(t, &s, MostlyQ8_0, false)
		if h4, h8 := p.q4.Size-q4, p.q8.Size-q8; h4 != h8 {
			t.Errorf("%s: headers of %d (%s) and %d (%s) bytes", p.q4.Repo, h4, p.q4.File, h8, p.q8.File)
		}
	}
	if n < 5 {
		t.Errorf("%d pairs of one repository's Q4_K_M and Q8_0 in the catalogue", n)
	}
}

// dataBytes is s.DataBytes(ft), or, with oldQKV, what it was when
// llama-quantize gave every attn_qkv Q5_K in Q4_K_M.
func dataBytes(t *testing.T, s *Shape, ft FileType, oldQKV bool) int64 {
	t.Helper()
	var n int64
	for _, spec := range s.tensors() {
		typ := s.tensorType(&spec, ft, false)
		if oldQKV && strings.HasSuffix(spec.name, "attn_qkv.weight") {
			typ = kernels.Q5_K
		}
		rb, err := typ.RowBytes(spec.cols)
		if err != nil {
			t.Fatal(err)
		}
		n += alignUp(int64(rb)*int64(spec.rows), 32)
	}
	if want, err := s.DataBytes(ft); !oldQKV && (err != nil || want != n) {
		t.Fatalf("%s %v: DataBytes %d (%v), the tensors add up to %d", s.Name, ft, want, err, n)
	}
	return n
}
