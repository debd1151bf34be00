//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// The Q8_0 KV cache's weighted values (see axpysQ8_0Generic) for arm64 with
// NEON.

// Q8_AXPY8 adds to V(a0) and V(a1) the eight quants sign-extended to 16 bits
// in V(h), converted to float32, times the scale in V30.S[0] (exact: 8-bit
// quants times a half), times alpha in V31.S[0] (rounded), as
// axpysQ8_0Generic does value by value (V6, V7 clobbered).
#define Q8_AXPY8(h, a0, a1) \
	SXTL_H(6, h); \
	SXTL2_H(7, h); \
	SCVTF_S(6, 6); \
	SCVTF_S(7, 7); \
	FMUL_SE(6, 6, 30, 0); \
	FMUL_SE(7, 7, 30, 0); \
	FMUL_SE(6, 6, 31, 0); \
	FMUL_SE(7, 7, 31, 0); \
	FADD_S(a0, a0, 6); \
	FADD_S(a1, a1, 7)

// func axpysQ8_0NEON(y, alpha *float32, x *byte, stride, nb, keys int)
//
// y one block of 32 values at a time in V16…V23, updated by every row in
// turn (row t at x + t·stride, weight alpha[t]) before it is stored: the
// same operations on each value, in the same order, as axpysQ8_0Generic.
TEXT ·axpysQ8_0NEON(SB), NOSPLIT, $0-48
	MOVD y+0(FP), R0
	MOVD alpha+8(FP), R1
	MOVD x+16(FP), R2
	MOVD stride+24(FP), R3
	MOVD nb+32(FP), R4
	MOVD keys+40(FP), R5

q8block:
	VLD1 (R0), [V16.S4, V17.S4, V18.S4, V19.S4]
	ADD  $64, R0, R10
	VLD1 (R10), [V20.S4, V21.S4, V22.S4, V23.S4]
	MOVD R1, R6
	MOVD R2, R7
	MOVD R5, R9

q8row:
	FMOVS.P 4(R6), F31
	MOVHU   (R7), R11
	FMOVS   R11, F30
	FCVTHS  F30, F30
	ADD     $2, R7, R12
	VLD1    (R12), [V0.B16, V1.B16]
	SXTL_B(2, 0)
	SXTL2_B(3, 0)
	SXTL_B(4, 1)
	SXTL2_B(5, 1)
	Q8_AXPY8(2, 16, 17)
	Q8_AXPY8(3, 18, 19)
	Q8_AXPY8(4, 20, 21)
	Q8_AXPY8(5, 22, 23)
	ADD     R3, R7, R7
	SUBS    $1, R9, R9
	BNE     q8row

	VST1.P [V16.S4, V17.S4, V18.S4, V19.S4], 64(R0)
	VST1.P [V20.S4, V21.S4, V22.S4, V23.S4], 64(R0)
	ADD    $34, R2, R2
	SUBS   $1, R4, R4
	BNE    q8block
	RET
