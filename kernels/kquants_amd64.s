//go:build !purego

#include "textflag.h"
#include "vec_amd64.h"

// Dot products of the K-quant types Q4_K, Q5_K and Q6_K with a Q8_K activation,
// and the Q8_K activation quantizer, for amd64 with AVX2, FMA and F16C. The
// …VNNI variants fold the scale multiply-adds into VPDPWSSD (AVX512-VNNI,
// AVX512VL). The float32 operations are those of the portable twins in
// kquants.go and q8k.go, in the same order, so that the results are
// bit-identical; the integer parts are exact.
//
// Each super-block gives eight int32 lanes: lane t sums, over the eight runs c
// of 32 values, scale(run c, t)·Σ q·y over values 32c+4t…32c+4t+3 (kLanes).
// VPMADDUBSW forms the sums of two products (unsigned quants times signed
// activation bytes, which cannot saturate here), VPMADDWD multiplies pairs of
// them by the sub-block scale and adds them into the four-product sums.
//
// Registers common to the dot kernels:
//	SI  weight super-blocks     DI  activation quants (256 per super-block)
//	DX  activation scales       R8  activation bsums (16 per super-block)
//	CX  super-blocks left       Y15 eight float32 lanes (acc of the twins;
//	                                Q4_K: X15 its two scalar chains)
//	Y14 the minimums' float32 accumulator (Q5_K: one)
//	Y13 bytes 0x0f              Y6  the int32 lanes of the super-block

// scaleShuf<>+32·c broadcasts int16 word c of each 128-bit lane to the whole
// lane (VPSHUFB mask).
DATA scaleShuf<>+0(SB)/8, $0x0100010001000100
DATA scaleShuf<>+8(SB)/8, $0x0100010001000100
DATA scaleShuf<>+16(SB)/8, $0x0100010001000100
DATA scaleShuf<>+24(SB)/8, $0x0100010001000100
DATA scaleShuf<>+32(SB)/8, $0x0302030203020302
DATA scaleShuf<>+40(SB)/8, $0x0302030203020302
DATA scaleShuf<>+48(SB)/8, $0x0302030203020302
DATA scaleShuf<>+56(SB)/8, $0x0302030203020302
DATA scaleShuf<>+64(SB)/8, $0x0504050405040504
DATA scaleShuf<>+72(SB)/8, $0x0504050405040504
DATA scaleShuf<>+80(SB)/8, $0x0504050405040504
DATA scaleShuf<>+88(SB)/8, $0x0504050405040504
DATA scaleShuf<>+96(SB)/8, $0x0706070607060706
DATA scaleShuf<>+104(SB)/8, $0x0706070607060706
DATA scaleShuf<>+112(SB)/8, $0x0706070607060706
DATA scaleShuf<>+120(SB)/8, $0x0706070607060706
DATA scaleShuf<>+128(SB)/8, $0x0908090809080908
DATA scaleShuf<>+136(SB)/8, $0x0908090809080908
DATA scaleShuf<>+144(SB)/8, $0x0908090809080908
DATA scaleShuf<>+152(SB)/8, $0x0908090809080908
DATA scaleShuf<>+160(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA scaleShuf<>+168(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA scaleShuf<>+176(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA scaleShuf<>+184(SB)/8, $0x0b0a0b0a0b0a0b0a
DATA scaleShuf<>+192(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA scaleShuf<>+200(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA scaleShuf<>+208(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA scaleShuf<>+216(SB)/8, $0x0d0c0d0c0d0c0d0c
DATA scaleShuf<>+224(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA scaleShuf<>+232(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA scaleShuf<>+240(SB)/8, $0x0f0e0f0e0f0e0f0e
DATA scaleShuf<>+248(SB)/8, $0x0f0e0f0e0f0e0f0e
GLOBL scaleShuf<>(SB), RODATA|NOPTR, $256

// evenOdd<> gathers the even bytes of 16 into the low 8 and the odd ones into
// the high 8 (VPSHUFB mask).
DATA evenOdd<>+0(SB)/8, $0x0e0c0a0806040200
DATA evenOdd<>+8(SB)/8, $0x0f0d0b0907050301
GLOBL evenOdd<>(SB), RODATA|NOPTR, $16

// X dst = float32(fp16 at off(SI) × a.D at (DX)), clobbering AX.
#define SUPER_SCALE(off, dst) \
	MOVWLZX   off(SI), AX; \
	VMOVD     AX, dst; \
	VCVTPH2PS dst, dst; \
	VMULSS    (DX), dst, dst

// Unpacks the 6-bit scales and mins of the Q4_K/Q5_K block at SI into Y1 (the
// eight scales as int16, in both 128-bit lanes) and Y3 (the eight mins as int16,
// each twice: min[s] in words 2s and 2s+1). A, B, C, T0, T1, T2 are scratch
// general registers. Clobbers X2, X4.
#define K4_UNPACK(A, B, C, T0, T1, T2) \
	MOVL         4(SI), A; \
	MOVL         8(SI), B; \
	MOVL         12(SI), C; \
	MOVL         A, T0; \
	ANDL         $0x3f3f3f3f, T0; \
	MOVL         B, T1; \
	ANDL         $0x3f3f3f3f, T1; \
	MOVL         C, T2; \
	ANDL         $0x0f0f0f0f, T2; \
	SHRL         $6, A; \
	ANDL         $0x03030303, A; \
	SHLL         $4, A; \
	ORL          A, T2; \
	SHRL         $4, C; \
	ANDL         $0x0f0f0f0f, C; \
	SHRL         $6, B; \
	ANDL         $0x03030303, B; \
	SHLL         $4, B; \
	ORL          B, C; \
	VMOVD        T0, X1; \
	VPINSRD      $1, T2, X1, X1; \
	VPMOVZXBW    X1, X1; \
	VPERMQ       $0x44, Y1, Y1; \
	VMOVD        T1, X2; \
	VPINSRD      $1, C, X2, X2; \
	VPMOVZXBW    X2, X2; \
	VPUNPCKLWD   X2, X2, X3; \
	VPUNPCKHWD   X2, X2, X4; \
	VINSERTI128  $1, X4, Y3, Y3

// K4_UNPACK, then Y3 = the eight int32 products min[s]·(bsums[2s]+bsums[2s+1])
// with the bsums at R8. Clobbers AX, BX, R9…R12, X2, X4.
#define SCALES_MINS_K4 \
	K4_UNPACK(AX, BX, R9, R10, R11, R12); \
	VPMADDWD (R8), Y3, Y3

// Y6 += the lanes of run c: Σ pairs q·y (unsigned quants in Q, activation at
// 32c(DI)) times scale word c of Y1. Clobbers Q, Y9.
#define RUN_AVX2(c, Q) \
	VPMADDUBSW 32*(c)(DI), Q, Q; \
	VPSHUFB    scaleShuf<>+32*(c)(SB), Y1, Y9; \
	VPMADDWD   Y9, Q, Q; \
	VPADDD     Q, Y6, Y6

#define RUN_VNNI(c, Q) \
	VPMADDUBSW 32*(c)(DI), Q, Q; \
	VPSHUFB    scaleShuf<>+32*(c)(SB), Y1, Y9; \
	VPDPWSSD   Y9, Q, Y6

// Y7, Y8 = the low and high nibbles of the 32 bytes at off(SI).
#define NIBBLES(off) \
	VMOVDQU off(SI), Y7; \
	VPSRLW  $4, Y7, Y8; \
	VPAND   Y13, Y7, Y7; \
	VPAND   Y13, Y8, Y8

// The Q4_K runs 2k (low nibbles of qs[32k…]) and 2k+1 (high nibbles).
#define Q4K_CHUNK(RUN, k) \
	NIBBLES(16+32*k); \
	RUN(2*k, Y7); \
	RUN(2*k+1, Y8)

// Y15 = fma(d, float32(Y6), Y15) with d = float32(a.D·fp16 at off(SI)).
// Clobbers X5, AX.
#define ACC_LANES(off) \
	SUPER_SCALE(off, X5); \
	VBROADCASTSS X5, Y5; \
	VCVTDQ2PS    Y6, Y6; \
	VFMADD231PS  Y6, Y5, Y15

// LX = the exact int32 sums [Σ L, Σ M, Σ L, Σ M] of the eight lanes of L
// and of M (the is and im of a Q4_K super-block, see dotQ4_KGeneric), with
// interleaves and vertical adds (cheaper than VPHADDD); LX is the low half
// of L. Clobbers L, T and TY (T's 256-bit register).
#define Q4K_IS_IM(L, LX, M, T, TY) \
	VPUNPCKLDQ   M, L, TY; \
	VPUNPCKHDQ   M, L, L; \
	VPADDD       TY, L, L; \
	VEXTRACTI128 $1, L, T; \
	VPADDD       T, LX, LX; \
	VPSHUFD      $0x4e, LX, T; \
	VPADDD       T, LX, LX

// One super-block of the Q4_K row at SI with the activation at DI (quants),
// DX (scale), R8 (bsums) into the two chains of X15 (dotQ4_KAVX2).
// Clobbers AX, BX, R9…R12, Y1…Y9.
#define Q4K_SUPER_AVX2 \
	SCALES_MINS_K4; \
	VPXOR        Y6, Y6, Y6; \
	Q4K_CHUNK(RUN_AVX2, 0); \
	Q4K_CHUNK(RUN_AVX2, 1); \
	Q4K_CHUNK(RUN_AVX2, 2); \
	Q4K_CHUNK(RUN_AVX2, 3); \
	Q4K_IS_IM(Y6, X6, Y3, X4, Y4); \
	MOVL         (SI), AX; \
	VMOVD        AX, X5; \
	VCVTPH2PS    X5, X5; \
	VBROADCASTSS (DX), X4; \
	VMULPS       X4, X5, X5; \
	VCVTDQ2PS    X6, X6; \
	VFMADD231PS  X6, X5, X15

// func dotQ4_KAVX2(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
//
// The arithmetic of the reference's repacked Q4_K kernels (dotQ4_KGeneric):
// the eight scale lanes (Y6) and the eight min products (Y3) of a super-block
// are summed to the exact integers is and im (Q4K_IS_IM), and X15 holds the
// two float32 chains, lane 0 acc = fma(d_w·d_a, is, acc) and lane 1
// accm = fma(dmin_w·d_a, im, accm), one scalar chain per lane; the result is
// acc − accm. Each iteration prefetches the row 4 KiB ahead (the one-row loop
// is slow enough per byte that the prefetch must run several rows ahead to
// cover memory latency).
TEXT ·dotQ4_KAVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsums+24(FP), R8
	MOVQ nb+32(FP), CX
	BYTES(0x0f, Y13, X13)
	VXORPS Y15, Y15, Y15

q4kAVX2Loop:
	PREFETCHT0   4096(SI)
	PREFETCHT0   4160(SI)
	PREFETCHT0   4224(SI)
	Q4K_SUPER_AVX2
	ADDQ $144, SI
	ADDQ $256, DI
	ADDQ $4, DX
	ADDQ $32, R8
	DECQ CX
	JNZ  q4kAVX2Loop

	VMOVSHDUP X15, X1
	VSUBSS    X1, X15, X0
	VMOVSS    X0, ret+40(FP)
	VZEROUPPER
	RET

// func dotQ4_KRows2AVX2(w *byte, stride int, qs *int8, d *float32, bsums *int16, nb int, out *[2]float32)
//
// Sets out[k] to dotQ4_KAVX2 of the row at w + k·stride (k < 2): two
// streams, each prefetched 4 KiB ahead, a super-block of row 0 (SI, chains
// in X15) then the same super-block of row 1 (R13, chains kept in X12 and
// swapped into X15 for Q4K_SUPER_AVX2).
TEXT ·dotQ4_KRows2AVX2(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), R13
	ADDQ SI, R13
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ bsums+32(FP), R8
	MOVQ nb+40(FP), CX
	BYTES(0x0f, Y13, X13)
	VXORPS Y15, Y15, Y15
	VXORPS Y12, Y12, Y12

q4kRows2Loop:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	PREFETCHT0 4096(R13)
	PREFETCHT0 4160(R13)
	PREFETCHT0 4224(R13)
	Q4K_SUPER_AVX2
	XCHGQ      SI, R13
	VMOVAPS    X15, X0
	VMOVAPS    X12, X15
	Q4K_SUPER_AVX2
	VMOVAPS    X15, X12
	VMOVAPS    X0, X15
	XCHGQ      SI, R13
	ADDQ       $144, SI
	ADDQ       $144, R13
	ADDQ       $256, DI
	ADDQ       $4, DX
	ADDQ       $32, R8
	DECQ       CX
	JNZ        q4kRows2Loop

	MOVQ      out+48(FP), BX
	VMOVSHDUP X15, X1
	VSUBSS    X1, X15, X0
	VMOVSS    X0, (BX)
	VMOVSHDUP X12, X1
	VSUBSS    X1, X12, X0
	VMOVSS    X0, 4(BX)
	VZEROUPPER
	RET

// Y7 |= bit c of each byte of the Q5_K high bits in Y10, moved to bit 4
// (SHIFT is VPSLLW or VPSRLW by n; a word shift keeps bit 4 of every byte
// clean for the shifts used). Y12 holds bytes 0x10. Clobbers Y9.
#define Q5K_HIGH(SHIFT, n, dst) \
	SHIFT $n, Y10, Y9; \
	VPAND Y12, Y9, Y9; \
	VPOR  Y9, dst, dst

// The Q5_K runs 2k and 2k+1: the nibbles of qs[32k…] with their fifth bits
// (HIGH: Q5K_HIGH, or Q5K_HIGH4 and Q5K_HIGH4_AVX2 in the four-activation
// kernels), then RUN on each.
#define Q5K_CHUNK(RUN, HIGH, k, SHLO, nlo, SHHI, nhi) \
	NIBBLES(48+32*k); \
	HIGH(SHLO, nlo, Y7); \
	HIGH(SHHI, nhi, Y8); \
	RUN(2*k, Y7); \
	RUN(2*k+1, Y8)

// The eight runs of a Q5_K super-block.
#define Q5K_RUNS(RUN, HIGH) \
	Q5K_CHUNK(RUN, HIGH, 0, VPSLLW, 4, VPSLLW, 3); \
	Q5K_CHUNK(RUN, HIGH, 1, VPSLLW, 2, VPSLLW, 1); \
	Q5K_CHUNK(RUN, HIGH, 2, VPSRLW, 0, VPSRLW, 1); \
	Q5K_CHUNK(RUN, HIGH, 3, VPSRLW, 2, VPSRLW, 3)

// The Q5_K loop over the super-blocks, then X0 = the result (prefetching as
// dotQ4_KAVX2).
#define Q5K_BODY(RUN, loop) \
	BYTES(0x0f, Y13, X13); \
	BYTES(0x10, Y12, X12); \
	VXORPS Y15, Y15, Y15; \
	VXORPS Y14, Y14, Y14; \
loop: \
	PREFETCHT0   4096(SI); \
	PREFETCHT0   4160(SI); \
	PREFETCHT0   4224(SI); \
	SCALES_MINS_K4; \
	VEXTRACTI128 $1, Y3, X4; \
	VPADDD       X4, X3, X3; \
	VPSHUFD      $0x4e, X3, X4; \
	VPADDD       X4, X3, X3; \
	VPSHUFD      $0xb1, X3, X4; \
	VPADDD       X4, X3, X3; \
	VCVTDQ2PS    X3, X3; \
	SUPER_SCALE(2, X4); \
	VFNMADD231SS X3, X4, X14; \
	VMOVDQU      16(SI), Y10; \
	VPXOR        Y6, Y6, Y6; \
	Q5K_RUNS(RUN, Q5K_HIGH); \
	ACC_LANES(0); \
	ADDQ $176, SI; \
	ADDQ $256, DI; \
	ADDQ $4, DX; \
	ADDQ $32, R8; \
	DECQ CX; \
	JNZ  loop; \
	HSUM8_Y15; \
	VADDSS X14, X0, X0

// func dotQ5_KAVX2(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
//
// The minimums of a super-block are summed in one integer and accumulated in
// one float32 (see dotQ5_KGeneric).
TEXT ·dotQ5_KAVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsums+24(FP), R8
	MOVQ nb+32(FP), CX
	Q5K_BODY(RUN_AVX2, q5kAVX2Loop)
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// func dotQ5_KAVX512(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ5_KAVX512(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsums+24(FP), R8
	MOVQ nb+32(FP), CX
	Q5K_BODY(RUN_VNNI, q5kVNNILoop)
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// Q6_K: the quants are 6-bit, taken minus 32: the pairs are formed as
// Σ q·y − Σ 32·y with two VPMADDUBSW (exact in int16). The sixteen int8 scales,
// one per 16 values, are spread so that scale word c of the low 128-bit lane
// is scale 2c and of the high lane scale 2c+1 (lanes 0…3 and 4…7 of run c).

// Y7 = (nibbles Y7) | (high bits Y9 shifted into bits 4…5); the low nibble
// source is already masked. M holds bytes 0x30 (Y11, or bytes30 in the
// four-activation kernel). Clobbers Y10.
#define Q6K_HIGH(SHIFT, n, M) \
	SHIFT $n, Y9, Y10; \
	VPAND M, Y10, Y10; \
	VPOR  Y10, Y7, Y7

#define Q6K_RUN_AVX2(c) \
	VPMADDUBSW 32*(c)(DI), Y7, Y7; \
	VPMADDUBSW 32*(c)(DI), Y12, Y10; \
	VPSUBW     Y10, Y7, Y7; \
	VPSHUFB    scaleShuf<>+32*(c)(SB), Y1, Y10; \
	VPMADDWD   Y10, Y7, Y7; \
	VPADDD     Y7, Y6, Y6

// The four runs of half h: ql at 64h(SI), qh at 128+32h(SI).
#define Q6K_HALF(RUN, h) \
	VMOVDQU 128+32*h(SI), Y9; \
	VMOVDQU 64*h(SI), Y2; \
	VMOVDQU 64*h+32(SI), Y3; \
	VPAND   Y13, Y2, Y7; \
	Q6K_HIGH(VPSLLW, 4, Y11); \
	RUN(4*h); \
	VPAND   Y13, Y3, Y7; \
	Q6K_HIGH(VPSLLW, 2, Y11); \
	RUN(4*h+1); \
	VPSRLW  $4, Y2, Y7; \
	VPAND   Y13, Y7, Y7; \
	Q6K_HIGH(VPSRLW, 0, Y11); \
	RUN(4*h+2); \
	VPSRLW  $4, Y3, Y7; \
	VPAND   Y13, Y7, Y7; \
	Q6K_HIGH(VPSRLW, 2, Y11); \
	RUN(4*h+3)

// The Q6_K loop over the super-blocks, then X0 = the result.
#define Q6K_BODY(RUN, loop) \
	BYTES(0x0f, Y13, X13); \
	BYTES(0x20, Y12, X12); \
	BYTES(0x30, Y11, X11); \
	VMOVDQU evenOdd<>(SB), X14; \
	VXORPS  Y15, Y15, Y15; \
loop: \
	PREFETCHT0 4096(SI); \
	PREFETCHT0 4160(SI); \
	PREFETCHT0 4224(SI); \
	PREFETCHT0 4288(SI); \
	VMOVDQU   192(SI), X1; \
	VPSHUFB   X14, X1, X1; \
	VPMOVSXBW X1, Y1; \
	VPXOR     Y6, Y6, Y6; \
	Q6K_HALF(RUN, 0); \
	Q6K_HALF(RUN, 1); \
	ACC_LANES(208); \
	ADDQ $210, SI; \
	ADDQ $256, DI; \
	ADDQ $4, DX; \
	DECQ CX; \
	JNZ  loop; \
	HSUM8_Y15

// func dotQ6_KAVX2(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ6_KAVX2(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+32(FP), CX
	Q6K_BODY(Q6K_RUN_AVX2, q6kAVX2Loop)
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// AVX-512 variants (AVX512F/BW/VL and VNNI): two runs of 32 values per 512-bit
// register. The int32 lanes of the even runs gather in the low 256 bits of Z6
// and those of the odd runs in the high 256 bits; the two halves are added at
// the end of each super-block (exact), after which the float32 work is that of
// the AVX2 kernels. The sub-block scales are spread with VPERMW by index
// vectors in Z16…Z19; the float32 accumulation stays on 256-bit registers.

// VPERMW indices: words 0…3 to the four 128-bit lanes.
DATA permQuarters<>+0(SB)/8, $0x0000000000000000
DATA permQuarters<>+8(SB)/8, $0x0000000000000000
DATA permQuarters<>+16(SB)/8, $0x0001000100010001
DATA permQuarters<>+24(SB)/8, $0x0001000100010001
DATA permQuarters<>+32(SB)/8, $0x0002000200020002
DATA permQuarters<>+40(SB)/8, $0x0002000200020002
DATA permQuarters<>+48(SB)/8, $0x0003000300030003
DATA permQuarters<>+56(SB)/8, $0x0003000300030003
GLOBL permQuarters<>(SB), RODATA|NOPTR, $64

// Z = words a in the low 256 bits and words b in the high 256 bits (Y is the
// low half of Z). Clobbers AX, Y register T.
#define HALVES(a, b, Z, Y, T) \
	MOVL          $a, AX; \
	VPBROADCASTW  AX, Y; \
	MOVL          $b, AX; \
	VPBROADCASTW  AX, T; \
	VINSERTI64X4  $1, T, Z, Z

// R1…R3 = the word index vector R0 plus step, 2·step, 3·step. Clobbers AX, T.
#define PERM_STEPS(step, R0, R1, R2, R3, T) \
	MOVL         $step, AX; \
	VPBROADCASTW AX, T; \
	VPADDW       T, R0, R1; \
	VPADDW       T, R1, R2; \
	VPADDW       T, R2, R3

// Y6 = the sum of the two 256-bit halves of Z6. Clobbers Y7.
#define FOLD_Z6 \
	VEXTRACTI64X4 $1, Z6, Y7; \
	VPADDD        Y7, Y6, Y6

// Q6_K: the runs pair up as (4h, 4h+1), whose low bits are the low nibbles of
// the 64 bytes of ql of half h, and (4h+2, 4h+3), their high nibbles. Lane group
// g (128 bits) of a pair takes scale 4p+g of pair p.

// Z6 += the lanes of pair p from its quants in Z7 and the activation at
// 64p(DI), minus 32 times the activation (OFF: Q6K_OFFSETS, the same for
// every row), times the scales IDX picks. Clobbers Z7, Z9.
#define Q6K_PAIR512(p, IDX, OFF) \
	VPMADDUBSW 64*(p)(DI), Z7, Z7; \
	VPSUBW     OFF, Z7, Z7; \
	VPERMW     Z1, IDX, Z9; \
	VPDPWSSD   Z9, Z7, Z6

// Z26…Z29 = 32 times the pairs of the super-block's activation (at DI), for
// Q6K_PAIR512 (Z12 holds bytes 0x20).
#define Q6K_OFFSETS \
	VPMADDUBSW (DI), Z12, Z26; \
	VPMADDUBSW 64(DI), Z12, Z27; \
	VPMADDUBSW 128(DI), Z12, Z28; \
	VPMADDUBSW 192(DI), Z12, Z29

// One super-block of the Q6_K row at B into the float32 lanes ACC. Needs the
// constants of dotQ6_KAVX512 and the super-block's Q6K_OFFSETS. Clobbers
// Z1…Z9, AX.
#define Q6K_BLOCK_512(B, ACC) \
	VPMOVSXBW       192(B), Y1; \
	VPXOR           Y6, Y6, Y6; \
	VMOVDQU64       (B), Z2; \
	VBROADCASTI64X4 128(B), Z3; \
	VPANDQ          Z13, Z2, Z7; \
	VPSLLVW         Z21, Z3, Z8; \
	VPTERNLOGD      $0xf8, Z11, Z8, Z7; \
	Q6K_PAIR512(0, Z16, Z26); \
	VPSRLW          $4, Z2, Z7; \
	VPANDQ          Z13, Z7, Z7; \
	VPSRLVW         Z22, Z3, Z8; \
	VPTERNLOGD      $0xf8, Z11, Z8, Z7; \
	Q6K_PAIR512(1, Z17, Z27); \
	VMOVDQU64       64(B), Z2; \
	VBROADCASTI64X4 160(B), Z3; \
	VPANDQ          Z13, Z2, Z7; \
	VPSLLVW         Z21, Z3, Z8; \
	VPTERNLOGD      $0xf8, Z11, Z8, Z7; \
	Q6K_PAIR512(2, Z18, Z28); \
	VPSRLW          $4, Z2, Z7; \
	VPANDQ          Z13, Z7, Z7; \
	VPSRLVW         Z22, Z3, Z8; \
	VPTERNLOGD      $0xf8, Z11, Z8, Z7; \
	Q6K_PAIR512(3, Z19, Z29); \
	FOLD_Z6; \
	MOVWLZX         208(B), AX; \
	VMOVD           AX, X5; \
	VCVTPH2PS       X5, X5; \
	VMULSS          (DX), X5, X5; \
	VBROADCASTSS    X5, Y5; \
	VCVTDQ2PS       Y6, Y6; \
	VFMADD231PS     Y6, Y5, ACC

// The constants of the 512-bit Q6_K kernels, and Y15 = 0. Clobbers AX.
#define Q6K_CONSTS_512 \
	VMOVDQU64 permQuarters<>(SB), Z16; \
	PERM_STEPS(4, Z16, Z17, Z18, Z19, Z20); \
	HALVES(4, 2, Z21, Y21, Y20); \
	HALVES(0, 2, Z22, Y22, Y20); \
	MOVL         $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z13; \
	MOVL         $0x20202020, AX; \
	VPBROADCASTD AX, Z12; \
	MOVL         $0x30303030, AX; \
	VPBROADCASTD AX, Z11; \
	VXORPS       Y15, Y15, Y15

// func dotQ6_KAVX512(w *byte, qs *int8, d *float32, bsums *int16, nb int) float32
TEXT ·dotQ6_KAVX512(SB), NOSPLIT, $0-44
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+32(FP), CX
	Q6K_CONSTS_512

q6k512Loop:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	PREFETCHT0 4288(SI)
	Q6K_OFFSETS
	Q6K_BLOCK_512(SI, Y15)
	ADDQ       $210, SI
	ADDQ       $256, DI
	ADDQ       $4, DX
	DECQ       CX
	JNZ        q6k512Loop

	HSUM8_Y15
	VMOVSS X0, ret+40(FP)
	VZEROUPPER
	RET

// Prefetches off bytes ahead into L2 in each of the rows SI, R11, R12 and R13
// of the multi-row K-quant kernel.
#define ROWS4_PREFETCH(off) \
	PREFETCHT1 off(SI); \
	PREFETCHT1 off(R11); \
	PREFETCHT1 off(R12); \
	PREFETCHT1 off(R13)

// func dotQ6_KRows4AVX512(w *byte, stride int, qs *int8, d *float32, bsums *int16, nb int, out *[4]float32)
//
// dotQ6_KAVX512 for the four rows at w + k·stride, read side by side so that
// the core reads four streams. Rows 1…3 keep their lanes in Y23…Y25.
TEXT ·dotQ6_KRows4AVX512(SB), NOSPLIT, $0-56
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), BX
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+40(FP), CX
	LEAQ (SI)(BX*1), R11
	LEAQ (R11)(BX*1), R12
	LEAQ (R12)(BX*1), R13
	Q6K_CONSTS_512
	VXORPS Y23, Y23, Y23
	VXORPS Y24, Y24, Y24
	VXORPS Y25, Y25, Y25

q6kRows4Loop:
	ROWS4_PREFETCH(1024)
	ROWS4_PREFETCH(1088)
	ROWS4_PREFETCH(1152)
	ROWS4_PREFETCH(1216)
	Q6K_OFFSETS
	Q6K_BLOCK_512(SI, Y15)
	Q6K_BLOCK_512(R11, Y23)
	Q6K_BLOCK_512(R12, Y24)
	Q6K_BLOCK_512(R13, Y25)
	ADDQ       $210, SI
	ADDQ       $210, R11
	ADDQ       $210, R12
	ADDQ       $210, R13
	ADDQ       $256, DI
	ADDQ       $4, DX
	DECQ       CX
	JNZ        q6kRows4Loop

	MOVQ    out+48(FP), AX
	HSUM8_Y15
	VMOVSS  X0, (AX)
	VMOVAPS Y23, Y15
	HSUM8_Y15
	VMOVSS  X0, 4(AX)
	VMOVAPS Y24, Y15
	HSUM8_Y15
	VMOVSS  X0, 8(AX)
	VMOVAPS Y25, Y15
	HSUM8_Y15
	VMOVSS  X0, 12(AX)
	VZEROUPPER
	RET

// ---------------------------------------------------------------------------
// One weight row times four activations (prompt prefill), AVX-512 tier: the
// weights of each super-block are unpacked once and multiplied with each of the
// four activations; every result is bit for bit that of the one-activation
// kernel. The activations are described by an actPtrs4 at R8 (pointers to the
// quants at 0, 8, 16, 24, to the scales at 32…56, to the bsums at 64…88);
// for super-block i, R12 = 32i and R13 = 4i index them: quants (p)(R12*8),
// scales (p)(R13*1), bsums (p)(R13*8). The float32 lanes of activation b are
// in Y16+b, the int32 lanes of the super-block in Y24+b (Z24+b).

// R = the quants of activation b for the current super-block.
#define ACT_QS(b, R) \
	MOVQ 8*(b)(R8), R; \
	LEAQ (R)(R12*8), R

// DI, R9, R10, R11 = the quants of the four activations (ACT_QS).
#define ACTS4_QS \
	ACT_QS(0, DI); \
	ACT_QS(1, R9); \
	ACT_QS(2, R10); \
	ACT_QS(3, R11)

// X0 = the float32 of the result (see HSUM8_Y15) of the lanes ACC. Clobbers
// Y15, X1.
#define HSUM8_OF(ACC) \
	VMOVAPS ACC, Y15; \
	HSUM8_Y15

// Run c of the four activations (quants DI, R9, R10, R11) with the unsigned
// weight quants Q. Clobbers Y9…Y12, Y14.
#define Q4K_RUN4(c, Q) \
	VPSHUFB    scaleShuf<>+32*(c)(SB), Y1, Y9; \
	VPMADDUBSW 32*(c)(DI), Q, Y10; \
	VPMADDUBSW 32*(c)(R9), Q, Y11; \
	VPMADDUBSW 32*(c)(R10), Q, Y12; \
	VPMADDUBSW 32*(c)(R11), Q, Y14; \
	VPDPWSSD   Y9, Y10, Y24; \
	VPDPWSSD   Y9, Y11, Y25; \
	VPDPWSSD   Y9, Y12, Y26; \
	VPDPWSSD   Y9, Y14, Y27

// Zeroes the index registers R12, R13 and sets Y13 to bytes 0x0f.
#define ACTS4_K_INDEX \
	XORQ R12, R12; \
	XORQ R13, R13; \
	BYTES(0x0f, Y13, X13)

// ACTS4_K_INDEX, and the accumulators Y16…Y23 zeroed.
#define ACTS4_K_INIT \
	ACTS4_K_INDEX; \
	VPXORD Y16, Y16, Y16; \
	VPXORD Y17, Y17, Y17; \
	VPXORD Y18, Y18, Y18; \
	VPXORD Y19, Y19, Y19; \
	VPXORD Y20, Y20, Y20; \
	VPXORD Y21, Y21, Y21; \
	VPXORD Y22, Y22, Y22; \
	VPXORD Y23, Y23, Y23

// The start of a Q4_K or Q5_K super-block for four activations: the scales
// and mins unpacked (Y1, Y3), the minimums accumulated and the scales d_b of
// each activation set by ACT, the quant pointers loaded (DI, R9, R10, R11) and
// the int32 lanes Y24…Y27 zeroed.
#define ACTS4_K_HEAD(ACT) \
	K4_UNPACK(AX, BX, DX, DI, R9, R10); \
	MOVWLZX   2(SI), AX; \
	VMOVD     AX, X4; \
	VCVTPH2PS X4, X4; \
	MOVWLZX   (SI), AX; \
	VMOVD     AX, X5; \
	VCVTPH2PS X5, X5; \
	ACT(0, X20, Y28); \
	ACT(1, X21, Y29); \
	ACT(2, X22, Y30); \
	ACT(3, X23, Y31); \
	ACTS4_QS; \
	VPXORD Y24, Y24, Y24; \
	VPXORD Y25, Y25, Y25; \
	VPXORD Y26, Y26, Y26; \
	VPXORD Y27, Y27, Y27

// Y16+b = fma(Y28+b, float32(Y24+b), Y16+b) for the four activations.
#define ACTS4_K_ACC \
	VCVTDQ2PS   Y24, Y24; \
	VCVTDQ2PS   Y25, Y25; \
	VCVTDQ2PS   Y26, Y26; \
	VCVTDQ2PS   Y27, Y27; \
	VFMADD231PS Y24, Y28, Y16; \
	VFMADD231PS Y25, Y29, Y17; \
	VFMADD231PS Y26, Y30, Y18; \
	VFMADD231PS Y27, Y31, Y19

// For activation b of a Q5_K row: the minimum accumulator SUMMS -= its scaled
// min sum (one float32, X4 = the weights' fp16 dmin as float32, Y3 the mins),
// leaving AX = the pointer to its scales. Clobbers X2, X6.
#define Q5K_MINS(b, SUMMS) \
	MOVQ         64+8*(b)(R8), AX; \
	VPMADDWD     (AX)(R13*8), Y3, Y2; \
	VEXTRACTI128 $1, Y2, X6; \
	VPADDD       X6, X2, X2; \
	VPSHUFD      $0x4e, X2, X6; \
	VPADDD       X6, X2, X2; \
	VPSHUFD      $0xb1, X2, X6; \
	VPADDD       X6, X2, X2; \
	VCVTDQ2PS    X2, X2; \
	MOVQ         32+8*(b)(R8), AX; \
	VMULSS       (AX)(R13*1), X4, X6; \
	VFNMADD231SS X2, X6, SUMMS

// Q5K_MINS, and DB = the activation's d times the weights' d (in X5),
// broadcast. Clobbers AX, X2, X6.
#define Q5K_ACT(b, SUMMS, DB) \
	Q5K_MINS(b, SUMMS); \
	VMULSS       (AX)(R13*1), X5, X6; \
	VBROADCASTSS X6, DB

// Q5K_HIGH for the four-activation kernel: the high bits in Y15, bytes 0x10 in
// Y0. Clobbers Y6.
#define Q5K_HIGH4(SHIFT, n, dst) \
	SHIFT $n, Y15, Y6; \
	VPAND Y0, Y6, Y6; \
	VPOR  Y6, dst, dst

// func dotQ5_KActs4AVX512(w *byte, p *actPtrs4, nb int, out *[4]float32)
TEXT ·dotQ5_KActs4AVX512(SB), NOSPLIT, $0-32
	MOVQ   w+0(FP), SI
	MOVQ   p+8(FP), R8
	MOVQ   nb+16(FP), CX
	ACTS4_K_INIT
	BYTES(0x10, Y0, X0)

q5kActs4Loop:
	ACTS4_K_HEAD(Q5K_ACT)
	VMOVDQU 16(SI), Y15
	Q5K_RUNS(Q4K_RUN4, Q5K_HIGH4)
	ACTS4_K_ACC
	ADDQ        $176, SI
	ADDQ        $32, R12
	ADDQ        $4, R13
	DECQ        CX
	JNZ         q5kActs4Loop

	MOVQ    out+24(FP), BX
	HSUM8_OF(Y16)
	VADDSS  X20, X0, X0
	VMOVSS  X0, (BX)
	HSUM8_OF(Y17)
	VADDSS  X21, X0, X0
	VMOVSS  X0, 4(BX)
	HSUM8_OF(Y18)
	VADDSS  X22, X0, X0
	VMOVSS  X0, 8(BX)
	HSUM8_OF(Y19)
	VADDSS  X23, X0, X0
	VMOVSS  X0, 12(BX)
	VZEROUPPER
	RET

// Pair p of the four activations (quants DI, R9, R10, R11) with the Q6_K
// quants Z7 and the scales IDX picks from Y1. Z12 holds bytes 0x20. Clobbers
// Z9, Z10, Z14.
#define Q6K_PAIR4(p, IDX) \
	VPERMW     Z1, IDX, Z9; \
	VPMADDUBSW 64*(p)(DI), Z7, Z10; \
	VPMADDUBSW 64*(p)(DI), Z12, Z14; \
	VPSUBW     Z14, Z10, Z10; \
	VPDPWSSD   Z9, Z10, Z24; \
	VPMADDUBSW 64*(p)(R9), Z7, Z10; \
	VPMADDUBSW 64*(p)(R9), Z12, Z14; \
	VPSUBW     Z14, Z10, Z10; \
	VPDPWSSD   Z9, Z10, Z25; \
	VPMADDUBSW 64*(p)(R10), Z7, Z10; \
	VPMADDUBSW 64*(p)(R10), Z12, Z14; \
	VPSUBW     Z14, Z10, Z10; \
	VPDPWSSD   Z9, Z10, Z26; \
	VPMADDUBSW 64*(p)(R11), Z7, Z10; \
	VPMADDUBSW 64*(p)(R11), Z12, Z14; \
	VPSUBW     Z14, Z10, Z10; \
	VPDPWSSD   Z9, Z10, Z27

// The two pairs of half h of a Q6_K super-block for four activations.
#define Q6K_HALF4(h, IA, IB) \
	VMOVDQU64       64*(h)(SI), Z2; \
	VBROADCASTI64X4 128+32*(h)(SI), Z3; \
	VPANDQ          Z13, Z2, Z7; \
	VPSLLVW         Z28, Z3, Z8; \
	VPTERNLOGD      $0xf8, Z11, Z8, Z7; \
	Q6K_PAIR4(2*(h), IA); \
	VPSRLW          $4, Z2, Z7; \
	VPANDQ          Z13, Z7, Z7; \
	VPSRLVW         Z29, Z3, Z8; \
	VPTERNLOGD      $0xf8, Z11, Z8, Z7; \
	Q6K_PAIR4(2*(h)+1, IB)

// ACC = fma(d_b·d_w, float32(lanes of Z L folded), ACC) for activation b, with
// X5 = the weights' fp16 d as float32. Clobbers AX, Y10, X6, Y6.
#define Q6K_ACC(b, L, LY, ACC) \
	VEXTRACTI64X4 $1, L, Y10; \
	VPADDD        Y10, LY, LY; \
	VCVTDQ2PS     LY, LY; \
	MOVQ          32+8*(b)(R8), AX; \
	VMULSS        (AX)(R13*1), X5, X6; \
	VBROADCASTSS  X6, Y6; \
	VFMADD231PS   LY, Y6, ACC

// func dotQ6_KActs4AVX512(w *byte, p *actPtrs4, nb int, out *[4]float32)
TEXT ·dotQ6_KActs4AVX512(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ p+8(FP), R8
	MOVQ nb+16(FP), CX
	XORQ R12, R12
	XORQ R13, R13
	VMOVDQU64 permQuarters<>(SB), Z20
	PERM_STEPS(4, Z20, Z21, Z22, Z23, Z9)
	HALVES(4, 2, Z28, Y28, Y9)
	HALVES(0, 2, Z29, Y29, Y9)
	MOVL         $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z13
	MOVL         $0x20202020, AX
	VPBROADCASTD AX, Z12
	MOVL         $0x30303030, AX
	VPBROADCASTD AX, Z11
	VPXORD       Y16, Y16, Y16
	VPXORD       Y17, Y17, Y17
	VPXORD       Y18, Y18, Y18
	VPXORD       Y19, Y19, Y19

q6kActs4Loop:
	VPMOVSXBW 192(SI), Y1
	MOVWLZX   208(SI), AX
	VMOVD     AX, X5
	VCVTPH2PS X5, X5
	ACTS4_QS
	VPXORD    Z24, Z24, Z24
	VPXORD    Z25, Z25, Z25
	VPXORD    Z26, Z26, Z26
	VPXORD    Z27, Z27, Z27
	Q6K_HALF4(0, Z20, Z21)
	Q6K_HALF4(1, Z22, Z23)
	Q6K_ACC(0, Z24, Y24, Y16)
	Q6K_ACC(1, Z25, Y25, Y17)
	Q6K_ACC(2, Z26, Y26, Y18)
	Q6K_ACC(3, Z27, Y27, Y19)
	ADDQ $210, SI
	ADDQ $32, R12
	ADDQ $4, R13
	DECQ CX
	JNZ  q6kActs4Loop

	MOVQ    out+24(FP), BX
	HSUM8_OF(Y16)
	VMOVSS  X0, (BX)
	HSUM8_OF(Y17)
	VMOVSS  X0, 4(BX)
	HSUM8_OF(Y18)
	VMOVSS  X0, 8(BX)
	HSUM8_OF(Y19)
	VMOVSS  X0, 12(BX)
	VZEROUPPER
	RET

// One Q4_K, Q5_K or Q6_K row with four activations (prefill), AVX2 tier. As
// in the AVX-512 kernels above, the weights of a super-block are unpacked
// once and each run's products with the four activations are summed in their
// int32 lanes, Y3…Y6 for activations 0…3, each with the operations of the
// one-activation kernel (dotQ4_KAVX2, dotQ5_KAVX2, dotQ6_KAVX2); the
// activations are described by an actPtrs4 at R8, indexed by R12 and R13
// (see ACT_QS). With sixteen registers, four of them int32 lanes and four
// float32 accumulators, the scales of the activations are read when they are
// used, Q5_K keeps its minimum accumulators in the frame, and the masks of
// the high bits of Q5_K and Q6_K are read from memory. The Q4_K kernel
// (dotQ4_KRowsActs4AVX2) takes several rows and reads the activations'
// scales and bsums packed (kPack4), with one lane per activation for each
// of its two float chains (dotQ4_KGeneric).

// Y3+b += the lanes of the unsigned weight quants Q with the activation bytes
// at A, times the scale words S (RUN_AVX2 for activation b). Clobbers P.
#define K_RUN_ACT(Q, A, S, P, L) \
	VPMADDUBSW A, Q, P; \
	VPMADDWD   S, P, P; \
	VPADDD     P, L, L

// Run c of a Q4_K or Q5_K super-block (unsigned quants Q, scales Y1) for the
// four activations (quants at DI, R9, R10, R11). Clobbers Y0, Y2, Y9.
#define Q4K_RUN4_AVX2(c, Q) \
	VPSHUFB scaleShuf<>+32*(c)(SB), Y1, Y9; \
	K_RUN_ACT(Q, 32*(c)(DI), Y9, Y0, Y3); \
	K_RUN_ACT(Q, 32*(c)(R9), Y9, Y2, Y4); \
	K_RUN_ACT(Q, 32*(c)(R10), Y9, Y0, Y5); \
	K_RUN_ACT(Q, 32*(c)(R11), Y9, Y2, Y6)

// The quant pointers of the four activations for the current super-block
// (DI, R9, R10, R11), and their int32 lanes Y3…Y6 zeroed.
#define ACTS4_K_START_AVX2 \
	ACTS4_QS; \
	VPXOR Y3, Y3, Y3; \
	VPXOR Y4, Y4, Y4; \
	VPXOR Y5, Y5, Y5; \
	VPXOR Y6, Y6, Y6

// ACC = fma(d_b·d_w, float32(L), ACC) for activation b (ACC_LANES), with
// X7 = the weights' fp16 d as float32. Clobbers AX, Y2.
#define K_ACC_AVX2(b, L, ACC) \
	MOVQ         32+8*(b)(R8), AX; \
	VMULSS       (AX)(R13*1), X7, X2; \
	VBROADCASTSS X2, Y2; \
	VCVTDQ2PS    L, L; \
	VFMADD231PS  L, Y2, ACC

// The end of a super-block: X7 = the weights' fp16 d at off(SI), the lanes
// Y3…Y6 accumulated into A0…A3, and the pointers advanced by blockBytes (SI)
// and one super-block (R12, R13).
#define ACTS4_K_END_AVX2(off, A0, A1, A2, A3, blockBytes) \
	MOVWLZX   off(SI), AX; \
	VMOVD     AX, X7; \
	VCVTPH2PS X7, X7; \
	K_ACC_AVX2(0, Y3, A0); \
	K_ACC_AVX2(1, Y4, A1); \
	K_ACC_AVX2(2, Y5, A2); \
	K_ACC_AVX2(3, Y6, A3); \
	ADDQ $blockBytes, SI; \
	ADDQ $32, R12; \
	ADDQ $4, R13

// The float32 lanes of the four activations of Q5_K, Y10, Y11, Y12
// and Y14, zeroed.
#define ACTS4_K_ZERO_AVX2 \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
	VXORPS Y12, Y12, Y12; \
	VXORPS Y14, Y14, Y14

// The start of a Q4_K or Q5_K super-block for four activations: the scales
// and mins unpacked (Y1, Y3), X4 = the weights' fp16 dmin as float32, and the
// minimums of each activation accumulated by MINS (Q5K_MINS_FRAME).
#define ACTS4_K_MINS_AVX2(MINS) \
	K4_UNPACK(AX, BX, DX, DI, R9, R10); \
	MOVWLZX   2(SI), AX; \
	VMOVD     AX, X4; \
	VCVTPH2PS X4, X4; \
	MINS(0); \
	MINS(1); \
	MINS(2); \
	MINS(3)

// k4Unpack<> holds the VPSHUFB masks and the byte masks of K4_UNPACK_AVX2:
// at 0 the bytes of scales 0…3, 4…7 (low nibbles), mins 0…3, 4…7 (high
// nibbles); at 16 the bytes whose top two bits are those of scales and mins
// 4…7; at 32 the masks of the first, at 48 that of the high nibbles, at 64
// that of the top bits moved to bits 4 and 5.
DATA k4Unpack<>+0(SB)/8, $0x0b0a090803020100
DATA k4Unpack<>+8(SB)/8, $0x0b0a090807060504
DATA k4Unpack<>+16(SB)/8, $0x0302010080808080
DATA k4Unpack<>+24(SB)/8, $0x0706050480808080
DATA k4Unpack<>+32(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA k4Unpack<>+40(SB)/8, $0x000000003f3f3f3f
DATA k4Unpack<>+48(SB)/8, $0x0000000000000000
DATA k4Unpack<>+56(SB)/8, $0x0f0f0f0f00000000
DATA k4Unpack<>+64(SB)/8, $0x3030303000000000
DATA k4Unpack<>+72(SB)/8, $0x3030303000000000
GLOBL k4Unpack<>(SB), RODATA|NOPTR, $80

// bytes0f<> is 32 bytes 0x0f, the nibble mask of the Q4_K rows × four
// activations kernel, which has no register left to hold it.
DATA bytes0f<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA bytes0f<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA bytes0f<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA bytes0f<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL bytes0f<>(SB), RODATA|NOPTR, $32

// K4_UNPACK with vector instructions (scalesMinsK4) for the Q4_K block at
// off(SI): S = its eight scales as int16 in both 128-bit lanes, Y7 = its
// eight mins as int16, mins 0…3 twice in the low lane and 4…7 twice in the
// high lane. Clobbers X0, X2, X8.
#define K4_UNPACK_AVX2(off, S) K4_UNPACK_T(off, S, X2)

// K4_UNPACK_AVX2 with the temporary T in place of X2.
#define K4_UNPACK_T(off, S, T) \
	VMOVDQU   off+4(SI), X0; \
	VPSHUFB   k4Unpack<>+0(SB), X0, T; \
	VPAND     k4Unpack<>+32(SB), T, X7; \
	VPSRLW    $4, T, X8; \
	VPAND     k4Unpack<>+48(SB), X8, X8; \
	VPOR      X8, X7, X7; \
	VPSHUFB   k4Unpack<>+16(SB), X0, T; \
	VPSRLW    $2, T, T; \
	VPAND     k4Unpack<>+64(SB), T, T; \
	VPOR      T, X7, X7; \
	VPMOVZXBW X7, Y7; \
	VPERMQ    $0x44, Y7, S; \
	VPERMQ    $0xfa, Y7, Y7

// The head of the Q4_K super-block at off(SI) with its packed side data at
// poff(BX) (a kPack4: d at 0, pairs at 16), done a super-block ahead: Y13 =
// its scales (K4_UNPACK_AVX2), and the mins of the four activations
// multiplied with their sub-block sums (kPack4.pairs) by two VPMADDWD, the
// first with mins 0, 1 (low lane) and 4, 5 (high lane), the second with 2,
// 3 and 6, 7, so that lane b of the sum of the two results' halves is
// activation b's exact im (dotQ4_KGeneric); X2 = [im0, im1, im2, im3] is
// accumulated into the minimum chains X11 (lane b for activation b, negated)
// by one VFNMADD231PS with the products dmin_w·d_b, and the four products
// d_w·d_b are stored at DD. Clobbers Y0, Y2, Y7…Y9.
#define Q4K_HEAD_AHEAD(off, poff, DD) \
	K4_UNPACK_AVX2(off, Y13); \
	VPSHUFD      $0x00, Y7, Y2; \
	VPSHUFD      $0x55, Y7, Y0; \
	VPMADDWD     poff+16(BX), Y2, Y2; \
	VPMADDWD     poff+48(BX), Y0, Y0; \
	VPADDD       Y0, Y2, Y2; \
	VEXTRACTI128 $1, Y2, X0; \
	VPADDD       X0, X2, X2; \
	VCVTDQ2PS    X2, X2; \
	VPBROADCASTW off+2(SI), X9; \
	VCVTPH2PS    X9, X9; \
	VMULPS       poff(BX), X9, X8; \
	VFNMADD231PS X2, X8, X11; \
	VPBROADCASTW off(SI), X9; \
	VCVTPH2PS    X9, X9; \
	VMULPS       poff(BX), X9, X9; \
	VMOVUPS      X9, DD

// Y7, Y8 = the low and high nibbles of the 32 bytes at off(SI), the mask
// read from memory.
#define NIBBLES_MEM(off) \
	VMOVDQU off(SI), Y7; \
	VPSRLW  $4, Y7, Y8; \
	VPAND   bytes0f<>(SB), Y7, Y7; \
	VPAND   bytes0f<>(SB), Y8, Y8

// Run c of the current super-block (unsigned quants Q, scales Y1) for the
// four activations (quants at DI, R9, R10, R11 plus R12). Clobbers Y0, Y2,
// Y9.
#define Q4K_RUN4_IDX(c, Q) \
	VPSHUFB scaleShuf<>+32*(c)(SB), Y1, Y9; \
	K_RUN_ACT(Q, 32*(c)(DI)(R12*1), Y9, Y0, Y3); \
	K_RUN_ACT(Q, 32*(c)(R9)(R12*1), Y9, Y2, Y4); \
	K_RUN_ACT(Q, 32*(c)(R10)(R12*1), Y9, Y0, Y5); \
	K_RUN_ACT(Q, 32*(c)(R11)(R12*1), Y9, Y2, Y6)

// L = the lanes of run 0 with the activation bytes at A (K_RUN_ACT into
// zeroed lanes).
#define K_RUN_ACT_FIRST(Q, A, S, L) \
	VPMADDUBSW A, Q, L; \
	VPMADDWD   S, L, L

// Q4K_RUN4_IDX for run 0, setting the lanes Y3…Y6.
#define Q4K_RUN4_FIRST(Q) \
	VPSHUFB scaleShuf<>+0(SB), Y1, Y9; \
	K_RUN_ACT_FIRST(Q, (DI)(R12*1), Y9, Y3); \
	K_RUN_ACT_FIRST(Q, (R9)(R12*1), Y9, Y4); \
	K_RUN_ACT_FIRST(Q, (R10)(R12*1), Y9, Y5); \
	K_RUN_ACT_FIRST(Q, (R11)(R12*1), Y9, Y6)

// X10 = fma(d_w·d_b, float32(is_b), X10) for the four activations at once
// (lane b), with is_b the exact sum of the lanes of Y3+b and the products
// d_w·d_b at D. Clobbers Y0, Y3…Y6.
#define Q4K_ACC4(D) \
	VPHADDD      Y4, Y3, Y3; \
	VPHADDD      Y6, Y5, Y5; \
	VPHADDD      Y5, Y3, Y3; \
	VEXTRACTI128 $1, Y3, X0; \
	VPADDD       X0, X3, X3; \
	VCVTDQ2PS    X3, X3; \
	VFMADD231PS  D, X3, X10

// func dotQ4_KRowsActs4AVX2(w *byte, rowBytes, rows int, p *actPtrs4, pk *kPack4, nb int, out *float32, stride int)
//
// The arithmetic of dotQ4_KGeneric (the reference's repacked kernels) for
// each row and activation: lane b of X10 is activation b's chain acc, lane b
// of X11 its minimum chain accm, negated, so that the result is X10 + X11.
// The head of each super-block (its scales and mins unpacked with vector
// instructions, the minimums, the products of the scales; Q4K_HEAD_AHEAD)
// is done during the runs of the super-block before it, so that its long
// chain of latencies overlaps work instead of holding up the runs (the
// products at 64(SP) are copied to 80(SP) for the super-block's own end).
// SI walks the row (R14 its start), R12 the activations' quants, BX the
// packed side data, DX the output (R8 = 4·stride).
TEXT ·dotQ4_KRowsActs4AVX2(SB), NOSPLIT, $96-64
	MOVQ w+0(FP), R14
	MOVQ p+24(FP), R8
	MOVQ 0(R8), DI
	MOVQ 8(R8), R9
	MOVQ 16(R8), R10
	MOVQ 24(R8), R11
	MOVQ out+48(FP), DX
	MOVQ stride+56(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R13

q4kRowsActs4Row:
	MOVQ   R14, SI
	MOVQ   pk+32(FP), BX
	MOVQ   nb+40(FP), CX
	XORQ   R12, R12
	VXORPS X10, X10, X10
	VXORPS X11, X11, X11
	Q4K_HEAD_AHEAD(0, 0, 64(SP))

q4kRowsActs4Block:
	VMOVUPS 64(SP), X15
	VMOVUPS X15, 80(SP)
	VMOVDQA Y13, Y1
	NIBBLES_MEM(16)
	Q4K_RUN4_FIRST(Y7)
	Q4K_RUN4_IDX(1, Y8)
	CMPQ    CX, $1
	JEQ     q4kRowsActs4Last
	Q4K_HEAD_AHEAD(144, 80, 64(SP))

q4kRowsActs4Last:
	NIBBLES_MEM(48)
	Q4K_RUN4_IDX(2, Y7)
	Q4K_RUN4_IDX(3, Y8)
	NIBBLES_MEM(80)
	Q4K_RUN4_IDX(4, Y7)
	Q4K_RUN4_IDX(5, Y8)
	NIBBLES_MEM(112)
	Q4K_RUN4_IDX(6, Y7)
	Q4K_RUN4_IDX(7, Y8)
	Q4K_ACC4(80(SP))
	ADDQ $144, SI
	ADDQ $256, R12
	ADDQ $80, BX
	DECQ CX
	JNZ  q4kRowsActs4Block

	VADDPS     X11, X10, X10
	VMOVSS     X10, (DX)
	VEXTRACTPS $1, X10, (DX)(R8*1)
	VEXTRACTPS $2, X10, (DX)(R8*2)
	LEAQ       (R8)(R8*2), AX
	VEXTRACTPS $3, X10, (DX)(AX*1)
	ADDQ       $4, DX
	ADDQ       rowBytes+8(FP), R14
	DECQ       R13
	JNZ        q4kRowsActs4Row
	VZEROUPPER
	RET

// bytes10<> is 32 bytes 0x10, the fifth bit of the Q5_K quants
// (Q5K_HIGH4_AVX2), which the four-activation kernel has no register left to
// hold.
DATA bytes10<>+0(SB)/8, $0x1010101010101010
DATA bytes10<>+8(SB)/8, $0x1010101010101010
DATA bytes10<>+16(SB)/8, $0x1010101010101010
DATA bytes10<>+24(SB)/8, $0x1010101010101010
GLOBL bytes10<>(SB), RODATA|NOPTR, $32

// Q5K_HIGH for the AVX2 four-activation kernel: the high bits in Y15.
// Clobbers Y9.
#define Q5K_HIGH4_AVX2(SHIFT, n, dst) \
	SHIFT $n, Y15, Y9; \
	VPAND bytes10<>(SB), Y9, Y9; \
	VPOR  Y9, dst, dst

// Q5K_MINS for activation b with its accumulator in the frame at 4b(SP).
// Clobbers AX, X0, X2, X6.
#define Q5K_MINS_FRAME(b) \
	VMOVSS 4*(b)(SP), X0; \
	Q5K_MINS(b, X0); \
	VMOVSS X0, 4*(b)(SP)

// X0 = hsum8(ACC) + the minimum sum at 4b(SP), stored at 4b(BX). Clobbers
// Y15, X1.
#define Q5K_RESULT_AVX2(b, ACC) \
	HSUM8_OF(ACC); \
	VADDSS 4*(b)(SP), X0, X0; \
	VMOVSS X0, 4*(b)(BX)

// func dotQ5_KActs4AVX2(w *byte, p *actPtrs4, nb int, out *[4]float32)
//
// The float32 lanes of activations 0…3 are in Y10, Y11, Y12, Y14, the
// minimum accumulator of activation b at 4b(SP); Y15 holds the high bits.
TEXT ·dotQ5_KActs4AVX2(SB), NOSPLIT, $16-32
	MOVQ   w+0(FP), SI
	MOVQ   p+8(FP), R8
	MOVQ   nb+16(FP), CX
	ACTS4_K_INDEX
	ACTS4_K_ZERO_AVX2
	VMOVUPS X10, (SP)

q5kActs4AVX2Loop:
	ACTS4_K_MINS_AVX2(Q5K_MINS_FRAME)
	ACTS4_K_START_AVX2
	VMOVDQU 16(SI), Y15
	Q5K_RUNS(Q4K_RUN4_AVX2, Q5K_HIGH4_AVX2)
	ACTS4_K_END_AVX2(0, Y10, Y11, Y12, Y14, 176)
	DECQ CX
	JNZ  q5kActs4AVX2Loop

	MOVQ out+24(FP), BX
	Q5K_RESULT_AVX2(0, Y10)
	Q5K_RESULT_AVX2(1, Y11)
	Q5K_RESULT_AVX2(2, Y12)
	Q5K_RESULT_AVX2(3, Y14)
	VZEROUPPER
	RET

// bytes30<> is 32 bytes 0x30, the mask of the Q6_K high bits (Q6K_HIGH),
// which the four-activation kernel has no register left to hold.
DATA bytes30<>+0(SB)/8, $0x3030303030303030
DATA bytes30<>+8(SB)/8, $0x3030303030303030
DATA bytes30<>+16(SB)/8, $0x3030303030303030
DATA bytes30<>+24(SB)/8, $0x3030303030303030
GLOBL bytes30<>(SB), RODATA|NOPTR, $32

// Y3+b += the lanes of the Q6_K quants Q (Y7) with the activation bytes at A:
// Σ q·y − Σ 32·y (Y12 = bytes 0x20) times the scale words S (Q6K_RUN_AVX2
// for activation b). Clobbers Y0, Y2.
#define Q6K_RUN_ACT(A, S, L) \
	VMOVDQU    A, Y2; \
	VPMADDUBSW Y2, Y7, Y0; \
	VPMADDUBSW Y2, Y12, Y2; \
	VPSUBW     Y2, Y0, Y0; \
	VPMADDWD   S, Y0, Y0; \
	VPADDD     Y0, L, L

// Run c of a Q6_K super-block for the four activations (quants at DI, R9,
// R10, R11). Clobbers Y0, Y2, Y10.
#define Q6K_RUN4_AVX2(c) \
	VPSHUFB scaleShuf<>+32*(c)(SB), Y1, Y10; \
	Q6K_RUN_ACT(32*(c)(DI), Y10, Y3); \
	Q6K_RUN_ACT(32*(c)(R9), Y10, Y4); \
	Q6K_RUN_ACT(32*(c)(R10), Y10, Y5); \
	Q6K_RUN_ACT(32*(c)(R11), Y10, Y6)

// The four runs of half h for the four activations, as Q6K_HALF, the low
// bits read from memory for each run (no registers to keep them).
#define Q6K_HALF4_AVX2(h) Q6K_HALF_RUNS(h, Q6K_RUN4_AVX2, Q6K_RUN4_AVX2)

// The four runs of half h for kernels that read the low bits from memory
// for each run: RUNA for the first, RUN for the others.
#define Q6K_HALF_RUNS(h, RUNA, RUN) \
	VMOVDQU 128+32*(h)(SI), Y9; \
	VPAND   64*(h)(SI), Y13, Y7; \
	Q6K_HIGH(VPSLLW, 4, bytes30<>(SB)); \
	RUNA(4*(h)); \
	VPAND   64*(h)+32(SI), Y13, Y7; \
	Q6K_HIGH(VPSLLW, 2, bytes30<>(SB)); \
	RUN(4*(h)+1); \
	VMOVDQU 64*(h)(SI), Y7; \
	VPSRLW  $4, Y7, Y7; \
	VPAND   Y13, Y7, Y7; \
	Q6K_HIGH(VPSRLW, 0, bytes30<>(SB)); \
	RUN(4*(h)+2); \
	VMOVDQU 64*(h)+32(SI), Y7; \
	VPSRLW  $4, Y7, Y7; \
	VPAND   Y13, Y7, Y7; \
	Q6K_HIGH(VPSRLW, 2, bytes30<>(SB)); \
	RUN(4*(h)+3)

// func dotQ6_KActs4AVX2(w *byte, p *actPtrs4, nb int, out *[4]float32)
//
// The float32 lanes of activations 0…3 are in Y15, Y14, Y11, Y8.
TEXT ·dotQ6_KActs4AVX2(SB), NOSPLIT, $0-32
	MOVQ   w+0(FP), SI
	MOVQ   p+8(FP), R8
	MOVQ   nb+16(FP), CX
	ACTS4_K_INDEX
	BYTES(0x20, Y12, X12)
	VXORPS Y15, Y15, Y15
	VXORPS Y14, Y14, Y14
	VXORPS Y11, Y11, Y11
	VXORPS Y8, Y8, Y8

q6kActs4AVX2Loop:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4160(SI)
	PREFETCHT0 4224(SI)
	PREFETCHT0 4288(SI)
	VMOVDQU   192(SI), X1
	VPSHUFB   evenOdd<>(SB), X1, X1
	VPMOVSXBW X1, Y1
	ACTS4_K_START_AVX2
	Q6K_HALF4_AVX2(0)
	Q6K_HALF4_AVX2(1)
	ACTS4_K_END_AVX2(208, Y15, Y14, Y11, Y8, 210)
	DECQ CX
	JNZ  q6kActs4AVX2Loop

	// Y15 first: HSUM8_OF clobbers it.
	MOVQ   out+24(FP), BX
	HSUM8_OF(Y15)
	VMOVSS X0, (BX)
	HSUM8_OF(Y14)
	VMOVSS X0, 4(BX)
	HSUM8_OF(Y11)
	VMOVSS X0, 8(BX)
	HSUM8_OF(Y8)
	VMOVSS X0, 12(BX)
	VZEROUPPER
	RET

// Q8_K activation quantization (see quantizeQ8_KGeneric): per super-block of
// 256 values amax = max|x| (NaNs ignored) and max the first value with
// |max| = amax; iscale = -127/max, d = 1/iscale,
// q = int8(min(127, round-half-even(iscale·x))) keeping the low byte of the
// int32, and the sums of each 16 quants.

// Quantizes the 32 values at off(R9) with the scale in Y9 into 32 bytes at
// off/4(R10), and sets S to the eight sums of four of those quants.
#define QUANT32(off, S) \
	VMULPS     off(R9), Y9, Y0; \
	VMULPS     off+32(R9), Y9, Y1; \
	VMULPS     off+64(R9), Y9, Y2; \
	VMULPS     off+96(R9), Y9, Y3; \
	VCVTPS2DQ  Y0, Y0; \
	VCVTPS2DQ  Y1, Y1; \
	VCVTPS2DQ  Y2, Y2; \
	VCVTPS2DQ  Y3, Y3; \
	VPMINSD    Y13, Y0, Y0; \
	VPMINSD    Y13, Y1, Y1; \
	VPMINSD    Y13, Y2, Y2; \
	VPMINSD    Y13, Y3, Y3; \
	PACK_LOW_BYTES; \
	VMOVDQU    Y0, off/4(R10); \
	VPMADDUBSW Y0, Y15, S; \
	VPMADDWD   Y14, S, S

// func quantizeQ8_KAVX2(x *float32, qs *int8, d *float32, bsums *int16, nb int)
TEXT ·quantizeQ8_KAVX2(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ bsums+24(FP), R8
	MOVQ nb+32(FP), CX
	PACK_CONSTS
	DWORDS(127, Y13, X13)
	DWORDS(0x00010001, Y14, X14)
	BYTES(0x01, Y15, X15)

qq8kBlock:
	// amax
	MOVQ   SI, R9
	MOVQ   $8, BX
	VXORPS Y5, Y5, Y5

qq8kMax:
	ABSMAX8(R9, 0)
	ABSMAX8(R9, 32)
	ABSMAX8(R9, 64)
	ABSMAX8(R9, 96)
	ADDQ $128, R9
	DECQ BX
	JNZ  qq8kMax
	HMAX8_Y5
	VXORPS       X6, X6, X6
	VUCOMISS     X6, X5
	JEQ          qq8kZero

	// max: the first value whose magnitude is amax
	VBROADCASTSS X5, Y6
	MOVQ         SI, R9

qq8kFind:
	VANDPS    (R9), Y12, Y4
	VCMPPS    $0, Y6, Y4, Y4
	VMOVMSKPS Y4, AX
	ADDQ      $32, R9
	TESTL     AX, AX
	JZ        qq8kFind
	BSFL      AX, AX
	VMOVSS    -32(R9)(AX*4), X7

	// iscale = -127/max, d = 1/iscale
	MOVL         $0xc2fe0000, AX // -127
	VMOVD        AX, X8
	VDIVSS       X7, X8, X9
	MOVL         $0x3f800000, AX // 1
	VMOVD        AX, X8
	VDIVSS       X9, X8, X8
	VMOVSS       X8, (DX)
	VBROADCASTSS X9, Y9

	// quants and bsums, 128 values at a time
	MOVQ SI, R9
	MOVQ DI, R10
	MOVQ $2, BX

qq8kQuant:
	QUANT32(0, Y5)
	QUANT32(128, Y6)
	QUANT32(256, Y7)
	QUANT32(384, Y8)
	VPHADDD      Y6, Y5, Y5
	VPHADDD      Y8, Y7, Y7
	VPHADDD      Y7, Y5, Y5
	VEXTRACTI128 $1, Y5, X4
	VPUNPCKLDQ   X4, X5, X6
	VPUNPCKHDQ   X4, X5, X7
	VPACKSSDW    X7, X6, X6
	VMOVDQU      X6, (R8)
	ADDQ         $512, R9
	ADDQ         $128, R10
	ADDQ         $16, R8
	DECQ         BX
	JNZ          qq8kQuant
	JMP          qq8kNext

qq8kZero:
	VXORPS  Y0, Y0, Y0
	VMOVDQU Y0, (DI)
	VMOVDQU Y0, 32(DI)
	VMOVDQU Y0, 64(DI)
	VMOVDQU Y0, 96(DI)
	VMOVDQU Y0, 128(DI)
	VMOVDQU Y0, 160(DI)
	VMOVDQU Y0, 192(DI)
	VMOVDQU Y0, 224(DI)
	VMOVDQU Y0, (R8)
	VMOVSS  X0, (DX)
	ADDQ    $32, R8

qq8kNext:
	ADDQ $1024, SI
	ADDQ $256, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  qq8kBlock

	VZEROUPPER
	RET

// Q4_K rows × eight activations (tierAVX2 and tierAVX512), the activations
// packed by packKActs8: a kPack8 per super-block, DI at the current one.

// Q4K_HEAD_AHEAD for eight activations: Y13 = the scales of the Q4_K
// super-block at off(SI), the mins of activations 0…3 and 4…7 multiplied
// with their pairs (kPack8 at poff(DI)) as Q4K_HEAD_AHEAD does for four,
// the two groups' lane halves added into Y8 = [im0 … im7], accumulated into
// the minimum chains Y11 (lane b, negated) by one VFNMADD231PS with the
// products dmin_w·d_b; the eight products d_w·d_b stored at DD. Clobbers
// Y0, Y7…Y9.
#define Q4K_HEAD8_AHEAD(off, poff, DD) \
	K4_UNPACK_T(off, Y13, X9); \
	VPSHUFD      $0x00, Y7, Y8; \
	VPSHUFD      $0x55, Y7, Y9; \
	VPMADDWD     poff+32(DI), Y8, Y0; \
	VPMADDWD     poff+64(DI), Y9, Y7; \
	VPADDD       Y7, Y0, Y0; \
	VPMADDWD     poff+96(DI), Y8, Y7; \
	VPMADDWD     poff+128(DI), Y9, Y8; \
	VPADDD       Y8, Y7, Y7; \
	VPERM2I128   $0x20, Y7, Y0, Y8; \
	VPERM2I128   $0x31, Y7, Y0, Y9; \
	VPADDD       Y9, Y8, Y8; \
	VCVTDQ2PS    Y8, Y8; \
	VPBROADCASTW off+2(SI), X9; \
	VCVTPH2PS    X9, Y9; \
	VMULPS       poff(DI), Y9, Y0; \
	VFNMADD231PS Y8, Y0, Y11; \
	VPBROADCASTW off(SI), X9; \
	VCVTPH2PS    X9, Y9; \
	VMULPS       poff(DI), Y9, Y9; \
	VMOVUPS      Y9, DD

// The quants of run c of activation b in the current kPack8.
#define K8_QS(c, b) (160+256*(c)+32*(b))(DI)

// Run c (unsigned quants Q, scales Y1) for the eight activations, their
// lanes in Y2…Y6, Y12, Y14, Y15. Clobbers Y0, Y9.
#define Q4K_RUN8(c, Q) \
	VPSHUFB scaleShuf<>+32*(c)(SB), Y1, Y9; \
	K_RUN_ACT(Q, K8_QS(c, 0), Y9, Y0, Y2); \
	K_RUN_ACT(Q, K8_QS(c, 1), Y9, Y0, Y3); \
	K_RUN_ACT(Q, K8_QS(c, 2), Y9, Y0, Y4); \
	K_RUN_ACT(Q, K8_QS(c, 3), Y9, Y0, Y5); \
	K_RUN_ACT(Q, K8_QS(c, 4), Y9, Y0, Y6); \
	K_RUN_ACT(Q, K8_QS(c, 5), Y9, Y0, Y12); \
	K_RUN_ACT(Q, K8_QS(c, 6), Y9, Y0, Y14); \
	K_RUN_ACT(Q, K8_QS(c, 7), Y9, Y0, Y15)

// Q4K_RUN8 for run 0, setting the lanes.
#define Q4K_RUN8_FIRST(Q) \
	VPSHUFB scaleShuf<>+0(SB), Y1, Y9; \
	K_RUN_ACT_FIRST(Q, K8_QS(0, 0), Y9, Y2); \
	K_RUN_ACT_FIRST(Q, K8_QS(0, 1), Y9, Y3); \
	K_RUN_ACT_FIRST(Q, K8_QS(0, 2), Y9, Y4); \
	K_RUN_ACT_FIRST(Q, K8_QS(0, 3), Y9, Y5); \
	K_RUN_ACT_FIRST(Q, K8_QS(0, 4), Y9, Y6); \
	K_RUN_ACT_FIRST(Q, K8_QS(0, 5), Y9, Y12); \
	K_RUN_ACT_FIRST(Q, K8_QS(0, 6), Y9, Y14); \
	K_RUN_ACT_FIRST(Q, K8_QS(0, 7), Y9, Y15)

// Y10 = fma(d_w·d_b, float32(is_b), Y10) for the eight activations at once
// (lane b), with is_b the exact sum of the lanes of activation b and the
// products d_w·d_b at D. Clobbers Y0, the lanes.
#define Q4K_ACC8(D) \
	VPHADDD     Y3, Y2, Y2; \
	VPHADDD     Y5, Y4, Y4; \
	VPHADDD     Y4, Y2, Y2; \
	VPHADDD     Y12, Y6, Y6; \
	VPHADDD     Y15, Y14, Y14; \
	VPHADDD     Y14, Y6, Y6; \
	VPERM2I128  $0x20, Y6, Y2, Y0; \
	VPERM2I128  $0x31, Y6, Y2, Y2; \
	VPADDD      Y2, Y0, Y0; \
	VCVTDQ2PS   Y0, Y0; \
	VFMADD231PS D, Y0, Y10

// func dotQ4_KRowsActs8AVX2(w *byte, rowBytes, rows int, pk *kPack8, nb int, out *float32, stride int)
//
// dotQ4_KRowsActs4AVX2 for eight activations: lane b of Y10 is activation
// b's chain acc, lane b of Y11 its minimum chain accm, negated. The products
// d_w·d_b of the super-block ahead are at 64(SP), copied to 96(SP) for the
// super-block's own end. SI walks the row (R14 its start), DI the packed
// activations, DX the output (R8 = 4·stride), R13 counts the rows.
TEXT ·dotQ4_KRowsActs8AVX2(SB), NOSPLIT, $128-56
	MOVQ w+0(FP), R14
	MOVQ out+40(FP), DX
	MOVQ stride+48(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R13

q4kRowsActs8Row:
	MOVQ   R14, SI
	MOVQ   pk+24(FP), DI
	MOVQ   nb+32(FP), CX
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	Q4K_HEAD8_AHEAD(0, 0, 64(SP))

q4kRowsActs8Block:
	VMOVUPS 64(SP), Y0
	VMOVUPS Y0, 96(SP)
	VMOVDQA Y13, Y1
	NIBBLES_MEM(16)
	Q4K_RUN8_FIRST(Y7)
	Q4K_RUN8(1, Y8)
	CMPQ    CX, $1
	JEQ     q4kRowsActs8Last
	Q4K_HEAD8_AHEAD(144, 2208, 64(SP))

q4kRowsActs8Last:
	NIBBLES_MEM(48)
	Q4K_RUN8(2, Y7)
	Q4K_RUN8(3, Y8)
	NIBBLES_MEM(80)
	Q4K_RUN8(4, Y7)
	Q4K_RUN8(5, Y8)
	NIBBLES_MEM(112)
	Q4K_RUN8(6, Y7)
	Q4K_RUN8(7, Y8)
	Q4K_ACC8(96(SP))
	ADDQ $144, SI
	ADDQ $2208, DI
	DECQ CX
	JNZ  q4kRowsActs8Block

	VADDPS       Y11, Y10, Y10
	MOVQ         DX, BX
	LEAQ         (R8)(R8*2), AX
	STORE_LANES8(Y10, X10)
	ADDQ         $4, DX
	ADDQ         rowBytes+8(FP), R14
	DECQ         R13
	JNZ          q4kRowsActs8Row
	VZEROUPPER
	RET

// Q6_K rows × eight activations (tierAVX2 and tierAVX512), the activations
// packed by packQ6Acts8: a q6Pack8 per super-block, DI at the current one.
// The lanes of activation b are in Y2…Y6, Y11, Y12, Y14; its float32 lanes
// in the frame at 32b(SP), the products d_w·d_b at 256(SP).

#define Q6_QS8(c, b) (32+256*(c)+32*(b))(DI)
#define Q6_OFF8(c, b) (2080+256*(c)+32*(b))(DI)

// L += the lanes of the Q6_K quants Y7 with activation b's run c, Σ q·y −
// Σ 32·y (the packed offsets), times the scale words Y10.
#define Q6K_ACT8(c, b, L) \
	VPMADDUBSW Q6_QS8(c, b), Y7, Y0; \
	VPSUBW     Q6_OFF8(c, b), Y0, Y0; \
	VPMADDWD   Y10, Y0, Y0; \
	VPADDD     Y0, L, L

// Q6K_ACT8 into lanes L not yet set (run 0).
#define Q6K_ACT8_FIRST(c, b, L) \
	VPMADDUBSW Q6_QS8(c, b), Y7, Y0; \
	VPSUBW     Q6_OFF8(c, b), Y0, Y0; \
	VPMADDWD   Y10, Y0, L

#define Q6K_RUN8(c) \
	VPSHUFB scaleShuf<>+32*(c)(SB), Y1, Y10; \
	Q6K_ACT8(c, 0, Y2); \
	Q6K_ACT8(c, 1, Y3); \
	Q6K_ACT8(c, 2, Y4); \
	Q6K_ACT8(c, 3, Y5); \
	Q6K_ACT8(c, 4, Y6); \
	Q6K_ACT8(c, 5, Y11); \
	Q6K_ACT8(c, 6, Y12); \
	Q6K_ACT8(c, 7, Y14)

#define Q6K_RUN8_FIRST(c) \
	VPSHUFB scaleShuf<>+32*(c)(SB), Y1, Y10; \
	Q6K_ACT8_FIRST(c, 0, Y2); \
	Q6K_ACT8_FIRST(c, 1, Y3); \
	Q6K_ACT8_FIRST(c, 2, Y4); \
	Q6K_ACT8_FIRST(c, 3, Y5); \
	Q6K_ACT8_FIRST(c, 4, Y6); \
	Q6K_ACT8_FIRST(c, 5, Y11); \
	Q6K_ACT8_FIRST(c, 6, Y12); \
	Q6K_ACT8_FIRST(c, 7, Y14)

// The float32 lanes of activation b at 32b(SP) += d_w·d_b (at 256+4b(SP))
// × float32(L), fused, as K_ACC_AVX2. Clobbers Y0, Y8, L.
#define Q6K_ACC8(b, L) \
	VCVTDQ2PS    L, L; \
	VBROADCASTSS 256+4*(b)(SP), Y0; \
	VMOVUPS      32*(b)(SP), Y8; \
	VFMADD231PS  L, Y0, Y8; \
	VMOVUPS      Y8, 32*(b)(SP)

// X0 = hsum8 of activation b's float32 lanes (HSUM8_Y15), stored at
// (BX)(IDX). Clobbers Y15, X1.
#define Q6K_RESULT8(b, IDX) \
	VMOVUPS 32*(b)(SP), Y15; \
	HSUM8_Y15; \
	VMOVSS  X0, IDX

// func dotQ6_KRowsActs8AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)
//
// SI walks the row (R14 its start), DI the packed activations, DX the
// output (R8 = 4·stride), R13 counts the rows.
TEXT ·dotQ6_KRowsActs8AVX2(SB), NOSPLIT, $288-56
	BYTES(0x0f, Y13, X13)
	MOVQ w+0(FP), R14
	MOVQ out+40(FP), DX
	MOVQ stride+48(FP), R8
	SHLQ $2, R8
	MOVQ rows+16(FP), R13

q6kRowsActs8Row:
	MOVQ    R14, SI
	MOVQ    pk+24(FP), DI
	MOVQ    nb+32(FP), CX
	VXORPS  Y0, Y0, Y0
	VMOVUPS Y0, 0(SP)
	VMOVUPS Y0, 32(SP)
	VMOVUPS Y0, 64(SP)
	VMOVUPS Y0, 96(SP)
	VMOVUPS Y0, 128(SP)
	VMOVUPS Y0, 160(SP)
	VMOVUPS Y0, 192(SP)
	VMOVUPS Y0, 224(SP)

q6kRowsActs8Block:
	VMOVDQU   192(SI), X1
	VPSHUFB   evenOdd<>(SB), X1, X1
	VPMOVSXBW X1, Y1
	Q6K_HALF_RUNS(0, Q6K_RUN8_FIRST, Q6K_RUN8)
	Q6K_HALF_RUNS(1, Q6K_RUN8, Q6K_RUN8)
	VPBROADCASTW 208(SI), X9
	VCVTPH2PS    X9, Y9
	VMULPS       (DI), Y9, Y9
	VMOVUPS      Y9, 256(SP)
	Q6K_ACC8(0, Y2)
	Q6K_ACC8(1, Y3)
	Q6K_ACC8(2, Y4)
	Q6K_ACC8(3, Y5)
	Q6K_ACC8(4, Y6)
	Q6K_ACC8(5, Y11)
	Q6K_ACC8(6, Y12)
	Q6K_ACC8(7, Y14)
	ADDQ $210, SI
	ADDQ $4128, DI
	DECQ CX
	JNZ  q6kRowsActs8Block

	MOVQ DX, BX
	LEAQ (R8)(R8*2), AX
	Q6K_RESULT8(0, (BX))
	Q6K_RESULT8(1, (BX)(R8*1))
	Q6K_RESULT8(2, (BX)(R8*2))
	Q6K_RESULT8(3, (BX)(AX*1))
	LEAQ (BX)(R8*4), BX
	Q6K_RESULT8(4, (BX))
	Q6K_RESULT8(5, (BX)(R8*1))
	Q6K_RESULT8(6, (BX)(R8*2))
	Q6K_RESULT8(7, (BX)(AX*1))
	ADDQ $4, DX
	ADDQ rowBytes+8(FP), R14
	DECQ R13
	JNZ  q6kRowsActs8Row
	VZEROUPPER
	RET
