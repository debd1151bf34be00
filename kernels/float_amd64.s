//go:build !purego

#include "textflag.h"

// Float dot products and the FP16 KV cache kernels for amd64 with AVX2 and
// F16C. The float32 operations are those of the portable twins (float.go,
// math.go) in the same order, so that the results are bit-identical: products
// are rounded before they are added (no fused multiply-add where the twin has
// none), value i of the eight-accumulator dots goes to lane i%8 and the tail to
// lane 0.

// X0 = ((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7)) of lanes s0…s3 in X0 and s4…s7
// in X1, clobbering X1.
#define PAIRWISE8 \
	VHADDPS   X1, X0, X0; \
	VHADDPS   X0, X0, X0; \
	VMOVSHDUP X0, X1; \
	VADDSS    X1, X0, X0

// func dotF32AVX2(a, b *float32, n int) float32
TEXT ·dotF32AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	CMPQ   CX, $8
	JLT    f32Tail

f32Loop:
	VMOVUPS (SI), Y1
	VMULPS  (DI), Y1, Y1
	VADDPS  Y1, Y0, Y0
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	CMPQ    CX, $8
	JGE     f32Loop

f32Tail:
	VEXTRACTF128 $1, Y0, X1
	TESTQ        CX, CX
	JZ           f32Done

f32Loop1:
	VMOVSS (SI), X2
	VMULSS (DI), X2, X2
	VADDSS X2, X0, X0
	ADDQ   $4, SI
	ADDQ   $4, DI
	DECQ   CX
	JNZ    f32Loop1

f32Done:
	PAIRWISE8
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotF32F16AVX2(a *float32, b *uint16, n int) float32
TEXT ·dotF32F16AVX2(SB), NOSPLIT, $0-28
	MOVQ   a+0(FP), SI
	MOVQ   b+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	CMPQ   CX, $8
	JLT    f32f16Tail

f32f16Loop:
	VCVTPH2PS (DI), Y1
	VMULPS    (SI), Y1, Y1
	VADDPS    Y1, Y0, Y0
	ADDQ      $32, SI
	ADDQ      $16, DI
	SUBQ      $8, CX
	CMPQ      CX, $8
	JGE       f32f16Loop

f32f16Tail:
	VEXTRACTF128 $1, Y0, X1
	TESTQ        CX, CX
	JZ           f32f16Done

f32f16Loop1:
	MOVWLZX   (DI), AX
	VMOVD     AX, X2
	VCVTPH2PS X2, X2
	VMULSS    (SI), X2, X2
	VADDSS    X2, X0, X0
	ADDQ      $4, SI
	ADDQ      $2, DI
	DECQ      CX
	JNZ       f32f16Loop1

f32f16Done:
	PAIRWISE8
	VMOVSS X0, ret+24(FP)
	VZEROUPPER
	RET

// func axpyF32F16AVX2(y *float32, alpha float32, x *uint16, n int)
TEXT ·axpyF32F16AVX2(SB), NOSPLIT, $0-32
	MOVQ         y+0(FP), DI
	VBROADCASTSS alpha+8(FP), Y0
	MOVQ         x+16(FP), SI
	MOVQ         n+24(FP), CX
	CMPQ         CX, $16
	JLT          axpy8

axpyLoop16:
	VCVTPH2PS (SI), Y1
	VCVTPH2PS 16(SI), Y2
	VMULPS    Y0, Y1, Y1
	VMULPS    Y0, Y2, Y2
	VADDPS    (DI), Y1, Y1
	VADDPS    32(DI), Y2, Y2
	VMOVUPS   Y1, (DI)
	VMOVUPS   Y2, 32(DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	SUBQ      $16, CX
	CMPQ      CX, $16
	JGE       axpyLoop16

axpy8:
	CMPQ      CX, $8
	JLT       axpyTail
	VCVTPH2PS (SI), Y1
	VMULPS    Y0, Y1, Y1
	VADDPS    (DI), Y1, Y1
	VMOVUPS   Y1, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	SUBQ      $8, CX

axpyTail:
	TESTQ CX, CX
	JZ    axpyDone

axpyLoop1:
	MOVWLZX   (SI), AX
	VMOVD     AX, X1
	VCVTPH2PS X1, X1
	VMULSS    X0, X1, X1
	VADDSS    (DI), X1, X1
	VMOVSS    X1, (DI)
	ADDQ      $2, SI
	ADDQ      $4, DI
	DECQ      CX
	JNZ       axpyLoop1

axpyDone:
	VZEROUPPER
	RET

// HSUM8 sets lane 0 of x to the sum of the eight lanes of y (whose low half
// is x), added as PAIRWISE8 adds them, clobbering t.
#define HSUM8(y, x, t) \
	VEXTRACTF128 $1, y, t; \
	VHADDPS      t, x, x; \
	VHADDPS      x, x, x; \
	VMOVSHDUP    x, t; \
	VADDSS       t, x, x

// MULADD_F16 converts the eight half-precision values at r, multiplies them
// by Y4 and adds the products to acc (t clobbered).
#define MULADD_F16(r, acc, t) \
	VCVTPH2PS r, t; \
	VMULPS    Y4, t, t; \
	VADDPS    t, acc, acc

// func dotsF32F16AVX2(out, a *float32, b *uint16, stride, n, keys int)
//
// Rows four at a time (accumulators Y0…Y3), each row's lanes as in
// dotF32F16AVX2; then the rows left one at a time.
TEXT ·dotsF32F16AVX2(SB), NOSPLIT, $0-48
	MOVQ out+0(FP), DX
	MOVQ a+8(FP), R8
	MOVQ b+16(FP), DI
	MOVQ stride+24(FP), R9
	SHLQ $1, R9               // row stride in bytes
	MOVQ n+32(FP), R10
	MOVQ keys+40(FP), R11
	LEAQ (R9)(R9*2), R12      // three rows
	CMPQ R11, $4
	JLT  dotsOne

dotsFour:
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	MOVQ   R8, SI
	MOVQ   DI, BX
	MOVQ   R10, CX

dotsFourLoop:
	VMOVUPS (SI), Y4
	MULADD_F16((BX), Y0, Y5)
	MULADD_F16((BX)(R9*1), Y1, Y6)
	MULADD_F16((BX)(R9*2), Y2, Y7)
	MULADD_F16((BX)(R12*1), Y3, Y8)
	ADDQ    $32, SI
	ADDQ    $16, BX
	SUBQ    $8, CX
	JNZ     dotsFourLoop

	HSUM8(Y0, X0, X5)
	HSUM8(Y1, X1, X6)
	HSUM8(Y2, X2, X7)
	HSUM8(Y3, X3, X8)
	VMOVSS X0, (DX)
	VMOVSS X1, 4(DX)
	VMOVSS X2, 8(DX)
	VMOVSS X3, 12(DX)
	ADDQ   $16, DX
	LEAQ   (DI)(R9*4), DI
	SUBQ   $4, R11
	CMPQ   R11, $4
	JGE    dotsFour

dotsOne:
	TESTQ R11, R11
	JZ    dotsDone

dotsOneRow:
	VXORPS Y0, Y0, Y0
	MOVQ   R8, SI
	MOVQ   DI, BX
	MOVQ   R10, CX

dotsOneLoop:
	VMOVUPS (SI), Y4
	MULADD_F16((BX), Y0, Y5)
	ADDQ    $32, SI
	ADDQ    $16, BX
	SUBQ    $8, CX
	JNZ     dotsOneLoop

	HSUM8(Y0, X0, X5)
	VMOVSS X0, (DX)
	ADDQ   $4, DX
	ADDQ   R9, DI
	DECQ   R11
	JNZ    dotsOneRow

dotsDone:
	VZEROUPPER
	RET

// func axpysF32F16AVX2(y, alpha *float32, x *uint16, stride, n, keys int)
//
// y 32 values at a time in Y0…Y3 (then 8 at a time in Y0), each updated by
// every row in turn before it is stored: the same operations on each value,
// in the same order, as keys calls of axpyF32F16AVX2.
TEXT ·axpysF32F16AVX2(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ alpha+8(FP), R8
	MOVQ x+16(FP), SI
	MOVQ stride+24(FP), R9
	SHLQ $1, R9               // row stride in bytes
	MOVQ n+32(FP), R10
	MOVQ keys+40(FP), R11

axpys32:
	CMPQ    R10, $32
	JLT     axpys8
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	MOVQ    R8, AX
	MOVQ    SI, BX
	MOVQ    R11, CX

axpys32Loop:
	VBROADCASTSS (AX), Y4
	MULADD_F16((BX), Y0, Y5)
	MULADD_F16(16(BX), Y1, Y6)
	MULADD_F16(32(BX), Y2, Y7)
	MULADD_F16(48(BX), Y3, Y8)
	ADDQ         $4, AX
	ADDQ         R9, BX
	DECQ         CX
	JNZ          axpys32Loop

	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $64, SI
	SUBQ    $32, R10
	JMP     axpys32

axpys8:
	TESTQ   R10, R10
	JZ      axpysDone
	VMOVUPS (DI), Y0
	MOVQ    R8, AX
	MOVQ    SI, BX
	MOVQ    R11, CX

axpys8Loop:
	VBROADCASTSS (AX), Y4
	MULADD_F16((BX), Y0, Y5)
	ADDQ         $4, AX
	ADDQ         R9, BX
	DECQ         CX
	JNZ          axpys8Loop

	VMOVUPS Y0, (DI)
	ADDQ    $32, DI
	ADDQ    $16, SI
	SUBQ    $8, R10
	JMP     axpys8

axpysDone:
	VZEROUPPER
	RET

// func dotF16AVX2(w *byte, x *float32, n int) float32
//
// Sixty-four float32 lanes in Y0…Y7 (lane l of each whole group of 64 values
// in lane l%8 of Y(l/8)); then v = (Y0+Y4)+(Y2+Y6) and (Y1+Y5)+(Y3+Y7) for
// lanes 0…7 and 8…15, hsum16 of v, and the tail added in float64 (see
// dotF16Generic). The products are exact; they are still rounded separately.
TEXT ·dotF16AVX2(SB), NOSPLIT, $0-28
	MOVQ   w+0(FP), SI
	MOVQ   x+8(FP), DI
	MOVQ   n+16(FP), CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	CMPQ   CX, $64
	JLT    f16Reduce

f16Loop:
	VCVTPH2PS (SI), Y8
	VCVTPH2PS 16(SI), Y9
	VCVTPH2PS 32(SI), Y10
	VCVTPH2PS 48(SI), Y11
	VMULPS    (DI), Y8, Y8
	VMULPS    32(DI), Y9, Y9
	VMULPS    64(DI), Y10, Y10
	VMULPS    96(DI), Y11, Y11
	VADDPS    Y8, Y0, Y0
	VADDPS    Y9, Y1, Y1
	VADDPS    Y10, Y2, Y2
	VADDPS    Y11, Y3, Y3
	VCVTPH2PS 64(SI), Y8
	VCVTPH2PS 80(SI), Y9
	VCVTPH2PS 96(SI), Y10
	VCVTPH2PS 112(SI), Y11
	VMULPS    128(DI), Y8, Y8
	VMULPS    160(DI), Y9, Y9
	VMULPS    192(DI), Y10, Y10
	VMULPS    224(DI), Y11, Y11
	VADDPS    Y8, Y4, Y4
	VADDPS    Y9, Y5, Y5
	VADDPS    Y10, Y6, Y6
	VADDPS    Y11, Y7, Y7
	ADDQ      $128, SI
	ADDQ      $256, DI
	SUBQ      $64, CX
	CMPQ      CX, $64
	JGE       f16Loop

f16Reduce:
	VADDPS       Y4, Y0, Y0
	VADDPS       Y6, Y2, Y2
	VADDPS       Y2, Y0, Y0
	VADDPS       Y5, Y1, Y1
	VADDPS       Y7, Y3, Y3
	VADDPS       Y3, Y1, Y1
	VADDPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVHLPS     X0, X0, X1
	VADDPS       X1, X0, X0
	VMOVSHDUP    X0, X1
	VADDSS       X1, X0, X0
	VCVTSS2SD    X0, X0, X0
	TESTQ        CX, CX
	JZ           f16Done

f16Loop1:
	MOVWLZX   (SI), AX
	VMOVD     AX, X1
	VCVTPH2PS X1, X1
	VMULSS    (DI), X1, X1
	VCVTSS2SD X1, X1, X1
	VADDSD    X1, X0, X0
	ADDQ      $2, SI
	ADDQ      $4, DI
	DECQ      CX
	JNZ       f16Loop1

f16Done:
	VCVTSD2SS X0, X0, X0
	VMOVSS    X0, ret+24(FP)
	VZEROUPPER
	RET

// The constants of expApprox (math.go), eight copies each: expConsts<>+32·k
// is constant k of EXP_SIGN … EXP_INF below.
#define EXP_SIGN expConsts<>+0(SB)
#define EXP_LO expConsts<>+32(SB)
#define EXP_HI expConsts<>+64(SB)
#define EXP_SHIFT expConsts<>+96(SB)
#define EXP_LOG2E expConsts<>+128(SB)
#define EXP_LN2HI expConsts<>+160(SB)
#define EXP_LN2LO expConsts<>+192(SB)
#define EXP_C0 expConsts<>+224(SB)
#define EXP_C1 expConsts<>+256(SB)
#define EXP_C2 expConsts<>+288(SB)
#define EXP_C3 expConsts<>+320(SB)
#define EXP_C4 expConsts<>+352(SB)
#define EXP_C5 expConsts<>+384(SB)
#define EXP_ONE expConsts<>+416(SB)
#define EXP_INF expConsts<>+448(SB)
DATA expConsts<>+0(SB)/8, $0x8000000080000000
DATA expConsts<>+8(SB)/8, $0x8000000080000000
DATA expConsts<>+16(SB)/8, $0x8000000080000000
DATA expConsts<>+24(SB)/8, $0x8000000080000000
DATA expConsts<>+32(SB)/8, $0xc2ac0000c2ac0000
DATA expConsts<>+40(SB)/8, $0xc2ac0000c2ac0000
DATA expConsts<>+48(SB)/8, $0xc2ac0000c2ac0000
DATA expConsts<>+56(SB)/8, $0xc2ac0000c2ac0000
DATA expConsts<>+64(SB)/8, $0x42b0000042b00000
DATA expConsts<>+72(SB)/8, $0x42b0000042b00000
DATA expConsts<>+80(SB)/8, $0x42b0000042b00000
DATA expConsts<>+88(SB)/8, $0x42b0000042b00000
DATA expConsts<>+96(SB)/8, $0x4b4000004b400000
DATA expConsts<>+104(SB)/8, $0x4b4000004b400000
DATA expConsts<>+112(SB)/8, $0x4b4000004b400000
DATA expConsts<>+120(SB)/8, $0x4b4000004b400000
DATA expConsts<>+128(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expConsts<>+136(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expConsts<>+144(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expConsts<>+152(SB)/8, $0x3fb8aa3b3fb8aa3b
DATA expConsts<>+160(SB)/8, $0x3f3180003f318000
DATA expConsts<>+168(SB)/8, $0x3f3180003f318000
DATA expConsts<>+176(SB)/8, $0x3f3180003f318000
DATA expConsts<>+184(SB)/8, $0x3f3180003f318000
DATA expConsts<>+192(SB)/8, $0xb95e8083b95e8083
DATA expConsts<>+200(SB)/8, $0xb95e8083b95e8083
DATA expConsts<>+208(SB)/8, $0xb95e8083b95e8083
DATA expConsts<>+216(SB)/8, $0xb95e8083b95e8083
DATA expConsts<>+224(SB)/8, $0x3950696739506967
DATA expConsts<>+232(SB)/8, $0x3950696739506967
DATA expConsts<>+240(SB)/8, $0x3950696739506967
DATA expConsts<>+248(SB)/8, $0x3950696739506967
DATA expConsts<>+256(SB)/8, $0x3ab743ce3ab743ce
DATA expConsts<>+264(SB)/8, $0x3ab743ce3ab743ce
DATA expConsts<>+272(SB)/8, $0x3ab743ce3ab743ce
DATA expConsts<>+280(SB)/8, $0x3ab743ce3ab743ce
DATA expConsts<>+288(SB)/8, $0x3c0889083c088908
DATA expConsts<>+296(SB)/8, $0x3c0889083c088908
DATA expConsts<>+304(SB)/8, $0x3c0889083c088908
DATA expConsts<>+312(SB)/8, $0x3c0889083c088908
DATA expConsts<>+320(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expConsts<>+328(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expConsts<>+336(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expConsts<>+344(SB)/8, $0x3d2aa9c13d2aa9c1
DATA expConsts<>+352(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expConsts<>+360(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expConsts<>+368(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expConsts<>+376(SB)/8, $0x3e2aaaaa3e2aaaaa
DATA expConsts<>+384(SB)/8, $0x3f0000003f000000
DATA expConsts<>+392(SB)/8, $0x3f0000003f000000
DATA expConsts<>+400(SB)/8, $0x3f0000003f000000
DATA expConsts<>+408(SB)/8, $0x3f0000003f000000
DATA expConsts<>+416(SB)/8, $0x3f8000003f800000
DATA expConsts<>+424(SB)/8, $0x3f8000003f800000
DATA expConsts<>+432(SB)/8, $0x3f8000003f800000
DATA expConsts<>+440(SB)/8, $0x3f8000003f800000
DATA expConsts<>+448(SB)/8, $0x7f8000007f800000
DATA expConsts<>+456(SB)/8, $0x7f8000007f800000
DATA expConsts<>+464(SB)/8, $0x7f8000007f800000
DATA expConsts<>+472(SB)/8, $0x7f8000007f800000
GLOBL expConsts<>(SB), RODATA|NOPTR, $480

// Y5 = expApprox of the eight float32 in Y1, with the constants loaded by
// EXP_CONSTS. Clobbers Y1…Y4, Y6.
#define EXP8 \
	VCMPPS       $0x1e, Y11, Y1, Y6; \
	VMAXPS       Y1, Y10, Y1; \
	VMOVAPS      Y12, Y2; \
	VFMADD231PS  Y13, Y1, Y2; \
	VSUBPS       Y12, Y2, Y3; \
	VFNMADD231PS EXP_LN2HI, Y3, Y1; \
	VFNMADD231PS EXP_LN2LO, Y3, Y1; \
	VMULPS       Y1, Y1, Y4; \
	VMOVUPS      EXP_C0, Y5; \
	VFMADD213PS  EXP_C1, Y1, Y5; \
	VFMADD213PS  EXP_C2, Y1, Y5; \
	VFMADD213PS  EXP_C3, Y1, Y5; \
	VFMADD213PS  EXP_C4, Y1, Y5; \
	VFMADD213PS  EXP_C5, Y1, Y5; \
	VFMADD213PS  Y1, Y4, Y5; \
	VADDPS       Y14, Y5, Y5; \
	VPSLLD       $23, Y2, Y2; \
	VPADDD       Y2, Y5, Y5; \
	VBLENDVPS    Y6, Y15, Y5, Y5

// Y10 … Y15 = expLo, expHi, expShift, log₂e, 1, +Inf (eight copies each).
#define EXP_CONSTS \
	VMOVUPS EXP_LO, Y10; \
	VMOVUPS EXP_HI, Y11; \
	VMOVUPS EXP_SHIFT, Y12; \
	VMOVUPS EXP_LOG2E, Y13; \
	VMOVUPS EXP_ONE, Y14; \
	VMOVUPS EXP_INF, Y15

// func swiGLUAVX2(gate, up *float32, n int)
//
// gate[i] = SiLU(gate[i])·up[i] for n values (a multiple of 8), eight at a
// time, with exactly the float32 and integer operations of SiLU and
// expApprox.
TEXT ·swiGLUAVX2(SB), NOSPLIT, $0-24
	MOVQ gate+0(FP), DI
	MOVQ up+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	EXP_CONSTS

swigluLoop:
	VMOVUPS      (DI), Y0
	VXORPS       EXP_SIGN, Y0, Y1
	EXP8
	VADDPS       Y14, Y5, Y5
	VDIVPS       Y5, Y0, Y0
	VMULPS       (SI), Y0, Y0
	VMOVUPS      Y0, (DI)
	ADDQ         $32, DI
	ADDQ         $32, SI
	DECQ         CX
	JNZ          swigluLoop

	VZEROUPPER
	RET

// func expSubAVX2(x *float32, m float32, n int)
//
// x[i] = expApprox(x[i] − m) for n values (a multiple of 8), eight at a time.
TEXT ·expSubAVX2(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), DI
	VBROADCASTSS m+8(FP), Y9
	MOVQ         n+16(FP), CX
	SHRQ         $3, CX
	EXP_CONSTS

expSubLoop:
	VMOVUPS (DI), Y0
	VSUBPS  Y9, Y0, Y1
	EXP8
	VMOVUPS Y5, (DI)
	ADDQ    $32, DI
	DECQ    CX
	JNZ     expSubLoop

	VZEROUPPER
	RET

// func fp32ToFP16AVX2(dst *uint16, src *float32, n int)
TEXT ·fp32ToFP16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	SHRQ $3, CX

toF16Loop:
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X0      // round to nearest even
	VMOVDQU   X0, (DI)
	ADDQ      $32, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       toF16Loop
	VZEROUPPER
	RET

// func roundFP16AVX2(dst, src *float32, n int)
//
// dst[i] = src[i] rounded to half precision and back for n values (a
// multiple of 8): VCVTPS2PH rounding to nearest even (FP32ToFP16's bits,
// NaNs included), then VCVTPH2PS (exact, as FP16ToFP32; the NaNs VCVTPS2PH
// gives are quiet, so they keep their payload), 32 values at a time, then 8.
// Each block is read before it is written, so dst may be src.
TEXT ·roundFP16AVX2(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX

round32:
	CMPQ      CX, $32
	JLT       round8
	VMOVUPS   (SI), Y0
	VMOVUPS   32(SI), Y1
	VMOVUPS   64(SI), Y2
	VMOVUPS   96(SI), Y3
	VCVTPS2PH $0, Y0, X0
	VCVTPS2PH $0, Y1, X1
	VCVTPS2PH $0, Y2, X2
	VCVTPS2PH $0, Y3, X3
	VCVTPH2PS X0, Y0
	VCVTPH2PS X1, Y1
	VCVTPH2PS X2, Y2
	VCVTPH2PS X3, Y3
	VMOVUPS   Y0, (DI)
	VMOVUPS   Y1, 32(DI)
	VMOVUPS   Y2, 64(DI)
	VMOVUPS   Y3, 96(DI)
	ADDQ      $128, SI
	ADDQ      $128, DI
	SUBQ      $32, CX
	JMP       round32

round8:
	TESTQ     CX, CX
	JZ        roundDone
	VMOVUPS   (SI), Y0
	VCVTPS2PH $0, Y0, X0
	VCVTPH2PS X0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	SUBQ      $8, CX
	JMP       round8

roundDone:
	VZEROUPPER
	RET

// func sumSquaresAVX2(lanes *[8]float64, x *float32, n int)
//
// Lanes 0…3 in Y0, 4…7 in Y1.
TEXT ·sumSquaresAVX2(SB), NOSPLIT, $0-24
	MOVQ    lanes+0(FP), DI
	MOVQ    x+8(FP), SI
	MOVQ    n+16(FP), CX
	SHRQ    $3, CX
	VMOVUPD (DI), Y0
	VMOVUPD 32(DI), Y1

sqLoop:
	VMOVUPS      (SI), Y2
	VMULPS       Y2, Y2, Y2
	VCVTPS2PD    X2, Y3
	VEXTRACTF128 $1, Y2, X2
	VCVTPS2PD    X2, Y4
	VADDPD       Y3, Y0, Y0
	VADDPD       Y4, Y1, Y1
	ADDQ         $32, SI
	DECQ         CX
	JNZ          sqLoop

	VMOVUPD Y0, (DI)
	VMOVUPD Y1, 32(DI)
	VZEROUPPER
	RET

// func scaleMulAVX2(out, x, weight *float32, scale float32, n int)
TEXT ·scaleMulAVX2(SB), NOSPLIT, $0-40
	MOVQ         out+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         weight+16(FP), DX
	VBROADCASTSS scale+24(FP), Y0
	MOVQ         n+32(FP), CX
	SHRQ         $3, CX

scaleMulLoop:
	VMULPS  (SI), Y0, Y1
	VMULPS  (DX), Y1, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     scaleMulLoop
	VZEROUPPER
	RET

// func scaleF32AVX2(x *float32, s float32, n int)
//
// Thirty-two values at a time, then eight.
TEXT ·scaleF32AVX2(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), DI
	VBROADCASTSS s+8(FP), Y0
	MOVQ         n+16(FP), CX

scale32:
	CMPQ    CX, $32
	JLT     scale8
	VMULPS  (DI), Y0, Y1
	VMULPS  32(DI), Y0, Y2
	VMULPS  64(DI), Y0, Y3
	VMULPS  96(DI), Y0, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ    $128, DI
	SUBQ    $32, CX
	JMP     scale32

scale8:
	TESTQ   CX, CX
	JZ      scaleDone
	VMULPS  (DI), Y0, Y1
	VMOVUPS Y1, (DI)
	ADDQ    $32, DI
	SUBQ    $8, CX
	JMP     scale8

scaleDone:
	VZEROUPPER
	RET

// func ropeNeoxAVX2(x *float32, nHeads, headDim int, cos, sin *float32, n, m int)
//
// Eight pairs at a time: t = x1·s, u = x1·c (rounded), then x0' = x0·c − t
// and x1' = x0·s + u, each one fused operation (rotatePair).
TEXT ·ropeNeoxAVX2(SB), NOSPLIT, $0-56
	MOVQ x+0(FP), DI
	MOVQ nHeads+8(FP), R8
	MOVQ headDim+16(FP), R9
	SHLQ $2, R9               // head bytes
	MOVQ cos+24(FP), R10
	MOVQ sin+32(FP), R11
	MOVQ n+40(FP), R12
	SHLQ $2, R12              // from x0 to its x1, in bytes
	MOVQ m+48(FP), R13

ropeNeoxHead:
	MOVQ DI, SI
	XORQ AX, AX
	MOVQ R13, CX

ropeNeoxPairs:
	VMOVUPS     (SI), Y0
	VMOVUPS     (SI)(R12*1), Y1
	VMOVUPS     (R10)(AX*1), Y2
	VMOVUPS     (R11)(AX*1), Y3
	VMULPS      Y3, Y1, Y4
	VMULPS      Y2, Y1, Y5
	VFMSUB231PS Y2, Y0, Y4
	VFMADD231PS Y3, Y0, Y5
	VMOVUPS     Y4, (SI)
	VMOVUPS     Y5, (SI)(R12*1)
	ADDQ        $32, SI
	ADDQ        $32, AX
	SUBQ        $8, CX
	JNZ         ropeNeoxPairs

	ADDQ R9, DI
	DECQ R8
	JNZ  ropeNeoxHead
	VZEROUPPER
	RET
