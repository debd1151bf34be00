//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// The gated delta rule (deltarule.go) for arm64 with NEON: the operations of
// deltaRuleF32Generic in the same order, so that the results are
// bit-identical. Each row of the state takes two passes while it sits in L1:
// scaled by the decay and dotted with k, then updated by d·k and dotted with
// q, each dot in eight lanes (value i in lane i%8: V0 lanes 0…3, V1 lanes
// 4…7, as dotF32NEON) summed pairwise; products are rounded before they are
// added (FMUL, then FADD; no FMA).

// F0 = ((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7)) of the lanes of V0, V1.
#define HSUM_V01 \
	FADDP_S(0, 0, 1); \
	FADDP_S(0, 0, 0); \
	FADDP_S1(0, 0)

// func deltaRuleF32NEON(M *float32, S int, k, q, v *float32, decay, beta, scale float32)
TEXT ·deltaRuleF32NEON(SB), NOSPLIT, $0-52
	MOVD  M+0(FP), R0
	MOVD  S+8(FP), R1
	MOVD  k+16(FP), R2
	MOVD  q+24(FP), R3
	MOVD  v+32(FP), R4
	FMOVS decay+40(FP), F29
	FMOVS beta+44(FP), F30
	FMOVS scale+48(FP), F31
	VDUP  V29.S[0], V29.S4
	LSR   $3, R1, R8         // groups of eight per row
	MOVD  R1, R9             // rows left

deltarow:
	// M[r] ×= decay; F0 = M[r]·k.
	ZERO(0)
	ZERO(1)
	MOVD R0, R5
	MOVD R2, R6
	MOVD R8, R10

scaledot:
	VLD1   (R5), [V2.S4, V3.S4]
	FMUL_S(2, 2, 29)
	FMUL_S(3, 3, 29)
	VST1.P [V2.S4, V3.S4], 32(R5)
	VLD1.P 32(R6), [V6.S4, V7.S4]
	FMUL_S(2, 2, 6)
	FMUL_S(3, 3, 7)
	FADD_S(0, 0, 2)
	FADD_S(1, 1, 3)
	SUBS   $1, R10, R10
	BNE    scaledot

	HSUM_V01

	// V28 = d = (v[r] − F0)·β in every lane.
	FMOVS (R4), F2
	FSUBS F0, F2, F2
	FMULS F30, F2, F2
	VDUP  V2.S[0], V28.S4

	// M[r] += d·k; F0 = M[r]·q.
	ZERO(0)
	ZERO(1)
	MOVD R0, R5
	MOVD R2, R6
	MOVD R3, R7
	MOVD R8, R10

axpydot:
	VLD1.P 32(R6), [V6.S4, V7.S4]
	FMUL_S(6, 28, 6)
	FMUL_S(7, 28, 7)
	VLD1   (R5), [V2.S4, V3.S4]
	FADD_S(2, 2, 6)
	FADD_S(3, 3, 7)
	VST1.P [V2.S4, V3.S4], 32(R5)
	VLD1.P 32(R7), [V8.S4, V9.S4]
	FMUL_S(2, 2, 8)
	FMUL_S(3, 3, 9)
	FADD_S(0, 0, 2)
	FADD_S(1, 1, 3)
	SUBS   $1, R10, R10
	BNE    axpydot

	HSUM_V01
	FMULS   F31, F0, F0
	FMOVS.P F0, 4(R4)
	MOVD    R5, R0           // the next row
	SUBS    $1, R9, R9
	BNE     deltarow
	RET
