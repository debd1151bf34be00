//go:build !purego

#include "textflag.h"
#include "neon_arm64.h"

// Float kernels (float.go, math.go). Every product is rounded before it is
// added (FMUL, then FADD; no FMA), as in the portable twins.

// ---------------------------------------------------------------------------
// Dots with eight accumulators: value i goes to lane i%8 (V0 lanes 0…3, V1
// lanes 4…7), the tail after the last group of eight to lane 0, and the lanes
// are added as ((s0+s1)+(s2+s3))+((s4+s5)+(s6+s7)).

// DOT8 multiplies one group of eight values Vx0, Vx1 by Vy0, Vy1 and adds the
// products to the accumulators.
#define DOT8(x0, x1, y0, y1) \
	FMUL_S(x0, x0, y0); \
	FMUL_S(x1, x1, y1); \
	FADD_S(0, 0, x0); \
	FADD_S(1, 1, x1)

// The second operand b of the dots, loaded from R1 into V6…V9 (16 values),
// V6, V7 (8 values) or F3 (one value), as float32 or as half precision.
#define B16_F32 VLD1.P 64(R1), [V6.S4, V7.S4, V8.S4, V9.S4]
#define B8_F32 VLD1.P 32(R1), [V6.S4, V7.S4]
#define B1_F32 FMOVS.P 4(R1), F3
#define B16_F16 \
	VLD1.P 32(R1), [V10.H8, V11.H8]; \
	FCVTL_H(6, 10); \
	FCVTL2_H(7, 10); \
	FCVTL_H(8, 11); \
	FCVTL2_H(9, 11)
#define B8_F16 \
	VLD1.P 16(R1), [V10.H8]; \
	FCVTL_H(6, 10); \
	FCVTL2_H(7, 10)
#define B1_F16 \
	MOVHU.P 2(R1), R4; \
	FMOVS   R4, F3; \
	FCVTHS  F3, F3

// DOT8_GROUPS adds the products of the whole groups of eight of the R2
// values of a (float32, at R0) and b (R1), loaded by b16 and b8, to the
// zeroed accumulators V0, V1, and goes on at the label tail, which it
// defines (once per function).
#define DOT8_GROUPS(b16, b8) \
	ZERO(0); \
	ZERO(1); \
	LSR  $4, R2, R3; \
	CBZ  R3, eight; \
loop: \
	VLD1.P 64(R0), [V2.S4, V3.S4, V4.S4, V5.S4]; \
	b16; \
	DOT8(2, 3, 6, 7); \
	DOT8(4, 5, 8, 9); \
	SUBS $1, R3, R3; \
	BNE  loop; \
eight: \
	TBZ  $3, R2, tail; \
	VLD1.P 32(R0), [V2.S4, V3.S4]; \
	b8; \
	DOT8(2, 3, 6, 7); \
tail:

// DOT8_SUM adds the eight lanes of V0, V1 into F0.
#define DOT8_SUM \
	FADDP_S(0, 0, 1); \
	FADDP_S(0, 0, 0); \
	FADDP_S1(0, 0)

// DOT8_FUNC is the body of a dot of the R2 values of a (float32, at R0) and
// b (R1), loaded by b16, b8 and b1, leaving the result in F0. The tail is
// summed in F10, a copy of lane 0, and put back into lane 0.
#define DOT8_FUNC(b16, b8, b1) \
	DOT8_GROUPS(b16, b8) \
	ANDS  $7, R2, R3; \
	BEQ   sum; \
	FMOVS F0, F10; \
tailloop: \
	FMOVS.P 4(R0), F2; \
	b1; \
	FMULS   F3, F2, F2; \
	FADDS   F2, F10, F10; \
	SUBS    $1, R3, R3; \
	BNE     tailloop; \
	VMOV    V10.S[0], V0.S[0]; \
sum: \
	DOT8_SUM

// func dotF32NEON(a, b *float32, n int) float32
TEXT ·dotF32NEON(SB), NOSPLIT, $0-28
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD n+16(FP), R2
	DOT8_FUNC(B16_F32, B8_F32, B1_F32)
	FMOVS F0, ret+24(FP)
	RET

// func dotF32F16NEON(a *float32, b *uint16, n int) float32
TEXT ·dotF32F16NEON(SB), NOSPLIT, $0-28
	MOVD a+0(FP), R0
	MOVD b+8(FP), R1
	MOVD n+16(FP), R2
	DOT8_FUNC(B16_F16, B8_F16, B1_F16)
	FMOVS F0, ret+24(FP)
	RET

// AXPY_GROUPS adds V31 times the whole groups of eight of the R2
// half-precision values at R1 to the float32 values at R0 (R3 clobbered),
// and goes on at the label tail, which it defines (once per function).
#define AXPY_GROUPS \
	LSR    $4, R2, R3; \
	CBZ    R3, eight; \
loop: \
	VLD1   (R0), [V0.S4, V1.S4, V2.S4, V3.S4]; \
	VLD1.P 32(R1), [V4.H8, V5.H8]; \
	FCVTL_H(6, 4); \
	FCVTL2_H(7, 4); \
	FCVTL_H(8, 5); \
	FCVTL2_H(9, 5); \
	FMUL_S(6, 31, 6); \
	FMUL_S(7, 31, 7); \
	FMUL_S(8, 31, 8); \
	FMUL_S(9, 31, 9); \
	FADD_S(0, 0, 6); \
	FADD_S(1, 1, 7); \
	FADD_S(2, 2, 8); \
	FADD_S(3, 3, 9); \
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0); \
	SUBS   $1, R3, R3; \
	BNE    loop; \
eight: \
	TBZ    $3, R2, tail; \
	VLD1   (R0), [V0.S4, V1.S4]; \
	VLD1.P 16(R1), [V4.H8]; \
	FCVTL_H(6, 4); \
	FCVTL2_H(7, 4); \
	FMUL_S(6, 31, 6); \
	FMUL_S(7, 31, 7); \
	FADD_S(0, 0, 6); \
	FADD_S(1, 1, 7); \
	VST1.P [V0.S4, V1.S4], 32(R0); \
tail:

// func axpyF32F16NEON(y *float32, alpha float32, x *uint16, n int)
TEXT ·axpyF32F16NEON(SB), NOSPLIT, $0-32
	MOVD  y+0(FP), R0
	FMOVS alpha+8(FP), F31
	MOVD  x+16(FP), R1
	MOVD  n+24(FP), R2
	VDUP  V31.S[0], V31.S4
	AXPY_GROUPS
	ANDS $7, R2, R3
	BEQ  axpydone

axpytailloop:
	FMOVS   (R0), F0
	MOVHU.P 2(R1), R4
	FMOVS   R4, F1
	FCVTHS  F1, F1
	FMULS   F1, F31, F1
	FADDS   F1, F0, F0
	FMOVS.P F0, 4(R0)
	SUBS    $1, R3, R3
	BNE     axpytailloop

axpydone:
	RET

// func dotsF32F16NEON(out, a *float32, b *uint16, stride, n, keys int)
//
// Each row as dotF32F16NEON (n a multiple of 8: no tail), one after another.
TEXT ·dotsF32F16NEON(SB), NOSPLIT, $0-48
	MOVD out+0(FP), R5
	MOVD a+8(FP), R6
	MOVD b+16(FP), R7
	MOVD stride+24(FP), R8
	LSL  $1, R8, R8        // row stride in bytes
	MOVD n+32(FP), R2
	MOVD keys+40(FP), R9

dotsrow:
	MOVD R6, R0
	MOVD R7, R1
	DOT8_GROUPS(B16_F16, B8_F16)
	DOT8_SUM
	FMOVS.P F0, 4(R5)
	ADD     R8, R7, R7
	SUBS    $1, R9, R9
	BNE     dotsrow
	RET

// func axpysF32F16NEON(y, alpha *float32, x *uint16, stride, n, keys int)
//
// Each row as axpyF32F16NEON (n a multiple of 8: no tail), one after another.
TEXT ·axpysF32F16NEON(SB), NOSPLIT, $0-48
	MOVD y+0(FP), R6
	MOVD alpha+8(FP), R5
	MOVD x+16(FP), R7
	MOVD stride+24(FP), R8
	LSL  $1, R8, R8        // row stride in bytes
	MOVD n+32(FP), R2
	MOVD keys+40(FP), R9

axpysrow:
	FMOVS.P 4(R5), F31
	VDUP    V31.S[0], V31.S4
	MOVD    R6, R0
	MOVD    R7, R1
	AXPY_GROUPS
	ADD  R8, R7, R7
	SUBS $1, R9, R9
	BNE  axpysrow
	RET

// ---------------------------------------------------------------------------
// F16 weights (see dotF16Generic): 64 accumulators, lane i%64 of each whole
// group of 64 in V16…V31 (lanes 4r…4r+3 in V(16+r)), reduced as
// (acc[l]+acc[32+l]) + (acc[16+l]+acc[48+l]) and hsum16; the tail is added in
// float64.

// F16_16 multiplies the next 16 halves at R0 by the next 16 floats at R1 and
// adds the products to V(a)…V(a+3).
#define F16_16(a) \
	VLD1.P 32(R0), [V0.H8, V1.H8]; \
	VLD1.P 64(R1), [V4.S4, V5.S4, V6.S4, V7.S4]; \
	FCVTL_H(2, 0); \
	FCVTL2_H(3, 0); \
	FCVTL_H(8, 1); \
	FCVTL2_H(9, 1); \
	FMUL_S(2, 2, 4); \
	FMUL_S(3, 3, 5); \
	FMUL_S(8, 8, 6); \
	FMUL_S(9, 9, 7); \
	FADD_S(a, a, 2); \
	FADD_S(a+1, a+1, 3); \
	FADD_S(a+2, a+2, 8); \
	FADD_S(a+3, a+3, 9)

// F16_V sets V(16+r) to (acc[l]+acc[32+l]) + (acc[16+l]+acc[48+l]) for the
// lanes l = 4r…4r+3.
#define F16_V(r) \
	FADD_S(16+(r), 16+(r), 24+(r)); \
	FADD_S(20+(r), 20+(r), 28+(r)); \
	FADD_S(16+(r), 16+(r), 20+(r))

// func dotF16NEON(w *byte, x *float32, n int) float32
TEXT ·dotF16NEON(SB), NOSPLIT, $0-28
	MOVD w+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	ZERO(16)
	ZERO(17)
	ZERO(18)
	ZERO(19)
	ZERO(20)
	ZERO(21)
	ZERO(22)
	ZERO(23)
	ZERO(24)
	ZERO(25)
	ZERO(26)
	ZERO(27)
	ZERO(28)
	ZERO(29)
	ZERO(30)
	ZERO(31)
	LSR  $6, R2, R3
	CBZ  R3, f16wreduce

f16wloop:
	F16_16(16)
	F16_16(20)
	F16_16(24)
	F16_16(28)
	SUBS $1, R3, R3
	BNE  f16wloop

f16wreduce:
	F16_V(0)
	F16_V(1)
	F16_V(2)
	F16_V(3)
	// hsum16 of v = V16…V19: h = (v0+v2, v1+v3), then as hsum8.
	FADD_S(16, 16, 18)
	FADD_S(17, 17, 19)
	HSUM8(16, 17)
	FCVTSD F16, F16
	ANDS   $63, R2, R3
	BEQ    f16wdone

f16wtail:
	MOVHU.P 2(R0), R4
	FMOVS   R4, F1
	FCVTHS  F1, F1
	FMOVS.P 4(R1), F2
	FMULS   F2, F1, F1
	FCVTSD  F1, F1
	FADDD   F1, F16, F16
	SUBS    $1, R3, R3
	BNE     f16wtail

f16wdone:
	FCVTDS F16, F0
	FMOVS  F0, ret+24(FP)
	RET

// ---------------------------------------------------------------------------
// SwiGLU. The constants of expApprox (math.go), four copies each, in the
// order of V16…V30 below.
DATA expConsts<>+0(SB)/8, $0x8000000080000000
DATA expConsts<>+8(SB)/8, $0x8000000080000000
DATA expConsts<>+16(SB)/8, $0xc2ac0000c2ac0000
DATA expConsts<>+24(SB)/8, $0xc2ac0000c2ac0000
DATA expConsts<>+32(SB)/8, $0x42b0000042b00000
DATA expConsts<>+40(SB)/8, $0x42b0000042b00000
DATA expConsts<>+48(SB)/8, $0x4b4000004b400000
DATA expConsts<>+56(SB)/8, $0x4b4000004b400000
DATA expConsts<>+64(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expConsts<>+72(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expConsts<>+80(SB)/8, $0x3f3180003f318000
DATA expConsts<>+88(SB)/8, $0x3f3180003f318000
DATA expConsts<>+96(SB)/8, $0xb95e8083b95e8083
DATA expConsts<>+104(SB)/8, $0xb95e8083b95e8083
DATA expConsts<>+112(SB)/8, $0x3950696739506967
DATA expConsts<>+120(SB)/8, $0x3950696739506967
DATA expConsts<>+128(SB)/8, $0x3ab743ce3ab743ce
DATA expConsts<>+136(SB)/8, $0x3ab743ce3ab743ce
DATA expConsts<>+144(SB)/8, $0x3c0889083c088908
DATA expConsts<>+152(SB)/8, $0x3c0889083c088908
DATA expConsts<>+160(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expConsts<>+168(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expConsts<>+176(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expConsts<>+184(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expConsts<>+192(SB)/8, $0x3f0000003f000000
DATA expConsts<>+200(SB)/8, $0x3f0000003f000000
DATA expConsts<>+208(SB)/8, $0x3f8000003f800000
DATA expConsts<>+216(SB)/8, $0x3f8000003f800000
DATA expConsts<>+224(SB)/8, $0x7f8000007f800000
DATA expConsts<>+232(SB)/8, $0x7f8000007f800000
GLOBL expConsts<>(SB), RODATA|NOPTR, $240

// V3 = expApprox of the four float32 in V2, with the constants in V16…V30
// (EXP_CONSTS). The fused multiply-adds add to their destination, so the
// constant added is copied there first (VORR). Clobbers V2, V4…V8.
#define EXP4 \
	FCMGT_S(3, 2, 18); \
	FMAX_S(2, 17, 2); \
	VORR   V19.B16, V19.B16, V4.B16; \
	FMLA_S(4, 2, 20); \
	FSUB_S(5, 4, 19); \
	FMLS_S(2, 5, 21); \
	FMLS_S(2, 5, 22); \
	FMUL_S(6, 2, 2); \
	VORR   V24.B16, V24.B16, V7.B16; \
	FMLA_S(7, 23, 2); \
	VORR   V25.B16, V25.B16, V8.B16; \
	FMLA_S(8, 7, 2); \
	VORR   V26.B16, V26.B16, V7.B16; \
	FMLA_S(7, 8, 2); \
	VORR   V27.B16, V27.B16, V8.B16; \
	FMLA_S(8, 7, 2); \
	VORR   V28.B16, V28.B16, V7.B16; \
	FMLA_S(7, 8, 2); \
	FMLA_S(2, 7, 6); \
	FADD_S(2, 2, 29); \
	VSHL   $23, V4.S4, V4.S4; \
	VADD   V4.S4, V2.S4, V2.S4; \
	VBSL   V2.B16, V30.B16, V3.B16

// Loads the constants of expApprox into V16…V30, clobbering R3.
#define EXP_CONSTS \
	MOVD   $expConsts<>(SB), R3; \
	VLD1.P 64(R3), [V16.S4, V17.S4, V18.S4, V19.S4]; \
	VLD1.P 64(R3), [V20.S4, V21.S4, V22.S4, V23.S4]; \
	VLD1.P 64(R3), [V24.S4, V25.S4, V26.S4, V27.S4]; \
	VLD1   (R3), [V28.S4, V29.S4, V30.S4]

// func swiGLUNEON(gate, up *float32, n int)
//
// gate[i] = SiLU(gate[i])·up[i] for n values (a multiple of 4), four at a
// time, with exactly the float32 and integer operations of SiLU and
// expApprox. V16 sign bit, V17 expLo, V18 expHi, V19 expShift, V20 log₂e,
// V21 ln2 high, V22 ln2 low, V23…V28 the polynomial, V29 1, V30 +Inf. The
// fused multiply-adds add to their destination, so the constant added is
// copied there first (VORR).
TEXT ·swiGLUNEON(SB), NOSPLIT, $0-24
	MOVD gate+0(FP), R0
	MOVD up+8(FP), R1
	MOVD n+16(FP), R2
	LSR  $2, R2, R2
	EXP_CONSTS

swigluLoop:
	VLD1   (R0), [V0.S4]
	VLD1.P 16(R1), [V1.S4]
	VEOR   V16.B16, V0.B16, V2.B16
	EXP4
	FADD_S(3, 3, 29)
	FDIV_S(0, 0, 3)
	FMUL_S(0, 0, 1)
	VST1.P [V0.S4], 16(R0)
	SUBS   $1, R2, R2
	BNE    swigluLoop
	RET

// func expSubNEON(x *float32, m float32, n int)
//
// x[i] = expApprox(x[i] − m) for n values (a multiple of 4), four at a time.
TEXT ·expSubNEON(SB), NOSPLIT, $0-24
	MOVD  x+0(FP), R0
	FMOVS m+8(FP), F9
	MOVD  n+16(FP), R2
	LSR   $2, R2, R2
	VDUP  V9.S[0], V9.S4
	EXP_CONSTS

expSubLoop:
	VLD1   (R0), [V0.S4]
	FSUB_S(2, 0, 9)
	EXP4
	VST1.P [V3.S4], 16(R0)
	SUBS   $1, R2, R2
	BNE    expSubLoop
	RET

// func fp32ToFP16NEON(dst *uint16, src *float32, n int)
TEXT ·fp32ToFP16NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2
	LSR  $3, R2, R2

tof16loop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	FCVTN_H(2, 0)
	FCVTN2_H(2, 1)
	VST1.P [V2.H8], 16(R0)
	SUBS   $1, R2, R2
	BNE    tof16loop
	RET

// func roundFP16NEON(dst, src *float32, n int)
//
// dst[i] = src[i] rounded to half precision and back for n values (a
// multiple of 4): FCVTN rounding as the FPCR says, to nearest even under Go
// (FP32ToFP16's bits, NaNs included, as in fp32ToFP16NEON), then FCVTL
// (exact, as FP16ToFP32; the NaNs FCVTN gives are quiet, so they keep their
// payload), 16 values at a time, then 4. Each group of four goes through a
// register of its own (FCVTN and FCVTL of the low half, not FCVTN2 and
// FCVTL2 into and out of a shared one), so no conversion waits for another.
// Each block is read before it is written, so dst may be src.
TEXT ·roundFP16NEON(SB), NOSPLIT, $0-24
	MOVD dst+0(FP), R0
	MOVD src+8(FP), R1
	MOVD n+16(FP), R2

round16:
	CMP    $16, R2
	BLT    round4
	VLD1.P 64(R1), [V0.S4, V1.S4, V2.S4, V3.S4]
	FCVTN_H(4, 0)
	FCVTN_H(5, 1)
	FCVTN_H(6, 2)
	FCVTN_H(7, 3)
	FCVTL_H(0, 4)
	FCVTL_H(1, 5)
	FCVTL_H(2, 6)
	FCVTL_H(3, 7)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUB    $16, R2, R2
	B      round16

round4:
	CBZ    R2, rounddone
	VLD1.P 16(R1), [V0.S4]
	FCVTN_H(4, 0)
	FCVTL_H(0, 4)
	VST1.P [V0.S4], 16(R0)
	SUB    $4, R2, R2
	B      round4

rounddone:
	RET

// func sumSquaresNEON(lanes *[8]float64, x *float32, n int)
//
// Lanes 0, 1 in V0, 2, 3 in V1, 4, 5 in V2, 6, 7 in V3.
TEXT ·sumSquaresNEON(SB), NOSPLIT, $0-24
	MOVD lanes+0(FP), R0
	MOVD x+8(FP), R1
	MOVD n+16(FP), R2
	LSR  $3, R2, R2
	VLD1 (R0), [V0.D2, V1.D2, V2.D2, V3.D2]

sqloop:
	VLD1.P 32(R1), [V4.S4, V5.S4]
	FMUL_S(4, 4, 4)
	FMUL_S(5, 5, 5)
	FCVTL_S(6, 4)
	FCVTL2_S(7, 4)
	FCVTL_S(8, 5)
	FCVTL2_S(9, 5)
	FADD_D(0, 0, 6)
	FADD_D(1, 1, 7)
	FADD_D(2, 2, 8)
	FADD_D(3, 3, 9)
	SUBS   $1, R2, R2
	BNE    sqloop

	VST1 [V0.D2, V1.D2, V2.D2, V3.D2], (R0)
	RET

// func scaleF32NEON(x *float32, s float32, n int)
//
// Sixteen values at a time, then four.
TEXT ·scaleF32NEON(SB), NOSPLIT, $0-24
	MOVD  x+0(FP), R0
	FMOVS s+8(FP), F31
	MOVD  n+16(FP), R3
	VDUP  V31.S[0], V31.S4
	LSR   $4, R3, R4
	CBZ   R4, scalefour

scalesixteen:
	VLD1   (R0), [V0.S4, V1.S4, V2.S4, V3.S4]
	FMUL_S(0, 0, 31)
	FMUL_S(1, 1, 31)
	FMUL_S(2, 2, 31)
	FMUL_S(3, 3, 31)
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R0)
	SUBS   $1, R4, R4
	BNE    scalesixteen

scalefour:
	ANDS $15, R3, R4
	BEQ  scaledone
	LSR  $2, R4, R4

scalefourloop:
	VLD1   (R0), [V0.S4]
	FMUL_S(0, 0, 31)
	VST1.P [V0.S4], 16(R0)
	SUBS   $1, R4, R4
	BNE    scalefourloop

scaledone:
	RET

// func scaleMulNEON(out, x, weight *float32, scale float32, n int)
TEXT ·scaleMulNEON(SB), NOSPLIT, $0-40
	MOVD  out+0(FP), R0
	MOVD  x+8(FP), R1
	MOVD  weight+16(FP), R2
	FMOVS scale+24(FP), F31
	MOVD  n+32(FP), R3
	VDUP  V31.S[0], V31.S4
	LSR   $2, R3, R3

scalemulloop:
	VLD1.P 16(R1), [V0.S4]
	VLD1.P 16(R2), [V1.S4]
	FMUL_S(0, 0, 31)
	FMUL_S(0, 0, 1)
	VST1.P [V0.S4], 16(R0)
	SUBS   $1, R3, R3
	BNE    scalemulloop
	RET

// func ropeNeoxNEON(x *float32, nHeads, headDim int, cos, sin *float32, n, m int)
//
// Four pairs at a time: t = x1·s, u = x1·c (rounded), then x0' = −t + x0·c
// and x1' = u + x0·s, each one fused FMLA (rotatePair).
TEXT ·ropeNeoxNEON(SB), NOSPLIT, $0-56
	MOVD x+0(FP), R0
	MOVD nHeads+8(FP), R1
	MOVD headDim+16(FP), R2
	LSL  $2, R2, R2
	MOVD cos+24(FP), R3
	MOVD sin+32(FP), R4
	MOVD n+40(FP), R5
	LSL  $2, R5, R5
	MOVD m+48(FP), R6

ropeneoxhead:
	MOVD R0, R7
	ADD  R5, R0, R8
	MOVD R3, R9
	MOVD R4, R10
	MOVD R6, R11

ropeneoxpairs:
	VLD1   (R7), [V0.S4]
	VLD1   (R8), [V1.S4]
	VLD1.P 16(R9), [V2.S4]
	VLD1.P 16(R10), [V3.S4]
	FMUL_S(4, 1, 3)
	FMUL_S(5, 1, 2)
	FNEG_S(4, 4)
	FMLA_S(4, 0, 2)
	FMLA_S(5, 0, 3)
	VST1.P [V4.S4], 16(R7)
	VST1.P [V5.S4], 16(R8)
	SUBS   $4, R11, R11
	BNE    ropeneoxpairs

	ADD  R2, R0, R0
	SUBS $1, R1, R1
	BNE  ropeneoxhead
	RET
