//go:build !purego

#include "textflag.h"

// The Q8_0 KV cache's weighted values (see axpysQ8_0Generic) for amd64 with
// AVX2 and F16C.

// Q8_AXPY8 adds to acc the eight quants at r, converted to float32, times
// the scale in Y5 (exact: 8-bit quants times a half), times alpha in Y4
// (rounded), as axpysQ8_0Generic does value by value (Y6 clobbered).
#define Q8_AXPY8(r, acc) \
	VPMOVSXBD r, Y6; \
	VCVTDQ2PS Y6, Y6; \
	VMULPS    Y5, Y6, Y6; \
	VMULPS    Y4, Y6, Y6; \
	VADDPS    Y6, acc, acc

// func axpysQ8_0AVX2(y, alpha *float32, x *byte, stride, nb, keys int)
//
// y one block of 32 values at a time in Y0…Y3, updated by every row in turn
// (row t at x + t·stride, weight alpha[t]) before it is stored: the same
// operations on each value, in the same order, as axpysQ8_0Generic.
TEXT ·axpysQ8_0AVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ alpha+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ stride+24(FP), R9
	MOVQ nb+32(FP), R10
	MOVQ keys+40(FP), R11

q8block:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ    R8, AX
	MOVQ    SI, BX
	MOVQ    R11, CX

q8row:
	VBROADCASTSS (AX), Y4
	VPBROADCASTW (BX), X5
	VCVTPH2PS    X5, Y5
	Q8_AXPY8(2(BX), Y0)
	Q8_AXPY8(10(BX), Y1)
	Q8_AXPY8(18(BX), Y2)
	Q8_AXPY8(26(BX), Y3)
	ADDQ         $4, AX
	ADDQ         R9, BX
	DECQ         CX
	JNZ          q8row

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $34, SI
	DECQ    R10
	JNZ     q8block
	VZEROUPPER
	RET
