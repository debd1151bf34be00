package sampler

import (
	"errors"
	"fmt"
	"math"
)

// MaxRepeatLastN is the largest accepted [Params.RepeatLastN]. It bounds the
// history ring buffer that [New] preallocates.
const MaxRepeatLastN = 1 << 20

// Params configures a [Sampler].
//
// The zero value is NOT a valid configuration (TopP and RepeatPenalty must be
// positive); start from [DefaultParams] and override fields. The meaning of
// each field's zero value is documented on the field.
type Params struct {
	// Temperature divides the logits of the surviving candidates before the
	// final softmax. Must be finite and >= 0.
	// Zero means greedy decoding: the argmax of the (penalised) logits, ties
	// broken towards the lowest token id; TopK, TopP and MinP are then
	// ignored and no random numbers are consumed. Any positive temperature,
	// however small, samples uniformly among tokens tied at the maximum.
	Temperature float32

	// TopK keeps only the K highest logits (ties broken towards the lowest
	// token id). Must be >= 0. Zero disables the filter, as does any value
	// >= the vocabulary size.
	TopK int

	// TopP is the nucleus-sampling threshold: keep the smallest set of most
	// probable candidates whose cumulative probability is >= TopP (always at
	// least one token). Must be in (0, 1]. One disables the filter; the zero
	// value is invalid.
	TopP float32

	// MinP keeps only candidates whose probability is >= MinP times the
	// probability of the most likely candidate. Must be in [0, 1). Zero
	// disables the filter.
	MinP float32

	// RepeatPenalty is the llama.cpp-style repetition penalty applied to every
	// distinct token among the last RepeatLastN accepted tokens: a positive
	// logit is divided by it, a non-positive logit is multiplied by it. Must
	// be finite and > 0. One disables the penalty; the zero value is invalid.
	// Values below one reward repetition.
	RepeatPenalty float32

	// RepeatLastN is the size of the history window (in tokens passed to
	// [Sampler.Accept]) considered by RepeatPenalty. Must be in
	// [0, MaxRepeatLastN]. Zero disables the penalty.
	RepeatLastN int

	// Seed seeds the sampler's private PRNG. Every value, including zero, is
	// a valid seed; equal seeds with equal inputs give equal outputs.
	Seed uint64
}

// DefaultParams returns llama.cpp-like defaults: Temperature 0.8, TopK 40,
// TopP 0.95, MinP 0.05, RepeatPenalty 1.0 (off), RepeatLastN 64, Seed 0.
func DefaultParams() Params {
	return Params{
		Temperature:   0.8,
		TopK:          40,
		TopP:          0.95,
		MinP:          0.05,
		RepeatPenalty: 1.0,
		RepeatLastN:   64,
		Seed:          0,
	}
}

func isNaN32(f float32) bool { return f != f }

func isInf32(f float32) bool { return math.IsInf(float64(f), 0) }

// Validate reports whether p is usable. It returns nil or an error joining one
// message per invalid field; every message names the offending field.
func (p Params) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("sampler: "+format, args...))
	}
	switch {
	case isNaN32(p.Temperature) || isInf32(p.Temperature):
		bad("Temperature must be finite, got %v", p.Temperature)
	case p.Temperature < 0:
		bad("Temperature must be >= 0, got %v", p.Temperature)
	}
	if p.TopK < 0 {
		bad("TopK must be >= 0 (0 disables), got %d", p.TopK)
	}
	if isNaN32(p.TopP) || p.TopP <= 0 || p.TopP > 1 {
		bad("TopP must be in (0, 1] (1 disables), got %v", p.TopP)
	}
	if isNaN32(p.MinP) || p.MinP < 0 || p.MinP >= 1 {
		bad("MinP must be in [0, 1) (0 disables), got %v", p.MinP)
	}
	switch {
	case isNaN32(p.RepeatPenalty) || isInf32(p.RepeatPenalty):
		bad("RepeatPenalty must be finite, got %v", p.RepeatPenalty)
	case p.RepeatPenalty <= 0:
		bad("RepeatPenalty must be > 0 (1 disables), got %v", p.RepeatPenalty)
	}
	if p.RepeatLastN < 0 || p.RepeatLastN > MaxRepeatLastN {
		bad("RepeatLastN must be in [0, %d] (0 disables), got %d", MaxRepeatLastN, p.RepeatLastN)
	}
	return errors.Join(errs...)
}
