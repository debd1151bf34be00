//go:build !purego

#include "textflag.h"

// The gated delta rule (deltarule.go) for amd64 with AVX2: the operations of
// deltaRuleF32Generic in the same order, so that the results are
// bit-identical. Each row of the state takes two passes while it sits in L1:
// scaled by the decay and dotted with k, then updated by d·k and dotted with
// q, each dot in the eight lanes of one accumulator (value i in lane i%8,
// as dotF32AVX2) summed pairwise; products are rounded before they are added
// (VMULPS, then VADDPS; no fused multiply-add).

// X0 = ((s0+s1)+(s2+s3)) + ((s4+s5)+(s6+s7)) of the eight lanes of Y0,
// clobbering X1.
#define HSUM_Y0 \
	VEXTRACTF128 $1, Y0, X1; \
	VHADDPS      X1, X0, X0; \
	VHADDPS      X0, X0, X0; \
	VMOVSHDUP    X0, X1; \
	VADDSS       X1, X0, X0

// func deltaRuleF32AVX2(M *float32, S int, k, q, v *float32, decay, beta, scale float32)
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

deltaRow:
	// M[r] ×= decay; X0 = M[r]·k.
	VXORPS Y0, Y0, Y0
	MOVQ   DI, R10
	MOVQ   SI, AX
	MOVQ   R8, CX

deltaScaleDot:
	VMULPS  (R10), Y13, Y1
	VMOVUPS Y1, (R10)
	VMULPS  (AX), Y1, Y1
	VADDPS  Y1, Y0, Y0
	ADDQ    $32, R10
	ADDQ    $32, AX
	SUBQ    $8, CX
	JNZ     deltaScaleDot

	HSUM_Y0

	// Y2 = d = (v[r] − X0)·β in every lane.
	VMOVSS       (BX), X2
	VSUBSS       X0, X2, X2
	VMULSS       X14, X2, X2
	VBROADCASTSS X2, Y2

	// M[r] += d·k; X0 = M[r]·q.
	VXORPS Y0, Y0, Y0
	MOVQ   DI, R10
	MOVQ   SI, AX
	MOVQ   DX, R11
	MOVQ   R8, CX

deltaAxpyDot:
	VMULPS  (AX), Y2, Y1
	VADDPS  (R10), Y1, Y1
	VMOVUPS Y1, (R10)
	VMULPS  (R11), Y1, Y1
	VADDPS  Y1, Y0, Y0
	ADDQ    $32, R10
	ADDQ    $32, AX
	ADDQ    $32, R11
	SUBQ    $8, CX
	JNZ     deltaAxpyDot

	HSUM_Y0
	VMULSS X15, X0, X0
	VMOVSS X0, (BX)
	ADDQ   $4, BX
	MOVQ   R10, DI          // the next row
	DECQ   R9
	JNZ    deltaRow

	VZEROUPPER
	RET
