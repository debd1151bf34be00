// Arm64 vector instructions that the Go assembler does not know (as of Go
// 1.26), encoded as WORDs. The arguments are register numbers: d is the
// destination, n and m the first and second source, i a lane index. The
// comment above each macro gives the instruction in Arm syntax.

// sdot vd.4s, vn.16b, vm.16b (Armv8.2 dot product; cpu.ARM64.HasASIMDDP)
#define SDOT(d, n, m) WORD $(0x4e809400 | (m)<<16 | (n)<<5 | (d))

// smull vd.8h, vn.8b, vm.8b / smull2 vd.8h, vn.16b, vm.16b
#define SMULL_B(d, n, m) WORD $(0x0e20c000 | (m)<<16 | (n)<<5 | (d))
#define SMULL2_B(d, n, m) WORD $(0x4e20c000 | (m)<<16 | (n)<<5 | (d))

// saddlp vd.4s, vn.8h / saddlp vd.8h, vn.16b
#define SADDLP_H(d, n) WORD $(0x4e602800 | (n)<<5 | (d))
#define SADDLP_B(d, n) WORD $(0x4e202800 | (n)<<5 | (d))

// movi vd.2d, #0
#define ZERO(d) WORD $(0x6f00e400 | (d))

// addp vd.8h, vn.8h, vm.8h (VADDP, spelt with register numbers for macros)
#define ADDP_H(d, n, m) WORD $(0x4e60bc00 | (m)<<16 | (n)<<5 | (d))

// addp vd.4s, vn.4s, vm.4s (VADDP, spelt with register numbers for macros)
#define ADDP_S(d, n, m) WORD $(0x4ea0bc00 | (m)<<16 | (n)<<5 | (d))

// smin vd.4s, vn.4s, vm.4s
#define SMIN_S(d, n, m) WORD $(0x4ea06c00 | (m)<<16 | (n)<<5 | (d))

// saddlv sd, vn.8h (sum of the eight lanes, widened to 32 bits)
#define SADDLV_H(d, n) WORD $(0x4e703800 | (n)<<5 | (d))

// mul vd.4s, vn.4s, vm.4s
#define MUL_S(d, n, m) WORD $(0x4ea09c00 | (m)<<16 | (n)<<5 | (d))

// mla vd.4s, vn.4s, vm.s[i]
#define MLA_SE(d, n, m, i) WORD $(0x6f800000 | ((i)&1)<<21 | (m)<<16 | ((i)>>1)<<11 | (n)<<5 | (d))

// smlal vd.4s, vn.4h, vm.h[i] / smlal2 vd.4s, vn.8h, vm.h[i] (m < 16)
#define SMLAL_HE(d, n, m, i) WORD $(0x0f402000 | ((i)&3)<<20 | (m)<<16 | ((i)>>2)<<11 | (n)<<5 | (d))
#define SMLAL2_HE(d, n, m, i) WORD $(0x4f402000 | ((i)&3)<<20 | (m)<<16 | ((i)>>2)<<11 | (n)<<5 | (d))

// sxtl vd.8h, vn.8b / sxtl2 vd.8h, vn.16b / sxtl vd.4s, vn.4h / sxtl2 vd.4s, vn.8h
#define SXTL_B(d, n) WORD $(0x0f08a400 | (n)<<5 | (d))
#define SXTL2_B(d, n) WORD $(0x4f08a400 | (n)<<5 | (d))
#define SXTL_H(d, n) WORD $(0x0f10a400 | (n)<<5 | (d))
#define SXTL2_H(d, n) WORD $(0x4f10a400 | (n)<<5 | (d))

// sqxtn vd.8b, vn.8h / sqxtn2 vd.16b, vn.8h
#define SQXTN_H(d, n) WORD $(0x0e214800 | (n)<<5 | (d))
#define SQXTN2_H(d, n) WORD $(0x4e214800 | (n)<<5 | (d))

// scvtf vd.4s, vn.4s / scvtf sd, sn (int32 lanes to float32)
#define SCVTF_S(d, n) WORD $(0x4e21d800 | (n)<<5 | (d))
#define SCVTF_S1(d, n) WORD $(0x5e21d800 | (n)<<5 | (d))

// fcvtns vd.4s, vn.4s (to int32, rounding to nearest with ties to even)
#define FCVTNS_S(d, n) WORD $(0x4e21a800 | (n)<<5 | (d))

// fcvtl vd.4s, vn.4h / fcvtl2 vd.4s, vn.8h (half to single precision, exact)
#define FCVTL_H(d, n) WORD $(0x0e217800 | (n)<<5 | (d))
#define FCVTL2_H(d, n) WORD $(0x4e217800 | (n)<<5 | (d))
// FCVTL Vd.2D, Vn.2S and FCVTL2 Vd.2D, Vn.4S: float32 to float64 (from the
// low and the high half of Vn); FADD Vd.2D.
#define FCVTL_S(d, n) WORD $(0x0e617800 | (n)<<5 | (d))
#define FCVTL2_S(d, n) WORD $(0x4e617800 | (n)<<5 | (d))
#define FADD_D(d, n, m) WORD $(0x4e60d400 | (m)<<16 | (n)<<5 | (d))
// FCVTN Vd.4H, Vn.4S and FCVTN2 Vd.8H, Vn.4S: float32 to half precision
// (the low and the high half of Vd).
#define FCVTN_H(d, n) WORD $(0x0e216800 | (n)<<5 | (d))
#define FCVTN2_H(d, n) WORD $(0x4e216800 | (n)<<5 | (d))

// add vd.4s, vn.4s, vm.4s; addv sd, vn.4s; fmadd sd, sn, sm, sa (d = a + n·m,
// fused)
#define ADD_S(d, n, m) WORD $(0x4ea08400 | (m)<<16 | (n)<<5 | (d))
// add vd.8h, vn.8h, vm.8h
#define ADD_H(d, n, m) WORD $(0x4e608400 | (m)<<16 | (n)<<5 | (d))
#define ADDV_S(d, n) WORD $(0x4eb1b800 | (n)<<5 | (d))
#define FMADD_S1(d, n, m, a) WORD $(0x1f000000 | (m)<<16 | (a)<<10 | (n)<<5 | (d))

// fadd, fmul, faddp vd.4s, vn.4s, vm.4s; fmul vd.4s, vn.4s, vm.s[i]
#define FADD_S(d, n, m) WORD $(0x4e20d400 | (m)<<16 | (n)<<5 | (d))
#define FMUL_S(d, n, m) WORD $(0x6e20dc00 | (m)<<16 | (n)<<5 | (d))
#define FADDP_S(d, n, m) WORD $(0x6e20d400 | (m)<<16 | (n)<<5 | (d))
#define FMUL_SE(d, n, m, i) WORD $(0x4f809000 | ((i)&1)<<21 | (m)<<16 | ((i)>>1)<<11 | (n)<<5 | (d))

// dup vd.4s, vn.s[0] (VDUP, spelt with register numbers for macros)
#define DUP_S0(d, n) WORD $(0x4e040400 | (n)<<5 | (d))

// fadd sd, sn, sm (FADDS, spelt with register numbers for macros)
#define FADD_S1(d, n, m) WORD $(0x1e202800 | (m)<<16 | (n)<<5 | (d))

// ext vd.16b, vn.16b, vm.16b, #8 (the high half of vn, then the low half of vm)
#define EXT8(d, n, m) WORD $(0x6e004000 | (m)<<16 | 8<<11 | (n)<<5 | (d))

// faddp sd, vn.2s (lane 0 + lane 1)
#define FADDP_S1(d, n) WORD $(0x7e30d800 | (n)<<5 | (d))

// fabs vd.4s, vn.4s; fmaxnm, fminnm vd.4s, vn.4s, vm.4s; fmaxnmv, fminnmv sd, vn.4s
#define FABS_S(d, n) WORD $(0x4ea0f800 | (n)<<5 | (d))
#define FMAXNM_S(d, n, m) WORD $(0x4e20c400 | (m)<<16 | (n)<<5 | (d))
#define FMINNM_S(d, n, m) WORD $(0x4ea0c400 | (m)<<16 | (n)<<5 | (d))
#define FMAXNMV_S(d, n) WORD $(0x6e30c800 | (n)<<5 | (d))
#define FMINNMV_S(d, n) WORD $(0x6eb0c800 | (n)<<5 | (d))

// Float32 arithmetic for SwiGLU (swiGLUNEON): d = n − m, n / m, max(n, m)
// (NaN if either is), all-ones where n > m, d += n·m and d −= n·m (fused).
#define FSUB_S(d, n, m) WORD $(0x4ea0d400 | (m)<<16 | (n)<<5 | (d))
#define FDIV_S(d, n, m) WORD $(0x6e20fc00 | (m)<<16 | (n)<<5 | (d))
#define FMAX_S(d, n, m) WORD $(0x4e20f400 | (m)<<16 | (n)<<5 | (d))
#define FCMGT_S(d, n, m) WORD $(0x6ea0e400 | (m)<<16 | (n)<<5 | (d))
#define FMLA_S(d, n, m) WORD $(0x4e20cc00 | (m)<<16 | (n)<<5 | (d))
#define FMLS_S(d, n, m) WORD $(0x4ea0cc00 | (m)<<16 | (n)<<5 | (d))

// fneg vd.4s, vn.4s (RoPE, ropeNeoxNEON)
#define FNEG_S(d, n) WORD $(0x6ea0f800 | (n)<<5 | (d))

// fcmge vd.4s, vn.4s, vm.4s: all-ones where n ≥ m, zero where not or where
// either is NaN (GELUMul's cut-offs, geluMulNEON)
#define FCMGE_S(d, n, m) WORD $(0x6e20e400 | (m)<<16 | (n)<<5 | (d))

// HSUM8 sets Fa to the sum of the eight float32 lanes of Va (lanes 0…3) and
// Vb (4…7) in the order ((x0+x4)+(x2+x6)) + ((x1+x5)+(x3+x7)), the portable
// kernels' hsum8. Vb is clobbered.
#define HSUM8(a, b) \
	FADD_S(a, a, b); \
	EXT8(b, a, a); \
	FADD_S(a, a, b); \
	FADDP_S1(a, a)

// The kernels of one row with four activations (…Acts4SDOT, …Acts4NEON)
// take their pointers from an actPtrs4 or legacyPtrs4 at R23 and store
// their results to a [4]float32 at R22.

// ACTS4_QS_D loads the quants and scales pointers of the four activations
// of an actPtrs4 or legacyPtrs4 at R23 into R1…R4 and R11…R14.
#define ACTS4_QS_D \
	LDP 0(R23), (R1, R2); \
	LDP 16(R23), (R3, R4); \
	LDP 32(R23), (R11, R12); \
	LDP 48(R23), (R13, R14)

// ACTS4_STORE stores the results Fr0…Fr3 of the four activations to the
// [4]float32 at R22.
#define ACTS4_STORE(r0, r1, r2, r3) \
	FMOVS r0, 0(R22); \
	FMOVS r1, 4(R22); \
	FMOVS r2, 8(R22); \
	FMOVS r3, 12(R22)
