//go:build !purego

#include "textflag.h"

// The gated delta rule (deltarule.go) for amd64 with AVX2: the operations of
// deltaRuleF32Generic in the same order, so that the results are
// bit-identical. Rows go two at a time (S is a multiple of 8, so even), side
// by side for the independent additions, each taking two passes while it
// sits in L1: scaled by the decay and dotted with k, then updated by d·k and
// dotted with q, each dot in the eight lanes of one accumulator (value i in
// lane i%8, as dotF32AVX2) summed pairwise; products are rounded before they
// are added (VMULPS, then VADDPS; no fused multiply-add).

// Lane 0 of x = ((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7)) of the eight lanes of
// y (whose low half is x), clobbering t.
#define HSUM8(y, x, t) \
	VEXTRACTF128 $1, y, t; \
	VHADDPS      t, x, x; \
	VHADDPS      x, x, x; \
	VMOVSHDUP    x, t; \
	VADDSS       t, x, x

// func deltaRuleF32AVX2(M *float32, S int, k, q, v *float32, decay, beta, scale float32)
//
// Rows r (DI) and r+1 (DI+R12): accumulators Y0 and Y4, deltas Y2 and Y5.
TEXT ·deltaRuleF32AVX2(SB), NOSPLIT, $0-52
	MOVQ         M+0(FP), DI
	MOVQ         S+8(FP), R8
	MOVQ         k+16(FP), SI
	MOVQ         q+24(FP), DX
	MOVQ         v+32(FP), BX
	VBROADCASTSS decay+40(FP), Y13
	VMOVSS       beta+44(FP), X14
	VMOVSS       scale+48(FP), X15
	MOVQ         R8, R9            // rows left
	LEAQ         (R8*4), R12       // row stride in bytes

deltaRows:
	// M[r] ×= decay, M[r+1] ×= decay; X0 = M[r]·k, X4 = M[r+1]·k.
	VXORPS Y0, Y0, Y0
	VXORPS Y4, Y4, Y4
	MOVQ   DI, R10
	MOVQ   SI, AX
	MOVQ   R8, CX

deltaScaleDot:
	VMULPS  (R10), Y13, Y1
	VMULPS  (R10)(R12*1), Y13, Y3
	VMOVUPS Y1, (R10)
	VMOVUPS Y3, (R10)(R12*1)
	VMULPS  (AX), Y1, Y1
	VMULPS  (AX), Y3, Y3
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y4, Y4
	ADDQ    $32, R10
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     deltaScaleDot

	HSUM8(Y0, X0, X1)
	HSUM8(Y4, X4, X3)

	// Y2 = (v[r] − X0)·β, Y5 = (v[r+1] − X4)·β in every lane.
	VMOVSS       (BX), X2
	VMOVSS       4(BX), X5
	VSUBSS       X0, X2, X2
	VSUBSS       X4, X5, X5
	VMULSS       X14, X2, X2
	VMULSS       X14, X5, X5
	VBROADCASTSS X2, Y2
	VBROADCASTSS X5, Y5

	// M[r] += d·k, M[r+1] += d'·k; X0 = M[r]·q, X4 = M[r+1]·q.
	VXORPS Y0, Y0, Y0
	VXORPS Y4, Y4, Y4
	MOVQ   DI, R10
	MOVQ   SI, AX
	MOVQ   DX, R11
	MOVQ   R8, CX

deltaAxpyDot:
	VMOVUPS (AX), Y6
	VMULPS  Y6, Y2, Y1
	VMULPS  Y6, Y5, Y3
	VADDPS  (R10), Y1, Y1
	VADDPS  (R10)(R12*1), Y3, Y3
	VMOVUPS Y1, (R10)
	VMOVUPS Y3, (R10)(R12*1)
	VMOVUPS (R11), Y7
	VMULPS  Y7, Y1, Y1
	VMULPS  Y7, Y3, Y3
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y4, Y4
	ADDQ    $32, R10
	ADDQ    $32, AX
	ADDQ    $32, R11
	SUBQ    $8, CX
	JNZ     deltaAxpyDot

	HSUM8(Y0, X0, X1)
	HSUM8(Y4, X4, X3)
	VMULSS X15, X0, X0
	VMULSS X15, X4, X4
	VMOVSS X0, (BX)
	VMOVSS X4, 4(BX)
	ADDQ   $8, BX
	LEAQ   (R10)(R12*1), DI // the next two rows
	SUBQ   $2, R9
	JNZ    deltaRows

	VZEROUPPER
	RET
