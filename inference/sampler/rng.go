package sampler

import "math/bits"

// rng is xoshiro256** seeded through splitmix64. It is implemented here
// (rather than borrowed from math/rand) so that the stream for a given seed
// is fixed by this package alone and never touches global state.
type rng struct {
	s [4]uint64
}

// splitmix64 advances *x and returns the next splitmix64 output.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// seed resets the generator state from a 64-bit seed. splitmix64 never
// yields four zero words, so the state is always valid.
func (r *rng) seed(seed uint64) {
	x := seed
	for i := range r.s {
		r.s[i] = splitmix64(&x)
	}
}

// next returns the next 64 random bits.
func (r *rng) next() uint64 {
	s := &r.s
	result := bits.RotateLeft64(s[1]*5, 7) * 9
	t := s[1] << 17
	s[2] ^= s[0]
	s[3] ^= s[1]
	s[1] ^= s[2]
	s[0] ^= s[3]
	s[2] ^= t
	s[3] = bits.RotateLeft64(s[3], 45)
	return result
}

// float64 returns a uniform value in [0, 1) with 53 random bits.
func (r *rng) float64() float64 {
	return float64(r.next()>>11) * (1.0 / (1 << 53))
}
