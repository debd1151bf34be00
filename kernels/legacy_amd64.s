//go:build !purego

#include "textflag.h"
#include "vec_amd64.h"

// Dot products of the 32-value block types (Q4_0, Q5_0, Q8_0) with a Q8_0
// activation, and the Q8_0 activation quantizer, for amd64 with AVX2, FMA and
// F16C. The …VNNI variants use VPDPBUSD on 256-bit registers (AVX512-VNNI and
// AVX512VL) and, for Q5_0, AVX512BW masks; the …AVX512 kernels take several
// Q4_0/Q8_0 rows (decode) or tiles of rows × activations (prefill) at once on
// 512-bit registers. The float32 operations are those of the portable twins
// in legacy.go, in the same order, so that the results are bit-identical; the
// integer parts are exact.
//
// Registers common to the one-row dot kernels:
//	SI  weight blocks           DI  activation quants (32 per block)
//	DX  activation scales       CX  blocks left
//	Y15 eight float32 lanes (acc[t] of the twins) or, for Q4_0, X15 the sum
//	Y14 int16 ones               Y13 bytes 0x0f

// Sets Y14 to sixteen int16 ones and Y13 to bytes 0x0f, clobbering AX.
#define LEGACY_CONSTS \
	DWORDS(0x00010001, Y14, X14); \
	BYTES(0x0f, Y13, X13)

// X0 = float32(fp16 at W × float32 at D), clobbering AX.
#define BLOCK_SCALE(W, D) \
	MOVWLZX   W, AX; \
	VMOVD     AX, X0; \
	VCVTPH2PS X0, X0; \
	VMULSS    D, X0, X0

// ACC += d·float32(lanes) lane by lane, one fused multiply-add each, with d
// the scalar in X0 (clobbered: Y0 = d broadcast, lanes converted in place).
#define ACCUMULATE(lanes, ACC) \
	VBROADCASTSS X0, Y0; \
	VCVTDQ2PS    lanes, lanes; \
	VFMADD231PS  lanes, Y0, ACC

// L = the eight sums of four products of the signed weight bytes in Y1 (their
// magnitudes in Y2) and the activation bytes at Q (lane t: bytes 4t…4t+3),
// with the sign trick: |w| times y with the sign of w, which is exact because
// y is never -128. VPMADDUBSW, then VPMADDWD by the int16 ones in Y14 (AVX2),
// or VPDPBUSD (VNNI). The kernels of several activations prepare Y1, Y2 once
// for all of them. Clobbers Y3.
#define ACT_LANES_AVX2(Q, L) \
	VMOVDQU    Q, Y3; \
	VPSIGNB    Y1, Y3, Y3; \
	VPMADDUBSW Y3, Y2, Y3; \
	VPMADDWD   Y14, Y3, L

#define ACT_LANES_VNNI(Q, L) \
	VMOVDQU  Q, Y3; \
	VPSIGNB  Y1, Y3, Y3; \
	VPXOR    L, L, L; \
	VPDPBUSD Y3, Y2, L

// lanes = ACT_LANES of the weights in Y1 with the activation bytes at
// yoff(DI). Clobbers Y2, Y3.
#define SIGNED_LANES_AVX2(yoff, lanes) \
	VPSIGNB Y1, Y1, Y2; \
	ACT_LANES_AVX2(yoff(DI), lanes)

#define SIGNED_LANES_VNNI(yoff, lanes) \
	VPSIGNB Y1, Y1, Y2; \
	ACT_LANES_VNNI(yoff(DI), lanes)

// The loop over the blocks of a lane kernel: QUANTS sets Y1 to the signed
// weight quants of the block at SI, LANES forms their lanes with the
// activation, which are accumulated into Y15; then X0 = hsum8 of Y15. The
// row is prefetched 4 KiB ahead, as in the K-quant dots: a one-row loop needs
// the prefetch several rows ahead to cover memory latency.
#define LANES_LOOP(QUANTS, LANES, blockBytes, loop) \
	VXORPS Y15, Y15, Y15; \
loop: \
	PREFETCHT0 4096(SI); \
	QUANTS; \
	LANES(0, Y4); \
	BLOCK_SCALE((SI), (DX)); \
	ACCUMULATE(Y4, Y15); \
	ADDQ $blockBytes, SI; \
	ADDQ $32, DI; \
	ADDQ $4, DX; \
	DECQ CX; \
	JNZ  loop; \
	HSUM8_Y15

#define Q8_0_QUANTS VMOVDQU 2(SI), Y1

// func dotQ8_0AVX2(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ8_0AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	LEGACY_CONSTS
	LANES_LOOP(Q8_0_QUANTS, SIGNED_LANES_AVX2, 34, q80avx2Loop)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// ACC += the Q8_0 block at B times the activation's block at DI (scale at
// DX): one block of LANES_LOOP(Q8_0_QUANTS, SIGNED_LANES_AVX2) for the row
// at B. Clobbers AX, Y0…Y4.
#define Q8_0_ROW_BLOCK(B, ACC) \
	VMOVDQU 2(B), Y1; \
	SIGNED_LANES_AVX2(0, Y4); \
	BLOCK_SCALE((B), (DX)); \
	ACCUMULATE(Y4, ACC)

// func dotQ8_0Rows2AVX2(w *byte, stride int, qs *int8, d *float32, nb int, out *[2]float32)
//
// Sets out[k] to dotQ8_0AVX2 of the row at w + k·stride (k < 2) with the
// activation qs, d: two streams, each prefetched 4 KiB ahead, each row's
// chain that of dotQ8_0AVX2 (Y15 row 0, Y12 row 1).
TEXT ·dotQ8_0Rows2AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), R8
	ADDQ SI, R8
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	DWORDS(0x00010001, Y14, X14)
	VXORPS Y15, Y15, Y15
	VXORPS Y12, Y12, Y12

q80rows2Loop:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4096(R8)
	Q8_0_ROW_BLOCK(SI, Y15)
	Q8_0_ROW_BLOCK(R8, Y12)
	ADDQ       $34, SI
	ADDQ       $34, R8
	ADDQ       $32, DI
	ADDQ       $4, DX
	DECQ       CX
	JNZ        q80rows2Loop

	MOVQ   out+40(FP), BX
	HSUM8_Y15
	VMOVSS X0, (BX)
	VMOVAPS Y12, Y15
	HSUM8_Y15
	VMOVSS X0, 4(BX)
	VZEROUPPER
	RET

// func dotQ8_0AVX512(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ8_0AVX512(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	LANES_LOOP(Q8_0_QUANTS, SIGNED_LANES_VNNI, 34, q80vnniLoop)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// Y1 = the 32 quants of the Q5_0 block at SI minus 16, as signed bytes: the
// nibbles of its 16 bytes at 6(SI) (values j and j+16 in the low and high
// nibble of byte j) with 0xf0 or-ed in where the fifth bit, bit j of the
// uint32 at 2(SI), is clear. Y12 holds the byte-spreading shuffle, Y11 the bit
// of each byte, Y10 bytes 0xf0. Clobbers Y2.
#define Q5_0_QUANTS_AVX2 Q5_0_QUANTS_FROM(Y12, Y11, Y10)

// Q5_0_QUANTS_AVX2 with the byte-spreading shuffle SPREAD, the bits BITS and
// the bytes 0xf0 F0 given (registers or memory; BITS a register).
#define Q5_0_QUANTS_FROM(SPREAD, BITS, F0) \
	VPBROADCASTD 2(SI), Y2; \
	VPSHUFB      SPREAD, Y2, Y2; \
	VPAND        BITS, Y2, Y2; \
	VPCMPEQB     BITS, Y2, Y2; \
	VPANDN       F0, Y2, Y2; \
	VMOVDQU      6(SI), X1; \
	VPSRLW       $4, X1, X3; \
	VINSERTI128  $1, X3, Y1, Y1; \
	VPAND        Y13, Y1, Y1; \
	VPOR         Y2, Y1, Y1

// Loads the Q5_0 constants into Y12 (byte k/8 of the uint32 to byte k), Y11
// (bit k%8 of byte k) and Y10 (bytes 0xf0).
#define Q5_0_CONSTS \
	VMOVDQU      q5Spread<>(SB), Y12; \
	MOVQ         $0x8040201008040201, AX; \
	VMOVQ        AX, X11; \
	VPBROADCASTQ X11, Y11; \
	DWORDS(0xf0f0f0f0, Y10, X10)

DATA q5Spread<>+0(SB)/8, $0x0000000000000000
DATA q5Spread<>+8(SB)/8, $0x0101010101010101
DATA q5Spread<>+16(SB)/8, $0x0202020202020202
DATA q5Spread<>+24(SB)/8, $0x0303030303030303
GLOBL q5Spread<>(SB), RODATA|NOPTR, $32

// The same with the fifth bits in a mask register: the quants whose bit is
// clear get 16 subtracted by a masked byte subtraction (AVX512BW). Y10 holds
// bytes 0x10. Clobbers X3, K1.
#define Q5_0_QUANTS_VNNI \
	KMOVD       2(SI), K1; \
	KNOTD       K1, K1; \
	VMOVDQU     6(SI), X1; \
	VPSRLW      $4, X1, X3; \
	VINSERTI128 $1, X3, Y1, Y1; \
	VPAND       Y13, Y1, Y1; \
	VPSUBB      Y10, Y1, K1, Y1

// func dotQ5_0AVX2(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ5_0AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	LEGACY_CONSTS
	Q5_0_CONSTS
	LANES_LOOP(Q5_0_QUANTS_AVX2, SIGNED_LANES_AVX2, 22, q50avx2Loop)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// func dotQ5_0AVX512(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ5_0AVX512(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	LEGACY_CONSTS
	DWORDS(0x10101010, Y10, X10)
	LANES_LOOP(Q5_0_QUANTS_VNNI, SIGNED_LANES_VNNI, 22, q50vnniLoop)
	VMOVSS X0, ret+32(FP)
	VZEROUPPER
	RET

// Q4_0 sums the 32 products of a block in one integer and accumulates
// sum = fma(float32(sumi), d_w·d_a, sum) block after block (see dotQ4_0Generic),
// a chain of scalar fused multiply-adds. The integer work of four blocks is
// done first and their sums reduced together.

// lanes = eight partial sums of the products of the Q4_0 block at boff(SI) with
// the activation bytes at yoff(DI) (the sum of the lanes is the block's sumi).
// Y12 holds bytes 8. Clobbers Y1, Y2, Y3.
#define Q4_0_LANES_AVX2(boff, yoff, lanes) \
	VMOVDQU     boff+2(SI), X1; \
	VPSRLW      $4, X1, X2; \
	VINSERTI128 $1, X2, Y1, Y1; \
	VPAND       Y13, Y1, Y1; \
	VPSUBB      Y12, Y1, Y1; \
	SIGNED_LANES_AVX2(yoff, lanes)

#define Q4_0_LANES_VNNI(boff, yoff, lanes) \
	VMOVDQU     boff+2(SI), X1; \
	VPSRLW      $4, X1, X2; \
	VINSERTI128 $1, X2, Y1, Y1; \
	VPAND       Y13, Y1, Y1; \
	VPSUBB      Y12, Y1, Y1; \
	SIGNED_LANES_VNNI(yoff, lanes)

// X15 = fma(float32(sumi), d, X15) for the block sums in X4 and the scales
// d_w·d_a of four blocks (weight scales at 0, 18, 36, 54(SI), activation scales
// at DX), in block order. Clobbers X0…X6.
#define Q4_0_CHAIN4 \
	VCVTDQ2PS   X4, X4; \
	MOVWLZX     (SI), AX; \
	VMOVD       AX, X5; \
	VPINSRW     $1, 18(SI), X5, X5; \
	VPINSRW     $2, 36(SI), X5, X5; \
	VPINSRW     $3, 54(SI), X5, X5; \
	VCVTPH2PS   X5, X5; \
	VMULPS      (DX), X5, X5; \
	VFMADD231SS X4, X5, X15; \
	VMOVSHDUP   X4, X0; \
	VMOVSHDUP   X5, X1; \
	VFMADD231SS X0, X1, X15; \
	VMOVHLPS    X4, X4, X2; \
	VMOVHLPS    X5, X5, X3; \
	VFMADD231SS X2, X3, X15; \
	VPERMILPS   $3, X4, X0; \
	VPERMILPS   $3, X5, X1; \
	VFMADD231SS X0, X1, X15

// X4 = the sums of the eight lanes of each of Y4, Y5, Y6, Y7. Clobbers Y8, Y9.
#define REDUCE4 \
	VPHADDD      Y5, Y4, Y8; \
	VPHADDD      Y7, Y6, Y9; \
	VPHADDD      Y9, Y8, Y4; \
	VEXTRACTI128 $1, Y4, X8; \
	VPADDD       X8, X4, X4

// X4 = the sum of the eight lanes of Y4. Clobbers X8.
#define REDUCE1 \
	VEXTRACTI128 $1, Y4, X8; \
	VPADDD       X8, X4, X4; \
	VPSHUFD      $0x4e, X4, X8; \
	VPADDD       X8, X4, X4; \
	VPSHUFD      $0xb1, X4, X8; \
	VPADDD       X8, X4, X4

// X15 = fma(float32(X4), d of the block at SI, X15). Clobbers X0.
#define Q4_0_CHAIN1 \
	VCVTDQ2PS   X4, X4; \
	BLOCK_SCALE((SI), (DX)); \
	VFMADD231SS X4, X0, X15

#define Q4_0_CONSTS \
	LEGACY_CONSTS; \
	DWORDS(0x08080808, Y12, X12); \
	VXORPS       X15, X15, X15

// The Q4_0 loop: four blocks at a time (prefetching 4 KiB ahead), then one at
// a time; X15 = the result.
#define Q4_0_BODY(LANES, loop4, tail, loop1, done) \
	CMPQ CX, $4; \
	JLT  tail; \
loop4: \
	PREFETCHT0 4096(SI); \
	PREFETCHT0 4160(SI); \
	LANES(0, 0, Y4); \
	LANES(18, 32, Y5); \
	LANES(36, 64, Y6); \
	LANES(54, 96, Y7); \
	REDUCE4; \
	Q4_0_CHAIN4; \
	ADDQ $72, SI; \
	ADDQ $128, DI; \
	ADDQ $16, DX; \
	SUBQ $4, CX; \
	CMPQ CX, $4; \
	JGE  loop4; \
tail: \
	TESTQ CX, CX; \
	JZ    done; \
loop1: \
	LANES(0, 0, Y4); \
	REDUCE1; \
	Q4_0_CHAIN1; \
	ADDQ $18, SI; \
	ADDQ $32, DI; \
	ADDQ $4, DX; \
	DECQ CX; \
	JNZ  loop1; \
done:

// func dotQ4_0AVX2(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ4_0AVX2(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	Q4_0_CONSTS
	Q4_0_BODY(Q4_0_LANES_AVX2, q40avx2Loop4, q40avx2Tail, q40avx2Loop1, q40avx2Done)
	VMOVSS X15, ret+32(FP)
	VZEROUPPER
	RET

// Y = the lanes of the Q4_0 blocks at the memory operands A and B (16 quant
// bytes each at 2+A, 2+B) with the activation block in Y10 (its first 16
// quants in both halves) and Y11 (its last 16): the low nibbles, unsigned,
// times the first 16 activation bytes plus the high nibbles times the last
// 16 (VPMADDUBSW, exact: a pair is at most 2·15·127), added as int16 (at
// most 4·15·127) and widened by VPMADDWD with the ones in Y14, less Y9 (8
// times the same sums of the activation bytes): the low half of Y holds four
// partial sums of A's sumi, the high half B's. Clobbers Y3.
#define Q4_0_PAIR_LANES_AVX2(A, B, Y) \
	VMOVDQU     2+A, X3; \
	VINSERTI128 $1, 2+B, Y3, Y3; \
	VPSRLW      $4, Y3, Y; \
	VPAND       Y13, Y3, Y3; \
	VPAND       Y13, Y, Y; \
	VPMADDUBSW  Y10, Y3, Y3; \
	VPMADDUBSW  Y11, Y, Y; \
	VPADDW      Y3, Y, Y; \
	VPMADDWD    Y14, Y, Y; \
	VPSUBD      Y9, Y, Y

// One block of dotQ4_0Rows4AVX2 at byte offsets W (weights, from SI, R11,
// R12, R13), A (activation quants, from DI) and D (activation scales, from
// DX): X15 lane k += float32(sumi of row k) · d_w·d_a, one fused
// multiply-add.
#define Q4_0_ROWS4_STEP(W, A, D) \
	VBROADCASTI128 A(DI), Y10; \
	VBROADCASTI128 A+16(DI), Y11; \
	VPMADDUBSW     Y10, Y12, Y9; \
	VPMADDUBSW     Y11, Y12, Y8; \
	VPADDW         Y8, Y9, Y9; \
	VPMADDWD       Y14, Y9, Y9; \
	Q4_0_PAIR_LANES_AVX2(W(SI), W(R11), Y4); \
	Q4_0_PAIR_LANES_AVX2(W(R12), W(R13), Y5); \
	VPHADDD        Y5, Y4, Y6; \
	VPHADDD        Y6, Y6, Y6; \
	VEXTRACTI128   $1, Y6, X7; \
	VPUNPCKLDQ     X7, X6, X6; \
	VCVTDQ2PS      X6, X6; \
	MOVWLZX        W(SI), AX; \
	VMOVD          AX, X7; \
	VPINSRW        $1, W(R11), X7, X7; \
	VPINSRW        $2, W(R12), X7, X7; \
	VPINSRW        $3, W(R13), X7, X7; \
	VCVTPH2PS      X7, X7; \
	VBROADCASTSS   D(DX), X8; \
	VMULPS         X8, X7, X7; \
	VFMADD231PS    X6, X7, X15

// func dotQ4_0Rows4AVX2(w *byte, stride int, qs *int8, d *float32, nb int, out *[4]float32)
//
// Sets out[k] to dotQ4_0AVX2 of the row at w + k·stride (k < 4): four
// streams, each prefetched 4 KiB ahead every other block, whose chains run
// in the four lanes of X15 (lane k = row k, fma(float32(sumi), d_w·d_a, sum)
// block by block as in dotQ4_0Generic). Per block the nibbles are taken unsigned and 8 times the
// activation's sums taken away (Y9, once for the four rows), two rows per
// 256-bit register; the four sumi are reduced together and their scales
// gathered into one vector, so that a block costs one vector multiply-add
// for the four rows instead of four scalar ones each behind the other.
TEXT ·dotQ4_0Rows4AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), SI
	MOVQ stride+8(FP), BX
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	LEAQ (BX)(BX*2), R10
	LEAQ (SI)(BX*1), R11
	LEAQ (SI)(BX*2), R12
	LEAQ (SI)(R10*1), R13
	LEGACY_CONSTS
	DWORDS(0x08080808, Y12, X12)
	VXORPS X15, X15, X15

	MOVQ CX, R8
	SHRQ $1, R8
	JZ   q40rows4avx2Tail

q40rows4avx2Loop:
	PREFETCHT0 4096(SI)
	PREFETCHT0 4096(R11)
	PREFETCHT0 4096(R12)
	PREFETCHT0 4096(R13)
	Q4_0_ROWS4_STEP(0, 0, 0)
	Q4_0_ROWS4_STEP(18, 32, 4)
	ADDQ $36, SI
	ADDQ $36, R11
	ADDQ $36, R12
	ADDQ $36, R13
	ADDQ $64, DI
	ADDQ $8, DX
	DECQ R8
	JNZ  q40rows4avx2Loop

q40rows4avx2Tail:
	TESTQ $1, CX
	JZ    q40rows4avx2Done
	Q4_0_ROWS4_STEP(0, 0, 0)

q40rows4avx2Done:
	MOVQ    out+40(FP), AX
	VMOVUPS X15, (AX)
	VZEROUPPER
	RET

// func dotQ4_0AVX512(w *byte, qs *int8, d *float32, nb int) float32
TEXT ·dotQ4_0AVX512(SB), NOSPLIT, $0-36
	MOVQ w+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	Q4_0_CONSTS
	Q4_0_BODY(Q4_0_LANES_VNNI, q40vnniLoop4, q40vnniTail, q40vnniLoop1, q40vnniDone)
	VMOVSS X15, ret+32(FP)
	VZEROUPPER
	RET

// Q8_0 activation quantization (see quantizeQ8_0Generic): per block of 32
// values amax = max|x| (NaNs ignored), d = amax/127 stored rounded to half
// precision, q = int8(round-half-even(x·(127/amax))), the int8 conversion
// keeping the low byte of the int32 (so that out-of-range and NaN products
// give 0 as the twin's conversion does on amd64).

// func quantizeQ8_0AVX2(x *float32, qs *int8, d *float32, nb int)
TEXT ·quantizeQ8_0AVX2(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ qs+8(FP), DI
	MOVQ d+16(FP), DX
	MOVQ nb+24(FP), CX
	PACK_CONSTS
	MOVL  $0x42fe0000, AX // 127
	VMOVD AX, X9

qq80Loop:
	VXORPS Y5, Y5, Y5
	ABSMAX8(SI, 0)
	ABSMAX8(SI, 32)
	ABSMAX8(SI, 64)
	ABSMAX8(SI, 96)
	HMAX8_Y5

	// d = amax/127 rounded to half precision; id = 127/amax, or 0.
	VDIVSS    X9, X5, X6
	VCVTPS2PH $0, X6, X6
	VCVTPH2PS X6, X6
	VMOVSS    X6, (DX)
	VXORPS    X7, X7, X7
	VUCOMISS  X7, X5
	JEQ       qq80Zero
	VDIVSS    X5, X9, X7

qq80Zero:
	VBROADCASTSS X7, Y7
	VMULPS       (SI), Y7, Y0
	VMULPS       32(SI), Y7, Y1
	VMULPS       64(SI), Y7, Y2
	VMULPS       96(SI), Y7, Y3
	VCVTPS2DQ    Y0, Y0
	VCVTPS2DQ    Y1, Y1
	VCVTPS2DQ    Y2, Y2
	VCVTPS2DQ    Y3, Y3
	PACK_LOW_BYTES
	VMOVDQU      Y0, (DI)

	ADDQ $128, SI
	ADDQ $32, DI
	ADDQ $4, DX
	DECQ CX
	JNZ  qq80Loop

	VZEROUPPER
	RET

// One Q4_0 row with four activations (prefill), AVX2 and AVX512-VNNI tiers.
// The four chains of fused multiply-adds are independent, so they run in the four lanes
// of X15, each with exactly the operations of dotQ4_0Generic; the block sums of
// the four products are reduced together (REDUCE4).

// Y1 = the quants of the Q4_0 block whose 16 quant bytes are at QS, minus 8
// (signed bytes), Y2 = their magnitudes. Clobbers Y3.
#define Q4_0_WEIGHTS(QS) \
	VMOVDQU     QS, X1; \
	VPSRLW      $4, X1, X3; \
	VINSERTI128 $1, X3, Y1, Y1; \
	VPAND       Y13, Y1, Y1; \
	VPSUBB      Y12, Y1, Y1; \
	VPSIGNB     Y1, Y1, Y2

// The loop of the Q4_0 kernels of four activations (pointers and constants
// loaded by ACTS4_INIT and Q4_0_CONSTS): per block the weights are unpacked
// once, their lanes with each activation formed by LANES (ACT_LANES_AVX2 or
// ACT_LANES_VNNI) and reduced to the four block sums, and lane b of X15 takes
// fma(float32(sumi_b), d_w·d_b, acc_b), dotQ4_0Generic's step.
#define Q4_0_ACTS4_LOOP(LANES, loop) \
loop: \
	Q4_0_WEIGHTS(2(SI)); \
	LANES((DI)(R8*8), Y4); \
	LANES((R9)(R8*8), Y5); \
	LANES((R10)(R8*8), Y6); \
	LANES((R11)(R8*8), Y7); \
	REDUCE4; \
	VCVTDQ2PS    X4, X4; \
	VMOVSS       (DX)(R8*1), X6; \
	VINSERTPS    $0x10, (BX)(R8*1), X6, X6; \
	VINSERTPS    $0x20, (R12)(R8*1), X6, X6; \
	VINSERTPS    $0x30, (R13)(R8*1), X6, X6; \
	MOVWLZX      (SI), AX; \
	VMOVD        AX, X5; \
	VCVTPH2PS    X5, X5; \
	VBROADCASTSS X5, X5; \
	VMULPS       X6, X5, X5; \
	VFMADD231PS  X4, X5, X15; \
	ADDQ         $18, SI; \
	ADDQ         $4, R8; \
	DECQ         CX; \
	JNZ          loop

// Four or eight rows with one activation (decode), 512-bit tier. The rows'
// blocks share registers, a 128-bit or 256-bit lane each, so that every
// instruction works on several rows; the activation's lane sums make the
// integer products unsigned.
//
// Prefetching: the four-row kernels prefetch, into L2, the same place in the
// rows of the next call (a group ahead), as their rows lie side by side: a
// stream prefetched a fixed distance ahead would soon run into the next row,
// which the call is reading anyway, and the next call would start with every
// stream cold. The eight-row kernels take rows that lie far apart, one from
// each eighth of the matrix (stride bytes apart; see matVecAccel), so that
// each is a stream of its own, prefetched 1 KiB ahead: one core pulls more
// from memory reading several far-apart streams than one.

// Prefetches, into L2, 1 KiB ahead in each of the eight rows of the eight-row
// kernels (SI, SI+BX, SI+2BX, SI+R10, then the same from R11).
#define ROWS8_PREFETCH \
	PREFETCHT1 1024(SI); \
	PREFETCHT1 1024(SI)(BX*1); \
	PREFETCHT1 1024(SI)(BX*2); \
	PREFETCHT1 1024(SI)(R10*1); \
	PREFETCHT1 1024(R11); \
	PREFETCHT1 1024(R11)(BX*1); \
	PREFETCHT1 1024(R11)(BX*2); \
	PREFETCHT1 1024(R11)(R10*1)

// Loads the four masks of the rows' words in a 256-bit register: K1 = words
// 0…3 (row 0), K2 = 4…7, K3 = 8…11, K4 = 12…15. Clobbers AX.
#define ROW_MASKS4 \
	MOVL  $0x000f, AX; \
	KMOVW AX, K1; \
	MOVL  $0x00f0, AX; \
	KMOVW AX, K2; \
	MOVL  $0x0f00, AX; \
	KMOVW AX, K3; \
	MOVL  $0xf000, AX; \
	KMOVW AX, K4

// The constants of the 512-bit Q4_0 kernels: Z13 = bytes 0x0f, Z12 = bytes
// 8, Z11 = 0; and Z15 = 0. Clobbers AX.
#define Q4_0_CONSTS_512 \
	MOVL         $0x0f0f0f0f, AX; \
	VPBROADCASTD AX, Z13; \
	MOVL         $0x08080808, AX; \
	VPBROADCASTD AX, Z12; \
	VPXORD       Z15, Z15, Z15; \
	VPXORD       Z11, Z11, Z11

// ZLO, ZHI = the low and high nibbles of the Q4_0 blocks at W bytes past B,
// B+BX, B+2BX and B+R10 (128-bit lane k = row k; XLO is ZLO's low quarter).
// Needs Z13 = bytes 0x0f.
#define Q4_0_NIBBLES4(B, W, ZLO, XLO, ZHI) \
	VMOVDQU      W+2(B), XLO; \
	VINSERTI32X4 $1, W+2(B)(BX*1), ZLO, ZLO; \
	VINSERTI32X4 $2, W+2(B)(BX*2), ZLO, ZLO; \
	VINSERTI32X4 $3, W+2(B)(R10*1), ZLO, ZLO; \
	VPSRLW       $4, ZLO, ZHI; \
	VPANDD       Z13, ZLO, ZLO; \
	VPANDD       Z13, ZHI, ZHI

// SZ = the fp16 scales of the blocks at B, B+BX, B+2BX, B+R10 as float32,
// four copies each (128-bit lane k = row k; SY is SZ's low half). Needs
// ROW_MASKS4.
#define ROW_SCALES4(B, SY, SZ) \
	VPBROADCASTW.Z (B), K1, SY; \
	VPBROADCASTW   (B)(BX*1), K2, SY; \
	VPBROADCASTW   (B)(BX*2), K3, SY; \
	VPBROADCASTW   (B)(R10*1), K4, SY; \
	VCVTPH2PS      SY, SZ

// Z3, Z4 = the two halves of an activation block's quants (at Q0 and Q1) in
// every 128-bit lane, C = −8·(their lane sums), which undoes the nibbles'
// offset of 8. Needs Z12 = bytes 8, Z11 = 0.
#define Q4_0_ACT(Q0, Q1, C) \
	VBROADCASTI32X4 Q0, Z3; \
	VBROADCASTI32X4 Q1, Z4; \
	VPXORD          C, C, C; \
	VPDPBUSD        Z3, Z12, C; \
	VPDPBUSD        Z4, Z12, C; \
	VPSUBD          C, Z11, C

// ACC += the lanes of the nibbles LO (with Z3) and HI (with Z4): four
// partial sums of row k's block in lane k.
#define Q4_0_DOTS(LO, HI, ACC) \
	VPDPBUSD Z3, LO, ACC; \
	VPDPBUSD Z4, HI, ACC

// func dotQ4_0Rows4AVX512(w *byte, rowBytes int, qs *int8, d *float32, nb int, out *[4]float32)
//
// Per block: Z1 = the four rows' 16 quant bytes (128-bit lane k = row k), Z2
// their high nibbles; with the activation's first and second 16 quants in
// every lane (Z3, Z4), VPDPBUSD of the unsigned nibbles leaves in lane k four
// partial sums of row k's block, from which 8·(the activation's sum) is taken
// (Z6, formed the same way from bytes 8) to undo the nibbles' offset. The
// partial sums are added up within each lane (exact), converted, and
// multiplied-added with the block's scale into Z15, whose lane k holds four
// copies of row k's chain of dotQ4_0Generic.
TEXT ·dotQ4_0Rows4AVX512(SB), NOSPLIT, $0-48
	MOVQ rowBytes+8(FP), BX
	MOVQ w+0(FP), SI
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	LEAQ (BX)(BX*2), R10
	LEAQ (SI)(BX*4), R11
	ROW_MASKS4
	Q4_0_CONSTS_512

q40rows4Loop:
	PREFETCHT1      (R11)
	PREFETCHT1      (R11)(BX*1)
	PREFETCHT1      (R11)(BX*2)
	PREFETCHT1      (R11)(R10*1)
	Q4_0_NIBBLES4(SI, 0, Z1, X1, Z2)
	Q4_0_ACT((DI), 16(DI), Z5)
	Q4_0_DOTS(Z1, Z2, Z5)
	VPSHUFD         $0x4e, Z5, Z7
	VPADDD          Z7, Z5, Z5
	VPSHUFD         $0xb1, Z5, Z7
	VPADDD          Z7, Z5, Z5
	VCVTDQ2PS       Z5, Z5
	ROW_SCALES4(SI, Y8, Z8)
	VMULPS.BCST     (DX), Z8, Z8
	VFMADD231PS     Z5, Z8, Z15
	ADDQ            $18, SI
	ADDQ            $18, R11
	ADDQ            $32, DI
	ADDQ            $4, DX
	DECQ            CX
	JNZ             q40rows4Loop

	MOVL        $0x1111, AX
	KMOVW       AX, K5
	MOVQ        out+40(FP), AX
	VCOMPRESSPS Z15, K5, (AX)
	VZEROUPPER
	RET

// One block of dotQ4_0Rows8AVX512 at byte offsets W (weights), A (activation
// quants) and D (activation scales) from SI/R11, DI and DX.
#define Q4_0_ROWS8_STEP(W, A, D) \
	Q4_0_NIBBLES4(SI, W, Z1, X1, Z7); \
	Q4_0_NIBBLES4(R11, W, Z2, X2, Z8); \
	Q4_0_ACT(A(DI), A+16(DI), Z6); \
	VMOVDQA64       Z6, Z5; \
	Q4_0_DOTS(Z1, Z7, Z5); \
	VMOVDQA64       Z6, Z9; \
	Q4_0_DOTS(Z2, Z8, Z9); \
	VPUNPCKLQDQ     Z9, Z5, Z7; \
	VPUNPCKHQDQ     Z9, Z5, Z8; \
	VPADDD          Z8, Z7, Z7; \
	VPSHUFD         $0xb1, Z7, Z8; \
	VPADDD          Z8, Z7, Z7; \
	VCVTDQ2PS       Z7, Z7; \
	VPBROADCASTW.Z  W(SI), K1, Y10; \
	VPBROADCASTW    W(SI)(BX*1), K2, Y10; \
	VPBROADCASTW    W(SI)(BX*2), K3, Y10; \
	VPBROADCASTW    W(SI)(R10*1), K4, Y10; \
	VPBROADCASTW.Z  W(R11), K1, Y14; \
	VPBROADCASTW    W(R11)(BX*1), K2, Y14; \
	VPBROADCASTW    W(R11)(BX*2), K3, Y14; \
	VPBROADCASTW    W(R11)(R10*1), K4, Y14; \
	VPSLLQ          $32, Y14, Y14; \
	VPOR            Y14, Y10, Y10; \
	VCVTPH2PS       Y10, Z10; \
	VMULPS.BCST     D(DX), Z10, Z10; \
	VFMADD231PS     Z7, Z10, Z15

// func dotQ4_0Rows8AVX512(w *byte, stride int, qs *int8, d *float32, nb int, out *[8]float32)
//
// dotQ4_0Rows4AVX512 for the eight rows at w + k·stride: Z5 has the partial sums of rows 0…3
// (lane k = row k), Z9 those of rows 4…7; they are added up together so that
// lane k of Z7 holds [row k, row k, row k+4, row k+4], and the chains of the
// eight rows run in the lanes of Z15 in that layout.
TEXT ·dotQ4_0Rows8AVX512(SB), NOSPLIT, $0-48
	MOVQ stride+8(FP), BX
	MOVQ w+0(FP), SI
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	LEAQ (BX)(BX*2), R10
	LEAQ (SI)(BX*4), R11
	MOVL  $0x0003, AX
	KMOVW AX, K1
	MOVL  $0x0030, AX
	KMOVW AX, K2
	MOVL  $0x0300, AX
	KMOVW AX, K3
	MOVL  $0x3000, AX
	KMOVW AX, K4
	Q4_0_CONSTS_512

	MOVQ CX, R12
	SHRQ $1, R12
	JZ   q40rows8Tail

q40rows8Loop:
	ROWS8_PREFETCH
	Q4_0_ROWS8_STEP(0, 0, 0)
	Q4_0_ROWS8_STEP(18, 32, 4)
	ADDQ       $36, SI
	ADDQ       $36, R11
	ADDQ       $64, DI
	ADDQ       $8, DX
	DECQ       R12
	JNZ        q40rows8Loop

q40rows8Tail:
	TESTQ $1, CX
	JZ    q40rows8Done
	Q4_0_ROWS8_STEP(0, 0, 0)

q40rows8Done:
	MOVQ        out+40(FP), AX
	MOVL        $0x1111, BX
	KMOVW       BX, K5
	VCOMPRESSPS Z15, K5, (AX)
	MOVL        $0x4444, BX
	KMOVW       BX, K5
	VCOMPRESSPS Z15, K5, 16(AX)
	VZEROUPPER
	RET

// Loads the two masks of the rows' words in a 256-bit register: K6 = words
// 0…7 (the first row of a pair), K7 = 8…15. Clobbers AX.
#define ROW_MASKS2 \
	MOVL  $0x00ff, AX; \
	KMOVW AX, K6; \
	MOVL  $0xff00, AX; \
	KMOVW AX, K7

// Z3 = an activation block's 32 quants (at Q) in both 256-bit halves, C =
// −128·(their lane sums), which undoes the +128 (XOR 0x80) that makes the
// weights unsigned. Needs Z13 = bytes 0x80, Z11 = 0.
#define Q8_0_ACT(Q, C) \
	VBROADCASTI64X4 Q, Z3; \
	VPXORD          C, C, C; \
	VPDPBUSD        Z3, Z13, C; \
	VPSUBD          C, Z11, C

// W = the 32 quants at Q0 and Q1 of a pair of rows (a 256-bit half each),
// made unsigned (XOR 0x80, Z13).
#define Q8_0_WEIGHTS2(Q0, Q1, W, WY) \
	VMOVDQU      Q0, WY; \
	VINSERTI64X4 $1, Q1, W, W; \
	VPXORD       Z13, W, W

// S = the fp16 scales at D0 and D1 of a pair of rows' blocks as float32,
// eight copies each (SY is S's low half). Needs ROW_MASKS2.
#define Q8_0_SCALES2(D0, D1, S, SY) \
	VPBROADCASTW.Z D0, K6, SY; \
	VPBROADCASTW   D1, K7, SY; \
	VCVTPH2PS      SY, S

// W = the 32 quants at Q0 and Q1 of a pair of rows made unsigned (XOR 0x80,
// Z13), S = their scales at D0 and D1 (eight lanes each) as float32.
#define Q8_0_ROW_PAIR(D0, Q0, D1, Q1, W, WY, S, SY) \
	Q8_0_WEIGHTS2(Q0, Q1, W, WY); \
	Q8_0_SCALES2(D0, D1, S, SY)

// ACC += the scales of the blocks at R0 and R1 (eight lanes each) × the
// lanes in L: H = the two fp16 scales, eight words each, converted in place,
// times the activation's scale at (DX).
#define Q8_0_PAIR_ACC(R0, R1, H, HZ, L, ACC) \
	Q8_0_SCALES2(R0, R1, HZ, H); \
	VMULPS.BCST  (DX), HZ, HZ; \
	VCVTDQ2PS    L, L; \
	VFMADD231PS  L, HZ, ACC

// Stores at off(AX) hsum8 of each 256-bit half of Z (the twins' hsum8).
// Clobbers Y15, X0, X1.
#define HSUM8_PAIR(Z, Y, off) \
	VMOVAPS        Y, Y15; \
	HSUM8_Y15; \
	VMOVSS         X0, off(AX); \
	VEXTRACTF64X4  $1, Z, Y15; \
	HSUM8_Y15; \
	VMOVSS         X0, off+4(AX)

// The rows' part of one block of dotQ8_0Rows4AVX512 and dotQ8_0Rows8AVX512
// for the pair of rows at
// R0 and R1 (their quants at Q0 and Q1): W = the quants made unsigned, L =
// their lanes with the activation (Z3) on top of the correction (Z6), ACC +=
// the blocks' scales × the activation's scale × L. Clobbers Y8/Z8.
#define Q8_0_ROWS8_PAIR(R0, Q0, R1, Q1, W, WY, L, ACC) \
	Q8_0_WEIGHTS2(Q0, Q1, W, WY); \
	VMOVDQA64    Z6, L; \
	VPDPBUSD     Z3, W, L; \
	Q8_0_PAIR_ACC(R0, R1, Y8, Z8, L, ACC)

// func dotQ8_0Rows8AVX512(w *byte, stride int, qs *int8, d *float32, nb int, out *[8]float32)
//
// dotQ8_0Rows4AVX512 for eight rows (R11 = the fifth): the pairs of rows
// accumulate in Z14 (0, 1), Z15 (2, 3), Z16 (4, 5) and Z17 (6, 7).
TEXT ·dotQ8_0Rows8AVX512(SB), NOSPLIT, $0-48
	MOVQ stride+8(FP), BX
	MOVQ w+0(FP), SI
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	LEAQ (BX)(BX*2), R10
	LEAQ (SI)(BX*4), R11
	ROW_MASKS2
	MOVL         $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD       Z14, Z14, Z14
	VPXORD       Z15, Z15, Z15
	VPXORD       Z16, Z16, Z16
	VPXORD       Z17, Z17, Z17
	VPXORD       Z11, Z11, Z11

q80rows8Loop:
	ROWS8_PREFETCH
	Q8_0_ACT((DI), Z6)
	Q8_0_ROWS8_PAIR((SI), 2(SI), (SI)(BX*1), 2(SI)(BX*1), Z1, Y1, Z4, Z14)
	Q8_0_ROWS8_PAIR((SI)(BX*2), 2(SI)(BX*2), (SI)(R10*1), 2(SI)(R10*1), Z2, Y2, Z5, Z15)
	Q8_0_ROWS8_PAIR((R11), 2(R11), (R11)(BX*1), 2(R11)(BX*1), Z7, Y7, Z9, Z16)
	Q8_0_ROWS8_PAIR((R11)(BX*2), 2(R11)(BX*2), (R11)(R10*1), 2(R11)(R10*1), Z10, Y10, Z12, Z17)
	ADDQ            $34, SI
	ADDQ            $34, R11
	ADDQ            $32, DI
	ADDQ            $4, DX
	DECQ            CX
	JNZ             q80rows8Loop

	MOVQ      out+40(FP), AX
	VMOVAPS   Z15, Z10
	VMOVAPS   Z16, Z12
	VMOVAPS   Z17, Z18
	HSUM8_PAIR(Z14, Y14, 0)
	HSUM8_PAIR(Z10, Y10, 8)
	HSUM8_PAIR(Z12, Y12, 16)
	HSUM8_PAIR(Z18, Y18, 24)
	VZEROUPPER
	RET

// func dotQ8_0Rows4AVX512(w *byte, rowBytes int, qs *int8, d *float32, nb int, out *[4]float32)
//
// Per block: Z1 = rows 0 and 1's 32 quants (a 256-bit half each), Z2 = rows
// 2 and 3's, made unsigned by adding 128 (XOR 0x80); Z3 = the activation's
// quants in both halves. VPDPBUSD on top of −128·(the activation's lane sums)
// (Z6) gives each row's eight lanes exactly, which are converted and
// multiplied-added with the blocks' scales into Z14 (rows 0, 1) and Z15 (rows
// 2, 3): each half is the acc of dotQ8_0Generic for its row.
TEXT ·dotQ8_0Rows4AVX512(SB), NOSPLIT, $0-48
	MOVQ rowBytes+8(FP), BX
	MOVQ w+0(FP), SI
	MOVQ qs+16(FP), DI
	MOVQ d+24(FP), DX
	MOVQ nb+32(FP), CX
	LEAQ (BX)(BX*2), R10
	LEAQ (SI)(BX*4), R11
	ROW_MASKS2
	MOVL         $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD       Z14, Z14, Z14
	VPXORD       Z15, Z15, Z15
	VPXORD       Z11, Z11, Z11

q80rows4Loop:
	PREFETCHT1      (R11)
	PREFETCHT1      (R11)(BX*1)
	PREFETCHT1      (R11)(BX*2)
	PREFETCHT1      (R11)(R10*1)
	Q8_0_ACT((DI), Z6)
	Q8_0_ROWS8_PAIR((SI), 2(SI), (SI)(BX*1), 2(SI)(BX*1), Z1, Y1, Z4, Z14)
	Q8_0_ROWS8_PAIR((SI)(BX*2), 2(SI)(BX*2), (SI)(R10*1), 2(SI)(R10*1), Z2, Y2, Z5, Z15)
	ADDQ            $34, SI
	ADDQ            $34, R11
	ADDQ            $32, DI
	ADDQ            $4, DX
	DECQ            CX
	JNZ             q80rows4Loop

	MOVQ      out+40(FP), AX
	VMOVAPS   Z15, Z10
	HSUM8_PAIR(Z14, Y14, 0)
	HSUM8_PAIR(Z10, Y10, 8)
	VZEROUPPER
	RET

// The loop of the Q8_0 and Q5_0 kernels of four activations: QUANTS sets Y1
// to the signed weight quants of the block at SI (as in the one-activation
// kernels), then LANES_ACTS4 with LANES.
#define ACTS4_LOOP(QUANTS, LANES, blockBytes, loop) \
loop: \
	QUANTS; \
	VPSIGNB Y1, Y1, Y2; \
	LANES_ACTS4(LANES, blockBytes); \
	JNZ     loop

// Loads the activation pointers of p (at AX) for the …Acts4 kernels, and
// zeroes the accumulators Y4…Y7 and the index R8.
#define ACTS4_INIT \
	MOVQ   0(AX), DI; \
	MOVQ   8(AX), R9; \
	MOVQ   16(AX), R10; \
	MOVQ   24(AX), R11; \
	MOVQ   32(AX), DX; \
	MOVQ   40(AX), BX; \
	MOVQ   48(AX), R12; \
	MOVQ   56(AX), R13; \
	XORQ   R8, R8; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7

// func dotQ4_0Acts4AVX512(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
//
// p holds the quants of the four activations at 0…24 and their scales at
// 32…56; R8 = 4i indexes them for block i (quants (q)(R8*8), scales (d)(R8*1)).
TEXT ·dotQ4_0Acts4AVX512(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ p+8(FP), AX
	MOVQ nb+16(FP), CX
	ACTS4_INIT
	Q4_0_CONSTS
	Q4_0_ACTS4_LOOP(ACT_LANES_VNNI, q40acts4Loop)
	MOVQ    out+24(FP), AX
	VMOVUPS X15, (AX)
	VZEROUPPER
	RET

// func dotQ4_0Acts4AVX2(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
//
// dotQ4_0Acts4AVX512 with AVX2: VPMADDUBSW and VPMADDWD for VPDPBUSD.
TEXT ·dotQ4_0Acts4AVX2(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ p+8(FP), AX
	MOVQ nb+16(FP), CX
	ACTS4_INIT
	Q4_0_CONSTS
	Q4_0_ACTS4_LOOP(ACT_LANES_AVX2, q40acts4AVX2Loop)
	MOVQ    out+24(FP), AX
	VMOVUPS X15, (AX)
	VZEROUPPER
	RET

// One Q8_0 or Q5_0 row with four activations (prefill), AVX2 and AVX512-VNNI
// tiers: the weight quants of a block are prepared once (Y1 signed, Y2
// magnitudes) and their lanes with each activation accumulated in Y4…Y7 (acc
// of activation 0…3), each exactly as in the one-activation kernel. The
// activations are given as for dotQ4_0Acts4AVX512.

// ACC += d·float32(LANES of the weights with the activation bytes at Q),
// d = X0 (the weights' fp16 scale as float32) × the activation's scale at D.
// Clobbers Y3, Y8, X9.
#define LANES_ACT(LANES, Q, D, ACC) \
	LANES(Q, Y8); \
	VCVTDQ2PS    Y8, Y8; \
	VMULSS       D, X0, X9; \
	VBROADCASTSS X9, Y9; \
	VFMADD231PS  Y8, Y9, ACC

// The four activations of a block, then the pointers advanced.
#define LANES_ACTS4(LANES, blockBytes) \
	MOVWLZX   (SI), AX; \
	VMOVD     AX, X0; \
	VCVTPH2PS X0, X0; \
	LANES_ACT(LANES, (DI)(R8*8), (DX)(R8*1), Y4); \
	LANES_ACT(LANES, (R9)(R8*8), (BX)(R8*1), Y5); \
	LANES_ACT(LANES, (R10)(R8*8), (R12)(R8*1), Y6); \
	LANES_ACT(LANES, (R11)(R8*8), (R13)(R8*1), Y7); \
	ADDQ $blockBytes, SI; \
	ADDQ $4, R8; \
	DECQ CX

// Stores hsum8 of Y4…Y7 at out[0…3] (AX = out). Clobbers Y15, X0, X1.
#define ACTS4_RESULTS \
	VMOVAPS Y4, Y15; \
	HSUM8_Y15; \
	VMOVSS  X0, (AX); \
	VMOVAPS Y5, Y15; \
	HSUM8_Y15; \
	VMOVSS  X0, 4(AX); \
	VMOVAPS Y6, Y15; \
	HSUM8_Y15; \
	VMOVSS  X0, 8(AX); \
	VMOVAPS Y7, Y15; \
	HSUM8_Y15; \
	VMOVSS  X0, 12(AX)

// func dotQ8_0Acts4AVX512(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
TEXT ·dotQ8_0Acts4AVX512(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ p+8(FP), AX
	MOVQ nb+16(FP), CX
	ACTS4_INIT
	ACTS4_LOOP(Q8_0_QUANTS, ACT_LANES_VNNI, 34, q80acts4Loop)
	MOVQ out+24(FP), AX
	ACTS4_RESULTS
	VZEROUPPER
	RET

// func dotQ5_0Acts4AVX512(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
TEXT ·dotQ5_0Acts4AVX512(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ p+8(FP), AX
	MOVQ nb+16(FP), CX
	ACTS4_INIT
	LEGACY_CONSTS
	DWORDS(0x10101010, Y10, X10)
	ACTS4_LOOP(Q5_0_QUANTS_VNNI, ACT_LANES_VNNI, 22, q50acts4Loop)
	MOVQ out+24(FP), AX
	ACTS4_RESULTS
	VZEROUPPER
	RET

// ACC = fma(d_w·d_a, float32(the lanes of the Q8_0 weights Y1, magnitudes
// Y2, with the activation bytes at Q)), d_a at D, Y0 = d_w in every lane
// (LANES_ACT with the product of the scales formed in all lanes at once).
// Clobbers Y3, Y9.
#define Q8_0_LANES_ACT(Q, D, ACC) \
	ACT_LANES_AVX2(Q, Y3); \
	VCVTDQ2PS    Y3, Y3; \
	VBROADCASTSS D, Y9; \
	VMULPS       Y0, Y9, Y9; \
	VFMADD231PS  Y3, Y9, ACC

// func dotQ8_0RowsActs4AVX2(w *byte, rowBytes, rows int, p *legacyPtrs4, nb int, out *float32, stride int)
//
// Sets out[b·stride + k] to dotQ8_0Generic of the row of nb blocks at
// w + k·rowBytes with activation b of p (k < rows, b < 4), with AVX2: the
// loop of dotQ8_0Acts4AVX512 with VPMADDUBSW and VPMADDWD, over the rows.
// The quants of the activations are at DI, R9, R10, R11 and their scales at
// DX, BX, R12, R13, indexed by R8 (ACTS4_INIT); R14 is the row's start, AX
// the output.
TEXT ·dotQ8_0RowsActs4AVX2(SB), NOSPLIT, $0-56
	MOVQ p+24(FP), AX
	ACTS4_INIT
	LEGACY_CONSTS
	MOVQ w+0(FP), R14
	MOVQ out+40(FP), AX

q80rowsActs4Row:
	MOVQ   R14, SI
	MOVQ   nb+32(FP), CX
	XORQ   R8, R8
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7

q80rowsActs4Block:
	VMOVDQU      2(SI), Y1
	VPSIGNB      Y1, Y1, Y2
	VPBROADCASTW (SI), X0
	VCVTPH2PS    X0, Y0
	Q8_0_LANES_ACT((DI)(R8*8), (DX)(R8*1), Y4)
	Q8_0_LANES_ACT((R9)(R8*8), (BX)(R8*1), Y5)
	Q8_0_LANES_ACT((R10)(R8*8), (R12)(R8*1), Y6)
	Q8_0_LANES_ACT((R11)(R8*8), (R13)(R8*1), Y7)
	ADDQ $34, SI
	ADDQ $4, R8
	DECQ CX
	JNZ  q80rowsActs4Block

	MOVQ   stride+48(FP), CX
	SHLQ   $2, CX
	HSUM8_TO(Y4, X4, X4, X0)
	VMOVSS X4, (AX)
	HSUM8_TO(Y5, X5, X5, X0)
	VMOVSS X5, (AX)(CX*1)
	HSUM8_TO(Y6, X6, X6, X0)
	VMOVSS X6, (AX)(CX*2)
	HSUM8_TO(Y7, X7, X7, X0)
	LEAQ   (CX)(CX*2), CX
	VMOVSS X7, (AX)(CX*1)
	ADDQ   $4, AX
	ADDQ   rowBytes+8(FP), R14
	DECQ   rows+16(FP)
	JNZ    q80rowsActs4Row
	VZEROUPPER
	RET

// ACC0 and ACC1 += the lanes of the Q8_0 weights of two rows (Y1 and Y12,
// magnitudes Y2 and Y13) with activation b of the packed block at DI
// (quants at 32b), each scaled by its product at prod-32(SP)+4b (row 0) or
// prod-16(SP)+4b (row 1): Q8_0_LANES_PACKED for two rows, the activation's
// quants loaded once. Clobbers Y0, Y3, Y15.
#define Q8_0_LANES_ROWS2(b, ACC0, ACC1) \
	VMOVDQU      (32*b)(DI), Y3; \
	VPSIGNB      Y1, Y3, Y15; \
	VPMADDUBSW   Y15, Y2, Y15; \
	VPMADDWD     Y14, Y15, Y15; \
	VCVTDQ2PS    Y15, Y15; \
	VBROADCASTSS prod-(32-4*b)(SP), Y0; \
	VFMADD231PS  Y15, Y0, ACC0; \
	VPSIGNB      Y12, Y3, Y3; \
	VPMADDUBSW   Y3, Y13, Y3; \
	VPMADDWD     Y14, Y3, Y3; \
	VCVTDQ2PS    Y3, Y3; \
	VBROADCASTSS prod-(16-4*b)(SP), Y0; \
	VFMADD231PS  Y3, Y0, ACC1

// func dotQ8_0Rows2Acts4AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)
//
// Sets out[b·stride + k] to dotQ8_0Generic of the row of nb blocks at
// w + k·rowBytes with activation b of the four packed at pk (packQ8Acts:
// per block 4×32 quants, then 4 float32 scales), k < rows (even), two rows
// per pass: per block each row's scale times the four activations' scales
// is one vector product, stored on the stack and broadcast from there, and
// each activation's quants are loaded once for both rows. Eight
// accumulators: rows 0 and 1 × activations 0…3 (Y4…Y7 and Y8…Y11).
TEXT ·dotQ8_0Rows2Acts4AVX2(SB), NOSPLIT, $32-56
	DWORDS(0x00010001, Y14, X14)
	MOVQ w+0(FP), R14
	MOVQ rowBytes+8(FP), R11
	MOVQ rows+16(FP), R10
	MOVQ pk+24(FP), R8
	MOVQ nb+32(FP), R9
	MOVQ out+40(FP), AX
	MOVQ stride+48(FP), R15
	SHLQ $2, R15
	LEAQ (R15)(R15*2), R13
	SHRQ $1, R10
q80rows2Acts4Row:
	MOVQ   R14, SI
	LEAQ   (R14)(R11*1), BX
	MOVQ   R8, DI
	MOVQ   R9, CX
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
q80rows2Acts4Block:
	PREFETCHT0   4096(SI)
	PREFETCHT0   4096(BX)
	VMOVDQU      2(SI), Y1
	VPSIGNB      Y1, Y1, Y2
	VMOVDQU      2(BX), Y12
	VPSIGNB      Y12, Y12, Y13
	VPBROADCASTW (SI), X0
	VCVTPH2PS    X0, X0
	VMULPS       128(DI), X0, X0
	VMOVUPS      X0, prod-32(SP)
	VPBROADCASTW (BX), X0
	VCVTPH2PS    X0, X0
	VMULPS       128(DI), X0, X0
	VMOVUPS      X0, prod-16(SP)
	Q8_0_LANES_ROWS2(0, Y4, Y8)
	Q8_0_LANES_ROWS2(1, Y5, Y9)
	Q8_0_LANES_ROWS2(2, Y6, Y10)
	Q8_0_LANES_ROWS2(3, Y7, Y11)
	ADDQ $34, SI
	ADDQ $34, BX
	ADDQ $144, DI
	DECQ CX
	JNZ  q80rows2Acts4Block
	MOVQ   AX, BX
	HSUM8_TO(Y4, X4, X4, X0)
	VMOVSS X4, (BX)
	HSUM8_TO(Y8, X8, X8, X0)
	VMOVSS X8, 4(BX)
	HSUM8_TO(Y5, X5, X5, X0)
	VMOVSS X5, (BX)(R15*1)
	HSUM8_TO(Y9, X9, X9, X0)
	VMOVSS X9, 4(BX)(R15*1)
	HSUM8_TO(Y6, X6, X6, X0)
	VMOVSS X6, (BX)(R15*2)
	HSUM8_TO(Y10, X10, X10, X0)
	VMOVSS X10, 4(BX)(R15*2)
	HSUM8_TO(Y7, X7, X7, X0)
	VMOVSS X7, (BX)(R13*1)
	HSUM8_TO(Y11, X11, X11, X0)
	VMOVSS X11, 4(BX)(R13*1)
	ADDQ   $8, AX
	LEAQ   (R14)(R11*2), R14
	DECQ   R10
	JNZ    q80rows2Acts4Row
	VZEROUPPER
	RET

// func dotQ5_0Acts4AVX2(w *byte, p *legacyPtrs4, nb int, out *[4]float32)
TEXT ·dotQ5_0Acts4AVX2(SB), NOSPLIT, $0-32
	MOVQ w+0(FP), SI
	MOVQ p+8(FP), AX
	MOVQ nb+16(FP), CX
	ACTS4_INIT
	LEGACY_CONSTS
	Q5_0_CONSTS
	ACTS4_LOOP(Q5_0_QUANTS_AVX2, ACT_LANES_AVX2, 22, q50acts4AVX2Loop)
	MOVQ out+24(FP), AX
	ACTS4_RESULTS
	VZEROUPPER
	RET

// Four rows with four activations (prefill), 512-bit tier: a tile of sixteen
// dot products per call. The activations are given as for dotQ4_0Acts4AVX512
// (R13 = p; R8 = 4i indexes block i); the weight rows as for the decode
// kernels (SI, BX = rowBytes, R10 = 3·rowBytes). out[4k+j] = row k · act j.

// Z6 = the four activations' scales of the block (lane elements 0…3) in every
// 128-bit lane. Clobbers AX.
#define ACT_SCALES4 \
	MOVQ        32(R13), AX; \
	VMOVSS      (AX)(R8*1), X6; \
	MOVQ        40(R13), AX; \
	VINSERTPS   $0x10, (AX)(R8*1), X6, X6; \
	MOVQ        48(R13), AX; \
	VINSERTPS   $0x20, (AX)(R8*1), X6, X6; \
	MOVQ        56(R13), AX; \
	VINSERTPS   $0x30, (AX)(R8*1), X6, X6; \
	VSHUFF32X4  $0, Z6, Z6, Z6

// With SI = w, BX = rowBytes, R13 = p and CX = nb loaded: R10 = 3·rowBytes,
// the activation quant pointers of p in DI, R9, R11, R12, and R8 = 0.
#define TILE_ARGS \
	LEAQ (BX)(BX*2), R10; \
	MOVQ 0(R13), DI; \
	MOVQ 8(R13), R9; \
	MOVQ 16(R13), R11; \
	MOVQ 24(R13), R12; \
	XORQ R8, R8

// Z = the four partial sums per row (lane k = row k) of the nibbles Z1, Z2
// with the activation at PTR (Q4_0_ACT, then Q4_0_DOTS).
#define Q4_0_TILE_ACT(PTR, Z) \
	Q4_0_ACT((PTR)(R8*8), 16(PTR)(R8*8), Z); \
	Q4_0_DOTS(Z1, Z2, Z)

// DST = float32 of [Σ A0, Σ A1, Σ A2, Σ A3] in every 128-bit lane, each sum
// over the four int32 of that lane of its register (exact). Clobbers Z26…Z28.
#define REDUCE_ACTS4(A0, A1, A2, A3, DST) \
	VPUNPCKLQDQ A1, A0, Z26; \
	VPUNPCKHQDQ A1, A0, Z27; \
	VPADDD      Z27, Z26, Z26; \
	VPUNPCKLQDQ A3, A2, Z27; \
	VPUNPCKHQDQ A3, A2, Z28; \
	VPADDD      Z28, Z27, Z27; \
	VSHUFPS     $0x88, Z27, Z26, DST; \
	VSHUFPS     $0xdd, Z27, Z26, Z28; \
	VPADDD      Z28, DST, DST; \
	VCVTDQ2PS   DST, DST

// func dotQ4_0Rows4Acts4AVX512(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[16]float32)
//
// Lane k of Z15 holds the chains of row k with activations 0…3, each with the
// operations of dotQ4_0Generic: the four activations' partial sums (Z16…Z19)
// are added up together into [act 0, 1, 2, 3] per row before the scale.
TEXT ·dotQ4_0Rows4Acts4AVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), BX
	MOVQ p+16(FP), R13
	MOVQ nb+24(FP), CX
	TILE_ARGS
	ROW_MASKS4
	Q4_0_CONSTS_512

q40tileLoop:
	Q4_0_NIBBLES4(SI, 0, Z1, X1, Z2)
	Q4_0_TILE_ACT(DI, Z16)
	Q4_0_TILE_ACT(R9, Z17)
	Q4_0_TILE_ACT(R11, Z18)
	Q4_0_TILE_ACT(R12, Z19)
	REDUCE_ACTS4(Z16, Z17, Z18, Z19, Z9)
	ROW_SCALES4(SI, Y8, Z8)
	ACT_SCALES4
	VMULPS       Z6, Z8, Z8
	VFMADD231PS  Z9, Z8, Z15
	ADDQ         $18, SI
	ADDQ         $4, R8
	DECQ         CX
	JNZ          q40tileLoop

	MOVQ    out+32(FP), AX
	VMOVUPS Z15, (AX)
	VZEROUPPER
	RET

// ZA, ZB = the partial sums of rows 0…3 (nibbles Z1, Z2) and rows 4…7 (Z7,
// Z8) with the activation at PTR.
#define Q4_0_TILE8_ACT(PTR, ZA, ZB) \
	Q4_0_ACT((PTR)(R8*8), 16(PTR)(R8*8), Z5); \
	VMOVDQA64 Z5, ZA; \
	Q4_0_DOTS(Z1, Z2, ZA); \
	VMOVDQA64 Z5, ZB; \
	Q4_0_DOTS(Z7, Z8, ZB)

// func dotQ4_0Rows8Acts4AVX512(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[32]float32)
//
// dotQ4_0Rows4Acts4AVX512 for eight rows (DX = the fifth row): Z15 holds the
// chains of rows 0…3, Z14 those of rows 4…7. out[4k+j] = row k · act j.
TEXT ·dotQ4_0Rows8Acts4AVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), BX
	MOVQ p+16(FP), R13
	MOVQ nb+24(FP), CX
	TILE_ARGS
	LEAQ (SI)(BX*4), DX
	ROW_MASKS4
	Q4_0_CONSTS_512
	VPXORD Z14, Z14, Z14

q40tile8Loop:
	Q4_0_NIBBLES4(SI, 0, Z1, X1, Z2)
	Q4_0_NIBBLES4(DX, 0, Z7, X7, Z8)
	Q4_0_TILE8_ACT(DI, Z16, Z20)
	Q4_0_TILE8_ACT(R9, Z17, Z21)
	Q4_0_TILE8_ACT(R11, Z18, Z22)
	Q4_0_TILE8_ACT(R12, Z19, Z23)
	REDUCE_ACTS4(Z16, Z17, Z18, Z19, Z9)
	REDUCE_ACTS4(Z20, Z21, Z22, Z23, Z24)
	ROW_SCALES4(SI, Y8, Z8)
	ROW_SCALES4(DX, Y25, Z25)
	ACT_SCALES4
	VMULPS       Z6, Z8, Z8
	VMULPS       Z6, Z25, Z25
	VFMADD231PS  Z9, Z8, Z15
	VFMADD231PS  Z24, Z25, Z14
	ADDQ         $18, SI
	ADDQ         $18, DX
	ADDQ         $4, R8
	DECQ         CX
	JNZ          q40tile8Loop

	MOVQ    out+32(FP), AX
	VMOVUPS Z15, (AX)
	VMOVUPS Z14, 64(AX)
	VZEROUPPER
	RET

// The rows' part of a Q8_0 tile step for activation j: ACC_A (rows 0, 1) and
// ACC_B (rows 2, 3) += the blocks' scales (Z20, Z21) × the activation's scale
// at (PTR)(R8*1) × the lanes of the weights Z1, Z2 (made unsigned) with the
// activation's quants at Q, on top of −128·(their lane sums). Clobbers Z3…Z7,
// AX.
#define Q8_0_TILE_ACT(Q, POFF, ACC_A, ACC_B) \
	Q8_0_ACT(Q, Z5); \
	MOVQ            POFF(R13), AX; \
	VMOVDQA64       Z5, Z4; \
	VPDPBUSD        Z3, Z1, Z4; \
	VPDPBUSD        Z3, Z2, Z5; \
	VCVTDQ2PS       Z4, Z4; \
	VCVTDQ2PS       Z5, Z5; \
	VMULPS.BCST     (AX)(R8*1), Z20, Z6; \
	VMULPS.BCST     (AX)(R8*1), Z21, Z7; \
	VFMADD231PS     Z4, Z6, ACC_A; \
	VFMADD231PS     Z5, Z7, ACC_B

// Stores hsum8 of the low and high 256-bit halves of Z at off0(AX) and
// off1(AX). Clobbers Y15, X0, X1.
#define HSUM8_HALVES(Z, Y, off0, off1) \
	VMOVAPS       Y, Y15; \
	HSUM8_Y15; \
	VMOVSS        X0, off0(AX); \
	VEXTRACTF64X4 $1, Z, Y15; \
	HSUM8_Y15; \
	VMOVSS        X0, off1(AX)

// func dotQ8_0Rows4Acts4AVX512(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[16]float32)
//
// Z22…Z29 are the acc of dotQ8_0Generic for (rows 0, 1) and (rows 2, 3) with
// activations 0…3, a row per 256-bit half.
TEXT ·dotQ8_0Rows4Acts4AVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), BX
	MOVQ p+16(FP), R13
	MOVQ nb+24(FP), CX
	TILE_ARGS
	ROW_MASKS2
	MOVL         $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD       Z11, Z11, Z11
	VPXORD       Z22, Z22, Z22
	VPXORD       Z23, Z23, Z23
	VPXORD       Z24, Z24, Z24
	VPXORD       Z25, Z25, Z25
	VPXORD       Z26, Z26, Z26
	VPXORD       Z27, Z27, Z27
	VPXORD       Z28, Z28, Z28
	VPXORD       Z29, Z29, Z29

q80tileLoop:
	Q8_0_ROW_PAIR((SI), 2(SI), (SI)(BX*1), 2(SI)(BX*1), Z1, Y1, Z20, Y20)
	Q8_0_ROW_PAIR((SI)(BX*2), 2(SI)(BX*2), (SI)(R10*1), 2(SI)(R10*1), Z2, Y2, Z21, Y21)
	Q8_0_TILE_ACT((DI)(R8*8), 32, Z22, Z23)
	Q8_0_TILE_ACT((R9)(R8*8), 40, Z24, Z25)
	Q8_0_TILE_ACT((R11)(R8*8), 48, Z26, Z27)
	Q8_0_TILE_ACT((R12)(R8*8), 56, Z28, Z29)
	ADDQ           $34, SI
	ADDQ           $4, R8
	DECQ           CX
	JNZ            q80tileLoop

	MOVQ out+32(FP), AX
	HSUM8_HALVES(Z22, Y22, 0, 16)
	HSUM8_HALVES(Z23, Y23, 32, 48)
	HSUM8_HALVES(Z24, Y24, 4, 20)
	HSUM8_HALVES(Z25, Y25, 36, 52)
	HSUM8_HALVES(Z26, Y26, 8, 24)
	HSUM8_HALVES(Z27, Y27, 40, 56)
	HSUM8_HALVES(Z28, Y28, 12, 28)
	HSUM8_HALVES(Z29, Y29, 44, 60)
	VZEROUPPER
	RET

// The Q8_0 tile for eight rows: rows 2p and 2p+1 of the weights in W (Z1, Z2,
// Z7, Z8 for p = 0…3), their scales in S (Z9, Z10, Z12, Z14); ACC += S × the
// activation's scale (Z0) × the lanes of W with the activation quants in Z3
// on top of the correction in Z5. Clobbers Z4, Z6.
#define Q8_0_TILE8_PAIR(W, S, ACC) \
	VMOVDQA64   Z5, Z4; \
	VPDPBUSD    Z3, W, Z4; \
	VCVTDQ2PS   Z4, Z4; \
	VMULPS      Z0, S, Z6; \
	VFMADD231PS Z4, Z6, ACC

// Activation j of a Q8_0 tile of eight rows: its quants at Q, its scale
// pointer at POFF(R13); A0…A3 the accumulators of the four row pairs.
#define Q8_0_TILE8_ACT(Q, POFF, A0, A1, A2, A3) \
	Q8_0_ACT(Q, Z5); \
	MOVQ            POFF(R13), AX; \
	VBROADCASTSS    (AX)(R8*1), Z0; \
	Q8_0_TILE8_PAIR(Z1, Z9, A0); \
	Q8_0_TILE8_PAIR(Z2, Z10, A1); \
	Q8_0_TILE8_PAIR(Z7, Z12, A2); \
	Q8_0_TILE8_PAIR(Z8, Z14, A3)

// func dotQ8_0Rows8Acts4AVX512(w *byte, rowBytes int, p *legacyPtrs4, nb int, out *[32]float32)
//
// dotQ8_0Rows4Acts4AVX512 for eight rows (DX = the fifth row): Z16…Z31 are
// the acc of (row pair p, activation j) in Z16+4j+p. out[4k+j] = row k · act j.
TEXT ·dotQ8_0Rows8Acts4AVX512(SB), NOSPLIT, $0-40
	MOVQ w+0(FP), SI
	MOVQ rowBytes+8(FP), BX
	MOVQ p+16(FP), R13
	MOVQ nb+24(FP), CX
	TILE_ARGS
	LEAQ (SI)(BX*4), DX
	ROW_MASKS2
	MOVL         $0x80808080, AX
	VPBROADCASTD AX, Z13
	VPXORD       Z11, Z11, Z11
	VPXORD       Z16, Z16, Z16
	VPXORD       Z17, Z17, Z17
	VPXORD       Z18, Z18, Z18
	VPXORD       Z19, Z19, Z19
	VPXORD       Z20, Z20, Z20
	VPXORD       Z21, Z21, Z21
	VPXORD       Z22, Z22, Z22
	VPXORD       Z23, Z23, Z23
	VPXORD       Z24, Z24, Z24
	VPXORD       Z25, Z25, Z25
	VPXORD       Z26, Z26, Z26
	VPXORD       Z27, Z27, Z27
	VPXORD       Z28, Z28, Z28
	VPXORD       Z29, Z29, Z29
	VPXORD       Z30, Z30, Z30
	VPXORD       Z31, Z31, Z31

q80tile8Loop:
	Q8_0_ROW_PAIR((SI), 2(SI), (SI)(BX*1), 2(SI)(BX*1), Z1, Y1, Z9, Y9)
	Q8_0_ROW_PAIR((SI)(BX*2), 2(SI)(BX*2), (SI)(R10*1), 2(SI)(R10*1), Z2, Y2, Z10, Y10)
	Q8_0_ROW_PAIR((DX), 2(DX), (DX)(BX*1), 2(DX)(BX*1), Z7, Y7, Z12, Y12)
	Q8_0_ROW_PAIR((DX)(BX*2), 2(DX)(BX*2), (DX)(R10*1), 2(DX)(R10*1), Z8, Y8, Z14, Y14)
	Q8_0_TILE8_ACT((DI)(R8*8), 32, Z16, Z17, Z18, Z19)
	Q8_0_TILE8_ACT((R9)(R8*8), 40, Z20, Z21, Z22, Z23)
	Q8_0_TILE8_ACT((R11)(R8*8), 48, Z24, Z25, Z26, Z27)
	Q8_0_TILE8_ACT((R12)(R8*8), 56, Z28, Z29, Z30, Z31)
	ADDQ $34, SI
	ADDQ $34, DX
	ADDQ $4, R8
	DECQ CX
	JNZ  q80tile8Loop

	MOVQ out+32(FP), AX
	HSUM8_HALVES(Z16, Y16, 0, 16)
	HSUM8_HALVES(Z17, Y17, 32, 48)
	HSUM8_HALVES(Z18, Y18, 64, 80)
	HSUM8_HALVES(Z19, Y19, 96, 112)
	HSUM8_HALVES(Z20, Y20, 4, 20)
	HSUM8_HALVES(Z21, Y21, 36, 52)
	HSUM8_HALVES(Z22, Y22, 68, 84)
	HSUM8_HALVES(Z23, Y23, 100, 116)
	HSUM8_HALVES(Z24, Y24, 8, 24)
	HSUM8_HALVES(Z25, Y25, 40, 56)
	HSUM8_HALVES(Z26, Y26, 72, 88)
	HSUM8_HALVES(Z27, Y27, 104, 120)
	HSUM8_HALVES(Z28, Y28, 12, 28)
	HSUM8_HALVES(Z29, Y29, 44, 60)
	HSUM8_HALVES(Z30, Y30, 76, 92)
	HSUM8_HALVES(Z31, Y31, 108, 124)
	VZEROUPPER
	RET

// ACC += lanes of the weights in Y1 (|w| in Y2) with activation b of the
// packed block at DI (quants at 32b), scaled by the product b stored at
// prod-32(SP)+4b, in the operations of Q8_0_LANES_ACT.
#define Q8_0_LANES_PACKED(b, ACC) \
	VMOVDQU      (32*b)(DI), Y3; \
	VPSIGNB      Y1, Y3, Y3; \
	VPMADDUBSW   Y3, Y2, Y3; \
	VPMADDWD     Y14, Y3, Y3; \
	VCVTDQ2PS    Y3, Y3; \
	VBROADCASTSS prod-(32-4*b)(SP), Y12; \
	VFMADD231PS  Y3, Y12, ACC

// The row loop of the kernels of rows × eight packed activations whose
// weights take the lanes of Q8_0 (Q8_0, Q5_0): QUANTS sets Y1 to the signed
// quants of the block at SI (blockBytes long, fp16 scale first); per block
// the eight products of the weight scale with the activations' scales are
// one vector product, stored on the stack and broadcast from there: the
// same float32 products as the kernels of four activations, with the weight
// block unpacked once for eight. The arguments are in registers (ROWS8_ARGS):
// R14 = w, R11 = rowBytes, R10 = rows, R8 = pk, R9 = nb, AX = out,
// R15 = 4·stride, R13 = 3·R15, R12 = 5·R15.
#define LANES_ROWS_ACTS8(QUANTS, blockBytes, rowLoop, blockLoop) \
	SHLQ $2, R15; \
	LEAQ (R15)(R15*2), R13; \
	LEAQ (R15)(R15*4), R12; \
rowLoop: \
	MOVQ   R14, SI; \
	MOVQ   R8, DI; \
	MOVQ   R9, CX; \
	VXORPS Y4, Y4, Y4; \
	VXORPS Y5, Y5, Y5; \
	VXORPS Y6, Y6, Y6; \
	VXORPS Y7, Y7, Y7; \
	VXORPS Y8, Y8, Y8; \
	VXORPS Y9, Y9, Y9; \
	VXORPS Y10, Y10, Y10; \
	VXORPS Y11, Y11, Y11; \
blockLoop: \
	QUANTS; \
	VPSIGNB      Y1, Y1, Y2; \
	VPBROADCASTW (SI), X0; \
	VCVTPH2PS    X0, Y0; \
	VMULPS       256(DI), Y0, Y0; \
	VMOVUPS      Y0, prod-32(SP); \
	Q8_0_LANES_PACKED(0, Y4); \
	Q8_0_LANES_PACKED(1, Y5); \
	Q8_0_LANES_PACKED(2, Y6); \
	Q8_0_LANES_PACKED(3, Y7); \
	Q8_0_LANES_PACKED(4, Y8); \
	Q8_0_LANES_PACKED(5, Y9); \
	Q8_0_LANES_PACKED(6, Y10); \
	Q8_0_LANES_PACKED(7, Y11); \
	ADDQ $blockBytes, SI; \
	ADDQ $288, DI; \
	DECQ CX; \
	JNZ  blockLoop; \
	MOVQ   AX, BX; \
	HSUM8_TO(Y4, X4, X4, X0); \
	VMOVSS X4, (BX); \
	HSUM8_TO(Y5, X5, X5, X0); \
	VMOVSS X5, (BX)(R15*1); \
	HSUM8_TO(Y6, X6, X6, X0); \
	VMOVSS X6, (BX)(R15*2); \
	HSUM8_TO(Y7, X7, X7, X0); \
	VMOVSS X7, (BX)(R13*1); \
	HSUM8_TO(Y8, X8, X8, X0); \
	VMOVSS X8, (BX)(R15*4); \
	HSUM8_TO(Y9, X9, X9, X0); \
	VMOVSS X9, (BX)(R12*1); \
	LEAQ   (BX)(R13*2), BX; \
	HSUM8_TO(Y10, X10, X10, X0); \
	VMOVSS X10, (BX); \
	HSUM8_TO(Y11, X11, X11, X0); \
	VMOVSS X11, (BX)(R15*1); \
	ADDQ   $4, AX; \
	ADDQ   R11, R14; \
	DECQ   R10; \
	JNZ    rowLoop; \
	VZEROUPPER

#define Q8_0_QUANTS_AT2 VMOVDQU 2(SI), Y1

// func dotQ8_0RowsActs8AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)
//
// Sets out[b·stride + k] to dotQ8_0Generic of the row of nb blocks at
// w + k·rowBytes with activation b of the eight packed at pk (packActs8: per
// block 8×32 quants, then 8 float32 scales), k < rows (LANES_ROWS_ACTS8).
TEXT ·dotQ8_0RowsActs8AVX2(SB), NOSPLIT, $32-56
	DWORDS(0x00010001, Y14, X14)
	MOVQ w+0(FP), R14
	MOVQ rowBytes+8(FP), R11
	MOVQ rows+16(FP), R10
	MOVQ pk+24(FP), R8
	MOVQ nb+32(FP), R9
	MOVQ out+40(FP), AX
	MOVQ stride+48(FP), R15
	LANES_ROWS_ACTS8(Q8_0_QUANTS_AT2, 34, q80rowsActs8Row, q80rowsActs8Block)
	RET

// Q5_0_QUANTS_AVX2 with the byte-spreading shuffle and the bytes 0xf0 read
// from memory, Y15 holding the bit of each byte: the kernel of eight
// activations has no registers for them.
#define Q5_0_QUANTS_MEM Q5_0_QUANTS_FROM(q5Spread<>(SB), Y15, bytesF0<>(SB))

DATA bytesF0<>+0(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA bytesF0<>+8(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA bytesF0<>+16(SB)/8, $0xf0f0f0f0f0f0f0f0
DATA bytesF0<>+24(SB)/8, $0xf0f0f0f0f0f0f0f0
GLOBL bytesF0<>(SB), RODATA|NOPTR, $32

// func dotQ5_0RowsActs8AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)
//
// dotQ8_0RowsActs8AVX2 for Q5_0 rows: dotQ5_0Generic of each row with each
// of the eight activations.
TEXT ·dotQ5_0RowsActs8AVX2(SB), NOSPLIT, $32-56
	LEGACY_CONSTS
	MOVQ         $0x8040201008040201, AX
	VMOVQ        AX, X15
	VPBROADCASTQ X15, Y15
	MOVQ w+0(FP), R14
	MOVQ rowBytes+8(FP), R11
	MOVQ rows+16(FP), R10
	MOVQ pk+24(FP), R8
	MOVQ nb+32(FP), R9
	MOVQ out+40(FP), AX
	MOVQ stride+48(FP), R15
	LANES_ROWS_ACTS8(Q5_0_QUANTS_MEM, 22, q50rowsActs8Row, q50rowsActs8Block)
	RET

// Y = the products of the two rows' Q4_0 block (its low nibbles in Y1, its
// high nibbles in Y2: row A in the low halves, row B in the high) with the
// activation at off(DI) of a packQ4Acts block, its first 16 quants
// broadcast to both halves, then its last 16, summed four by four into
// int16: VPMADDUBSW of the unsigned nibbles (a pair at most 2·15·127 in
// magnitude), the two added (4·15·127 = 7620). The kernels add these up by
// pairs of lanes twice more (VPHADDW: 8 products at most 15240, 16 at most
// 30480, still int16) before VPMADDWD widens the last pairs to the block's
// 32 products. Clobbers Y0, Y3.
#define Q4_0_PAIR_ACT(off, Y) \
	VBROADCASTI128 off(DI), Y0; \
	VPMADDUBSW     Y0, Y1, Y; \
	VBROADCASTI128 off+16(DI), Y0; \
	VPMADDUBSW     Y0, Y2, Y3; \
	VPADDW         Y3, Y, Y

// Y1, Y2 = the low and the high nibbles (unsigned) of the Q4_0 blocks at SI
// (row A, low halves) and R12 (row B, high halves); Y13 holds bytes 0x0f.
#define Q4_0_PAIR_NIBBLES \
	VMOVDQU     2(SI), X1; \
	VINSERTI128 $1, 2(R12), Y1, Y1; \
	VPSRLW      $4, Y1, Y2; \
	VPAND       Y13, Y1, Y1; \
	VPAND       Y13, Y2, Y2

// The loop of the Q4_0 kernels of two rows × activations: rows R13 left,
// row A at R14, rowBytes R11, the pack R9 (packBytes a block), nb R10, the
// output DX (next row's column), stride in bytes R8. Per pair of rows
// (row B = row A for an odd last row) ZERO clears the accumulators, BLOCK
// takes one block (Q4_0_PAIR_NIBBLES done), STORE_A and STORE_B write row A's
// and row B's results from BX (with AX = 3·R8).
#define Q4_0_ROWS2_LOOP(ZERO, BLOCK, packBytes, STORE_A, STORE_B, row, one, block, done) \
row: \
	MOVQ R14, SI; \
	MOVQ R14, R12; \
	CMPQ R13, $1; \
	JEQ  one; \
	ADDQ R11, R12; \
one: \
	MOVQ R9, DI; \
	MOVQ R10, CX; \
	ZERO; \
block: \
	Q4_0_PAIR_NIBBLES; \
	BLOCK; \
	ADDQ $18, SI; \
	ADDQ $18, R12; \
	ADDQ $packBytes, DI; \
	DECQ CX; \
	JNZ  block; \
	MOVQ DX, BX; \
	LEAQ (R8)(R8*2), AX; \
	STORE_A; \
	ADDQ $4, DX; \
	DECQ R13; \
	JZ   done; \
	MOVQ DX, BX; \
	STORE_B; \
	ADDQ $4, DX; \
	LEAQ (R14)(R11*2), R14; \
	DECQ R13; \
	JNZ  row; \
done:

// One block of dotQ4_0Rows2Acts4AVX2: Y4 = [row A's four sums | row B's]
// (the int16 sums added by pairs twice, then widened by pairs) less the
// corrections, Y0 = [d_A · d_b | d_B · d_b], and lane b of Y15 takes row A's
// chain with activation b, lane 4 + b row B's.
#define Q4_0_ROWS2_ACTS4_BLOCK \
	Q4_0_PAIR_ACT(0, Y4); \
	Q4_0_PAIR_ACT(32, Y5); \
	Q4_0_PAIR_ACT(64, Y6); \
	Q4_0_PAIR_ACT(96, Y7); \
	VPHADDW        Y5, Y4, Y4; \
	VPHADDW        Y7, Y6, Y6; \
	VPHADDW        Y6, Y4, Y4; \
	VPMADDWD       Y14, Y4, Y4; \
	VBROADCASTI128 144(DI), Y5; \
	VPSUBD         Y5, Y4, Y4; \
	VCVTDQ2PS      Y4, Y4; \
	VPBROADCASTW   (SI), X0; \
	VPBROADCASTW   (R12), X5; \
	VPUNPCKLQDQ    X5, X0, X0; \
	VCVTPH2PS      X0, Y0; \
	VBROADCASTF128 128(DI), Y5; \
	VMULPS         Y5, Y0, Y0; \
	VFMADD231PS    Y4, Y0, Y15

#define Q4_0_ROWS2_ACTS4_ZERO VXORPS Y15, Y15, Y15
#define Q4_0_ROWS2_ACTS4_STORE_A STORE_LANES4(X15)
#define Q4_0_ROWS2_ACTS4_STORE_B \
	VEXTRACTF128 $1, Y15, X15; \
	STORE_LANES4(X15)

// func dotQ4_0Rows2Acts4AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)
//
// dotQ4_0RowsActs8AVX2 for four activations packed at pk (packQ4Acts, 160
// bytes a block: the quants at 0, the scales at 128, the corrections at
// 144): the four sums of both rows reduce into one register, row A's in the
// low half and row B's in the high, so that lane b of Y15 takes row A's
// chain with activation b and lane 4 + b row B's, one fused multiply-add for
// the eight.
TEXT ·dotQ4_0Rows2Acts4AVX2(SB), NOSPLIT, $0-56
	LEGACY_CONSTS
	MOVQ w+0(FP), R14
	MOVQ rowBytes+8(FP), R11
	MOVQ rows+16(FP), R13
	MOVQ pk+24(FP), R9
	MOVQ nb+32(FP), R10
	MOVQ out+40(FP), DX
	MOVQ stride+48(FP), R8
	SHLQ $2, R8
	Q4_0_ROWS2_LOOP(Q4_0_ROWS2_ACTS4_ZERO, Q4_0_ROWS2_ACTS4_BLOCK, 160, Q4_0_ROWS2_ACTS4_STORE_A, Q4_0_ROWS2_ACTS4_STORE_B, q40rows2Acts4Row, q40rows2Acts4One, q40rows2Acts4Block, q40rows2Acts4Done)
	VZEROUPPER
	RET

// One block of dotQ4_0RowsActs8AVX2: Y3 = row A's eight sums, Y4 row B's
// (the int16 sums added by pairs twice within each half and widened by
// pairs, then the halves of activations 0…3 and 4…7 joined) less the
// corrections; lane b of Y15 (row A) and Y12 (row B) takes the chain with
// activation b.
#define Q4_0_ROWS2_ACTS8_BLOCK \
	Q4_0_PAIR_ACT(0, Y4); \
	Q4_0_PAIR_ACT(32, Y5); \
	Q4_0_PAIR_ACT(64, Y6); \
	Q4_0_PAIR_ACT(96, Y7); \
	Q4_0_PAIR_ACT(128, Y8); \
	Q4_0_PAIR_ACT(160, Y9); \
	Q4_0_PAIR_ACT(192, Y10); \
	Q4_0_PAIR_ACT(224, Y11); \
	VPHADDW      Y5, Y4, Y4; \
	VPHADDW      Y7, Y6, Y6; \
	VPHADDW      Y9, Y8, Y8; \
	VPHADDW      Y11, Y10, Y10; \
	VPHADDW      Y6, Y4, Y4; \
	VPHADDW      Y10, Y8, Y8; \
	VPMADDWD     Y14, Y4, Y4; \
	VPMADDWD     Y14, Y8, Y8; \
	VPERM2I128   $0x20, Y8, Y4, Y3; \
	VPERM2I128   $0x31, Y8, Y4, Y4; \
	VPSUBD       288(DI), Y3, Y3; \
	VPSUBD       288(DI), Y4, Y4; \
	VCVTDQ2PS    Y3, Y3; \
	VCVTDQ2PS    Y4, Y4; \
	VPBROADCASTW (SI), X0; \
	VCVTPH2PS    X0, Y0; \
	VMULPS       256(DI), Y0, Y0; \
	VFMADD231PS  Y3, Y0, Y15; \
	VPBROADCASTW (R12), X0; \
	VCVTPH2PS    X0, Y0; \
	VMULPS       256(DI), Y0, Y0; \
	VFMADD231PS  Y4, Y0, Y12

#define Q4_0_ROWS2_ACTS8_ZERO \
	VXORPS Y15, Y15, Y15; \
	VXORPS Y12, Y12, Y12
#define Q4_0_ROWS2_ACTS8_STORE_A STORE_LANES8(Y15, X15)
#define Q4_0_ROWS2_ACTS8_STORE_B STORE_LANES8(Y12, X12)

// func dotQ4_0RowsActs8AVX2(w *byte, rowBytes, rows int, pk *byte, nb int, out *float32, stride int)
//
// Sets out[b·stride + k] to dotQ4_0Generic of the row of nb blocks at
// w + k·rowBytes with activation b of the eight packed at pk (packQ4Acts),
// k < rows: two rows at a time (the last alone as both rows of a pair when
// rows is odd), their blocks in the two halves of one register. Per block
// the nibbles are taken unsigned, their products with each activation
// formed in Y4…Y11 and reduced to the sums of both rows with the eight
// activations, less 8 times each activation's sum (the pack's
// corrections): the exact sumi. Lane b of Y15 (row A) and Y12 (row B) takes
// fma(float32(sumi_b), d_w·d_b, acc_b) for the eight at once,
// dotQ4_0Generic's step.
TEXT ·dotQ4_0RowsActs8AVX2(SB), NOSPLIT, $0-56
	LEGACY_CONSTS
	MOVQ w+0(FP), R14
	MOVQ rowBytes+8(FP), R11
	MOVQ rows+16(FP), R13
	MOVQ pk+24(FP), R9
	MOVQ nb+32(FP), R10
	MOVQ out+40(FP), DX
	MOVQ stride+48(FP), R8
	SHLQ $2, R8
	Q4_0_ROWS2_LOOP(Q4_0_ROWS2_ACTS8_ZERO, Q4_0_ROWS2_ACTS8_BLOCK, 320, Q4_0_ROWS2_ACTS8_STORE_A, Q4_0_ROWS2_ACTS8_STORE_B, q40rowsActs8Row, q40rowsActs8One, q40rowsActs8Block, q40rowsActs8Done)
	VZEROUPPER
	RET
