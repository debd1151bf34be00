//go:build !purego

#include "go_asm.h"
#include "textflag.h"
#include "neon_arm64.h"

// K-quant kernels (kquants.go, q8k.go). The dots keep the portable kernels'
// eight integer lanes per super-block (see kLanes) in V24 (lanes 0…3) and V25
// (4…7): every run of 32 values adds its products, four per lane, times the
// scale of their 16 values. The NEON variants form 16-bit products with
// SMULL, add them pairwise to the four-product sums (at most 16384 in
// magnitude for these types, so 16 bits suffice) and multiply-accumulate
// them with the scale into 32 bits (SMLAL by element); the SDOT variants sum
// four products per 32-bit lane and multiply-accumulate with MLA by element.
// The float lanes V0, V1 take the integer lanes times d_w·d_a with fused
// multiply-adds, and are added as hsum8 at the end.
//
// Register use of the dots: R0 weight blocks, R1 activation quants, R2
// activation scales, R3 activation bsums, R4 super-blocks left; F0 the
// result.

// K_PROLOGUE clears V0…V2 for a K-quant dot.
#define K_PROLOGUE \
	ZERO(0); \
	ZERO(1); \
	ZERO(2)

// RUN_SDOT_LT adds one run of 32 products to the lanes Vl0 (0…3) and Vl1
// (4…7): weights Vx0 (values 0…15), Vx1 (16…31) times activations Vy0, Vy1,
// lanes 0…3 scaled by lane s0i of Vs0 (int32) and lanes 4…7 by lane s1i of
// Vs1. Clobbers the temporaries Vt0, Vt1. RUN_SDOT is it with the lanes of
// the one-row dots, V24 and V25, and temporaries V26, V27.
#define RUN_SDOT_LT(l0, l1, t0, t1, x0, x1, y0, y1, s0, s0i, s1, s1i) \
	ZERO(t0); \
	ZERO(t1); \
	SDOT(t0, x0, y0); \
	SDOT(t1, x1, y1); \
	MLA_SE(l0, t0, s0, s0i); \
	MLA_SE(l1, t1, s1, s1i)
#define RUN_SDOT(x0, x1, y0, y1, s0, s0i, s1, s1i) \
	RUN_SDOT_LT(24, 25, 26, 27, x0, x1, y0, y1, s0, s0i, s1, s1i)

// RUN_NEON_LT is RUN_SDOT_LT without the dot product; the scales are int16
// lanes (Vs < V16), and it clobbers four temporaries. RUN_NEON is it with
// the lanes V24, V25 and temporaries V26, V27, V22, V23.
#define RUN_NEON_LT(l0, l1, t0, t1, t2, t3, x0, x1, y0, y1, s0, s0i, s1, s1i) \
	SMULL_B(t0, x0, y0); \
	SMULL2_B(t1, x0, y0); \
	SMULL_B(t2, x1, y1); \
	SMULL2_B(t3, x1, y1); \
	ADDP_H(t0, t0, t1); \
	ADDP_H(t2, t2, t3); \
	ADDP_H(t0, t0, t2); \
	SMLAL_HE(l0, t0, s0, s0i); \
	SMLAL2_HE(l1, t0, s1, s1i)
#define RUN_NEON(x0, x1, y0, y1, s0, s0i, s1, s1i) \
	RUN_NEON_LT(24, 25, 26, 27, 22, 23, x0, x1, y0, y1, s0, s0i, s1, s1i)

// LANES_ACCUM_TO adds the integer lanes Vl0, Vl1 times Ff to Va0, Va1 with
// fused multiply-adds (lanes · f, added); LANES_ACCUM adds V24, V25 times F6
// to V0, V1.
#define LANES_ACCUM_TO(l0, l1, f, a0, a1) \
	SCVTF_S(l0, l0); \
	SCVTF_S(l1, l1); \
	DUP_S0(f, f); \
	FMLA_S(a0, l0, f); \
	FMLA_S(a1, l1, f)
#define LANES_ACCUM LANES_ACCUM_TO(24, 25, 6, 0, 1)

// ---------------------------------------------------------------------------
// Q4_K and Q5_K

// K4_HEAD reads the head of a Q4_K/Q5_K super-block (d, dmin, the 12 bytes of
// scales and mins) and the activation scale and bsums. It leaves F6 =
// d_w·d_a, F7 = −dmin_w·d_a, V9 the eight 6-bit scales (bytes), V12 and V13
// mins[s]·(bsums[2s]+bsums[2s+1]) for s = 0…3 and 4…7 (int32), and clears
// the integer lanes V24, V25.
//
// The scales and mins are unpacked in general registers: with a, b, c the
// little-endian words of bytes 0…3, 4…7, 8…11, the low six bits of a and b
// are scales 0…3 and mins 0…3, and scales 4…7 (mins 4…7) are the low (high)
// nibbles of c with the top two bits of a (b) above them.
#define K4_HEAD \
	K4_UNPACK; \
	FMOVS.P 4(R2), F3; \
	VLD1.P  32(R3), [V4.H8, V5.H8]; \
	FMOVS   R5, F6; \
	FCVTHS  F6, F6; \
	LSRW    $16, R5, R5; \
	FMOVS   R5, F7; \
	FCVTHS  F7, F7; \
	FMULS   F6, F3, F6; \
	FMULS   F7, F3, F7; \
	FNEGS   F7, F7; \
	VMOV    R8, V8.D[0]; \
	VMOV    R10, V8.D[1]; \
	VUZP1   V8.S4, V8.S4, V9.S4; \
	VUZP2   V8.S4, V8.S4, V10.S4; \
	SADDLP_H(4, 4); \
	SADDLP_H(5, 5); \
	VUXTL   V10.B8, V11.H8; \
	VUXTL   V11.H4, V12.S4; \
	VUXTL2  V11.H8, V13.S4; \
	MUL_S(12, 12, 4); \
	MUL_S(13, 13, 5); \
	ZERO(24); \
	ZERO(25)

// K4_UNPACK reads the 16 bytes of head of a Q4_K/Q5_K super-block at R0
// (advancing it) in general registers: R5 d | dmin<<16, R8 scales 0…3 |
// mins 0…3 <<32 and R10 scales 4…7 | mins 4…7 <<32 (bytes). Clobbers R6, R7,
// R9.
#define K4_UNPACK \
	MOVWU.P 4(R0), R5; \
	MOVD.P  8(R0), R6; \
	MOVWU.P 4(R0), R7; \
	AND     $0x3f3f3f3f3f3f3f3f, R6, R8; \
	LSR     $6, R6, R9; \
	AND     $0x0303030303030303, R9, R9; \
	ORR     R7<<28, R7, R10; \
	AND     $0x0f0f0f0f0f0f0f0f, R10, R10; \
	ORR     R9<<4, R10, R10

// K4_SCALES_SDOT widens the scales V9 to int32: V9 scales 0…3, V10 4…7.
#define K4_SCALES_SDOT \
	VUXTL  V9.B8, V9.H8; \
	VUXTL2 V9.H8, V10.S4; \
	VUXTL  V9.H4, V9.S4

// K4_SCALES_NEON widens the scales V9 to int16.
#define K4_SCALES_NEON \
	VUXTL V9.B8, V9.H8

// Q4_K follows the reference's repacked kernels (dotQ4_KGeneric): the eight
// integer lanes of a super-block and its eight min products are each summed
// to one exact int32 and taken into a scalar float chain with one fused
// multiply-add. K4_INT_FMA does it: Fa += Ff · float32(Σ of the lanes Vl0,
// Vl1) (int32; Vl0 is clobbered). Q4_K_MINS takes the min products V12, V13
// into the chain F2 (F7 = −dmin_w·d_a, so F2 is the negated accm), and
// Q4_K_ACCUM the lanes V24, V25 into F0 (F6 = d_w·d_a).
#define K4_INT_FMA(l0, l1, f, a) \
	ADD_S(l0, l0, l1); \
	ADDV_S(l0, l0); \
	SCVTF_S1(l0, l0); \
	FMADD_S1(a, l0, f, a)
#define Q4_K_MINS K4_INT_FMA(12, 13, 7, 2)
#define Q4_K_ACCUM K4_INT_FMA(24, 25, 6, 0)

// Q5_K_MINS accumulates the minimums of Q5_K in one float: F2 += F7 · Σ m.
#define Q5_K_MINS \
	VADD  V13.S4, V12.S4, V12.S4; \
	VADDV V12.S4, V12; \
	SCVTF_S1(12, 12); \
	FMADDS F7, F2, F12, F2

// K4_CHUNK loads 32 bytes of 4-bit quants, runs 2k and 2k+1 (low and high
// nibbles), and their 64 activation quants: weights V18, V19 (run 2k) and
// V20, V21 (run 2k+1), activations V14, V15 and V16, V17.
#define K4_CHUNK \
	VLD1.P 32(R0), [V12.B16, V13.B16]; \
	VLD1.P 64(R1), [V14.B16, V15.B16, V16.B16, V17.B16]; \
	VAND   V31.B16, V12.B16, V18.B16; \
	VAND   V31.B16, V13.B16, V19.B16; \
	VUSHR  $4, V12.B16, V20.B16; \
	VUSHR  $4, V13.B16, V21.B16

// Q5_HIGH sets bit 4 of the quants of run c from bit c of qh (V28, V29),
// shifted into place by op $n (VSHL or VUSHR), into Vx0, Vx1 by bit insert
// under the mask V30 = 0x10. Clobbers V22, V23.
#define Q5_HIGH(op, n, x0, x1) \
	op   $n, V28.B16, V22.B16; \
	op   $n, V29.B16, V23.B16; \
	VBIT V30.B16, V22.B16, x0; \
	VBIT V30.B16, V23.B16, x1

// The runs of chunk k with the scales of K4_SCALES_SDOT and K4_SCALES_NEON.
#define K4_RUNS_SDOT(k) \
	RUN_SDOT(18, 19, 14, 15, 9+(k)/2, (2*(k))&3, 9+(k)/2, (2*(k))&3); \
	RUN_SDOT(20, 21, 16, 17, 9+(k)/2, (2*(k)+1)&3, 9+(k)/2, (2*(k)+1)&3)
#define K4_RUNS_NEON(k) \
	RUN_NEON(18, 19, 14, 15, 9, 2*(k), 9, 2*(k)); \
	RUN_NEON(20, 21, 16, 17, 9, 2*(k)+1, 9, 2*(k)+1)

// Q5_CHUNK is K4_CHUNK with the fifth bits of runs 2k and 2k+1; opE $nE and
// opO $nO move bits 2k and 2k+1 of qh to bit 4.
#define Q5_CHUNK(opE, nE, opO, nO) \
	K4_CHUNK; \
	Q5_HIGH(opE, nE, V18.B16, V19.B16); \
	Q5_HIGH(opO, nO, V20.B16, V21.B16)

// Q4_K_RESULT sets F0 to acc − accm, F0 + F2.
#define Q4_K_RESULT FADD_S1(0, 0, 2)

// K4_DOT is the body of a Q4_K or Q5_K dot: consts sets the constants,
// mins accumulates the minimums, qh loads the fifth bits (Q5_K), chunk0…3
// load the quants of runs 0…7, scales widens the scales for runs(k), the runs
// of chunk k, accum takes the integer lanes into the float accumulators, and
// result sets F0 to the sum.
#define K4_DOT(consts, mins, qh, chunk0, chunk1, chunk2, chunk3, scales, runs, accum, result) \
	K_PROLOGUE; \
	consts; \
loop: \
	K4_HEAD; \
	mins; \
	scales; \
	qh; \
	chunk0; \
	runs(0); \
	chunk1; \
	runs(1); \
	chunk2; \
	runs(2); \
	chunk3; \
	runs(3); \
	accum; \
	SUBS $1, R4, R4; \
	BNE  loop; \
	result

// Q4_K_CONSTS sets V31 = 0x0f in every byte.
#define Q4_K_CONSTS VMOVI $15, V31.B16

// func dotQ4_KNEON(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ4_KNEON(SB), NOSPLIT, $0-44
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD bsums+24(FP), R3
	MOVD nb+32(FP), R4
	K4_DOT(Q4_K_CONSTS, Q4_K_MINS, NOP, K4_CHUNK, K4_CHUNK, K4_CHUNK, K4_CHUNK, K4_SCALES_NEON, K4_RUNS_NEON, Q4_K_ACCUM, Q4_K_RESULT)
	FMOVS F0, ret+40(FP)
	RET

// func dotQ4_KSDOT(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ4_KSDOT(SB), NOSPLIT, $0-44
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD bsums+24(FP), R3
	MOVD nb+32(FP), R4
	K4_DOT(Q4_K_CONSTS, Q4_K_MINS, NOP, K4_CHUNK, K4_CHUNK, K4_CHUNK, K4_CHUNK, K4_SCALES_SDOT, K4_RUNS_SDOT, Q4_K_ACCUM, Q4_K_RESULT)
	FMOVS F0, ret+40(FP)
	RET

// ---------------------------------------------------------------------------
// Q4_K, one row with four activations (dotQ4_KActs4SDOT, …NEON): each
// super-block's scales, mins and quants are unpacked once, and every run of
// 32 weights is dotted with the four activations in turn. Each activation has
// the integer lanes and float accumulators of the one-row dot and goes
// through the same integer sums (exact, in any order) and the same float
// operations in the same order, so each result has dotQ4_KSDOT's (…NEON's)
// bits.
//
// Register use: R0 weights, R1…R4 the activations' quants, R11…R14 their
// scales, R15, R16, R17, R19 their bsums, R20 super-blocks left, R21 the
// eight mins (bytes), R22 out; R5…R10 K4_UNPACK's. Activation b has the
// scalar float chains F(3b) (acc) and F(3b+2) (mins; V(3b+1) is unused) and the
// integer lanes V(16+2b), V(17+2b). V12 (and V13 for SDOT) hold the scales,
// V24…V27 the weights of a chunk (two runs), V14, V15 the activation quants
// of a run; V28, V29 (and V30, V13 for NEON) are the runs' temporaries, V31 =
// 0x0f.

// K4A_HEAD unpacks the head of a super-block: R5 d | dmin<<16, V12 the eight
// scales (bytes), R21 the eight mins (bytes).
#define K4A_HEAD \
	K4_UNPACK; \
	VMOV  R8, V24.D[0]; \
	VMOV  R10, V24.D[1]; \
	VUZP1 V24.S4, V24.S4, V12.S4; \
	VUZP2 V24.S4, V24.S4, V25.S4; \
	VMOV  V25.D[0], R21

// K4A_SCALES_SDOT widens the scales V12 to int32 (V12 scales 0…3, V13 4…7),
// K4A_SCALES_NEON to int16.
#define K4A_SCALES_SDOT \
	VUXTL  V12.B8, V12.H8; \
	VUXTL2 V12.H8, V13.S4; \
	VUXTL  V12.H4, V12.S4
#define K4A_SCALES_NEON \
	VUXTL V12.B8, V12.H8

// K4A_CHUNK loads 32 bytes of 4-bit quants and unpacks runs 2k (V24, V25)
// and 2k+1 (V26, V27).
#define K4A_CHUNK \
	VLD1.P 32(R0), [V14.B16, V15.B16]; \
	VAND   V31.B16, V14.B16, V24.B16; \
	VAND   V31.B16, V15.B16, V25.B16; \
	VUSHR  $4, V14.B16, V26.B16; \
	VUSHR  $4, V15.B16, V27.B16

// The runs 2k and 2k+1 with the activation quants at q (advancing it), into
// the lanes Vl0, Vl1.
#define K4A_RUNS_SDOT(k, q, l0, l1) \
	VLD1.P 32(q), [V14.B16, V15.B16]; \
	RUN_SDOT_LT(l0, l1, 28, 29, 24, 25, 14, 15, 12+(k)/2, (2*(k))&3, 12+(k)/2, (2*(k))&3); \
	VLD1.P 32(q), [V14.B16, V15.B16]; \
	RUN_SDOT_LT(l0, l1, 28, 29, 26, 27, 14, 15, 12+(k)/2, (2*(k)+1)&3, 12+(k)/2, (2*(k)+1)&3)
#define K4A_RUNS_NEON(k, q, l0, l1) \
	VLD1.P 32(q), [V14.B16, V15.B16]; \
	RUN_NEON_LT(l0, l1, 28, 29, 30, 13, 24, 25, 14, 15, 12, 2*(k), 12, 2*(k)); \
	VLD1.P 32(q), [V14.B16, V15.B16]; \
	RUN_NEON_LT(l0, l1, 28, 29, 30, 13, 26, 27, 14, 15, 12, 2*(k)+1, 12, 2*(k)+1)

// K4A_CHUNK_RUNS unpacks chunk k and runs it with the four activations.
#define K4A_CHUNK_RUNS(runs, k) \
	K4A_CHUNK; \
	runs(k, R1, 16, 17); \
	runs(k, R2, 18, 19); \
	runs(k, R3, 20, 21); \
	runs(k, R4, 22, 23)

// K4A_TAIL_W readies the weights' part of the accumulation: F24 d, F25 dmin,
// V27 mins 0…3 and V26 mins 4…7 (int32).
#define K4A_TAIL_W \
	FMOVS  R5, F24; \
	FCVTHS F24, F24; \
	LSRW   $16, R5, R5; \
	FMOVS  R5, F25; \
	FCVTHS F25, F25; \
	VMOV   R21, V26.D[0]; \
	VUXTL  V26.B8, V26.H8; \
	VUXTL  V26.H4, V27.S4; \
	VUXTL2 V26.H8, V26.S4

// K4A_ACT_TAIL accumulates one activation's super-block as K4_HEAD,
// Q4_K_MINS and Q4_K_ACCUM do: its scale at d and bsums at bs (advancing
// them), its lanes Vl0, Vl1 (cleared for the next super-block), its scalar
// chains Fa0 (acc) and Fa2 (the negated accm).
#define K4A_ACT_TAIL(d, bs, l0, l1, a0, a1, a2) \
	FMOVS.P 4(d), F28; \
	FMULS   F24, F28, F29; \
	FMULS   F25, F28, F30; \
	FNEGS   F30, F30; \
	VLD1.P  32(bs), [V14.H8, V15.H8]; \
	SADDLP_H(14, 14); \
	SADDLP_H(15, 15); \
	MUL_S(14, 27, 14); \
	MUL_S(15, 26, 15); \
	K4_INT_FMA(14, 15, 30, a2); \
	K4_INT_FMA(l0, l1, 29, a0); \
	ZERO(l0); \
	ZERO(l1)

// K4A_DOT is the body of a Q4_K dot of four activations with the scales of
// scales and the runs of runs, storing the results (F0, F3, F6, F9) to out.
#define K4A_DOT(scales, runs) \
	ZERO(0); ZERO(1); ZERO(2); ZERO(3); ZERO(4); ZERO(5); \
	ZERO(6); ZERO(7); ZERO(8); ZERO(9); ZERO(10); ZERO(11); \
	ZERO(16); ZERO(17); ZERO(18); ZERO(19); \
	ZERO(20); ZERO(21); ZERO(22); ZERO(23); \
	VMOVI $15, V31.B16; \
loop: \
	K4A_HEAD; \
	scales; \
	K4A_CHUNK_RUNS(runs, 0); \
	K4A_CHUNK_RUNS(runs, 1); \
	K4A_CHUNK_RUNS(runs, 2); \
	K4A_CHUNK_RUNS(runs, 3); \
	K4A_TAIL_W; \
	K4A_ACT_TAIL(R11, R15, 16, 17, 0, 1, 2); \
	K4A_ACT_TAIL(R12, R16, 18, 19, 3, 4, 5); \
	K4A_ACT_TAIL(R13, R17, 20, 21, 6, 7, 8); \
	K4A_ACT_TAIL(R14, R19, 22, 23, 9, 10, 11); \
	SUBS $1, R20, R20; \
	BNE  loop; \
	FADD_S1(0, 0, 2); \
	FADD_S1(3, 3, 5); \
	FADD_S1(6, 6, 8); \
	FADD_S1(9, 9, 11); \
	ACTS4_STORE(F0, F3, F6, F9)

// ACTS4_BSUMS loads the bsums pointers of the four activations of an
// actPtrs4 at R23 into R15, R16, R17, R19.
#define ACTS4_BSUMS \
	LDP 64(R23), (R15, R16); \
	LDP 80(R23), (R17, R19)

// func dotQ4_KActs4NEON(w *byte, p *actPtrs4, nb int, out *[4]float32)
TEXT ·dotQ4_KActs4NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD p+8(FP), R23
	MOVD nb+16(FP), R20
	MOVD out+24(FP), R22
	ACTS4_QS_D
	ACTS4_BSUMS
	K4A_DOT(K4A_SCALES_NEON, K4A_RUNS_NEON)
	RET

// func dotQ4_KActs4SDOT(w *byte, p *actPtrs4, nb int, out *[4]float32)
TEXT ·dotQ4_KActs4SDOT(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD p+8(FP), R23
	MOVD nb+16(FP), R20
	MOVD out+24(FP), R22
	ACTS4_QS_D
	ACTS4_BSUMS
	K4A_DOT(K4A_SCALES_SDOT, K4A_RUNS_SDOT)
	RET

// Q5_K_RESULT sets F0 to hsum8 of V0, V1 plus the minimums F2.
#define Q5_K_RESULT \
	HSUM8(0, 1); \
	FADDS F2, F0, F0

// Q5_K_CONSTS sets V31 = 0x0f and V30 = 0x10 in every byte.
#define Q5_K_CONSTS \
	VMOVI $15, V31.B16; \
	VMOVI $16, V30.B16

// Q5_K_QH loads the 32 bytes of fifth bits of a Q5_K super-block into V28, V29.
#define Q5_K_QH \
	VLD1.P 32(R0), [V28.B16, V29.B16]

// The chunks of Q5_K: chunk k moves bits 2k and 2k+1 of qh to bit 4.
#define Q5_CHUNK0 Q5_CHUNK(VSHL, 4, VSHL, 3)
#define Q5_CHUNK1 Q5_CHUNK(VSHL, 2, VSHL, 1)
#define Q5_CHUNK2 Q5_CHUNK(VSHL, 0, VUSHR, 1)
#define Q5_CHUNK3 Q5_CHUNK(VUSHR, 2, VUSHR, 3)

// func dotQ5_KNEON(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ5_KNEON(SB), NOSPLIT, $0-44
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD bsums+24(FP), R3
	MOVD nb+32(FP), R4
	K4_DOT(Q5_K_CONSTS, Q5_K_MINS, Q5_K_QH, Q5_CHUNK0, Q5_CHUNK1, Q5_CHUNK2, Q5_CHUNK3, K4_SCALES_NEON, K4_RUNS_NEON, LANES_ACCUM, Q5_K_RESULT)
	FMOVS F0, ret+40(FP)
	RET

// func dotQ5_KSDOT(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ5_KSDOT(SB), NOSPLIT, $0-44
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD bsums+24(FP), R3
	MOVD nb+32(FP), R4
	K4_DOT(Q5_K_CONSTS, Q5_K_MINS, Q5_K_QH, Q5_CHUNK0, Q5_CHUNK1, Q5_CHUNK2, Q5_CHUNK3, K4_SCALES_SDOT, K4_RUNS_SDOT, LANES_ACCUM, Q5_K_RESULT)
	FMOVS F0, ret+40(FP)
	RET

// ---------------------------------------------------------------------------
// Q6_K

// Q6_K_HEAD reads the scales of a Q6_K super-block (R6 ← its qh, F8 ← its d
// as bits) and clears the integer lanes. R0 stays at the block (ql).
#define Q6_K_HEAD \
	ADD   $const_q6KQh, R0, R6; \
	ADD   $const_q6KScales, R0, R7; \
	VLD1  (R7), [V13.B16]; \
	MOVHU const_q6KD(R0), R8; \
	ZERO(24); \
	ZERO(25)

// Q6_K_SCALES_SDOT sign-extends the 16 scales V13 to int32 in V8…V11.
#define Q6_K_SCALES_SDOT \
	SXTL2_B(12, 13); \
	SXTL_B(13, 13); \
	SXTL_H(8, 13); \
	SXTL2_H(9, 13); \
	SXTL_H(10, 12); \
	SXTL2_H(11, 12)

// Q6_K_SCALES_NEON sign-extends the 16 scales V13 to int16 in V8, V9.
#define Q6_K_SCALES_NEON \
	SXTL2_B(9, 13); \
	SXTL_B(8, 13)

// Q6_TRIPLE unpacks 16 bytes each of ql[l] (L), ql[l+32] (Lp) and qh[l] (H)
// into the quants l of the four runs of a half, minus 32: run 0 in L, 1 in
// Lp, 2 in X2, 3 in X3. Expects V31 = 0x0f, V30 = 0x30, V29 = 0x3f, V28 = 32;
// clobbers V12.
#define Q6_TRIPLE(L, Lp, H, X2, X3) \
	VAND  V30.B16, H, X2; \
	VSRI  $4, L, X2; \
	VSLI  $4, H, L; \
	VAND  V29.B16, L, L; \
	VUSHR $2, H, X3; \
	VSRI  $4, Lp, X3; \
	VAND  V31.B16, Lp, Lp; \
	VSHL  $2, H, V12.B16; \
	VBIT  V30.B16, V12.B16, Lp; \
	VSUB  V28.B16, L, L; \
	VSUB  V28.B16, Lp, Lp; \
	VSUB  V28.B16, X2, X2; \
	VSUB  V28.B16, X3, X3

// Q6_K_HALF loads and unpacks one half (128 values) of a Q6_K super-block:
// runs 0…3 of the half in (V14, V15), (V16, V17), (V20, x2), (V21, x3).
#define Q6_K_HALF(x2, x3) \
	VLD1.P 64(R0), [V14.B16, V15.B16, V16.B16, V17.B16]; \
	VLD1.P 32(R6), [V18.B16, V19.B16]; \
	Q6_TRIPLE(V14.B16, V16.B16, V18.B16, V20.B16, V21.B16); \
	Q6_TRIPLE(V15.B16, V17.B16, V19.B16, x2, x3)

// Run c of a super-block, weights Vx0, Vx1, with its activation quants
// (Q6_RUN_…_Y: already in Vy0, Vy1).
#define Q6_RUN_SDOT_Y(x0, x1, y0, y1, c) \
	RUN_SDOT(x0, x1, y0, y1, 8+(c)/2, (2*(c))&3, 8+(c)/2, (2*(c)+1)&3)
#define Q6_RUN_NEON_Y(x0, x1, y0, y1, c) \
	RUN_NEON(x0, x1, y0, y1, 8+(c)/4, (2*(c))&7, 8+(c)/4, (2*(c)+1)&7)
#define Q6_RUN_SDOT(x0, x1, c) \
	VLD1.P 32(R1), [V4.B16, V5.B16]; \
	Q6_RUN_SDOT_Y(x0, x1, 4, 5, c)
#define Q6_RUN_NEON(x0, x1, c) \
	VLD1.P 32(R1), [V4.B16, V5.B16]; \
	Q6_RUN_NEON_Y(x0, x1, 4, 5, c)

// Q6_K_TAIL moves R0 to the next super-block and adds the lanes times
// d_w·d_a to V0, V1.
#define Q6_K_TAIL \
	ADD     $(const_q6KBytes-128), R0; \
	FMOVS.P 4(R2), F3; \
	FMOVS   R8, F6; \
	FCVTHS  F6, F6; \
	FMULS   F6, F3, F6; \
	LANES_ACCUM

// Q6_K_CONSTS sets the masks of Q6_TRIPLE.
#define Q6_K_CONSTS \
	VMOVI $0x0f, V31.B16; \
	VMOVI $0x30, V30.B16; \
	VMOVI $0x3f, V29.B16; \
	VMOVI $32, V28.B16

// Q6_K_DOT is the body of a Q6_K dot with the scales of scales and the runs
// run(x0, x1, c), leaving the result in F0.
#define Q6_K_DOT(scales, run) \
	K_PROLOGUE; \
	Q6_K_CONSTS; \
loop: \
	Q6_K_HEAD; \
	scales; \
	Q6_K_HALF(V6.B16, V7.B16); \
	run(14, 15, 0); \
	run(16, 17, 1); \
	run(20, 6, 2); \
	run(21, 7, 3); \
	Q6_K_HALF(V6.B16, V7.B16); \
	run(14, 15, 4); \
	run(16, 17, 5); \
	run(20, 6, 6); \
	run(21, 7, 7); \
	Q6_K_TAIL; \
	SUBS $1, R4, R4; \
	BNE  loop; \
	HSUM8(0, 1)

// func dotQ6_KNEON(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ6_KNEON(SB), NOSPLIT, $0-44
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD bsums+24(FP), R3
	MOVD nb+32(FP), R4
	Q6_K_DOT(Q6_K_SCALES_NEON, Q6_RUN_NEON)
	FMOVS F0, ret+40(FP)
	RET

// func dotQ6_KSDOT(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ6_KSDOT(SB), NOSPLIT, $0-44
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD bsums+24(FP), R3
	MOVD nb+32(FP), R4
	Q6_K_DOT(Q6_K_SCALES_SDOT, Q6_RUN_SDOT)
	FMOVS F0, ret+40(FP)
	RET

// ---------------------------------------------------------------------------
// Q6_K, one row with four activations (dotQ6_KActs4SDOT, …NEON): each
// super-block is unpacked once, as the one-row dot does, into 256 quants in a
// buffer on the stack, and each activation then runs the eight runs with the
// quants loaded from there, in the one-row dot's integer lanes V24, V25 and
// with its float operations, so each result has dotQ6_KSDOT's (…NEON's) bits.
// (The four activations' lanes and accumulators do not fit in registers next
// to an unpacked half, which is why the buffer.)
//
// Register use: R0 weights, R1…R4 the activations' quants, R11…R14 their
// scales, R20 super-blocks left, R22 out, R10 the buffer, R9 a position in
// it; R6…R8 Q6_K_HEAD's. Activation b accumulates in V(2b), V(2b+1); V8…V11
// hold the scales, F12 the super-block's d; V14…V17 a pair of runs' quants,
// V18…V21 their activation quants.

// Q6A_HALF unpacks one half of a super-block and stores its quants at R9
// (advancing it): runs 0 and 1 of the half as (x0, x1) pairs, then run 2's
// and run 3's values 0…15, then their values 16…31.
#define Q6A_HALF \
	Q6_K_HALF(V22.B16, V23.B16); \
	VST1.P [V14.B16, V15.B16, V16.B16, V17.B16], 64(R9); \
	VST1.P [V20.B16, V21.B16, V22.B16, V23.B16], 64(R9)

// Q6A_RUNS runs c…c+3 (a half) of one activation, its quants at q.
#define Q6A_RUNS(run, q, c) \
	VLD1.P 64(R9), [V14.B16, V15.B16, V16.B16, V17.B16]; \
	VLD1.P 64(q), [V18.B16, V19.B16, V20.B16, V21.B16]; \
	run(14, 15, 18, 19, c); \
	run(16, 17, 20, 21, c+1); \
	VLD1.P 64(R9), [V14.B16, V15.B16, V16.B16, V17.B16]; \
	VLD1.P 64(q), [V18.B16, V19.B16, V20.B16, V21.B16]; \
	run(14, 16, 18, 19, c+2); \
	run(15, 17, 20, 21, c+3)

// Q6A_ACT runs the super-block with the activation of quants q and scales d
// into the accumulators Va0, Va1, as Q6_K_TAIL does, and clears the lanes.
#define Q6A_ACT(run, q, d, a0, a1) \
	MOVD    R10, R9; \
	Q6A_RUNS(run, q, 0); \
	Q6A_RUNS(run, q, 4); \
	FMOVS.P 4(d), F13; \
	FMULS   F12, F13, F13; \
	LANES_ACCUM_TO(24, 25, 13, a0, a1); \
	ZERO(24); \
	ZERO(25)

// Q6A_DOT is the body of a Q6_K dot of four activations with the scales of
// scales and the runs run(x0, x1, y0, y1, c), storing the results (F0, F2,
// F4, F6) to out.
#define Q6A_DOT(scales, run) \
	ZERO(0); ZERO(1); ZERO(2); ZERO(3); \
	ZERO(4); ZERO(5); ZERO(6); ZERO(7); \
	Q6_K_CONSTS; \
loop: \
	Q6_K_HEAD; \
	scales; \
	MOVD   R10, R9; \
	Q6A_HALF; \
	Q6A_HALF; \
	ADD    $(const_q6KBytes-128), R0; \
	FMOVS  R8, F12; \
	FCVTHS F12, F12; \
	Q6A_ACT(run, R1, R11, 0, 1); \
	Q6A_ACT(run, R2, R12, 2, 3); \
	Q6A_ACT(run, R3, R13, 4, 5); \
	Q6A_ACT(run, R4, R14, 6, 7); \
	SUBS $1, R20, R20; \
	BNE  loop; \
	HSUM8(0, 1); \
	HSUM8(2, 3); \
	HSUM8(4, 5); \
	HSUM8(6, 7); \
	ACTS4_STORE(F0, F2, F4, F6)

// func dotQ6_KActs4NEON(w *byte, p *actPtrs4, nb int, out *[4]float32)
TEXT ·dotQ6_KActs4NEON(SB), NOSPLIT, $256-32
	MOVD w+0(FP), R0
	MOVD p+8(FP), R23
	MOVD nb+16(FP), R20
	MOVD out+24(FP), R22
	MOVD $buf-256(SP), R10
	ACTS4_QS_D
	Q6A_DOT(Q6_K_SCALES_NEON, Q6_RUN_NEON_Y)
	RET

// func dotQ6_KActs4SDOT(w *byte, p *actPtrs4, nb int, out *[4]float32)
TEXT ·dotQ6_KActs4SDOT(SB), NOSPLIT, $256-32
	MOVD w+0(FP), R0
	MOVD p+8(FP), R23
	MOVD nb+16(FP), R20
	MOVD out+24(FP), R22
	MOVD $buf-256(SP), R10
	ACTS4_QS_D
	Q6A_DOT(Q6_K_SCALES_SDOT, Q6_RUN_SDOT_Y)
	RET

// ---------------------------------------------------------------------------
// Q8_K activation quantization (see quantizeQ8_KGeneric)

// Q8K_16 quantizes the next 16 values at R0 with the scale in lane 0 of V20
// into Vout (bytes): round to nearest even, at most 127 (V30 = 127 as int32),
// narrowed by truncation like int8().
#define Q8K_16(out) \
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	FMUL_SE(0, 0, 20, 0); \
	FMUL_SE(1, 1, 20, 0); \
	FMUL_SE(2, 2, 20, 0); \
	FMUL_SE(3, 3, 20, 0); \
	FCVTNS_S(0, 0); \
	FCVTNS_S(1, 1); \
	FCVTNS_S(2, 2); \
	FCVTNS_S(3, 3); \
	SMIN_S(0, 0, 30); \
	SMIN_S(1, 1, 30); \
	SMIN_S(2, 2, 30); \
	SMIN_S(3, 3, 30); \
	VUZP1 V1.H8, V0.H8, V0.H8; \
	VUZP1 V3.H8, V2.H8, V1.H8; \
	VUZP1 V1.B16, V0.B16, out

// Q8K_64 quantizes the next 64 values, stores them and leaves the sums of each
// 8 of them in V(sums) (int16 lanes: the sums of the four runs of 16, two
// lanes each).
#define Q8K_64(sums) \
	Q8K_16(V4.B16); \
	Q8K_16(V5.B16); \
	Q8K_16(V6.B16); \
	Q8K_16(V7.B16); \
	VST1.P [V4.B16, V5.B16, V6.B16, V7.B16], 64(R1); \
	SADDLP_B(4, 4); \
	SADDLP_B(5, 5); \
	SADDLP_B(6, 6); \
	SADDLP_B(7, 7); \
	ADDP_H(4, 4, 5); \
	ADDP_H(6, 6, 7); \
	ADDP_H(sums, 4, 6)

// func quantizeQ8_KNEON(x *float32, qs *int8, d *float32, bsums *int16, nb int)
TEXT ·quantizeQ8_KNEON(SB), NOSPLIT, $0-40
	MOVD  x+0(FP), R0
	MOVD  qs+8(FP), R1
	MOVD  d+16(FP), R2
	MOVD  bsums+24(FP), R3
	MOVD  nb+32(FP), R4
	FMOVS $-127.0, F29
	FMOVS $1.0, F28
	MOVD  $127, R5
	VDUP  R5, V30.S4

q8kblock:
	// The largest and smallest value (FMAXNM, FMINNM skip NaNs, as the
	// portable loop does).
	VLD1 (R0), [V16.S4]
	VORR V16.B16, V16.B16, V17.B16
	MOVD R0, R5
	MOVD $16, R6

q8kminmax:
	VLD1.P 64(R5), [V0.S4, V1.S4, V2.S4, V3.S4]
	FMAXNM_S(18, 0, 1)
	FMAXNM_S(19, 2, 3)
	FMINNM_S(20, 0, 1)
	FMINNM_S(21, 2, 3)
	FMAXNM_S(18, 18, 19)
	FMINNM_S(20, 20, 21)
	FMAXNM_S(16, 16, 18)
	FMINNM_S(17, 17, 20)
	SUBS $1, R6, R6
	BNE  q8kminmax
	FMAXNMV_S(16, 16)
	FMINNMV_S(17, 17)

	// max is the value of largest magnitude that comes first: the largest
	// value if it is larger than −smallest, the smallest if −smallest is
	// larger; on a tie, the first value of that magnitude.
	FNEGS F17, F18
	FMOVS F16, F19
	FCMPS F18, F16
	BGT   q8kscale
	FMOVS F17, F19
	FCMPS F16, F18
	BGT   q8kscale
	FCMPS $(0.0), F16
	BEQ   q8kzero
	BVS   q8kzero   // all NaN
	MOVD  R0, R5

q8ktie:
	FMOVS.P 4(R5), F19
	FABSS   F19, F21
	FCMPS   F16, F21
	BNE     q8ktie

q8kscale:
	// iscale = −127/max, d = 1/iscale.
	FDIVS   F19, F29, F20
	FDIVS   F20, F28, F21
	FMOVS.P F21, 4(R2)
	Q8K_64(12)
	Q8K_64(13)
	Q8K_64(14)
	Q8K_64(15)
	ADDP_H(12, 12, 13)
	ADDP_H(13, 14, 15)
	VST1.P [V12.H8, V13.H8], 32(R3)
	SUBS $1, R4, R4
	BNE  q8kblock
	RET

q8kzero:
	// A block without a nonzero number: zero quants, sums and scale.
	ZERO(4)
	ZERO(5)
	ZERO(6)
	ZERO(7)
	VST1.P  [V4.B16, V5.B16, V6.B16, V7.B16], 64(R1)
	VST1.P  [V4.B16, V5.B16, V6.B16, V7.B16], 64(R1)
	VST1.P  [V4.B16, V5.B16, V6.B16, V7.B16], 64(R1)
	VST1.P  [V4.B16, V5.B16, V6.B16, V7.B16], 64(R1)
	VST1.P  [V4.B16, V5.B16], 32(R3)
	FMOVS.P F4, 4(R2)
	ADD     $(4*const_QKK), R0
	SUBS    $1, R4, R4
	BNE     q8kblock
	RET
