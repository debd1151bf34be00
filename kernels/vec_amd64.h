// Macros shared by the amd64 kernels (legacy_amd64.s, kquants_amd64.s).

// XD = the eight float32 lanes of Y (whose low half is X) folded with the
// packed operation OPS and, last, the scalar one OSS:
// ((x0∘x4)∘(x2∘x6)) ∘ ((x1∘x5)∘(x3∘x7)); clobbers XT. XD may be X.
#define FOLD8(OPS, OSS, Y, X, XD, XT) \
	VEXTRACTF128 $1, Y, XT; \
	OPS          XT, X, XD; \
	VMOVHLPS     XD, XD, XT; \
	OPS          XT, XD, XD; \
	VMOVSHDUP    XD, XT; \
	OSS          XT, XD, XD

// XD = hsum8 of the lanes of Y (whose low half is X): the twins' hsum8,
// clobbering XT.
#define HSUM8_TO(Y, X, XD, XT) FOLD8(VADDPS, VADDSS, Y, X, XD, XT)

// X0 = hsum8 of the lanes of Y15 (HSUM8_TO), clobbering X1.
#define HSUM8_Y15 HSUM8_TO(Y15, X15, X0, X1)

// Sets every 32-bit lane of Y (whose low half is X) to the constant v,
// clobbering AX.
#define DWORDS(v, Y, X) \
	MOVL         $v, AX; \
	VMOVD        AX, X; \
	VPBROADCASTD X, Y

// Sets every byte of Y (whose low half is X) to the constant b, clobbering AX.
#define BYTES(b, Y, X) \
	MOVL         $b, AX; \
	VMOVD        AX, X; \
	VPBROADCASTB X, Y

// The activation quantizers: Y11 = dwords 0xff, Y10 = the dword order that
// undoes the lane interleaving of the packs, Y12 = dwords 0x7fffffff (the
// float32 magnitude mask). Clobbers AX.
#define PACK_CONSTS \
	DWORDS(0xff, Y11, X11); \
	MOVQ      $0x0703060205010400, AX; \
	VMOVQ     AX, X10; \
	VPMOVZXBD X10, Y10; \
	DWORDS(0x7fffffff, Y12, X12)

// Y0 = the low bytes of the 32 int32 in Y0…Y3, in order (the int8 conversion
// of the twins, which keeps the low byte). Needs PACK_CONSTS. Clobbers Y1…Y3.
#define PACK_LOW_BYTES \
	VPAND     Y11, Y0, Y0; \
	VPAND     Y11, Y1, Y1; \
	VPAND     Y11, Y2, Y2; \
	VPAND     Y11, Y3, Y3; \
	VPACKUSDW Y1, Y0, Y0; \
	VPACKUSDW Y3, Y2, Y2; \
	VPACKUSWB Y2, Y0, Y0; \
	VPERMD    Y0, Y10, Y0

// Y5 = max(Y5, |x| of the 8 floats at off(R)) lane by lane, a NaN in x leaving
// the lane unchanged (as the twins' x > max). Needs PACK_CONSTS. Clobbers Y4.
#define ABSMAX8(R, off) \
	VANDPS off(R), Y12, Y4; \
	VMAXPS Y5, Y4, Y5

// X5 = the largest of the eight lanes of Y5 (none is NaN). Clobbers X4.
#define HMAX8_Y5 FOLD8(VMAXPS, VMAXSS, Y5, X5, X5, X4)

// Stores the eight float32 lanes of Y (low half X) at (BX), (BX)(R8*1), …:
// lane b at BX + b·R8, with AX = 3·R8. Clobbers BX and the high half of Y.
#define STORE_LANES8(Y, X) \
	STORE_LANES4(X); \
	LEAQ         (BX)(R8*4), BX; \
	VEXTRACTF128 $1, Y, X; \
	STORE_LANES4(X)

// STORE_LANES4 is STORE_LANES8's first four lanes, those of X.
#define STORE_LANES4(X) \
	VMOVSS     X, (BX); \
	VEXTRACTPS $1, X, (BX)(R8*1); \
	VEXTRACTPS $2, X, (BX)(R8*2); \
	VEXTRACTPS $3, X, (BX)(AX*1)
