package synth

import "math"

// Random weights
//
// Every row of every tensor has its own generator, seeded from the file's
// seed, the tensor's index and the row, so a file's bytes do not depend on how
// many threads wrote it or in which order. The values are normal-like: the
// sum of four uniform 16-bit numbers (an Irwin–Hall distribution, within
// ±3.5 standard deviations), which is cheap and smooth enough for quantizers
// that look at ranges and least-squares fits.

// splitmix64 advances *state and returns the next value of the SplitMix64
// generator.
func splitmix64(state *uint64) uint64 {
	*state += 0x9e3779b97f4a7c15
	z := *state
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// rowSeed returns the generator state of one row of one tensor.
func rowSeed(seed uint64, tensor, row int) uint64 {
	s := seed
	s = splitmix64(&s) ^ uint64(tensor)<<32 ^ uint64(row)
	splitmix64(&s)
	return s
}

// irwinHallScale turns the sum of four uniform 16-bit numbers, centred, into a
// value of unit standard deviation: each has variance (2^32−1)/12.
var irwinHallScale = float32(1 / math.Sqrt(4*(65536*65536-1)/12.0))

// fillNormal sets x to values of standard deviation std from the generator
// state.
func fillNormal(x []float32, state uint64, std float32) {
	scale := std * irwinHallScale
	for i := range x {
		r := splitmix64(&state)
		sum := int32(r&0xffff) + int32(r>>16&0xffff) + int32(r>>32&0xffff) + int32(r>>48)
		x[i] = float32(sum-2*65535) * scale
	}
}
