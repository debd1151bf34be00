//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// GELUMul, MulF32 and MulAddF32 (gelu.go) for arm64 with NEON, with the
// float32 operations of the portable loops: each product rounded on its own
// (FMUL, then FADD; no FMLA).

// TABLE4 sets the register d to the table entries (table at R3) of the four
// halves in the register h, packed as h packs them:
// d = t[h0] | t[h1]<<16 | t[h2]<<32 | t[h3]<<48. Clobbers a, b and c.
#define TABLE4(h, d, a, b, c) \
	UBFX  $0, h, $16, d; \
	UBFX  $16, h, $16, a; \
	UBFX  $32, h, $16, b; \
	LSR   $48, h, c; \
	MOVHU (R3)(d<<1), d; \
	MOVHU (R3)(a<<1), a; \
	MOVHU (R3)(b<<1), b; \
	MOVHU (R3)(c<<1), c; \
	ORR   a<<16, d, d; \
	ORR   b<<32, d, d; \
	ORR   c<<48, d, d

// func geluMulNEON(gate, up *float32, t *[1 << 16]uint16, n int)
//
// Eight values x of gate at a time (V0, V1): the halves h = FCVTN(x) (round
// to nearest even, the FPCR default, as FP32ToFP16, NaNs included) moved to
// two general registers, the eight table entries t[h] loaded one by one
// (NEON has no gather) and packed back, widened by FCVTL (exact, as
// FP16ToFP32), x itself where x ≥ 10, times up, and +0 where x ≤ −10. A NaN
// x is neither, so it takes the table's entry at its half, as in the
// portable loop. V29 = 0, V30 = 10, V31 = −10.
TEXT ·geluMulNEON(SB), NOSPLIT, $0-32
	MOVD gate+0(FP), R0
	MOVD up+8(FP), R1
	MOVD t+16(FP), R3
	MOVD n+24(FP), R2
	LSR  $3, R2, R2
	ZERO(29)
	MOVW $0x41200000, R4
	VDUP R4, V30.S4
	MOVW $0xc1200000, R4
	VDUP R4, V31.S4

geluloop:
	VLD1  (R0), [V0.S4, V1.S4]
	FCVTN_H(2, 0)
	FCVTN_H(3, 1)
	FMOVD F2, R4
	FMOVD F3, R9
	TABLE4(R4, R5, R6, R7, R8)
	TABLE4(R9, R10, R11, R12, R13)
	FMOVD R5, F4
	FMOVD R10, F5
	FCVTL_H(4, 4)
	FCVTL_H(5, 5)
	FCMGE_S(6, 0, 30)              // x ≥ 10
	FCMGE_S(7, 1, 30)
	VBIT   V6.B16, V0.B16, V4.B16
	VBIT   V7.B16, V1.B16, V5.B16
	VLD1.P 32(R1), [V16.S4, V17.S4]
	FMUL_S(4, 4, 16)
	FMUL_S(5, 5, 17)
	FCMGE_S(6, 31, 0)              // −10 ≥ x
	FCMGE_S(7, 31, 1)
	VBIT   V6.B16, V29.B16, V4.B16
	VBIT   V7.B16, V29.B16, V5.B16
	VST1.P [V4.S4, V5.S4], 32(R0)
	SUBS   $1, R2, R2
	BNE    geluloop
	RET

// MUL_LOOP is the body of mulNEON and mulAddNEON: dst = a·b for the R3
// values (a multiple of four) at R1 and R2 into R0, sixteen values at a time
// (V0…V3), then four at a time (V0), with add16 or add4 applied to the
// products before they are stored. Each value is read before it is written,
// so dst may be a or b.
#define MUL_LOOP(add16, add4) \
loop16: \
	CMP    $16, R3; \
	BLT    loop4; \
	VLD1.P 64(R1), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	VLD1.P 64(R2), [V4.S4, V5.S4, V6.S4, V7.S4]; \
	FMUL_S(0, 0, 4); \
	FMUL_S(1, 1, 5); \
	FMUL_S(2, 2, 6); \
	FMUL_S(3, 3, 7); \
	add16; \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0); \
	SUB    $16, R3, R3; \
	B      loop16; \
loop4: \
	CBZ    R3, done; \
	VLD1.P 16(R1), [V0.S4]; \
	VLD1.P 16(R2), [V4.S4]; \
	FMUL_S(0, 0, 4); \
	add4; \
	VST1.P [V0.S4], 16(R0); \
	SUB    $4, R3, R3; \
	B      loop4; \
done: \
	RET

// The step after the products: none for MulF32, dst added for MulAddF32
// (dst + product, the product already rounded).
#define NO_ADD
#define ADD_DST16 \
	VLD1 (R0), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	FADD_S(0, 16, 0); \
	FADD_S(1, 17, 1); \
	FADD_S(2, 18, 2); \
	FADD_S(3, 19, 3)
#define ADD_DST4 \
	VLD1 (R0), [V16.S4]; \
	FADD_S(0, 16, 0)

// func mulNEON(dst, a, b *float32, n int)
TEXT ·mulNEON(SB), NOSPLIT, $0-32
	MOVD dst+0(FP), R0
	MOVD a+8(FP), R1
	MOVD b+16(FP), R2
	MOVD n+24(FP), R3
	MUL_LOOP(NO_ADD, NO_ADD)

// func mulAddNEON(dst, a, b *float32, n int)
TEXT ·mulAddNEON(SB), NOSPLIT, $0-32
	MOVD dst+0(FP), R0
	MOVD a+8(FP), R1
	MOVD b+16(FP), R2
	MOVD n+24(FP), R3
	MUL_LOOP(ADD_DST16, ADD_DST4)
