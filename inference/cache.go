package inference

import (
	"fmt"
	"math"
	"unsafe"
)

// Per-layer caches: what each layer keeps of a sequence so that the next
// token does not recompute the past. Each layer declares it (CacheSpec); the
// state's memory, `info`'s estimate, the daemon's memory plan, the prompt
// cache file and the prefix cache all derive from these declarations.
//
//   - An attention layer keeps the keys and values of past positions in FP16,
//     or in Q8_0 blocks (KVType).
//     A global layer keeps every position of the context. A sliding-window
//     layer keeps a ring of Window + maxBatch − 1 positions: a query sees its
//     Window latest positions, and a batch writes its maxBatch keys before
//     its queries read, so the ring must not overwrite, while writing a
//     batch, a position an earlier query of the batch still sees.
//   - A short-convolution layer keeps its previous ConvL−1 inputs (F32).
//   - A Gated DeltaNet layer keeps its convolution's previous ConvL−1
//     inputs (ConvDim wide) and one StateDim × StateDim state per value
//     head, all F32: a fixed size, whatever the context.
//   - A layer that attends to another layer's cache (gemma4's shared-KV
//     layers) keeps nothing of its own (CacheNone): it costs no memory.
//
// Convolution and DeltaNet states are recurrent: they hold the sequence
// summed up to one position and cannot go back to an earlier one.

// CacheKind is what a layer keeps per sequence.
type CacheKind int

// The cache kinds.
const (
	CacheKV   CacheKind = iota // keys and values of Rows positions, FP16 or Q8_0 (KVType); a ring when Rows < the context
	CacheConv                  // the last Rows inputs of a short convolution, F32
	// CacheDeltaNet is a DeltaNet layer's convolution history then its
	// recurrent states, F32, as Rows rows of StateDim values: (ConvL−1)·
	// ConvDim/StateDim rows of history (ConvDim is a multiple of StateDim),
	// then NVHead·StateDim rows of state (row j of a head's state is value
	// j, over the keys).
	CacheDeltaNet
	// CacheNone: the layer reads another layer's KV cache and keeps none
	// (Rows and Width 0).
	CacheNone
)

// Recurrent reports whether the cache sums up the sequence at one position
// (convolution and DeltaNet states), so that it cannot be rewound.
func (k CacheKind) Recurrent() bool { return k == CacheConv || k == CacheDeltaNet }

// CacheSpec is one layer's cache for a given context.
type CacheSpec struct {
	Kind   CacheKind
	Rows   int    // positions kept: the context, a window ring, or ConvL−1 inputs (DeltaNet: see CacheDeltaNet)
	Width  int    // values per row: the key (= value) width, NEmbd, or the DeltaNet state size
	Window int    // attention window (0: the whole context)
	KV     KVType // CacheKV: how keys and values are stored
}

// Ring reports whether the cache keeps fewer positions than the context, so
// older positions are overwritten.
func (s CacheSpec) Ring(ctx int) bool { return s.Kind == CacheKV && s.Rows < ctx }

// Bytes is the memory of the cache.
func (s CacheSpec) Bytes() int64 {
	if s.Kind.Recurrent() {
		return int64(s.Rows) * int64(s.Width) * 4
	}
	return int64(s.Rows) * int64(s.KV.rowBytes(s.Width)) * 2 /* K and V */
}

// CacheSpecs returns each layer's cache for a context of ctx positions,
// attention layers storing their keys and values as kv.
func (c *Config) CacheSpecs(ctx int, kv KVType) []CacheSpec {
	specs := make([]CacheSpec, len(c.Layers))
	for i := range c.Layers {
		specs[i] = c.Layers[i].cacheSpec(i, c.NEmbd, ctx, kv)
	}
	return specs
}

// CheckKVType returns an error unless the model's attention layers can store
// their keys and values as kv: Q8_0 needs head dimensions that are multiples
// of its 32-value blocks.
func (c *Config) CheckKVType(kv KVType) error {
	if kv == KVF16 {
		return nil
	}
	if kv != KVQ8_0 {
		return fmt.Errorf("inference: unknown KV cache type %v", kv)
	}
	for i := range c.Layers {
		if a := &c.Layers[i].Attn; c.Layers[i].Mixer == MixAttention && a.HeadDim%kvBlock != 0 {
			return fmt.Errorf("inference: KV cache type %v: layer %d's head dimension %d is not a multiple of %d (use f16)", kv, i, a.HeadDim, kvBlock)
		}
	}
	return nil
}

// cacheSpec is the cache of the layer, which is layer il of its model.
func (l *LayerSpec) cacheSpec(il, nEmbd, ctx int, kv KVType) CacheSpec {
	switch l.Mixer {
	case MixShortConv:
		return CacheSpec{Kind: CacheConv, Rows: l.ConvL - 1, Width: nEmbd}
	case MixDeltaNet:
		d := &l.Delta
		return CacheSpec{Kind: CacheDeltaNet, Rows: (d.ConvL-1)*d.ConvDim()/d.StateDim + d.NVHead*d.StateDim, Width: d.StateDim}
	}
	if l.Attn.KVLayer != il {
		return CacheSpec{Kind: CacheNone}
	}
	rows := ctx
	if w := l.Attn.Window; w > 0 {
		rows = min(ctx, w+maxBatch-1)
	}
	return CacheSpec{Kind: CacheKV, Rows: rows, Width: l.Attn.KVDim(), Window: l.Attn.Window, KV: kv}
}

// CacheBytes is the memory of every layer's cache at a context of ctx
// positions, keys and values stored as kv.
func (c *Config) CacheBytes(ctx int, kv KVType) int64 {
	var n int64
	for _, s := range c.CacheSpecs(ctx, kv) {
		n += s.Bytes()
	}
	return n
}

// CacheCost is the cache memory as a function of the context: at most
// Fixed + PerToken·ctx bytes, exactly that once the context is longer than
// every sliding-window ring. Global attention layers make up PerToken;
// window rings, convolution and DeltaNet states are Fixed; layers that read
// another layer's cache count nothing.
type CacheCost struct {
	PerToken, Fixed int64
}

// CacheCost returns the model's cache memory per token of context and its
// fixed part, keys and values stored as kv.
func (c *Config) CacheCost(kv KVType) CacheCost {
	var cost CacheCost
	for i := range c.Layers {
		l := &c.Layers[i]
		if l.Mixer == MixAttention && l.Attn.Window == 0 {
			cost.PerToken += l.cacheSpec(i, c.NEmbd, 1, kv).Bytes()
			continue
		}
		cost.Fixed += l.cacheSpec(i, c.NEmbd, math.MaxInt32, kv).Bytes() // a context longer than any ring
	}
	return cost
}

// layerCache is one layer's cache of a sequence.
type layerCache struct {
	spec   CacheSpec
	k, v   []uint16  // CacheKV in FP16: Rows rows of Width, position p in row p % Rows
	kq, vq []byte    // CacheKV in Q8_0: Rows rows of Width/32 blocks, position p in row p % Rows
	conv   []float32 // recurrent kinds: Rows rows of Width (CacheConv: the oldest input first; CacheDeltaNet: see deltaNet)
	// first is the oldest position whose key and value rows are valid: a
	// ring overwrites older ones, and a restored state holds only what a
	// query at its position needs.
	first int
}

func newLayerCache(s CacheSpec) layerCache {
	lc := layerCache{spec: s}
	switch {
	case s.Kind.Recurrent():
		lc.conv = make([]float32, s.Rows*s.Width)
	case s.Kind == CacheKV && s.KV == KVQ8_0:
		lc.kq = make([]byte, s.Rows*s.KV.rowBytes(s.Width))
		lc.vq = make([]byte, s.Rows*s.KV.rowBytes(s.Width))
	case s.Kind == CacheKV:
		lc.k = make([]uint16, s.Rows*s.Width)
		lc.v = make([]uint16, s.Rows*s.Width)
	}
	return lc
}

// deltaNet splits a DeltaNet layer's cache into the convolution's history
// (the previous ConvL−1 inputs, the oldest first, ConvDim each) and the
// states (NVHead of StateDim × StateDim).
func (lc *layerCache) deltaNet(d *DeltaSpec) (hist, states []float32) {
	n := (d.ConvL - 1) * d.ConvDim()
	return lc.conv[:n], lc.conv[n:]
}

// keyRow and valueRow return the FP16 rows that hold position p.
func (lc *layerCache) keyRow(p int) []uint16 {
	r := p % lc.spec.Rows
	return lc.k[r*lc.spec.Width : (r+1)*lc.spec.Width]
}

func (lc *layerCache) valueRow(p int) []uint16 {
	r := p % lc.spec.Rows
	return lc.v[r*lc.spec.Width : (r+1)*lc.spec.Width]
}

// keyBytes and valueBytes return the bytes of the rows that hold position
// p, FP16 or Q8_0.
func (lc *layerCache) keyBytes(p int) []byte {
	if lc.spec.KV == KVQ8_0 {
		return q8Row(lc.kq, lc.rowBytes(), p%lc.spec.Rows)
	}
	return u16Bytes(lc.keyRow(p))
}

func (lc *layerCache) valueBytes(p int) []byte {
	if lc.spec.KV == KVQ8_0 {
		return q8Row(lc.vq, lc.rowBytes(), p%lc.spec.Rows)
	}
	return u16Bytes(lc.valueRow(p))
}

// q8Row returns row r of rows of n bytes.
func q8Row(b []byte, n, r int) []byte { return b[r*n : (r+1)*n] }

// canRewind reports whether a sequence whose cache holds pos positions can
// continue from position n < pos: a ring must still hold every position the
// next query sees, and a recurrent state only knows the latest position.
func (lc *layerCache) canRewind(pos, n int) bool {
	if n >= pos {
		return true
	}
	switch {
	case lc.spec.Kind.Recurrent():
		return false
	case n == 0:
		return true
	}
	return lc.firstNeeded(n) >= lc.first
}

// wrote records that positions up to end−1 were written: a ring has
// overwritten the positions end−Rows−1 and older.
func (lc *layerCache) wrote(end int) { lc.first = max(lc.first, end-lc.spec.Rows) }

// reset clears a recurrent state (zeros before the first token); key and
// value rows need no clearing, they are written before they are read.
func (lc *layerCache) reset() {
	clear(lc.conv)
	lc.first = 0
}

// firstNeeded is the first position whose key and value a query at position
// n will read: 0 for a global layer, the start of the window otherwise.
func (lc *layerCache) firstNeeded(n int) int {
	if w := lc.spec.Window; w > 0 {
		return max(0, n-w+1)
	}
	return 0
}

// stateBytes is the size of what save writes for a sequence at position n.
func (lc *layerCache) stateBytes(n int) int {
	if lc.spec.Kind.Recurrent() {
		return 4 * len(lc.conv)
	}
	return 2 * (n - lc.firstNeeded(n)) * lc.rowBytes()
}

// save appends to dst what the layer needs to continue a sequence from
// position n (which canRewind(pos, n) must allow): the keys, then the values,
// of positions firstNeeded(n) … n−1 as stored (little-endian FP16, or Q8_0
// blocks), or the recurrent state as little-endian F32.
func (lc *layerCache) save(dst []byte, n int) []byte {
	switch lc.spec.Kind {
	case CacheNone:
		return dst
	case CacheConv, CacheDeltaNet:
		return append(dst, f32Bytes(lc.conv)...)
	}
	for p := lc.firstNeeded(n); p < n; p++ {
		dst = append(dst, lc.keyBytes(p)...)
	}
	for p := lc.firstNeeded(n); p < n; p++ {
		dst = append(dst, lc.valueBytes(p)...)
	}
	return dst
}

// load restores, from src as save wrote it for position n, what the layer
// needs to continue from position p ≤ n (see restorable).
func (lc *layerCache) load(src []byte, n, p int) {
	switch lc.spec.Kind {
	case CacheNone:
		return
	case CacheConv, CacheDeltaNet:
		copy(f32Bytes(lc.conv), src)
		return
	}
	w, fn, fp := lc.rowBytes(), lc.firstNeeded(n), lc.firstNeeded(p)
	lc.first = fp
	values := src[(n-fn)*w:]
	for q := fp; q < p; q++ {
		copy(lc.keyBytes(q), src[(q-fn)*w:(q-fn+1)*w])
		copy(lc.valueBytes(q), values[(q-fn)*w:(q-fn+1)*w])
	}
}

// restorable reports whether what save wrote for position n holds what the
// layer needs to continue from position p: a recurrent state only at n
// (checkpoints of it at earlier positions are a later step), keys and
// values when p ≤ n still sees nothing before what was saved.
func (lc *layerCache) restorable(n, p int) bool {
	if lc.spec.Kind.Recurrent() {
		return p == n
	}
	return p <= n && lc.firstNeeded(p) >= lc.firstNeeded(n)
}

// saveCaches appends every layer's state at position n to dst (CanRewind(n)
// must hold).
func (s *State) saveCaches(dst []byte, n int) []byte {
	for i := range s.caches {
		dst = s.caches[i].save(dst, n)
	}
	return dst
}

// cachesBytes is the size of what saveCaches writes for position n.
func (s *State) cachesBytes(n int) int {
	size := 0
	for i := range s.caches {
		size += s.caches[i].stateBytes(n)
	}
	return size
}

// restorable reports whether saveCaches' data for position n can restore
// the state at position p.
func (s *State) restorable(n, p int) bool {
	for i := range s.caches {
		if !s.caches[i].restorable(n, p) {
			return false
		}
	}
	return p > 0
}

// loadCaches restores the state at position p from data that saveCaches
// wrote for position n (restorable(n, p) must hold, and data be
// cachesBytes(n) long).
func (s *State) loadCaches(data []byte, n, p int) {
	for i := range s.caches {
		size := s.caches[i].stateBytes(n)
		s.caches[i].load(data[:size], n, p)
		data = data[size:]
	}
	s.pos = p
}

// u16Bytes and f32Bytes view values as their little-endian bytes (the
// machines edgellm runs on are little-endian).
func u16Bytes(x []uint16) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 2*len(x))
}

func f32Bytes(x []float32) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&x[0])), 4*len(x))
}

// rowBytes is the size of one saved row: a key or a value (FP16 or Q8_0),
// or a row of a recurrent state (F32); 0 for a layer without a cache.
func (lc *layerCache) rowBytes() int {
	if lc.spec.Kind.Recurrent() {
		return 4 * lc.spec.Width
	}
	return lc.spec.KV.rowBytes(lc.spec.Width)
}

// savedRows is the number of rows save writes for position n.
func (lc *layerCache) savedRows(n int) int {
	if lc.rowBytes() == 0 {
		return 0
	}
	return lc.stateBytes(n) / lc.rowBytes()
}
