package bench

import (
	"github.com/edgellm/edgellm/inference"
	"github.com/edgellm/edgellm/kernels"
)

// What the bandwidth measurement reads
//
// The roofline compares how fast decode streams the weights with how fast the
// memory delivers bytes that the caches do not hold. The measurement reads,
// with decode's threads, the model's own tensor data as mapped from the file
// when they are several times larger than the caches: the same bytes, in the
// same pages of the page cache, that decode streams, each read once a pass as
// decode reads each once a token, and no memory besides, so it also runs where
// the model barely fits. Whatever share of a pass the caches still serve they
// serve decode alike, so the ratio stays honest.
//
// Tensor data smaller than that (a small model) are measured on a buffer of
// the wanted size instead, when a quarter of the available memory holds it;
// where it does not, the larger of the buffer that fits and the model's data is
// read, and the report says it is less than wanted.
//
// The bandwidth a virtual machine gets from its host changes from one second
// to the next with what the host's other machines do. So the passes are made
// after each repetition, for Options.BandwidthTime in all, and their median
// covers the period in which the speeds it is compared with were measured.

// Sizes of the bandwidth measurement.
const (
	// minProbeBytes is the least it reads, whatever the system reports: a
	// virtual machine may report a smaller last-level cache than its host's,
	// and 512 MiB is several times the cache a process's threads fill on the
	// CPUs this runs on (an AMD core complex has up to 96 MiB).
	minProbeBytes = 512 << 20
	// probeCacheMultiple times the largest cache the system reports is the
	// least it reads when that is more than minProbeBytes.
	probeCacheMultiple = 8
	// memoryShare: a buffer takes at most this fraction of the available memory.
	memoryShare = 4
)

// Where the bandwidth measurement reads from (Report.BandwidthSource).
const (
	SourceModel  = "model"  // the model's tensor data
	SourceBuffer = "buffer" // a buffer of its own
)

// wantedProbeBytes returns how many bytes the bandwidth measurement should
// read so that the caches cannot serve it.
func wantedProbeBytes() int64 {
	return max(minProbeBytes, probeCacheMultiple*kernels.LargestCacheBytes())
}

// probeBuffer returns the size of the buffer the bandwidth measurement reads,
// or 0 when it reads the model's tensor data (modelBytes of them) instead:
// want bytes, the model's data when they are that many, otherwise a buffer of
// want bytes within a memoryShare of avail (the available memory, 0 when
// unknown), or the model's data when they are more than that buffer.
func probeBuffer(modelBytes, want, avail int64) int64 {
	if modelBytes >= want {
		return 0
	}
	size := want
	if avail > 0 {
		size = min(size, avail/memoryShare)
	}
	if modelBytes >= size {
		return 0
	}
	return size
}

// bandwidthProbe is the bandwidth measurement of a run, with a pool of its
// own and the buffer it reads, if any.
type bandwidthProbe struct {
	*kernels.BandwidthProbe
	pool   *kernels.Pool
	source string // SourceModel or SourceBuffer
	want   int64  // bytes it wants to read
}

// probePlan returns the size of the buffer that the bandwidth measurement of
// m reads (0: m's tensor data instead) and the bytes it wants to read, for
// the buffer size the options ask for (0: none, pick one by probeBuffer).
func probePlan(m *inference.Model, asked int64) (buffer, want int64) {
	if asked > 0 {
		return asked, asked
	}
	want = wantedProbeBytes()
	return probeBuffer(int64(len(m.File.TensorData())), want, inference.MemAvailable()), want
}

// newBandwidthProbe prepares the bandwidth measurement with threads threads
// on a buffer of bufferBytes when that is positive, otherwise on m's tensor
// data; want is the bytes it wants to read.
func newBandwidthProbe(m *inference.Model, threads int, bufferBytes, want int64) *bandwidthProbe {
	b := &bandwidthProbe{pool: kernels.NewPool(threads), source: SourceModel, want: want}
	data := m.File.TensorData()
	if bufferBytes > 0 {
		data, b.source = kernels.NewBandwidthBuffer(b.pool, bufferBytes), SourceBuffer
	}
	b.BandwidthProbe = kernels.NewBandwidthProbe(b.pool, data)
	return b
}

// record records the passes made so far in r.
func (b *bandwidthProbe) record(r *Report) {
	bw := b.Result()
	r.Bandwidth, r.BandwidthMin, r.BandwidthMax = bw.Median, bw.Min, bw.Max
	r.BandwidthBytes, r.BandwidthPasses = bw.Bytes, bw.Passes
	r.BandwidthSource, r.BandwidthWanted = b.source, b.want
}

func (b *bandwidthProbe) close() { b.pool.Close() }
