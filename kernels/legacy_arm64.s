//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// Kernels of the 32-value block types (legacy.go). Every dot comes in a NEON
// variant (SMULL widening products, for Cortex-A53/A72) and an SDOT variant
// (Armv8.2 dot product, for Cortex-A76 and later); they share everything but
// the integer products of a block.
//
// The dots handle two blocks per iteration, their instructions interleaved so
// that an in-order core (Cortex-A53) finds independent work while one block
// waits for a result; a first block is handled alone when the count is odd.
// The float accumulation stays in block order.
//
// Register use of the dots: R0 weight blocks, R1 activation quants, R2
// activation scales, R3 blocks left; F0 (Q4_0) or V0, V1 (the others) the
// accumulators. Block A uses V1…V7 and V16…V19, block B V8…V15 and V20…V23.

// DOT_PROLOGUE clears the accumulators of a 32-value dot.
#define DOT_PROLOGUE \
	ZERO(0); \
	ZERO(1)

// PAIR_DOT is the body of a dot: consts sets the constants of the blocks'
// load (block A) and load2 (blocks A and B); sum and sum2 form the integer
// products of block A and of blocks A and B, accum and accum2 add them to the
// accumulators, and result sets F0 to the sum.
#define PAIR_DOT(consts, load, load2, sum, sum2, accum, accum2, result) \
	DOT_PROLOGUE; \
	consts; \
	TBZ $0, R3, pairs; \
	load; \
	sum; \
	accum; \
pairs: \
	LSR $1, R3, R3; \
	CBZ R3, done; \
loop: \
	load2; \
	sum2; \
	accum2; \
	SUBS $1, R3, R3; \
	BNE  loop; \
done: \
	result

// ---------------------------------------------------------------------------
// Q4_0: one integer sum per block, accumulated with a scalar FMA (see
// dotQ4_0Generic). Expects V31 = 0x0f and V30 = 8 in every byte.

// Q4_0_LOAD loads one block: V6 and V7 the weight quants 0…15 and 16…31
// minus 8, V2 and V3 the activation quants, F5 the product of the scales.
#define Q4_0_LOAD \
	MOVHU.P 2(R0), R4; \
	VLD1.P  16(R0), [V1.B16]; \
	VLD1.P  32(R1), [V2.B16, V3.B16]; \
	FMOVS.P 4(R2), F4; \
	FMOVS   R4, F5; \
	FCVTHS  F5, F5; \
	FMULS   F4, F5, F5; \
	Q4_0_NIBBLES

// Q4_0_NIBBLES unpacks the 16 bytes of quants V1 of block A into V6
// (values 0…15) and V7 (16…31), minus 8.
#define Q4_0_NIBBLES Q4_0_NIBBLES_TO(V6, V7)

// Q4_0_NIBBLES_TO(LO, HI) is Q4_0_NIBBLES into LO and HI.
#define Q4_0_NIBBLES_TO(LO, HI) \
	VAND  V31.B16, V1.B16, LO.B16; \
	VUSHR $4, V1.B16, HI.B16; \
	VSUB  V30.B16, LO.B16, LO.B16; \
	VSUB  V30.B16, HI.B16, HI.B16

// Q4_0_LOAD2 is Q4_0_LOAD for blocks A and B (B: V13, V14, V9, V10, F12).
#define Q4_0_LOAD2 \
	MOVHU.P 2(R0), R4; \
	VLD1.P  16(R0), [V1.B16]; \
	MOVHU.P 2(R0), R5; \
	VLD1.P  16(R0), [V8.B16]; \
	VLD1.P  32(R1), [V2.B16, V3.B16]; \
	VLD1.P  32(R1), [V9.B16, V10.B16]; \
	FMOVS.P 4(R2), F4; \
	FMOVS.P 4(R2), F11; \
	VAND    V31.B16, V1.B16, V6.B16; \
	VAND    V31.B16, V8.B16, V13.B16; \
	VUSHR   $4, V1.B16, V7.B16; \
	VUSHR   $4, V8.B16, V14.B16; \
	FMOVS   R4, F5; \
	FMOVS   R5, F12; \
	VSUB    V30.B16, V6.B16, V6.B16; \
	VSUB    V30.B16, V13.B16, V13.B16; \
	VSUB    V30.B16, V7.B16, V7.B16; \
	VSUB    V30.B16, V14.B16, V14.B16; \
	FCVTHS  F5, F5; \
	FCVTHS  F12, F12; \
	FMULS   F4, F5, F5; \
	FMULS   F11, F12, F12

// Q4_0_SUM_NEON sets lane 0 of V16 to the integer sum of block A: 16-bit
// products (|p| ≤ 1024), four per lane summed in 16 bits, then the eight
// lanes in 32 bits. Q4_0_SUM2_NEON does blocks A and B (V20).
#define Q4_0_SUM_NEON \
	SMULL_B(16, 6, 2); \
	SMULL2_B(17, 6, 2); \
	SMULL_B(18, 7, 3); \
	SMULL2_B(19, 7, 3); \
	VADD V17.H8, V16.H8, V16.H8; \
	VADD V19.H8, V18.H8, V18.H8; \
	VADD V18.H8, V16.H8, V16.H8; \
	SADDLV_H(16, 16)
#define Q4_0_SUM2_NEON \
	SMULL_B(16, 6, 2); \
	SMULL_B(20, 13, 9); \
	SMULL2_B(17, 6, 2); \
	SMULL2_B(21, 13, 9); \
	SMULL_B(18, 7, 3); \
	SMULL_B(22, 14, 10); \
	SMULL2_B(19, 7, 3); \
	SMULL2_B(23, 14, 10); \
	VADD V17.H8, V16.H8, V16.H8; \
	VADD V21.H8, V20.H8, V20.H8; \
	VADD V19.H8, V18.H8, V18.H8; \
	VADD V23.H8, V22.H8, V22.H8; \
	VADD V18.H8, V16.H8, V16.H8; \
	VADD V22.H8, V20.H8, V20.H8; \
	SADDLV_H(16, 16); \
	SADDLV_H(20, 20)

// Q4_0_SUM_SDOT and Q4_0_SUM2_SDOT are the sums with the dot product.
#define Q4_0_SUM_SDOT \
	ZERO(16); \
	SDOT(16, 6, 2); \
	SDOT(16, 7, 3); \
	VADDV V16.S4, V16
#define Q4_0_SUM2_SDOT \
	ZERO(16); \
	ZERO(20); \
	SDOT(16, 6, 2); \
	SDOT(20, 13, 9); \
	SDOT(16, 7, 3); \
	SDOT(20, 14, 10); \
	VADDV V16.S4, V16; \
	VADDV V20.S4, V20

// Q4_0_ACCUM_TO adds the sum of block A times F5 to the accumulator a with
// one fused multiply-add; Q4_0_ACCUM does it to F0, and Q4_0_ACCUM2 then adds
// that of block B times F12.
#define Q4_0_ACCUM_TO(a) \
	SCVTF_S1(16, 16); \
	FMADDS F5, a, F16, a
#define Q4_0_ACCUM Q4_0_ACCUM_TO(F0)
#define Q4_0_ACCUM2 \
	SCVTF_S1(16, 16); \
	SCVTF_S1(20, 20); \
	FMADDS F5, F0, F16, F0; \
	FMADDS F12, F0, F20, F0

// Q4_0_CONSTS sets V31 = 0x0f and V30 = 8.
#define Q4_0_CONSTS \
	VMOVI $15, V31.B16; \
	VMOVI $8, V30.B16

// Q4_0_RESULT leaves the sum in F0, where it is.
#define Q4_0_RESULT NOP

// func dotQ4_0NEON(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ4_0NEON(SB), NOSPLIT, $0-36
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD nb+24(FP), R3
	PAIR_DOT(Q4_0_CONSTS, Q4_0_LOAD, Q4_0_LOAD2, Q4_0_SUM_NEON, Q4_0_SUM2_NEON, Q4_0_ACCUM, Q4_0_ACCUM2, Q4_0_RESULT)
	FMOVS F0, ret+32(FP)
	RET

// func dotQ4_0SDOT(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ4_0SDOT(SB), NOSPLIT, $0-36
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD nb+24(FP), R3
	PAIR_DOT(Q4_0_CONSTS, Q4_0_LOAD, Q4_0_LOAD2, Q4_0_SUM_SDOT, Q4_0_SUM2_SDOT, Q4_0_ACCUM, Q4_0_ACCUM2, Q4_0_RESULT)
	FMOVS F0, ret+32(FP)
	RET

// ---------------------------------------------------------------------------
// Q8_0 and Q5_0: eight lanes of four products per block, accumulated in V0
// (lanes 0…3) and V1 (lanes 4…7) with vector FMAs, then hsum8. Block A: weight
// quants V2 (values 0…15), V3 (16…31), activation quants V4, V5, scale V7,
// lanes V16, V17; block B: V10, V11, V12, V13, V15, V20, V21.

// SCALE_A and SCALE_B load the f16 weight scale at R0 (advancing it) and the
// activation scale; SCALES multiplies them and puts the products in every lane
// of V7 (A) and V15 (B).
#define SCALE_A \
	MOVHU.P 2(R0), R4; \
	FMOVS.P 4(R2), F6
#define SCALE_B \
	MOVHU.P 2(R0), R5; \
	FMOVS.P 4(R2), F14
#define SCALE_DUP_A \
	FMOVS  R4, F7; \
	FCVTHS F7, F7; \
	FMULS  F6, F7, F7; \
	VDUP   V7.S[0], V7.S4
#define SCALES_DUP \
	FMOVS  R4, F7; \
	FMOVS  R5, F15; \
	FCVTHS F7, F7; \
	FCVTHS F15, F15; \
	FMULS  F6, F7, F7; \
	FMULS  F14, F15, F15; \
	VDUP   V7.S[0], V7.S4; \
	VDUP   V15.S[0], V15.S4

// LANES_NEON sets V(l), V(l+1) to the lanes of weight quants V(x0), V(x1)
// times activation quants V(y0), V(y1): 16-bit products, summed in pairs
// widening to 32 bits, then pairs of pairs. Clobbers V(l+2), V(l+3).
// LANES2_NEON does blocks A and B.
#define LANES_NEON(x0, x1, y0, y1, l) \
	SMULL_B(l, x0, y0); \
	SMULL2_B(l+1, x0, y0); \
	SMULL_B(l+2, x1, y1); \
	SMULL2_B(l+3, x1, y1); \
	SADDLP_H(l, l); \
	SADDLP_H(l+1, l+1); \
	SADDLP_H(l+2, l+2); \
	SADDLP_H(l+3, l+3); \
	ADDP_S(l, l, l+1); \
	ADDP_S(l+1, l+2, l+3)
#define LANES2_NEON \
	SMULL_B(16, 2, 4); \
	SMULL_B(20, 10, 12); \
	SMULL2_B(17, 2, 4); \
	SMULL2_B(21, 10, 12); \
	SMULL_B(18, 3, 5); \
	SMULL_B(22, 11, 13); \
	SMULL2_B(19, 3, 5); \
	SMULL2_B(23, 11, 13); \
	SADDLP_H(16, 16); \
	SADDLP_H(20, 20); \
	SADDLP_H(17, 17); \
	SADDLP_H(21, 21); \
	SADDLP_H(18, 18); \
	SADDLP_H(22, 22); \
	SADDLP_H(19, 19); \
	SADDLP_H(23, 23); \
	ADDP_S(16, 16, 17); \
	ADDP_S(20, 20, 21); \
	ADDP_S(17, 18, 19); \
	ADDP_S(21, 22, 23)

// LANES_SDOT and LANES2_SDOT are the lanes with the dot product.
#define LANES_SDOT(x0, x1, y0, y1, l) \
	ZERO(l); \
	ZERO(l+1); \
	SDOT(l, x0, y0); \
	SDOT(l+1, x1, y1)
#define LANES2_SDOT \
	ZERO(16); \
	ZERO(17); \
	ZERO(20); \
	ZERO(21); \
	SDOT(16, 2, 4); \
	SDOT(20, 10, 12); \
	SDOT(17, 3, 5); \
	SDOT(21, 11, 13)

// LANES_ACCUM_TO adds the lanes of block A times V7 to Va0, Va1 with fused
// multiply-adds (lanes · V7, added); LANES_ACCUM does it to V0, V1, and
// LANES_ACCUM2 then adds those of block B times V15.
#define LANES_ACCUM_TO(a0, a1) \
	SCVTF_S(16, 16); \
	SCVTF_S(17, 17); \
	FMLA_S(a0, 16, 7); \
	FMLA_S(a1, 17, 7)
#define LANES_ACCUM LANES_ACCUM_TO(0, 1)
#define LANES_ACCUM2 \
	SCVTF_S(16, 16); \
	SCVTF_S(17, 17); \
	SCVTF_S(20, 20); \
	SCVTF_S(21, 21); \
	VFMLA V7.S4, V16.S4, V0.S4; \
	VFMLA V7.S4, V17.S4, V1.S4; \
	VFMLA V15.S4, V20.S4, V0.S4; \
	VFMLA V15.S4, V21.S4, V1.S4

// Q8_0_LOAD loads the quants and scale of block A, Q8_0_LOAD2 those of A
// and B.
#define Q8_0_LOAD \
	SCALE_A; \
	VLD1.P 32(R0), [V2.B16, V3.B16]; \
	VLD1.P 32(R1), [V4.B16, V5.B16]; \
	SCALE_DUP_A
#define Q8_0_LOAD2 \
	SCALE_A; \
	VLD1.P 32(R0), [V2.B16, V3.B16]; \
	SCALE_B; \
	VLD1.P 32(R0), [V10.B16, V11.B16]; \
	VLD1.P 32(R1), [V4.B16, V5.B16]; \
	VLD1.P 32(R1), [V12.B16, V13.B16]; \
	SCALES_DUP

// LANES_A_NEON and LANES_A_SDOT are the lanes of block A.
#define LANES_A_NEON LANES_NEON(2, 3, 4, 5, 16)
#define LANES_A_SDOT LANES_SDOT(2, 3, 4, 5, 16)

// LANES_RESULT sets F0 to hsum8 of the accumulators.
#define LANES_RESULT HSUM8(0, 1)

// func dotQ8_0NEON(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ8_0NEON(SB), NOSPLIT, $0-36
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD nb+24(FP), R3
	PAIR_DOT(NOP, Q8_0_LOAD, Q8_0_LOAD2, LANES_A_NEON, LANES2_NEON, LANES_ACCUM, LANES_ACCUM2, LANES_RESULT)
	FMOVS F0, ret+32(FP)
	RET

// func dotQ8_0SDOT(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ8_0SDOT(SB), NOSPLIT, $0-36
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD nb+24(FP), R3
	PAIR_DOT(NOP, Q8_0_LOAD, Q8_0_LOAD2, LANES_A_SDOT, LANES2_SDOT, LANES_ACCUM, LANES_ACCUM2, LANES_RESULT)
	FMOVS F0, ret+32(FP)
	RET

// Q5_0_CONSTS sets the tables of Q5_0_QUANTS: V27 the bit of each byte lane
// (1, 2, …, 128, twice), V28 and V29 the TBL indexes that spread bytes 0, 1
// and 2, 3 of qh over eight lanes each.
#define Q5_0_CONSTS \
	MOVD $0x8040201008040201, R4; \
	VMOV R4, V27.D[0]; \
	VMOV R4, V27.D[1]; \
	MOVD $0x0101010101010101, R4; \
	ZERO(28); \
	VMOV R4, V28.D[1]; \
	ADD  R4, R4, R5; \
	VMOV R5, V29.D[0]; \
	ADD  R4, R5, R5; \
	VMOV R5, V29.D[1]

// Q5_0_QUANTS turns the nibbles of a block, x0 (values 0…15, the raw bytes)
// and x1 (16…31, set here), into quants minus 16 using the inverted fifth
// bits in lane 0 of h; clobbers t0, t1. A clear fifth bit makes the quant
// nibble−16, that is the nibble with the high four bits set: CMTST of the
// inverted bits gives 0xff there, and SLI puts its low four bits above the
// nibble.
#define Q5_0_QUANTS(x0, x1, h, t0, t1) \
	VTBL   V28.B16, [h], t0; \
	VTBL   V29.B16, [h], t1; \
	VCMTST V27.B16, t0, t0; \
	VCMTST V27.B16, t1, t1; \
	VUSHR  $4, x0, x1; \
	VSLI   $4, t0, x0; \
	VSLI   $4, t1, x1

// Q5_0_LOAD loads block A: quants minus 16 in V2, V3, activation quants in
// V4, V5, scale in V7. The inverted fifth bits go to V18.
#define Q5_0_LOAD \
	SCALE_A; \
	MOVWU.P 4(R0), R6; \
	VLD1.P  16(R0), [V2.B16]; \
	VLD1.P  32(R1), [V4.B16, V5.B16]; \
	MVNW    R6, R6; \
	VMOV    R6, V18.S[0]; \
	SCALE_DUP_A; \
	Q5_0_QUANTS(V2.B16, V3.B16, V18.B16, V16.B16, V17.B16)

// Q5_0_LOAD2 loads blocks A and B (fifth bits of B in V22), interleaved.
#define Q5_0_LOAD2 \
	SCALE_A; \
	MOVWU.P 4(R0), R6; \
	VLD1.P  16(R0), [V2.B16]; \
	SCALE_B; \
	MOVWU.P 4(R0), R7; \
	VLD1.P  16(R0), [V10.B16]; \
	VLD1.P  32(R1), [V4.B16, V5.B16]; \
	VLD1.P  32(R1), [V12.B16, V13.B16]; \
	MVNW    R6, R6; \
	MVNW    R7, R7; \
	VMOV    R6, V18.S[0]; \
	VMOV    R7, V22.S[0]; \
	SCALES_DUP; \
	VTBL    V28.B16, [V18.B16], V16.B16; \
	VTBL    V28.B16, [V22.B16], V20.B16; \
	VTBL    V29.B16, [V18.B16], V17.B16; \
	VTBL    V29.B16, [V22.B16], V21.B16; \
	VCMTST  V27.B16, V16.B16, V16.B16; \
	VCMTST  V27.B16, V20.B16, V20.B16; \
	VCMTST  V27.B16, V17.B16, V17.B16; \
	VCMTST  V27.B16, V21.B16, V21.B16; \
	VUSHR   $4, V2.B16, V3.B16; \
	VUSHR   $4, V10.B16, V11.B16; \
	VSLI    $4, V16.B16, V2.B16; \
	VSLI    $4, V20.B16, V10.B16; \
	VSLI    $4, V17.B16, V3.B16; \
	VSLI    $4, V21.B16, V11.B16

// func dotQ5_0NEON(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ5_0NEON(SB), NOSPLIT, $0-36
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD nb+24(FP), R3
	PAIR_DOT(Q5_0_CONSTS, Q5_0_LOAD, Q5_0_LOAD2, LANES_A_NEON, LANES2_NEON, LANES_ACCUM, LANES_ACCUM2, LANES_RESULT)
	FMOVS F0, ret+32(FP)
	RET

// func dotQ5_0SDOT(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ5_0SDOT(SB), NOSPLIT, $0-36
	MOVD w+0(FP), R0
	MOVD qs+8(FP), R1
	MOVD d+16(FP), R2
	MOVD nb+24(FP), R3
	PAIR_DOT(Q5_0_CONSTS, Q5_0_LOAD, Q5_0_LOAD2, LANES_A_SDOT, LANES2_SDOT, LANES_ACCUM, LANES_ACCUM2, LANES_RESULT)
	FMOVS F0, ret+32(FP)
	RET

// ---------------------------------------------------------------------------
// One row with four activations (dot…Acts4SDOT, …NEON): each block's scale
// and quants are loaded and unpacked once, then dotted with the four
// activations in turn, each with the integer products, float operations and
// accumulators of the one-row dot in block order, so that each result has the
// one-row dot's bits.
//
// Register use: R0 weights, R1…R4 the activations' quants, R11…R14 their
// scales, R20 blocks left, R22 out (ACTS4_QS_D, ACTS4_STORE); R5 and F20 the
// weight block's scale. Q8_0 and Q5_0: block A's registers (weight quants V2,
// V3, activation quants V4, V5, lanes V16, V17, scale V7), activation b
// accumulating in V(8+2b), V(9+2b). Q4_0: block A's registers (V6, V7, V2,
// V3, V16, F5), activation b accumulating in F(8+b).

// WEIGHT_SCALE converts the weight block's half scale R5 to F20.
#define WEIGHT_SCALE \
	FMOVS  R5, F20; \
	FCVTHS F20, F20

// Q8_0_WEIGHTS and Q5_0_WEIGHTS load block A's weights: scale F20, quants
// (minus 16 for Q5_0) V2, V3.
#define Q8_0_WEIGHTS \
	MOVHU.P 2(R0), R5; \
	VLD1.P  32(R0), [V2.B16, V3.B16]; \
	WEIGHT_SCALE
#define Q5_0_WEIGHTS \
	MOVHU.P 2(R0), R5; \
	MOVWU.P 4(R0), R6; \
	VLD1.P  16(R0), [V2.B16]; \
	MVNW    R6, R6; \
	VMOV    R6, V18.S[0]; \
	WEIGHT_SCALE; \
	Q5_0_QUANTS(V2.B16, V3.B16, V18.B16, V16.B16, V17.B16)

// LANES_ACT dots block A with the activation of quants q and scales d,
// adding lanes · (d_w·d_a) to Va0, Va1.
#define LANES_ACT(lanes, q, d, a0, a1) \
	FMOVS.P 4(d), F6; \
	VLD1.P  32(q), [V4.B16, V5.B16]; \
	FMULS   F6, F20, F7; \
	VDUP    V7.S[0], V7.S4; \
	lanes; \
	LANES_ACCUM_TO(a0, a1)

// LANES_ACTS4_DOT is the body of a Q8_0 or Q5_0 dot of four activations:
// consts sets the constants of weights, which loads block A, and lanes forms
// its integer lanes. (The activations' pointers are loaded after consts,
// which may use R4, R5.)
#define LANES_ACTS4_DOT(consts, weights, lanes) \
	ZERO(8); ZERO(9); ZERO(10); ZERO(11); \
	ZERO(12); ZERO(13); ZERO(14); ZERO(15); \
	consts; \
	ACTS4_QS_D; \
loop: \
	weights; \
	LANES_ACT(lanes, R1, R11, 8, 9); \
	LANES_ACT(lanes, R2, R12, 10, 11); \
	LANES_ACT(lanes, R3, R13, 12, 13); \
	LANES_ACT(lanes, R4, R14, 14, 15); \
	SUBS $1, R20, R20; \
	BNE  loop; \
	HSUM8(8, 9); \
	HSUM8(10, 11); \
	HSUM8(12, 13); \
	HSUM8(14, 15); \
	ACTS4_STORE(F8, F10, F12, F14)

// Q4_0_ACT dots block A with the activation of quants q and scales d,
// adding its sum · (d_w·d_a) to Fa.
#define Q4_0_ACT(sum, q, d, a) \
	FMOVS.P 4(d), F4; \
	VLD1.P  32(q), [V2.B16, V3.B16]; \
	FMULS   F4, F20, F5; \
	sum; \
	Q4_0_ACCUM_TO(a)

// Q4_0_ACTS4_DOT is the body of a Q4_0 dot of four activations with the
// block sums of sum.
#define Q4_0_ACTS4_DOT(sum) \
	ZERO(8); ZERO(9); ZERO(10); ZERO(11); \
	Q4_0_CONSTS; \
	ACTS4_QS_D; \
loop: \
	MOVHU.P 2(R0), R5; \
	VLD1.P  16(R0), [V1.B16]; \
	WEIGHT_SCALE; \
	Q4_0_NIBBLES; \
	Q4_0_ACT(sum, R1, R11, F8); \
	Q4_0_ACT(sum, R2, R12, F9); \
	Q4_0_ACT(sum, R3, R13, F10); \
	Q4_0_ACT(sum, R4, R14, F11); \
	SUBS $1, R20, R20; \
	BNE  loop; \
	ACTS4_STORE(F8, F9, F10, F11)

// func dotQ4_0Acts4NEON(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
TEXT ·dotQ4_0Acts4NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD p+8(FP), R23
	MOVD nb+16(FP), R20
	MOVD out+24(FP), R22
	Q4_0_ACTS4_DOT(Q4_0_SUM_NEON)
	RET

// func dotQ4_0Acts4SDOT(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
TEXT ·dotQ4_0Acts4SDOT(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD p+8(FP), R23
	MOVD nb+16(FP), R20
	MOVD out+24(FP), R22
	Q4_0_ACTS4_DOT(Q4_0_SUM_SDOT)
	RET

// func dotQ5_0Acts4NEON(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
TEXT ·dotQ5_0Acts4NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD p+8(FP), R23
	MOVD nb+16(FP), R20
	MOVD out+24(FP), R22
	LANES_ACTS4_DOT(Q5_0_CONSTS, Q5_0_WEIGHTS, LANES_A_NEON)
	RET

// func dotQ5_0Acts4SDOT(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
TEXT ·dotQ5_0Acts4SDOT(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD p+8(FP), R23
	MOVD nb+16(FP), R20
	MOVD out+24(FP), R22
	LANES_ACTS4_DOT(Q5_0_CONSTS, Q5_0_WEIGHTS, LANES_A_SDOT)
	RET

// func dotQ8_0Acts4NEON(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
TEXT ·dotQ8_0Acts4NEON(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD p+8(FP), R23
	MOVD nb+16(FP), R20
	MOVD out+24(FP), R22
	LANES_ACTS4_DOT(NOP, Q8_0_WEIGHTS, LANES_A_NEON)
	RET

// func dotQ8_0Acts4SDOT(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
TEXT ·dotQ8_0Acts4SDOT(SB), NOSPLIT, $0-32
	MOVD w+0(FP), R0
	MOVD p+8(FP), R23
	MOVD nb+16(FP), R20
	MOVD out+24(FP), R22
	LANES_ACTS4_DOT(NOP, Q8_0_WEIGHTS, LANES_A_SDOT)
	RET

// ---------------------------------------------------------------------------
// Q8_0 activation quantization (see quantizeQ8_0Generic).

// func quantizeQ8_0NEON(x *float32, qs *int8, d *float32, nb int)
TEXT ·quantizeQ8_0NEON(SB), NOSPLIT, $0-32
	MOVD  x+0(FP), R0
	MOVD  qs+8(FP), R1
	MOVD  d+16(FP), R2
	MOVD  nb+24(FP), R3
	FMOVS $127.0, F30
	ZERO(29)

q8_0quant:
	VLD1.P 64(R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R0), [V4.S4, V5.S4, V6.S4, V7.S4]

	// amax = max |x|; FMAXNM skips NaNs as the portable loop does, and the
	// final maximum with 0 makes a block of NaNs give 0 as there.
	FABS_S(16, 0)
	FABS_S(17, 1)
	FABS_S(18, 2)
	FABS_S(19, 3)
	FABS_S(20, 4)
	FABS_S(21, 5)
	FABS_S(22, 6)
	FABS_S(23, 7)
	FMAXNM_S(16, 16, 17)
	FMAXNM_S(18, 18, 19)
	FMAXNM_S(20, 20, 21)
	FMAXNM_S(22, 22, 23)
	FMAXNM_S(16, 16, 18)
	FMAXNM_S(20, 20, 22)
	FMAXNM_S(16, 16, 20)
	FMAXNMV_S(16, 16)
	FMAXNMS F29, F16, F16

	// d = amax/127 stored rounded to half precision; id = 127/amax, or 0
	// for a block of zeros.
	FDIVS   F30, F16, F17
	FDIVS   F16, F30, F18
	FCMPS   $(0.0), F16
	FCSELS  EQ, F29, F18, F18
	FCVTSH  F17, F17
	FCVTHS  F17, F17
	FMOVS.P F17, 4(R2)

	// q = round(x·id), ties to even, narrowed by truncation like int8().
	FMUL_SE(0, 0, 18, 0)
	FMUL_SE(1, 1, 18, 0)
	FMUL_SE(2, 2, 18, 0)
	FMUL_SE(3, 3, 18, 0)
	FMUL_SE(4, 4, 18, 0)
	FMUL_SE(5, 5, 18, 0)
	FMUL_SE(6, 6, 18, 0)
	FMUL_SE(7, 7, 18, 0)
	FCVTNS_S(0, 0)
	FCVTNS_S(1, 1)
	FCVTNS_S(2, 2)
	FCVTNS_S(3, 3)
	FCVTNS_S(4, 4)
	FCVTNS_S(5, 5)
	FCVTNS_S(6, 6)
	FCVTNS_S(7, 7)
	VUZP1 V1.H8, V0.H8, V0.H8
	VUZP1 V3.H8, V2.H8, V1.H8
	VUZP1 V5.H8, V4.H8, V2.H8
	VUZP1 V7.H8, V6.H8, V3.H8
	VUZP1 V1.B16, V0.B16, V0.B16
	VUZP1 V3.B16, V2.B16, V1.B16
	VST1.P [V0.B16, V1.B16], 32(R1)

	SUBS $1, R3, R3
	BNE  q8_0quant
	RET

// ---------------------------------------------------------------------------
// Q4_0 rows four at a time (decode): dotQ4_0Rows4SDOT, dotQ4_0Rows4NEON set
// out[k] to the dot of the row at w + k·stride (k < 4) with one activation.
// Row k's chain of fused multiply-adds (fma(float32(sumi), d_w·d_a, sum)
// block by block, dotQ4_0Generic) runs in lane k of V0, so that a block
// costs one vector multiply-add for the four rows instead of four scalar ones
// each behind the other; the activation's block is loaded once for them.
// Registers: R0, R6, R7, R8 the rows, R1 activation quants, R2 activation
// scales, R3 blocks left, R10…R13 the rows' scale bits; V2, V3 the
// activation's quants, V4 its scale; V31 = 0x0f, V30 = 8 in every byte.

// Q4_0_ROW_LOAD loads the block at R: its scale bits to s, its quants minus
// 8 to V6 (values 0…15) and V7 (16…31).
#define Q4_0_ROW_LOAD(R, s) Q4_0_ROW_LOAD_TO(R, s, V6, V7)

// Q4_0_ROW_LOAD_TO(R, s, LO, HI) is Q4_0_ROW_LOAD into LO and HI.
#define Q4_0_ROW_LOAD_TO(R, s, LO, HI) \
	MOVHU.P 2(R), s; \
	VLD1.P  16(R), [V1.B16]; \
	Q4_0_NIBBLES_TO(LO, HI)

// Q4_0_ROW_SUM_SDOT(R, s, q) loads the block at R and sets the four int32
// lanes of V(q) to partial sums of its sumi: its quants dotted with the
// activation's V2, V3.
#define Q4_0_ROW_SUM_SDOT(R, s, q) \
	Q4_0_ROW_LOAD(R, s); \
	ZERO(q); \
	SDOT(q, 6, 2); \
	SDOT(q, 7, 3)

// Q4_0_ROW_SUM_NEON is Q4_0_ROW_SUM_SDOT with 16-bit products (|p| ≤ 1024,
// four summed per 16-bit lane as in Q4_0_SUM_NEON), their lanes summed in
// pairs widening to 32 bits. Clobbers V8, V9.
#define Q4_0_ROW_SUM_NEON(R, s, q) \
	Q4_0_ROW_LOAD(R, s); \
	SMULL2_B(8, 6, 2); \
	SMULL_B(6, 6, 2); \
	SMULL2_B(9, 7, 3); \
	SMULL_B(7, 7, 3); \
	VADD    V8.H8, V6.H8, V6.H8; \
	VADD    V9.H8, V7.H8, V7.H8; \
	VADD    V7.H8, V6.H8, V6.H8; \
	SADDLP_H(q, 6)

// Q4_0_ROWS4_DOT is the body of the kernels (R5 the stride; the rows R6…R8
// are formed from it): SUM is Q4_0_ROW_SUM_SDOT or Q4_0_ROW_SUM_NEON. The
// rows' sums V16, V17, V18, V19 are added up by pairs into V24 = [sumi of
// rows 0…3], their scales gathered into V25.
#define Q4_0_ROWS4_DOT(SUM) \
	ADD  R5, R0, R6; \
	ADD  R5, R6, R7; \
	ADD  R5, R7, R8; \
	ZERO(0); \
	Q4_0_CONSTS; \
	CBZ R3, done; \
loop: \
	VLD1.P  32(R1), [V2.B16, V3.B16]; \
	FMOVS.P 4(R2), F4; \
	SUM(R0, R10, 16); \
	SUM(R6, R11, 17); \
	SUM(R7, R12, 18); \
	SUM(R8, R13, 19); \
	ADDP_S(16, 16, 17); \
	ADDP_S(18, 18, 19); \
	ADDP_S(24, 16, 18); \
	SCVTF_S(24, 24); \
	VMOV    R10, V25.H[0]; \
	VMOV    R11, V25.H[1]; \
	VMOV    R12, V25.H[2]; \
	VMOV    R13, V25.H[3]; \
	FCVTL_H(25, 25); \
	FMUL_SE(25, 25, 4, 0); \
	VFMLA   V24.S4, V25.S4, V0.S4; \
	SUBS    $1, R3, R3; \
	BNE     loop; \
done: \
	VST1    [V0.S4], (R9)

// func dotQ4_0Rows4SDOT(w *byte, stride int, qs *int8, d *float32, nb int, out *[4]float32)
TEXT ·dotQ4_0Rows4SDOT(SB), NOSPLIT, $0-48
	MOVD w+0(FP), R0
	MOVD stride+8(FP), R5
	MOVD qs+16(FP), R1
	MOVD d+24(FP), R2
	MOVD nb+32(FP), R3
	MOVD out+40(FP), R9
	Q4_0_ROWS4_DOT(Q4_0_ROW_SUM_SDOT)
	RET

// func dotQ4_0Rows4NEON(w *byte, stride int, qs *int8, d *float32, nb int, out *[4]float32)
TEXT ·dotQ4_0Rows4NEON(SB), NOSPLIT, $0-48
	MOVD w+0(FP), R0
	MOVD stride+8(FP), R5
	MOVD qs+16(FP), R1
	MOVD d+24(FP), R2
	MOVD nb+32(FP), R3
	MOVD out+40(FP), R9
	Q4_0_ROWS4_DOT(Q4_0_ROW_SUM_NEON)
	RET

// ---------------------------------------------------------------------------
// Q4_0 rows two at a time with four activations (prefill, several
// sequences): dotQ4_0Rows2Acts4SDOT, dotQ4_0Rows2Acts4NEON set out[4k + b]
// to the dot of the row at w + k·rowBytes (k < 2) with activation b of p.
// Each activation's block is loaded once for both rows, and the chains of
// row k (fma(float32(sumi_b), d_w·d_b, sum_b) block by block,
// dotQ4_0Generic) run in the lanes of one vector, V0 for row 0 and V4 for
// row 1 (lane b = activation b): per block four pairwise additions and one
// vector multiply-add per row, where the kernels of one row reduce each
// activation's sums alone and run four scalar chains.
// Registers: R0, R6 the rows, R7, R8 their scale bits, R1…R4 and R11…R14
// the activations' quants and scales (ACTS4_QS_D), R20 blocks left; V6, V7
// and V8, V9 the rows' quants minus 8, V2, V3, V10…V15 the activations'
// quants, V16 their scales; V20…V23 and V24…V27 the sums of row 0 and 1
// with each activation.

// Q4_0_PAIR_SDOT(acc, lo, hi, alo, ahi) sets V(acc) to four partial sums of
// a row's block (its quants V(lo), V(hi)) with an activation's (V(alo),
// V(ahi)).
#define Q4_0_PAIR_SDOT(acc, lo, hi, alo, ahi) \
	ZERO(acc); \
	SDOT(acc, lo, alo); \
	SDOT(acc, hi, ahi)

// Q4_0_PAIR_NEON is Q4_0_PAIR_SDOT with 16-bit products (|p| ≤ 1024, four
// summed per 16-bit lane), their lanes summed in pairs widening to 32 bits.
// Clobbers V5, V17, V18, V19.
#define Q4_0_PAIR_NEON(acc, lo, hi, alo, ahi) \
	SMULL_B(5, lo, alo); \
	SMULL2_B(17, lo, alo); \
	SMULL_B(18, hi, ahi); \
	SMULL2_B(19, hi, ahi); \
	ADD_H(5, 5, 17); \
	ADD_H(18, 18, 19); \
	ADD_H(5, 5, 18); \
	SADDLP_H(acc, 5)

// Q4_0_ROWS2_ACTS4_DOT is the body of the kernels (R6 the row bytes on
// entry, then row 1), PAIR Q4_0_PAIR_SDOT or Q4_0_PAIR_NEON.
#define Q4_0_ROWS2_ACTS4_DOT(PAIR) \
	ADD  R0, R6, R6; \
	ZERO(0); \
	ZERO(4); \
	Q4_0_CONSTS; \
	ACTS4_QS_D; \
loop: \
	Q4_0_ROW_LOAD(R0, R7); \
	Q4_0_ROW_LOAD_TO(R6, R8, V8, V9); \
	VLD1.P  32(R1), [V2.B16, V3.B16]; \
	VLD1.P  32(R2), [V10.B16, V11.B16]; \
	VLD1.P  32(R3), [V12.B16, V13.B16]; \
	VLD1.P  32(R4), [V14.B16, V15.B16]; \
	FMOVS.P 4(R11), F16; \
	FMOVS.P 4(R12), F17; \
	FMOVS.P 4(R13), F18; \
	FMOVS.P 4(R14), F19; \
	VMOV    V17.S[0], V16.S[1]; \
	VMOV    V18.S[0], V16.S[2]; \
	VMOV    V19.S[0], V16.S[3]; \
	PAIR(20, 6, 7, 2, 3); \
	PAIR(21, 6, 7, 10, 11); \
	PAIR(22, 6, 7, 12, 13); \
	PAIR(23, 6, 7, 14, 15); \
	PAIR(24, 8, 9, 2, 3); \
	PAIR(25, 8, 9, 10, 11); \
	PAIR(26, 8, 9, 12, 13); \
	PAIR(27, 8, 9, 14, 15); \
	ADDP_S(20, 20, 21); \
	ADDP_S(22, 22, 23); \
	ADDP_S(20, 20, 22); \
	ADDP_S(24, 24, 25); \
	ADDP_S(26, 26, 27); \
	ADDP_S(24, 24, 26); \
	SCVTF_S(20, 20); \
	SCVTF_S(24, 24); \
	FMOVS   R7, F28; \
	FCVTHS  F28, F28; \
	FMUL_SE(29, 16, 28, 0); \
	VFMLA   V20.S4, V29.S4, V0.S4; \
	FMOVS   R8, F28; \
	FCVTHS  F28, F28; \
	FMUL_SE(29, 16, 28, 0); \
	VFMLA   V24.S4, V29.S4, V4.S4; \
	SUBS    $1, R20, R20; \
	BNE     loop; \
	VST1.P  [V0.S4], 16(R22); \
	VST1    [V4.S4], (R22)

// func dotQ4_0Rows2Acts4SDOT(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[8]float32)
TEXT ·dotQ4_0Rows2Acts4SDOT(SB), NOSPLIT, $0-40
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R6
	MOVD p+16(FP), R23
	MOVD nb+24(FP), R20
	MOVD out+32(FP), R22
	Q4_0_ROWS2_ACTS4_DOT(Q4_0_PAIR_SDOT)
	RET

// func dotQ4_0Rows2Acts4NEON(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[8]float32)
TEXT ·dotQ4_0Rows2Acts4NEON(SB), NOSPLIT, $0-40
	MOVD w+0(FP), R0
	MOVD rowBytes+8(FP), R6
	MOVD p+16(FP), R23
	MOVD nb+24(FP), R20
	MOVD out+32(FP), R22
	Q4_0_ROWS2_ACTS4_DOT(Q4_0_PAIR_NEON)
	RET
