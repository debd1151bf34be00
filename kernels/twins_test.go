package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// Every kernel with an accelerated implementation is checked here against its
// portable twin (the …Generic function) bit for bit, on random and extreme data,
// many lengths and slice offsets, at every tier this CPU can run (forEachTier:
// e.g. AVX-512, AVX2 and generic on amd64). At the generic tier, and on builds
// without assembly (the purego tag, architectures without kernels), the
// unsuffixed kernels are the twins and the comparisons are trivial, but the
// paths around them (MatVec, dotRowActs) are exercised.

// twinScaleStyles are the ways the half-precision scale fields of a weight row
// are filled: sane random magnitudes, zeros, the largest half, subnormal halves,
// or a random mix of these per block.
var twinScaleStyles = []string{"normal", "zero", "max", "subnormal", "mixed"}

// twinScale returns a random half-precision scale of the given style, of either
// sign.
func twinScale(r *rand.Rand, style string) uint16 {
	if style == "mixed" {
		style = twinScaleStyles[r.IntN(4)]
	}
	var h uint16
	switch style {
	case "normal":
		h = FP32ToFP16(float32(r.Float64()*0.02 + 1e-4))
	case "zero":
		h = 0
	case "max":
		h = 0x7bff // 65504
	case "subnormal":
		h = uint16(1 + r.IntN(0x3ff))
	default:
		panic("unknown scale style " + style)
	}
	return h | uint16(r.IntN(2))<<15
}

// twinScaleOffsets are the byte offsets of the half-precision factors within a
// block of each quantized weight type.
var twinScaleOffsets = map[Type][]int{
	Q4_0: {0},
	Q5_0: {0},
	Q8_0: {0},
	Q4_K: {q4KD, q4KDmin},
	Q5_K: {q5KD, q5KDmin},
	Q6_K: {q6KD},
}

// twinWeights returns a row of n values of type t: random bytes with valid
// half-precision factors of the given style for the quantized types, random
// finite halves for F16 and random float32 values of varied magnitude for F32.
func twinWeights(r *rand.Rand, t Type, n int, style string) []byte {
	rowBytes, err := t.RowBytes(n)
	if err != nil {
		panic(err)
	}
	w := make([]byte, rowBytes)
	switch t {
	case F16:
		for i := 0; i < n; i++ {
			h := uint16(r.Uint32())
			if h&0x7c00 == 0x7c00 {
				h &^= 0x4000 // no infinities or NaNs
			}
			binary.LittleEndian.PutUint16(w[2*i:], h)
		}
		return w
	case F32:
		for i := 0; i < n; i++ {
			v := float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(61)-30)))
			binary.LittleEndian.PutUint32(w[4*i:], math.Float32bits(v))
		}
		return w
	}
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	bb := t.BlockBytes()
	for b := 0; b < rowBytes; b += bb {
		for _, off := range twinScaleOffsets[t] {
			binary.LittleEndian.PutUint16(w[b+off:], twinScale(r, style))
		}
	}
	return w
}

// twinInputNames are the input cases of the activation quantizer tests: normal
// values, outliers, blocks of very different magnitude, zeros, constant runs,
// values of opposite sign and equal magnitude, values on rounding ties,
// half-precision values, the float32 extremes and subnormals.
var twinInputNames = []string{"normal", "outliers", "mixed", "zeros", "constant", "signs", "ties", "halves", "huge", "subnormal"}

// twinInput returns n random values of the named input case.
func twinInput(r *rand.Rand, name string, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		v := float32(r.NormFloat64())
		switch name {
		case "normal":
		case "outliers":
			if r.IntN(64) == 0 {
				v *= 20
			}
		case "mixed":
			if i%64 < 32 {
				v *= 1e-3
			}
			if i%512 < 256 {
				v *= 1e-2
			}
		case "zeros":
			if i%96 < 48 {
				v = 0
			}
		case "constant":
			v = float32(i/40%5) - 2
		case "signs":
			// Equal magnitudes of both signs: which one is the block's
			// max depends on the order.
			v = float32(1+i/256%3) * float32(r.IntN(3)-1)
		case "ties":
			// With amax = 127 the scale is 1 and k+0.5 lands on a tie.
			v = float32(r.IntN(254)-127) + 0.5
			if i%32 == 0 {
				v = 127
			}
		case "halves":
			v = roundFP16(4 * v)
		case "huge":
			v *= math.MaxFloat32 / 5
		case "subnormal":
			v = math.Float32frombits(uint32(r.IntN(1<<23)) | uint32(r.IntN(2))<<31)
		default:
			panic("unknown input case " + name)
		}
		x[i] = v
	}
	return x
}

// twinActivation returns n random values quantized by the portable quantizer to
// the activation kind of weight type t.
func twinActivation(r *rand.Rand, t Type, n int, style string) *Activation {
	x := twinInput(r, style, n)
	a := new(Activation)
	kind := t.ActivationKind()
	a.Reset(kind, n)
	switch kind {
	case Q8_0:
		quantizeQ8_0Generic(x, a)
	case Q8_K:
		quantizeQ8_KGeneric(x, a)
	default:
		QuantizeActivation(a, kind, x)
	}
	return a
}

// twinActivationStyles are the input cases used for the activations of the
// weight dot tests.
var twinActivationStyles = []string{"normal", "outliers", "mixed", "zeros", "ties", "subnormal"}

// atOffset returns a copy of s that starts off elements into a fresh buffer, so
// that kernels see every alignment. The capacity is the length.
func atOffset[T any](s []T, off int) []T {
	buf := make([]T, off+len(s))
	copy(buf[off:], s)
	return buf[off : off+len(s) : off+len(s)]
}

// shifted returns a copy of a whose slices start at offsets derived from off.
func shifted(a *Activation, off int) *Activation {
	c := *a
	c.F = atOffset(a.F, off%8)
	c.Qs = atOffset(a.Qs, off)
	c.D = atOffset(a.D, off%8)
	c.Sum = atOffset(a.Sum, off%8)
	c.BSums = atOffset(a.BSums, off%16)
	return &c
}

// twinOffsets returns the slice offsets tried for the i-th length: all of 0…31
// for the first few lengths, else four of them.
func twinOffsets(i int) []int {
	if i < 4 {
		offs := make([]int, 32)
		for k := range offs {
			offs[k] = k
		}
		return offs
	}
	return []int{i % 32, (7 * i) % 32, (13*i + 5) % 32, 31 - i%32}
}

// twinLengths returns 1…64 times unit values and the given larger lengths.
func twinLengths(unit int, extra ...int) []int {
	var ns []int
	for k := 1; k <= 64; k++ {
		ns = append(ns, k*unit)
	}
	return append(ns, extra...)
}

// sameBits reports whether got and want are the same float32 bit pattern.
func sameBits(got, want float32) bool { return math.Float32bits(got) == math.Float32bits(want) }

type weightDotTwin struct {
	typ           Type
	fast, generic func([]byte, *Activation) float32
}

var weightDotTwins = []weightDotTwin{
	{Q4_0, dotQ4_0, dotQ4_0Generic},
	{Q5_0, dotQ5_0, dotQ5_0Generic},
	{Q8_0, dotQ8_0, dotQ8_0Generic},
	{Q4_K, dotQ4_K, dotQ4_KGeneric},
	{Q5_K, dotQ5_K, dotQ5_KGeneric},
	{Q6_K, dotQ6_K, dotQ6_KGeneric},
	{F16, dotF16, dotF16Generic},
	{F32, dotF32, dotF32Generic},
}

// TestTwinWeightDots compares every accelerated weight dot with its twin.
func TestTwinWeightDots(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		for _, tw := range weightDotTwins {
			t.Run(tw.typ.String(), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(tw.typ), 11))
				var ns []int
				switch bs := tw.typ.BlockSize(); bs {
				case 1:
					ns = twinLengths(1, 65, 127, 129, 191, 255, 256, 257, 300, 4096, 5632, 11008)
				default:
					ns = twinLengths(bs, 4096, 5632, 11008)
				}
				styles := twinScaleStyles
				if tw.typ == F16 || tw.typ == F32 {
					styles = []string{"values"}
				}
				bad := 0
				for i, n := range ns {
					for _, style := range styles {
						w := twinWeights(r, tw.typ, n, style)
						a := twinActivation(r, tw.typ, n, twinActivationStyles[(i+len(style))%len(twinActivationStyles)])
						want := tw.generic(w, a)
						for _, off := range twinOffsets(i) {
							got := tw.fast(atOffset(w, off), shifted(a, (off*5+3)%32))
							if !sameBits(got, want) && bad < 10 {
								bad++
								t.Errorf("n=%d scales=%s offset=%d: got %v (%#08x), twin %v (%#08x)",
									n, style, off, got, math.Float32bits(got), want, math.Float32bits(want))
							}
						}
					}
				}
			})
		}
	})
}

// TestTwinQuantizers compares the accelerated activation quantizers with their
// twins field by field, and checks that they write nothing past the row.
func TestTwinQuantizers(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		for _, tc := range []struct {
			kind          Type
			fast, generic func([]float32, *Activation)
		}{
			{Q8_0, quantizeQ8_0, quantizeQ8_0Generic},
			{Q8_K, quantizeQ8_K, quantizeQ8_KGeneric},
		} {
			t.Run(tc.kind.String(), func(t *testing.T) {
				r := rand.New(rand.NewPCG(uint64(tc.kind), 12))
				unit := QK
				if tc.kind == Q8_K {
					unit = QKK
				}
				for i, n := range twinLengths(unit, 4096, 5632, 11008) {
					for _, name := range twinInputNames {
						x := twinInput(r, name, n)
						var want Activation
						want.Reset(tc.kind, n)
						tc.generic(x, &want)
						for _, off := range twinOffsets(i)[:4] {
							got := guardedActivation(tc.kind, n, off)
							tc.fast(atOffset(x, off%8), got)
							if err := sameActivation(got, &want); err != nil {
								t.Fatalf("n=%d input=%s offset=%d: %v", n, name, off, err)
							}
							if err := checkGuards(got); err != nil {
								t.Fatalf("n=%d input=%s offset=%d: %v", n, name, off, err)
							}
						}
					}
				}
			})
		}
	})
}

// Guard values written after the slices of a guarded activation.
const (
	guardQ   = int8(0x5a)
	guardD   = float32(-12345.678)
	guardSum = int16(0x5a5a)
	guardLen = 32
)

// guardedActivation returns an activation Reset to kind for n values whose
// slices start at offsets derived from off and are followed by guard values.
func guardedActivation(kind Type, n, off int) *Activation {
	var a Activation
	a.Reset(kind, n)
	a.Qs = guarded(a.Qs, off, guardQ)
	a.D = guarded(a.D, off%8, guardD)
	if a.BSums != nil {
		a.BSums = guarded(a.BSums, off%16, guardSum)
	}
	return &a
}

// guarded returns a slice of len(s) elements at offset off of a new buffer whose
// elements are all g, with guardLen elements of g after it (within its capacity).
func guarded[T any](s []T, off int, g T) []T {
	buf := make([]T, off+len(s)+guardLen)
	for i := range buf {
		buf[i] = g
	}
	return buf[off : off+len(s)]
}

// checkGuards reports writes past the slices of a guarded activation.
func checkGuards(a *Activation) error {
	if err := checkGuard(a.Qs, guardQ, "Qs"); err != nil {
		return err
	}
	if err := checkGuard(a.D, guardD, "D"); err != nil {
		return err
	}
	return checkGuard(a.BSums, guardSum, "BSums")
}

func checkGuard[T comparable](s []T, g T, name string) error {
	if s == nil {
		return nil
	}
	for i, v := range s[len(s) : len(s)+guardLen] {
		if v != g {
			return fmt.Errorf("%s[%d] past the end overwritten with %v", name, len(s)+i, v)
		}
	}
	return nil
}

// sameActivation compares the quantized fields of got with want exactly.
func sameActivation(got, want *Activation) error {
	for i := range want.Qs {
		if got.Qs[i] != want.Qs[i] {
			return fmt.Errorf("Qs[%d] = %d, twin %d", i, got.Qs[i], want.Qs[i])
		}
	}
	for i := range want.D {
		if !sameBits(got.D[i], want.D[i]) {
			return fmt.Errorf("D[%d] = %v, twin %v", i, got.D[i], want.D[i])
		}
	}
	for i := range want.BSums {
		if got.BSums[i] != want.BSums[i] {
			return fmt.Errorf("BSums[%d] = %d, twin %d", i, got.BSums[i], want.BSums[i])
		}
	}
	return nil
}

// twinFloatLengths are the lengths of the float vector kernel tests: every
// length up to 300 (all tails), then rows of real models.
func twinFloatLengths() []int {
	var ns []int
	for n := 0; n <= 300; n++ {
		ns = append(ns, n)
	}
	return append(ns, 4096, 5632, 11008)
}

// twinFloats returns n random float32 values of the magnitude class k%3:
// normal, tiny (products are float32 subnormals) or large.
func twinFloats(r *rand.Rand, n, k int) []float32 {
	scale := []float64{1, 1e-20, 1e15}[k%3]
	return randNormal32(r, n, scale)
}

// twinHalves returns n random finite half-precision values.
func twinHalves(r *rand.Rand, n int) []uint16 {
	h := make([]uint16, n)
	for i := range h {
		h[i] = uint16(r.Uint32())
		if h[i]&0x7c00 == 0x7c00 {
			h[i] &^= 0x4000
		}
	}
	return h
}

// TestTwinFloatVectors compares DotF32, DotF32F16 and AxpyF32F16 with their twins.
func TestTwinFloatVectors(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(13, 14))
		for i, n := range twinFloatLengths() {
			a, b := twinFloats(r, n, i), twinFloats(r, n, i/3)
			h := twinHalves(r, n)
			for _, off := range twinOffsets(i)[:4] {
				ao, bo, ho := atOffset(a, off%8), atOffset(b, (off+3)%8), atOffset(h, off%16)
				if got, want := dotF32Slice(ao, bo), dotF32SliceGeneric(a, b); !sameBits(got, want) {
					t.Fatalf("DotF32 n=%d offset=%d: got %v, twin %v", n, off, got, want)
				}
				if got, want := dotF32F16(ao, ho), dotF32F16Generic(a, h); !sameBits(got, want) {
					t.Fatalf("DotF32F16 n=%d offset=%d: got %v, twin %v", n, off, got, want)
				}
				alpha := float32(r.NormFloat64())
				want := append([]float32(nil), b...)
				axpyF32F16Generic(want, alpha, h)
				got := guarded(b, off%8, guardD)
				copy(got, b)
				axpyF32F16(got, alpha, ho)
				for j := range want {
					if !sameBits(got[j], want[j]) {
						t.Fatalf("AxpyF32F16 n=%d offset=%d: y[%d] = %v, twin %v", n, off, j, got[j], want[j])
					}
				}
				if err := checkGuard(got, guardD, "y"); err != nil {
					t.Fatalf("AxpyF32F16 n=%d offset=%d: %v", n, off, err)
				}
			}
		}
	})
}

// TestTwinScaleF32 compares ScaleF32 with the plain loop of its portable
// twin: every length up to 300 and rows of real models (the vector kernel's
// groups and the tail), magnitudes whose products are subnormal or overflow,
// unaligned slices followed by guard values.
func TestTwinScaleF32(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(15, 16))
		for i, n := range twinFloatLengths() {
			x := twinFloats(r, n, i)
			s := twinFloats(r, 1, i/3)[0]
			want := append([]float32(nil), x...)
			for j := range want {
				want[j] *= s
			}
			got := guarded(x, i%8, guardD)
			copy(got, x)
			ScaleF32(got, s)
			for j := range want {
				if !sameBits(got[j], want[j]) {
					t.Fatalf("ScaleF32 n=%d: x[%d] = %v, twin %v", n, j, got[j], want[j])
				}
			}
			if err := checkGuard(got, guardD, "x"); err != nil {
				t.Fatalf("ScaleF32 n=%d: %v", n, err)
			}
		}
	})
}

// TestTwinRopeNeox compares RopeNeox with rotatePair applied pair by pair:
// pair counts around the eight- and four-pair steps, partial rotation (a
// head wider than its rotated pairs), several heads, and guard values after
// the heads.
func TestTwinRopeNeox(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(23, 24))
		for i, pairs := range []int{1, 3, 4, 7, 8, 9, 12, 16, 20, 32, 33, 64, 128} {
			for _, extra := range []int{0, 6} { // values after the rotated ones
				for _, heads := range []int{1, 3} {
					headDim := 2*pairs + extra
					x := twinFloats(r, heads*headDim, i)
					cos, sin := twinFloats(r, pairs, i+1), twinFloats(r, pairs, i+2)
					want := append([]float32(nil), x...)
					for h := range heads {
						head := want[h*headDim:]
						for j := range pairs {
							head[j], head[pairs+j] = rotatePair(head[j], head[pairs+j], cos[j], sin[j])
						}
					}
					got := guarded(x, i%8, guardD)
					copy(got, x)
					RopeNeox(got, heads, headDim, cos, sin)
					for j := range want {
						if !sameBits(got[j], want[j]) {
							t.Fatalf("RopeNeox pairs=%d headDim=%d heads=%d: x[%d] = %v, twin %v", pairs, headDim, heads, j, got[j], want[j])
						}
					}
					if err := checkGuard(got, guardD, "x"); err != nil {
						t.Fatalf("RopeNeox pairs=%d headDim=%d heads=%d: %v", pairs, headDim, heads, err)
					}
				}
			}
		}
	})
}

// TestTwinAttentionRows compares DotsF32F16 and AxpysF32F16, the
// multi-row kernels of attention, with one call of the portable one-row
// twin per row: head sizes with and without a multiple of eight, row counts
// around the four-row steps, strides wider than a head (a KV cache row holds
// every head), and output slices followed by guard values.
func TestTwinAttentionRows(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(23, 24))
		for _, hd := range []int{8, 16, 24, 32, 40, 64, 72, 80, 96, 128, 256, 5, 12} {
			for _, rows := range []int{1, 2, 3, 4, 5, 7, 8, 9, 33, 64} {
				stride := hd*(1+rows%3) + 8*(rows%2)
				q := twinFloats(r, hd, rows)
				kv := twinHalves(r, (rows-1)*stride+hd)
				want := make([]float32, rows)
				for k := range want {
					want[k] = dotF32F16Generic(q, kv[k*stride:])
				}
				got := guarded(make([]float32, rows), rows%8, guardD)
				DotsF32F16(got, atOffset(q, rows%8), atOffset(kv, hd%16), stride)
				for k := range want {
					if !sameBits(got[k], want[k]) {
						t.Fatalf("DotsF32F16 hd=%d rows=%d: row %d = %v, twin %v", hd, rows, k, got[k], want[k])
					}
				}
				if err := checkGuard(got, guardD, "out"); err != nil {
					t.Fatalf("DotsF32F16 hd=%d rows=%d: %v", hd, rows, err)
				}

				alpha := twinFloats(r, rows, 0)
				y := twinFloats(r, hd, 0)
				wantY := append([]float32(nil), y...)
				for k, a := range alpha {
					axpyF32F16Generic(wantY, a, kv[k*stride:])
				}
				gotY := guarded(make([]float32, hd), hd%8, guardD)
				copy(gotY, y)
				AxpysF32F16(gotY, atOffset(alpha, rows%8), atOffset(kv, rows%16), stride)
				for j := range wantY {
					if !sameBits(gotY[j], wantY[j]) {
						t.Fatalf("AxpysF32F16 hd=%d rows=%d: y[%d] = %v, twin %v", hd, rows, j, gotY[j], wantY[j])
					}
				}
				if err := checkGuard(gotY, guardD, "y"); err != nil {
					t.Fatalf("AxpysF32F16 hd=%d rows=%d: %v", hd, rows, err)
				}
			}
		}
	})
}

// isNaN32 reports whether v is a NaN (of any payload: which NaN an operation
// on NaNs gives differs between instruction sets).
func isNaN32(v float32) bool { return v != v }

// TestTwinSwiGLU compares SwiGLU (whose vector kernel does the multiples of
// eight) with SiLU value by value, on gates of every scale, the edges of
// expApprox's range, infinities and NaN.
func TestTwinSwiGLU(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(19, 20))
		inf := float32(math.Inf(1))
		edges := []float32{0, float32(math.Copysign(0, -1)), 1e-30, -1e-30, 85.9, 86, 86.1, -87.9, -88, -88.1, -89, 89, 1000, -1000,
			inf, -inf, float32(math.NaN()), 0.34657359, -0.34657359, 3.4e38, -3.4e38}
		for i, n := range twinFloatLengths() {
			gate := randNormal32(r, n, []float64{1, 10, 60}[i%3])
			copy(gate[i%max(n, 1):], edges)
			up := twinFloats(r, n, i/3)
			for _, off := range twinOffsets(i)[:3] {
				want := make([]float32, n)
				for j, g := range gate {
					want[j] = float32(SiLU(g) * up[j])
				}
				got := guarded(gate, off%8, guardD)
				copy(got, gate)
				SwiGLU(got, atOffset(up, (off+5)%8))
				for j := range want {
					if !sameBits(got[j], want[j]) && !(isNaN32(got[j]) && isNaN32(want[j])) {
						t.Fatalf("SwiGLU n=%d offset=%d: gate[%d] (%v) = %v, twin %v", n, off, j, gate[j], got[j], want[j])
					}
				}
				if err := checkGuard(got, guardD, "gate"); err != nil {
					t.Fatalf("SwiGLU n=%d offset=%d: %v", n, off, err)
				}
			}
		}
	})
}

// TestTwinExpSub compares ExpSub (whose vector kernel does the multiples of
// eight or four) with expApprox value by value, over scores of every scale
// and the edges of its range.
func TestTwinExpSub(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(21, 22))
		inf := float32(math.Inf(1))
		edges := []float32{0, -0.5, 87.9, 88, 88.1, -85.9, -86, -86.1, -1000, 1000, -inf, float32(math.NaN()), 3.4e38}
		for i, n := range twinFloatLengths() {
			x := randNormal32(r, n, []float64{1, 10, 60}[i%3])
			copy(x[i%max(n, 1):], edges)
			m := []float32{0, 3, -40}[i%3]
			for _, off := range twinOffsets(i)[:3] {
				want := make([]float32, n)
				for j, v := range x {
					want[j] = expApprox(v - m)
				}
				got := guarded(x, off%8, guardD)
				copy(got, x)
				ExpSub(got, m)
				for j := range want {
					if !sameBits(got[j], want[j]) && !(isNaN32(got[j]) && isNaN32(want[j])) {
						t.Fatalf("ExpSub n=%d offset=%d m=%v: x[%d] (%v) = %v, twin %v", n, off, m, j, x[j], got[j], want[j])
					}
				}
				if err := checkGuard(got, guardD, "x"); err != nil {
					t.Fatalf("ExpSub n=%d offset=%d: %v", n, off, err)
				}
			}
		}
	})
}

// roundFP16Edges returns the values that RoundFP16's kernels must round as
// FP32ToFP16 and FP16ToFP32 do, each with both signs: zeros, infinities,
// quiet and signalling NaNs with payloads that do and do not reach the
// half's ten bits, float32 subnormals (zero halves), the top of the half
// range (65504, the values above it that round down to it, 65520 and up,
// which round to infinity), half subnormals with the ties between them, the
// one that rounds the largest up to the smallest normal half, and ties
// between normal halves that round to even, down and up.
func roundFP16Edges() []float32 {
	inf := float32(math.Inf(1))
	v := []float32{
		0, inf, 1, 65504, math.Nextafter32(65504, inf), 65519.996, 65520, math.Nextafter32(65520, inf),
		65536, 1e30, math.MaxFloat32,
		0x1p-14, math.Nextafter32(0x1p-14, 0), 0x1p-24, 0x1p-25, 0x1.000002p-25, 0x1.fffffep-26, 0x3p-25,
		0x5p-25, 0x7fdp-25, 0x7ffp-25, math.Nextafter32(0x7ffp-25, 0), 1e-30,
		1 + 0x1p-11, 1 + 0x3p-11, 1 + 0x1p-11 + 0x1p-23, 1 + 0x1p-11 - 0x1p-23, 2049, 2051, 0x1.002p-14, 0x1.006p-14,
	}
	for _, b := range []uint32{
		0x7fc00000, 0x7fffffff, 0x7f800001, 0x7fbfffff, 0x7f802000, 0x7f801fff, 0x7fa00000, 0x7fc01000, // NaNs
		0x00000001, 0x00400000, 0x007fffff, // float32 subnormals
	} {
		v = append(v, math.Float32frombits(b))
	}
	for _, x := range v {
		v = append(v, math.Float32frombits(math.Float32bits(x)^0x80000000))
	}
	return v
}

// TestTwinRoundFP16 compares RoundFP16, whose vector kernels do a leading
// multiple of their width, with FP16ToFP32(FP32ToFP16(v)) value by value,
// bit for bit (NaN payloads included), out of place and in place (dst = src,
// as attention rounds its weights): on 2^19 bit patterns spread over all
// 2^32 and the edges (roundFP16Edges) at eight offsets, and on every length
// 0…100 at unaligned offsets, the edges rotated through the vector lanes and
// the tail. Nothing past len(src) may be written.
func TestTwinRoundFP16(t *testing.T) {
	var sweep []float32
	for b := uint32(0); b < 1<<18; b++ {
		bits := b*16381 + b>>5 // spread over all 2^32 patterns
		sweep = append(sweep, math.Float32frombits(bits), math.Float32frombits(bits^0x80000000))
	}
	edges := roundFP16Edges()
	sweep = append(sweep, edges...)
	twin := func(src []float32) []float32 {
		want := make([]float32, len(src))
		for i, v := range src {
			want[i] = FP16ToFP32(FP32ToFP16(v))
		}
		return want
	}
	check := func(t *testing.T, src []float32, off int) {
		t.Helper()
		want := twin(src)
		got := guarded(make([]float32, len(src)), off, guardD)
		RoundFP16(got, atOffset(src, (off+3)%8))
		sameFloats(t, "RoundFP16", len(src), off, got, want)
		if err := checkGuard(got, guardD, "dst"); err != nil {
			t.Fatalf("RoundFP16 n=%d offset=%d: %v", len(src), off, err)
		}
		got = guarded(src, off, guardD)
		copy(got, src)
		RoundFP16(got, got)
		sameFloats(t, "RoundFP16 in place", len(src), off, got, want)
		if err := checkGuard(got, guardD, "dst"); err != nil {
			t.Fatalf("RoundFP16 in place n=%d offset=%d: %v", len(src), off, err)
		}
	}
	forEachTier(t, func(t *testing.T) {
		for off := range 8 {
			check(t, sweep, off)
		}
		for n := 0; n <= 100; n++ {
			for off := range 8 {
				src := make([]float32, n)
				for i := range src {
					src[i] = edges[(i+5*n+off)%len(edges)]
				}
				check(t, src, off)
			}
		}
	})
}

// TestTwinDotRowActs checks the products of one row with a group of
// activations (the prefill seam, which kernels may serve for several
// activations at once) against the twin of each single dot.
func TestTwinDotRowActs(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(15, 16))
		for _, tw := range weightDotTwins {
			unit := tw.typ.BlockSize()
			for i, n := range []int{unit, 2 * unit, 3 * unit, 5 * unit, 8 * unit, 4096} {
				n = max(n, unit)
				w := twinWeights(r, tw.typ, n, twinScaleStyles[i%len(twinScaleStyles)])
				for m := 1; m <= 6; m++ {
					// Each activation's slices at offsets of their own, so
					// that the kernels of four activations see them apart.
					acts := make([]Activation, m)
					for b := range acts {
						a := twinActivation(r, tw.typ, n, twinActivationStyles[(b+i)%len(twinActivationStyles)])
						acts[b] = *shifted(a, 5*b+i+m)
					}
					const stride = 3
					out := make([]float32, m*stride)
					dotRowActs(tw.typ, atOffset(w, i+m), acts, out, stride)
					for b := range acts {
						if want := tw.generic(w, &acts[b]); !sameBits(out[b*stride], want) {
							t.Errorf("%v n=%d acts=%d: activation %d: got %v, twin %v", tw.typ, n, m, b, out[b*stride], want)
						}
					}
				}
			}
		}
	})
}

// TestTwinMatVec checks matrix-vector products (which kernels may serve several
// rows at a time) against the twin of each row's dot.
func TestTwinMatVec(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(17, 18))
		for _, tw := range weightDotTwins {
			unit := tw.typ.BlockSize()
			for i, n := range []int{unit, 5 * unit, 4096} {
				n = max(n, unit)
				rowBytes, err := tw.typ.RowBytes(n)
				if err != nil {
					t.Fatal(err)
				}
				a := twinActivation(r, tw.typ, n, twinActivationStyles[i])
				for rows := 1; rows <= 37; rows += 3 { // the multi-stream paths start at 8 and 16 rows
					w := twinWeights(r, tw.typ, rows*n, twinScaleStyles[(i+rows)%len(twinScaleStyles)])
					out := make([]float32, rows)
					MatVec(tw.typ, atOffset(w, rows), rowBytes, a, out)
					for k := range out {
						if want := tw.generic(w[k*rowBytes:(k+1)*rowBytes], a); !sameBits(out[k], want) {
							t.Errorf("%v n=%d rows=%d: row %d: got %v, twin %v", tw.typ, n, rows, k, out[k], want)
						}
					}
				}
			}
		}
	})
}

// TestTwinMatMul checks batch products (which kernels may serve several rows
// × four activations at once, with the activations' side data packed once
// per product) against the twin of each single dot: batches with one, two
// and a partial group of four, rows of every scale style, and row lengths up
// to beyond what the one-row path packs on its stack (stackPackBlocks on
// amd64).
func TestTwinMatMul(t *testing.T) {
	forEachTier(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(19, 20))
		p := NewPool(2)
		defer p.Close()
		var job MatMulJob
		for _, tw := range weightDotTwins {
			unit := tw.typ.BlockSize()
			for i, n := range []int{unit, 3 * unit, 4096, 33 * 256} {
				n = max(n, unit)
				const rows = 21
				var w []byte
				for k := range rows {
					w = append(w, twinWeights(r, tw.typ, n, twinScaleStyles[(i+k)%len(twinScaleStyles)])...)
				}
				rowBytes := len(w) / rows
				for _, batch := range []int{4, 9, 20} {
					acts := make([]Activation, batch)
					for b := range acts {
						acts[b] = *shifted(twinActivation(r, tw.typ, n, twinActivationStyles[(b+i)%len(twinActivationStyles)]), 3*b+i)
					}
					out := make([]float32, batch*rows)
					p.MatMul(&job, tw.typ, atOffset(w, i+batch), rowBytes, acts, out)
					for b := range acts {
						for k := range rows {
							if want := tw.generic(w[k*rowBytes:(k+1)*rowBytes], &acts[b]); !sameBits(out[b*rows+k], want) {
								t.Errorf("%v n=%d batch=%d: row %d, activation %d: got %v, twin %v", tw.typ, n, batch, k, b, out[b*rows+k], want)
							}
						}
					}
				}
			}
		}
	})
}
