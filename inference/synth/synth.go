package synth

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/edgellm/edgellm/gguf"
	"github.com/edgellm/edgellm/kernels"
)

// Options describes a synthetic model file.
type Options struct {
	Shape   Shape
	Type    FileType
	Seed    uint64 // seed of the random weights
	Pure    bool   // every 2-D weight in the default type (no per-tensor mix)
	Threads int    // threads that quantize (0: the CPUs the process may use)
}

// Summary reports on a written file.
type Summary struct {
	Bytes   int64          // size of the file
	Tensors int            // number of tensors
	Types   map[string]int // number of tensors of each type
}

// chunkBytes bounds the quantized data made in one go: the file is written in
// pieces of about this size, so memory stays small whatever the model.
const chunkBytes = 8 << 20

// WriteFile writes the synthetic model described by opts to path, replacing
// it atomically (a temporary file in the same directory is renamed over it).
// The same options always give the same bytes.
func WriteFile(path string, opts Options) (Summary, error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return Summary{}, fmt.Errorf("synth: %w", err)
	}
	sum, err := Write(tmp, opts)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return Summary{}, fmt.Errorf("synth: write %s: %w", path, err)
	}
	return sum, nil
}

// Write writes the synthetic model described by opts to w: the header, then
// each tensor as it is made, a chunk of rows at a time.
func Write(w io.Writer, opts Options) (Summary, error) {
	s := &opts.Shape
	if err := s.validate(); err != nil {
		return Summary{}, err
	}
	if !opts.Type.known() {
		return Summary{}, fmt.Errorf("synth: unknown file type %d", int(opts.Type))
	}
	specs := s.tensors()
	types := make([]kernels.Type, len(specs))
	sum := Summary{Tensors: len(specs), Types: map[string]int{}}
	for i := range specs {
		types[i] = s.tensorType(&specs[i], opts.Type, opts.Pure)
		sum.Types[types[i].String()]++
	}
	header, align, err := encodeHeader(s, opts, specs, types)
	if err != nil {
		return Summary{}, err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.Write(header)
	n := int64(len(header))
	pool := kernels.NewPool(opts.Threads)
	defer pool.Close()
	job := &rowsJob{seed: opts.Seed}
	for i := range specs {
		t := &specs[i]
		size, err := writeTensor(bw, pool, job, s, i, t, types[i])
		if err != nil {
			return Summary{}, fmt.Errorf("synth: tensor %q: %w", t.name, err)
		}
		pad := alignUp(size, align) - size
		bw.Write(make([]byte, pad))
		n += size + pad
	}
	if err := bw.Flush(); err != nil {
		return Summary{}, fmt.Errorf("synth: %w", err)
	}
	sum.Bytes = n
	return sum, nil
}

// writeTensor makes tensor number idx (spec t, type typ) and writes its data
// to w; it returns the number of bytes written.
func writeTensor(w io.Writer, pool *kernels.Pool, job *rowsJob, s *Shape, idx int, t *tensorSpec, typ kernels.Type) (int64, error) {
	rowBytes, err := typ.RowBytes(t.cols)
	if err != nil {
		return 0, err
	}
	if t.fill != fillRandom {
		b := make([]byte, rowBytes)
		kernels.QuantizeRow(typ, s.vectorValues(t), b)
		_, err := w.Write(b)
		return int64(rowBytes), err
	}
	per := max(1, min(t.rows, chunkBytes/rowBytes))
	job.reset(idx, typ, t.cols, rowBytes, per)
	var n int64
	for lo := 0; lo < t.rows; lo += per {
		hi := min(t.rows, lo+per)
		job.first = lo
		pool.Run(hi-lo, 1, job)
		if _, err := w.Write(job.out[:(hi-lo)*rowBytes]); err != nil {
			return n, err
		}
		n += int64((hi - lo) * rowBytes)
	}
	return n, nil
}

// rowsJob makes rows first+lo … first+hi of a random tensor into out.
type rowsJob struct {
	seed     uint64
	tensor   int
	typ      kernels.Type
	cols     int
	rowBytes int
	first    int
	out      []byte
}

func (j *rowsJob) reset(tensor int, typ kernels.Type, cols, rowBytes, rows int) {
	j.tensor, j.typ, j.cols, j.rowBytes = tensor, typ, cols, rowBytes
	if cap(j.out) < rows*rowBytes {
		j.out = make([]byte, rows*rowBytes)
	}
	j.out = j.out[:rows*rowBytes]
}

// Do makes rows [lo, hi) of the current chunk.
func (j *rowsJob) Do(lo, hi int) {
	x := make([]float32, j.cols)
	for r := lo; r < hi; r++ {
		fillNormal(x, rowSeed(j.seed, j.tensor, j.first+r), weightStd)
		kernels.QuantizeRow(j.typ, x, j.out[r*j.rowBytes:(r+1)*j.rowBytes])
	}
}

// encodeHeader returns the bytes of the file before the first tensor's data
// (metadata, tensor infos and the padding after them) and the alignment of
// the data.
//
// The gguf.Builder wants every tensor's data before it writes, and a model's
// data do not fit in memory comfortably, so the Builder is given stand-ins:
// slices of one read-only anonymous mapping of zero pages, which take no
// memory. Writing it once to a counter gives the header's length (the total
// minus the data, whose padded size is known), writing it again keeps those
// first bytes.
func encodeHeader(s *Shape, opts Options, specs []tensorSpec, types []kernels.Type) ([]byte, int64, error) {
	b := gguf.NewBuilder()
	if err := addMetadata(b, s, opts.Type); err != nil {
		return nil, 0, err
	}
	sizes := make([]int64, len(specs))
	var largest int64
	for i := range specs {
		rb, err := types[i].RowBytes(specs[i].cols)
		if err != nil {
			return nil, 0, fmt.Errorf("synth: tensor %q: %w", specs[i].name, err)
		}
		sizes[i] = int64(rb) * int64(specs[i].rows)
		largest = max(largest, sizes[i])
	}
	if largest > math.MaxInt {
		return nil, 0, errors.New("synth: tensor too large")
	}
	zeros, err := unix.Mmap(-1, 0, int(largest), unix.PROT_READ, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return nil, 0, fmt.Errorf("synth: mapping %d bytes of stand-in data: %w", largest, err)
	}
	defer unix.Munmap(zeros)
	align := int64(b.Alignment())
	var data int64
	for i := range specs {
		if err := b.AddTensor(specs[i].name, types[i], specs[i].dims(), zeros[:sizes[i]]); err != nil {
			return nil, 0, fmt.Errorf("synth: %w", err)
		}
		data += alignUp(sizes[i], align)
	}
	total, err := b.WriteTo(io.Discard)
	if err != nil {
		return nil, 0, fmt.Errorf("synth: %w", err)
	}
	hw := &prefixWriter{keep: total - data}
	if _, err := b.WriteTo(hw); err != nil {
		return nil, 0, fmt.Errorf("synth: %w", err)
	}
	return hw.buf, align, nil
}

// prefixWriter keeps the first keep bytes written to it and drops the rest.
type prefixWriter struct {
	keep int64
	buf  []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	if room := p.keep - int64(len(p.buf)); room > 0 {
		p.buf = append(p.buf, b[:min(int64(len(b)), room)]...)
	}
	return len(b), nil
}

// addMetadata adds the hyper-parameters, vocabulary and file type to b, with
// the keys the reference's converter writes for the architecture, in the
// order its quantize tool writes them.
func addMetadata(b *gguf.Builder, s *Shape, ft FileType) error {
	spec := archSpecs[s.Arch]
	a := s.Arch + "."
	var headKV any = uint32(s.NHeadKV)
	if spec.perLayerKV {
		// One count per layer, 0 for the convolution layers.
		counts := make([]int32, s.NLayer)
		for il := range counts {
			if s.LayerKind(il) != LayerConv {
				counts[il] = int32(s.NHeadKV)
			}
		}
		headKV = counts
	}
	var ff any = uint32(s.NFF)
	if s.DoubleWideFF {
		sizes := make([]int32, s.NLayer)
		for il := range sizes {
			sizes[il] = int32(s.layerFF(il))
		}
		ff = sizes
	}
	kvs := []kv{
		{"general.architecture", s.Arch},
		{"general.name", "synth " + s.Name},
		{a + "context_length", uint32(s.NCtx)},
		{a + "embedding_length", uint32(s.NEmbd)},
		{a + "block_count", uint32(s.NLayer)},
		{a + "feed_forward_length", ff},
		{a + "attention.head_count", uint32(s.NHead)},
		{a + "attention.head_count_kv", headKV},
		{a + "attention.layer_norm_rms_epsilon", s.NormEps},
		{a + "rope.freq_base", s.RopeBase},
		{a + "rope.dimension_count", uint32(s.RotaryDim())},
	}
	if s.NHeadDim > 0 {
		kvs = append(kvs, kv{a + "attention.key_length", uint32(s.NHeadDim)}, kv{a + "attention.value_length", uint32(s.NHeadDim)})
	}
	kvs = append(kvs, s.newArchKVs(a)...)
	if s.SlidingWindow > 0 || spec.window {
		kvs = append(kvs, kv{a + "attention.sliding_window", uint32(s.SlidingWindow)})
	}
	if s.RopeBaseSWA > 0 {
		kvs = append(kvs, kv{a + "rope.freq_base_swa", s.RopeBaseSWA})
	}
	if s.RopeLinear > 0 {
		kvs = append(kvs, kv{a + "rope.scaling.type", "linear"}, kv{a + "rope.scaling.factor", s.RopeLinear})
	}
	if r := s.LongRope; r != nil {
		kvs = append(kvs, kv{a + "rope.scaling.original_context_length", uint32(r.OrigCtx)}, kv{a + "rope.scaling.attn_factor", r.AttnFactor(s.NCtx)})
	}
	if s.ConvL > 0 && s.DeltaNet == nil {
		kvs = append(kvs, kv{a + "shortconv.l_cache", uint32(s.ConvL)})
	}
	kvs = append(kvs, kv{a + "vocab_size", uint32(s.NVocab)})
	kvs = append(kvs, vocabKVs(s.NVocab, spec.noSpacePrefix)...)
	// Last, as the reference's quantize tool sets them.
	kvs = append(kvs, kv{"general.quantization_version", uint32(2)}, kv{"general.file_type", uint32(ft)})
	for _, kv := range kvs {
		if err := b.AddKV(kv.key, kv.value); err != nil {
			return fmt.Errorf("synth: %w", err)
		}
	}
	return nil
}

// newArchKVs returns the metadata of qwen35's DeltaNet and hybrid layout and
// of gemma4's two layer kinds, per-layer inputs and shared-KV layers, which
// the reference's converter writes after the head sizes (prefix a is
// "ARCH.").
func (s *Shape) newArchKVs(a string) []kv {
	var kvs []kv
	if d := s.DeltaNet; d != nil {
		kvs = append(kvs,
			kv{a + "rope.dimension_sections", s.RopeSections[:]},
			kv{a + "ssm.conv_kernel", uint32(s.ConvL)},
			kv{a + "ssm.state_size", uint32(d.HeadDim)},
			kv{a + "ssm.group_count", uint32(d.KeyHeads)},
			kv{a + "ssm.time_step_rank", uint32(d.ValueHeads)},
			kv{a + "ssm.inner_size", uint32(d.innerSize())},
			kv{a + "full_attention_interval", uint32(s.AttnInterval)})
	}
	if archSpecs[s.Arch].perLayerInput {
		ropeSWA := s.RopeDimSWA
		if ropeSWA == 0 {
			ropeSWA = s.HeadDimSWA
		}
		pattern := make([]bool, s.NLayer)
		for il := range pattern {
			pattern[il] = s.LayerKind(il) == LayerSliding
		}
		kvs = append(kvs,
			kv{a + "attention.key_length_swa", uint32(s.HeadDimSWA)},
			kv{a + "attention.value_length_swa", uint32(s.HeadDimSWA)},
			kv{a + "rope.dimension_count_swa", uint32(ropeSWA)},
			kv{a + "attention.sliding_window_pattern", pattern},
			kv{a + "attention.shared_kv_layers", uint32(s.SharedKVLayers)},
			kv{a + "embedding_length_per_layer_input", uint32(s.PerLayerInput)},
			kv{a + "final_logit_softcapping", s.SoftCap})
	}
	return kvs
}

// kv is a metadata key and its value.
type kv struct {
	key   string
	value any
}

func alignUp(x, a int64) int64 { return (x + a - 1) / a * a }
