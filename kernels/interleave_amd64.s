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

// func dotQ4_0x8x2AVX2(w, w2 *byte, groups, nb int, qs *int8, side unsafe.Pointer, out, out2 *float32)
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

// Q4_Kx8 (interleave.go): per super-block of a group, each 32-byte chunk c
// of the rows' quants is eight parts whose low nibbles (sub-block 2c) and
// high nibbles (2c+1) go through VPMADDUBSW with the activation's bytes
// broadcast, summed in int16 (|sum| ≤ 8·2·15·128 < 2^15); VPMADDWD with the
// rows' scales (each a word pair) gives each row's scaled sub-block sums in
// its int32 lane, added into is. The minimums, byte pairs per row, go
// through VPMADDWD with the pairs of the activation's sub-block sums
// (k8Side.bs) into im. Then dotQ4_KGeneric's two fused multiply-add chains,
// lane by lane, and acc − accm.

// DST = the eight scale bytes at off(W) as int32 lanes holding the scale in
// both words. Clobbers TMP.
#define K8_SCALES(W, off, DST, TMP) \
	VPMOVZXBD off(W), DST; \
	VPSLLD    $16, DST, TMP; \
	VPOR      TMP, DST, DST

// Y0, Y1 = the low and high nibbles of the 32-byte part at woff(W).
#define K8_NIBBLES(W, woff) \
	VMOVDQU woff(W), Y0; \
	VPSRLW  $4, Y0, Y1; \
	VPAND   x8nibbles<>(SB), Y0, Y0; \
	VPAND   x8nibbles<>(SB), Y1, Y1

// SL += the part's low nibbles (Y0) and SH += its high nibbles (Y1) times
// the activation's bytes aoff… and aoff+32… at Q (R8 = 32 × the
// super-block's index), in int16 pairs. Clobbers Y5.
#define K8_ACT(Q, aoff, SL, SH) \
	VPBROADCASTD aoff(Q)(R8*8), Y5; \
	VPMADDUBSW   Y5, Y0, Y5; \
	VPADDW       Y5, SL, SL; \
	VPBROADCASTD aoff+32(Q)(R8*8), Y5; \
	VPMADDUBSW   Y5, Y1, Y5; \
	VPADDW       Y5, SH, SH

// Y2 += the low nibbles and Y3 += the high nibbles of the part at woff(W)
// times the activation at Q (K8_ACT). Clobbers Y0, Y1, Y5.
#define K8_PART(W, Q, woff, aoff) \
	K8_NIBBLES(W, woff); \
	K8_ACT(Q, aoff, Y2, Y3)

// Y4 += the scaled sums of sub-blocks 2c and 2c+1 of the super-block at W
// with the activation at Q, each row in its lane; the chunk is prefetched
// 4 KiB ahead. Clobbers Y0…Y3, Y5, Y6.
#define K8_CHUNK(W, Q, c) \
	VPXOR      Y2, Y2, Y2; \
	VPXOR      Y3, Y3, Y3; \
	PREFETCHT0 4096+160+256*c+0(W); \
	K8_PART(W, Q, 160+256*c+0, 64*c+0); \
	K8_PART(W, Q, 160+256*c+32, 64*c+4); \
	PREFETCHT0 4096+160+256*c+64(W); \
	K8_PART(W, Q, 160+256*c+64, 64*c+8); \
	K8_PART(W, Q, 160+256*c+96, 64*c+12); \
	PREFETCHT0 4096+160+256*c+128(W); \
	K8_PART(W, Q, 160+256*c+128, 64*c+16); \
	K8_PART(W, Q, 160+256*c+160, 64*c+20); \
	PREFETCHT0 4096+160+256*c+192(W); \
	K8_PART(W, Q, 160+256*c+192, 64*c+24); \
	K8_PART(W, Q, 160+256*c+224, 64*c+28); \
	K8_SCALES(W, 32+16*c, Y5, Y6); \
	VPMADDWD   Y5, Y2, Y2; \
	VPADDD     Y2, Y4, Y4; \
	K8_SCALES(W, 40+16*c, Y5, Y6); \
	VPMADDWD   Y5, Y3, Y3; \
	VPADDD     Y3, Y4, Y4

// Y7 = im of each row (mins at 96(W), sub-block sums at S). Clobbers Y5, Y6.
#define K8_MINS(W, S) \
	VPMOVZXBW    96(W), Y7; \
	VPBROADCASTD 0(S)(R8*1), Y6; \
	VPMADDWD     Y6, Y7, Y7; \
	VPMOVZXBW    112(W), Y5; \
	VPBROADCASTD 4(S)(R8*1), Y6; \
	VPMADDWD     Y6, Y5, Y5; \
	VPADDD       Y5, Y7, Y7; \
	VPMOVZXBW    128(W), Y5; \
	VPBROADCASTD 8(S)(R8*1), Y6; \
	VPMADDWD     Y6, Y5, Y5; \
	VPADDD       Y5, Y7, Y7; \
	VPMOVZXBW    144(W), Y5; \
	VPBROADCASTD 12(S)(R8*1), Y6; \
	VPMADDWD     Y6, Y5, Y5; \
	VPADDD       Y5, Y7, Y7

// ACC = fma(d_w·d_a, float32(is), ACC) and ACCM = fma(dmin_w·d_a,
// float32(im), ACCM) lane by lane for the super-block at W of one row group
// with the activation at Q and S. Clobbers Y0…Y7.
#define K8_SUPER(W, Q, S, ACC, ACCM) \
	PREFETCHT0   4096(W); \
	PREFETCHT0   4160(W); \
	PREFETCHT0   4224(W); \
	VPXOR        Y4, Y4, Y4; \
	K8_CHUNK(W, Q, 0); \
	K8_CHUNK(W, Q, 1); \
	K8_CHUNK(W, Q, 2); \
	K8_CHUNK(W, Q, 3); \
	K8_MINS(W, S); \
	VBROADCASTSS 16(S)(R8*1), Y6; \
	VCVTPH2PS    0(W), Y5; \
	VMULPS       Y5, Y6, Y5; \
	VCVTDQ2PS    Y4, Y4; \
	VFMADD231PS  Y4, Y5, ACC; \
	VCVTPH2PS    16(W), Y5; \
	VMULPS       Y5, Y6, Y5; \
	VCVTDQ2PS    Y7, Y7; \
	VFMADD231PS  Y7, Y5, ACCM

// func dotQ4_Kx8x2AVX2(w, w2 *byte, groups, nb int, qs *int8, side unsafe.Pointer, out, out2 *float32)
TEXT ·dotQ4_Kx8x2AVX2(SB), NOSPLIT, $0-64
	MOVQ w+0(FP), SI
	MOVQ w2+8(FP), R10
	MOVQ groups+16(FP), R9
	MOVQ qs+32(FP), DI
	MOVQ side+40(FP), DX
	MOVQ out+48(FP), AX
	MOVQ out2+56(FP), BX

k8x2group:
	MOVQ   nb+24(FP), CX
	XORQ   R8, R8
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

k8x2block:
	K8_SUPER(SI, DI, DX, Y8, Y9)
	K8_SUPER(R10, DI, DX, Y10, Y11)
	ADDQ $1184, SI
	ADDQ $1184, R10
	ADDQ $32, R8
	DECQ CX
	JNZ  k8x2block

	VSUBPS  Y9, Y8, Y8
	VSUBPS  Y11, Y10, Y10
	VMOVUPS Y8, (AX)
	VMOVUPS Y10, (BX)
	ADDQ    $32, AX
	ADDQ    $32, BX
	DECQ    R9
	JNZ     k8x2group
	VZEROUPPER
	RET

// The Q4_Kx8 kernel of four activations keeps, on its stack frame, the
// super-block's scales as word pairs (K8_SCALES; sub-block s at 32s(SP))
// and each activation's acc (256…383(SP), 32 bytes each) and accm
// (384…511); Y8…Y15 hold the int16 sums of a chunk, low and high nibbles,
// for activations 0…3, and Y2, Y3, Y4, Y6 their is.

// The part at woff(SI) times each of the four activations (K8_ACT).
#define K8A4_PART(woff, aoff) \
	K8_NIBBLES(SI, woff); \
	K8_ACT(DI, aoff, Y8, Y9); \
	K8_ACT(R9, aoff, Y10, Y11); \
	K8_ACT(R10, aoff, Y12, Y13); \
	K8_ACT(R11, aoff, Y14, Y15)

// IS += the scaled sums SL and SH of sub-blocks 2c and 2c+1 (scales at
// soff(SP) and soff+32(SP)).
#define K8A4_IS(SL, SH, soff, IS) \
	VPMADDWD soff(SP), SL, SL; \
	VPMADDWD soff+32(SP), SH, SH; \
	VPADDD   SH, SL, SL; \
	VPADDD   SL, IS, IS

// The super-block's scales of sub-block s as word pairs at 32s(SP).
// Clobbers Y0, Y1.
#define K8A4_SCALE(s) \
	K8_SCALES(SI, 32+8*s, Y0, Y1); \
	VMOVDQU Y0, 32*s(SP)

// The four activations' is += the scaled sums of sub-blocks 2c and 2c+1.
#define K8A4_CHUNK(c) \
	VPXOR Y8, Y8, Y8; \
	VPXOR Y9, Y9, Y9; \
	VPXOR Y10, Y10, Y10; \
	VPXOR Y11, Y11, Y11; \
	VPXOR Y12, Y12, Y12; \
	VPXOR Y13, Y13, Y13; \
	VPXOR Y14, Y14, Y14; \
	VPXOR Y15, Y15, Y15; \
	K8A4_PART(160+256*c+0, 64*c+0); \
	K8A4_PART(160+256*c+32, 64*c+4); \
	K8A4_PART(160+256*c+64, 64*c+8); \
	K8A4_PART(160+256*c+96, 64*c+12); \
	K8A4_PART(160+256*c+128, 64*c+16); \
	K8A4_PART(160+256*c+160, 64*c+20); \
	K8A4_PART(160+256*c+192, 64*c+24); \
	K8A4_PART(160+256*c+224, 64*c+28); \
	K8A4_IS(Y8, Y9, 64*c, Y2); \
	K8A4_IS(Y10, Y11, 64*c, Y3); \
	K8A4_IS(Y12, Y13, 64*c, Y4); \
	K8A4_IS(Y14, Y15, 64*c, Y6)

// One activation's float chains for the super-block (its side at S, its is
// in IS, its acc and accm at 256+off(SP) and 384+off(SP)): im from the mins
// in Y8…Y11 (word pairs), then acc and accm with d (Y12) and dmin (Y13).
// Clobbers IS, Y0, Y1, Y5, Y14, Y15.
#define K8A4_FLOAT(S, IS, off) \
	VPBROADCASTD 0(S)(R8*1), Y14; \
	VPMADDWD     Y14, Y8, Y14; \
	VPBROADCASTD 4(S)(R8*1), Y15; \
	VPMADDWD     Y15, Y9, Y15; \
	VPADDD       Y15, Y14, Y14; \
	VPBROADCASTD 8(S)(R8*1), Y15; \
	VPMADDWD     Y15, Y10, Y15; \
	VPADDD       Y15, Y14, Y14; \
	VPBROADCASTD 12(S)(R8*1), Y15; \
	VPMADDWD     Y15, Y11, Y15; \
	VPADDD       Y15, Y14, Y14; \
	VBROADCASTSS 16(S)(R8*1), Y5; \
	VMULPS       Y12, Y5, Y0; \
	VCVTDQ2PS    IS, IS; \
	VMOVUPS      256+off(SP), Y1; \
	VFMADD231PS  IS, Y0, Y1; \
	VMOVUPS      Y1, 256+off(SP); \
	VMULPS       Y13, Y5, Y0; \
	VCVTDQ2PS    Y14, Y14; \
	VMOVUPS      384+off(SP), Y1; \
	VFMADD231PS  Y14, Y0, Y1; \
	VMOVUPS      Y1, 384+off(SP)

// out of activation j (pointer at OUT(AX)) at offset R8 = acc − accm.
#define K8A4_RESULT(OUT, off) \
	VMOVUPS 256+off(SP), Y0; \
	VSUBPS  384+off(SP), Y0, Y0; \
	MOVQ    OUT(AX), CX; \
	VMOVUPS Y0, (CX)(R8*1)

// func dotQ4_Kx8Acts4AVX2(w *byte, groups, nb int, p *x8Ptrs4)
TEXT ·dotQ4_Kx8Acts4AVX2(SB), NOSPLIT, $512-32
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

k8a4group:
	VXORPS  Y0, Y0, Y0
	VMOVUPS Y0, 256(SP)
	VMOVUPS Y0, 288(SP)
	VMOVUPS Y0, 320(SP)
	VMOVUPS Y0, 352(SP)
	VMOVUPS Y0, 384(SP)
	VMOVUPS Y0, 416(SP)
	VMOVUPS Y0, 448(SP)
	VMOVUPS Y0, 480(SP)
	MOVQ    nb+16(FP), CX
	XORQ    R8, R8

k8a4block:
	K8A4_SCALE(0)
	K8A4_SCALE(1)
	K8A4_SCALE(2)
	K8A4_SCALE(3)
	K8A4_SCALE(4)
	K8A4_SCALE(5)
	K8A4_SCALE(6)
	K8A4_SCALE(7)
	VPXOR     Y2, Y2, Y2
	VPXOR     Y3, Y3, Y3
	VPXOR     Y4, Y4, Y4
	VPXOR     Y6, Y6, Y6
	K8A4_CHUNK(0)
	K8A4_CHUNK(1)
	K8A4_CHUNK(2)
	K8A4_CHUNK(3)
	VPMOVZXBW 96(SI), Y8
	VPMOVZXBW 112(SI), Y9
	VPMOVZXBW 128(SI), Y10
	VPMOVZXBW 144(SI), Y11
	VCVTPH2PS 0(SI), Y12
	VCVTPH2PS 16(SI), Y13
	K8A4_FLOAT(DX, Y2, 0)
	K8A4_FLOAT(BX, Y3, 32)
	K8A4_FLOAT(R12, Y4, 64)
	K8A4_FLOAT(R13, Y6, 96)
	ADDQ $1184, SI
	ADDQ $32, R8
	DECQ CX
	JNZ  k8a4block

	// The results of each activation at p.out[b] + 32 × the group's index.
	MOVQ groups+8(FP), R8
	SUBQ R14, R8
	SHLQ $5, R8
	K8A4_RESULT(64, 0)
	K8A4_RESULT(72, 32)
	K8A4_RESULT(80, 64)
	K8A4_RESULT(88, 96)
	DECQ R14
	JNZ  k8a4group
	VZEROUPPER
	RET
