//go:build !purego

#include "textflag.h"
#include "vec_amd64.h"

// GELUMul, MulF32 and MulAddF32 (gelu.go) for amd64 with AVX2 and F16C,
// eight values at a time, with the float32 operations of the portable loops:
// each product rounded on its own (no fused multiply-add).

// func geluMulAVX2(gate, up *float32, t *[1 << 16]uint16, n int)
//
// For each eight values x of gate: the halves h = VCVTPS2PH(x) (round to
// nearest even, as FP32ToFP16, NaNs included), the table entries t[h]
// gathered and widened by VCVTPH2PS (exact, as FP16ToFP32), x itself where
// x ≥ 10, times up, and +0 where x ≤ −10. A NaN x is neither, so it takes
// the table's entry at its half, as in the portable loop.
//
// The gather reads the aligned dword that holds t[h], at byte 4·(h>>1), and
// shifts the entry down by 16·(h&1): every read lies inside the table (a
// dword read at 2·h would pass its end by two bytes for h = 0xffff, a NaN).
//
// Y15 = 10, Y14 = −10, Y13 = the byte shuffle that packs the low words of
// each 128-bit lane's four dwords into its low eight bytes.
TEXT ·geluMulAVX2(SB), NOSPLIT, $0-32
	MOVQ gate+0(FP), DI
	MOVQ up+8(FP), SI
	MOVQ t+16(FP), DX
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	DWORDS(0x41200000, Y15, X15)
	DWORDS(0xc1200000, Y14, X14)
	MOVQ         $0x0d0c090805040100, AX
	VMOVQ        AX, X13
	VPBROADCASTQ X13, Y13

geluLoop:
	VMOVUPS    (DI), Y0
	VCVTPS2PH  $0, Y0, X1         // h, round to nearest even
	VPMOVZXWD  X1, Y1
	VPSRLD     $1, Y1, Y2         // dword index h>>1
	VPSLLD     $31, Y1, Y3
	VPSRLD     $27, Y3, Y3        // shift 16·(h&1)
	VPCMPEQD   Y4, Y4, Y4         // gather all eight (the mask is cleared)
	VPXOR      Y5, Y5, Y5         // no dependence on the last gather
	VPGATHERDD Y4, (DX)(Y2*4), Y5
	VPSRLVD    Y3, Y5, Y5         // t[h] in the low word of each dword
	VPSHUFB    Y13, Y5, Y5
	VPERMQ     $0x08, Y5, Y5      // the eight words in X5, in order
	VCVTPH2PS  X5, Y5
	VCMPPS     $0x1d, Y15, Y0, Y6 // x ≥ 10 (ordered: false for NaN)
	VBLENDVPS  Y6, Y0, Y5, Y5
	VMULPS     (SI), Y5, Y5
	VCMPPS     $0x12, Y14, Y0, Y7 // x ≤ −10 (ordered: false for NaN)
	VANDNPS    Y5, Y7, Y5
	VMOVUPS    Y5, (DI)
	ADDQ       $32, DI
	ADDQ       $32, SI
	DECQ       CX
	JNZ        geluLoop

	VZEROUPPER
	RET

// MUL_LOOP is the body of mulAVX2 and mulAddAVX2: dst = a·b for the CX
// values (a multiple of eight) at SI and DX into DI, 32 values at a time, then
// eight at a time, with add(off, Y) applied to each product of eight before
// it is stored, off its byte offset from DI. Each value is read before it is
// written, so dst may be a or b.
#define MUL_LOOP(add) \
loop32: \
	CMPQ    CX, $32; \
	JLT     loop8; \
	VMOVUPS (SI), Y0; \
	VMOVUPS 32(SI), Y1; \
	VMOVUPS 64(SI), Y2; \
	VMOVUPS 96(SI), Y3; \
	VMULPS  (DX), Y0, Y0; \
	VMULPS  32(DX), Y1, Y1; \
	VMULPS  64(DX), Y2, Y2; \
	VMULPS  96(DX), Y3, Y3; \
	add(0, Y0); \
	add(32, Y1); \
	add(64, Y2); \
	add(96, Y3); \
	VMOVUPS Y0, (DI); \
	VMOVUPS Y1, 32(DI); \
	VMOVUPS Y2, 64(DI); \
	VMOVUPS Y3, 96(DI); \
	ADDQ    $128, SI; \
	ADDQ    $128, DX; \
	ADDQ    $128, DI; \
	SUBQ    $32, CX; \
	JMP     loop32; \
loop8: \
	TESTQ   CX, CX; \
	JZ      done; \
	VMOVUPS (SI), Y0; \
	VMULPS  (DX), Y0, Y0; \
	add(0, Y0); \
	VMOVUPS Y0, (DI); \
	ADDQ    $32, SI; \
	ADDQ    $32, DX; \
	ADDQ    $32, DI; \
	SUBQ    $8, CX; \
	JMP     loop8; \
done: \
	VZEROUPPER; \
	RET

// The step after the product: none for MulF32, dst added for MulAddF32 (the
// product already rounded: no fused multiply-add).
#define NO_ADD(off, y)
#define ADD_DST(off, y) VADDPS off(DI), y, y

// func mulAVX2(dst, a, b *float32, n int)
TEXT ·mulAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	MUL_LOOP(NO_ADD)

// func mulAddAVX2(dst, a, b *float32, n int)
TEXT ·mulAddAVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ b+16(FP), DX
	MOVQ n+24(FP), CX
	MUL_LOOP(ADD_DST)
