//go:build !purego

#include "textflag.h"

// Q4_0 rows interleaved eight at a time (Q4_0x8, interleave.go) with Q8_0
// activations, AVX2, FMA and F16C. Per block of a group: Y12 = the eight
// rows' scales as float32; Y0…Y7 = the nibbles of the four quant parts,
// Yk holding values 4k…4k+3 of every row (low nibbles of part k for k < 4,
// high nibbles of part k−4 after), so that VPMADDUBSW with the activation's
// bytes 4k…4k+3 broadcast gives each row's products in its own lanes. The
// eight products are summed in int16 (|sum| ≤ 8·2·15·128 < 2^15), then in
// pairs to int32: lane r is row r's Σ nibble·quant, from which the block's
// 8·Σ quants (x8Side.c) is taken to give dotQ4_0Generic's exact block sum.
// Then the lanes go through dotQ4_0Generic's float32 operations: one
// conversion, the product of the scales and one fused multiply-add.

DATA x8nibbles<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA x8nibbles<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA x8nibbles<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA x8nibbles<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL x8nibbles<>(SB), RODATA|NOPTR, $32

DATA x8ones<>+0(SB)/8, $0x0001000100010001
DATA x8ones<>+8(SB)/8, $0x0001000100010001
DATA x8ones<>+16(SB)/8, $0x0001000100010001
DATA x8ones<>+24(SB)/8, $0x0001000100010001
GLOBL x8ones<>(SB), RODATA|NOPTR, $32

// Y12 = the scales and Y0…Y7 the nibbles of the block at W.
#define X8_BLOCK(W) \
	VCVTPH2PS 0(W), Y12; \
	VMOVDQU   16(W), Y4; \
	VMOVDQU   48(W), Y5; \
	VMOVDQU   80(W), Y6; \
	VMOVDQU   112(W), Y7; \
	VPAND     x8nibbles<>(SB), Y4, Y0; \
	VPAND     x8nibbles<>(SB), Y5, Y1; \
	VPAND     x8nibbles<>(SB), Y6, Y2; \
	VPAND     x8nibbles<>(SB), Y7, Y3; \
	VPSRLW    $4, Y4, Y4; \
	VPSRLW    $4, Y5, Y5; \
	VPSRLW    $4, Y6, Y6; \
	VPSRLW    $4, Y7, Y7; \
	VPAND     x8nibbles<>(SB), Y4, Y4; \
	VPAND     x8nibbles<>(SB), Y5, Y5; \
	VPAND     x8nibbles<>(SB), Y6, Y6; \
	VPAND     x8nibbles<>(SB), Y7, Y7

// P = the int16 pair sums of the nibbles W with the activation's bytes
// off…off+3 at Q (R8 = 8 × the block's index) broadcast to every lane.
#define X8_PRODUCT(Q, off, W, P) \
	VPBROADCASTD off(Q)(R8*4), P; \
	VPMADDUBSW   P, W, P

// ACC = fma(float32(block sums), scales × d, ACC) lane by lane for the
// activation block whose quants are at Q and side (d, c) at S (R8 = 8 ×
// the block's index). Clobbers Y13…Y15.
#define X8_ACT(Q, S, ACC) \
	X8_PRODUCT(Q, 0, Y0, Y13); \
	X8_PRODUCT(Q, 4, Y1, Y15); \
	X8_PRODUCT(Q, 8, Y2, Y14); \
	VPADDW Y15, Y13, Y13; \
	X8_PRODUCT(Q, 12, Y3, Y15); \
	VPADDW Y14, Y13, Y13; \
	X8_PRODUCT(Q, 16, Y4, Y14); \
	VPADDW Y15, Y13, Y13; \
	X8_PRODUCT(Q, 20, Y5, Y15); \
	VPADDW Y14, Y13, Y13; \
	X8_PRODUCT(Q, 24, Y6, Y14); \
	VPADDW Y15, Y13, Y13; \
	X8_PRODUCT(Q, 28, Y7, Y15); \
	VPADDW Y14, Y13, Y13; \
	VPADDW Y15, Y13, Y13; \
	VPMADDWD     x8ones<>(SB), Y13, Y13; \
	VPBROADCASTD 4(S)(R8*1), Y14; \
	VPSUBD       Y14, Y13, Y13; \
	VCVTDQ2PS    Y13, Y13; \
	VBROADCASTSS 0(S)(R8*1), Y14; \
	VMULPS       Y12, Y14, Y14; \
	VFMADD231PS  Y13, Y14, ACC

// func dotQ4_0x8x2AVX2(w, w2 *byte, groups, nb int, qs *int8, side *x8Side, out, out2 *float32)
//
// dotQ4_0x8Generic for the groups at w and, block by block beside them,
// as many at w2: two streams from memory, each prefetched 4 KiB ahead.
TEXT ·dotQ4_0x8x2AVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ w2+8(FP), R10
	MOVQ groups+16(FP), R9
	MOVQ qs+32(FP), DI
	MOVQ side+40(FP), DX
	MOVQ out+48(FP), AX
	MOVQ out2+56(FP), BX

x8x2group:
	MOVQ   nb+24(FP), CX
	XORQ   R8, R8
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9

x8x2block:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4096(R10)
	PREFETCHT0 4160(R10)
	X8_BLOCK(SI)
	X8_ACT(DI, DX, Y8)
	X8_BLOCK(R10)
	X8_ACT(DI, DX, Y9)
	ADDQ $144, SI
	ADDQ $144, R10
	ADDQ $8, R8
	DECQ CX
	JNZ  x8x2block

	VMOVUPS Y8, (AX)
	VMOVUPS Y9, (BX)
	ADDQ    $32, AX
	ADDQ    $32, BX
	DECQ    R9
	JNZ     x8x2group
	VZEROUPPER
	RET

// func dotQ4_0x8Acts4AVX2(w *byte, groups, nb int, p *x8Ptrs4)
TEXT ·dotQ4_0x8Acts4AVX2(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ groups+8(FP), R14
	MOVQ p+24(FP), AX
	MOVQ 0(AX), DI
	MOVQ 8(AX), R9
	MOVQ 16(AX), R10
	MOVQ 24(AX), R11
	MOVQ 32(AX), DX
	MOVQ 40(AX), BX
	MOVQ 48(AX), R12
	MOVQ 56(AX), R13

x8a4group:
	MOVQ   nb+16(FP), CX
	XORQ   R8, R8
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

x8a4block:
	X8_BLOCK(SI)
	X8_ACT(DI, DX, Y8)
	X8_ACT(R9, BX, Y9)
	X8_ACT(R10, R12, Y10)
	X8_ACT(R11, R13, Y11)
	ADDQ $144, SI
	ADDQ $8, R8
	DECQ CX
	JNZ  x8a4block

	// The results of each activation at p.out[b] + 32 × the group's index.
	MOVQ    groups+8(FP), R8
	SUBQ    R14, R8
	SHLQ    $5, R8
	MOVQ    64(AX), CX
	VMOVUPS Y8, (CX)(R8*1)
	MOVQ    72(AX), CX
	VMOVUPS Y9, (CX)(R8*1)
	MOVQ    80(AX), CX
	VMOVUPS Y10, (CX)(R8*1)
	MOVQ    88(AX), CX
	VMOVUPS Y11, (CX)(R8*1)
	DECQ    R14
	JNZ     x8a4group
	VZEROUPPER
	RET
