package kernels

// A tier is a set of kernels for one level of an architecture's instruction
// set. The tiers are ordered: each one runs the kernels of the tiers below it
// where it has none of its own, and tierGeneric, present on every
// architecture, runs the portable twins (the …Generic functions). The
// architectures name their tiers after what they need:
//
//	amd64: tierAVX2 (AVX2, FMA and F16C), tierAVX512 (also AVX512F, BW, VL
//	       and VNNI); kernels_amd64.go
//	arm64: tierNEON, tierSDOT (NEON with the Armv8.2 dot product);
//	       kernels_arm64.go
//
// and their kernels carry the same suffix (dotQ4_KAVX2, dotQ4_KSDOT,
// dotQ4_KGeneric).
type tier uint8

const (
	tierGeneric tier = iota // the portable twins
	tierVector              // the architecture's vector instructions
	tierDot                 // its vector instructions with integer dot products
)

// tierInfo is an entry of the registry of tiers: the tier, its name in test
// names ("AVX-512", "AVX2", "SDOT", "NEON", "generic") and whether this CPU
// can run it.
type tierInfo struct {
	tier      tier
	name      string
	available bool
}

// tiers lists the tiers of this build, best first, ending with tierGeneric
// (archTiers, per architecture). GODEBUG can hide CPU features from it, e.g.
// GODEBUG=cpu.avx512f=off or cpu.asimddp=off.
var tiers = archTiers()

// active is the tier every kernel dispatches on: the best one this CPU can
// run, chosen at start-up. Tests set it to each available tier in turn
// (forEachTier); nothing else writes it.
var active = bestTier(tiers)

// bestTier returns the first available tier of ts, or tierGeneric.
func bestTier(ts []tierInfo) tier {
	for _, ti := range ts {
		if ti.available {
			return ti.tier
		}
	}
	return tierGeneric
}
