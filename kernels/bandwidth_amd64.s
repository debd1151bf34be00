//go:build !purego

#include "textflag.h"

// The read loop of the memory bandwidth measurement (bandwidth.go) for amd64
// with AVX2: four streams, each prefetched 2 KiB ahead into L2 as the decode
// kernels prefetch their weight rows.

// func sumQuartersAVX2(p *uint64, q int) uint64
//
// The sum of the 4q words at p read as four streams of q words (q a multiple
// of 8 and at least 8), 64 bytes of each per iteration.
TEXT ·sumQuartersAVX2(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), SI
	MOVQ q+8(FP), CX
	SHLQ $3, CX
	LEAQ (SI)(CX*1), DI
	LEAQ (DI)(CX*1), R9
	LEAQ (R9)(CX*1), R10
	SHRQ $6, CX
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3

sumLoop:
	PREFETCHT1 2048(SI)
	PREFETCHT1 2048(DI)
	PREFETCHT1 2048(R9)
	PREFETCHT1 2048(R10)
	VPADDQ     (SI), Y0, Y0
	VPADDQ     32(SI), Y1, Y1
	VPADDQ     (DI), Y2, Y2
	VPADDQ     32(DI), Y3, Y3
	VPADDQ     (R9), Y0, Y0
	VPADDQ     32(R9), Y1, Y1
	VPADDQ     (R10), Y2, Y2
	VPADDQ     32(R10), Y3, Y3
	ADDQ       $64, SI
	ADDQ       $64, DI
	ADDQ       $64, R9
	ADDQ       $64, R10
	DECQ       CX
	JNZ        sumLoop

	VPADDQ       Y1, Y0, Y0
	VPADDQ       Y3, Y2, Y2
	VPADDQ       Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPADDQ       X1, X0, X0
	VPSHUFD      $0x4e, X0, X1
	VPADDQ       X1, X0, X0
	VMOVQ        X0, AX
	MOVQ         AX, ret+16(FP)
	VZEROUPPER
	RET
