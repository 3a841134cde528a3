// Quantized weights with f32 (or bf16) activations on 16-column panels: the kernel QuantizedLinear
// runs on AVX-512 CPUs (and, in its f32 form, on AVX2 ones: quant_panel_avx2.cc, the same bits)
// for integer weight-only layers (GPTQ, AWQ, compressed-tensors: INT4 as
// kU4Pairs codes, INT8 / INT3 / INT2 as one code per byte, a scale and zero point per (column,
// group)), MXFP4 (gpt-oss: E2M1 codes, an E8M0 scale per 32), NVFP4 W4A16 (E2M1 codes, a
// UE4M3 scale per 16, a global alpha) and 4-bit codebook layers (bitsandbytes NF4 / FP4:
// kCodebook4, an index into the layer's 16 f32 values times an f32 absmax per group; headers of
// the 16 columns' scales alone, f32 or exactly f16; the f32 form's `vpermps` reads the layer's
// table instead of INT4's constants, and the pair form takes it only when every value is a bf16),
// decode and prefill alike.
//
// Why: FastQuantMatmul's decoders build a value table per (row, block), or decode bytes per
// weight, and sum each output as a lane-parallel dot product over K; its prefill tiles reload
// activations for every column and reached 0.33-0.41x of oneDNN's bf16 matmul (M = 128; INT8
// 0.19-0.35x), and batch 1 streamed 10-23 GB/s. Panels broadcast one activation into 16 columns
// per FMA, as the f32 panels of float_panel_matmul.h do: 0.41-0.48x and 21-28 GB/s (the f32 FMA
// peak caps any exact-f32 kernel at 0.52-0.54x of oneDNN bf16 here).
//
// Layout (RepackQuantPanels, at load): panel p holds columns [16p, 16p + 16); for each group g
// (INT4: w.scale_k codes, a multiple of 8; bytes: w.scale_k, or K for one group per row, a multiple
// of 4; MXFP4: 32; NVFP4: 16) it stores a header, then chunks of 64 bytes, 32-bit lane c of chunk t
// holding column c's next 32 bits of codes, lowest first: 4-bit codes 8t to 8t + 7 (the checkpoint
// row's bytes 4t to 4t + 3 of the group, as they are), or byte codes 4t to 4t + 3 minus the layer's
// centre c (2^(bits − 1) for the bit length of its largest code: 128 for INT8) as signed bytes.
// Integer headers are the 16 columns' centred zero points z − c (16 f32; c = 8 for INT4) and their
// scales (16 f32), or the scales alone where every zero point of the layer is c (symmetric_panels:
// GPTQ sym=True, GGUF Q4_0 / Q8_0 / Q6_K; 64 bytes fewer per group of 16 columns, 5-12% of the
// stream at G = 128 to 32), each value as f16 where every one of the layer's is exactly an f16
// (half_panel_headers: GPTQ / AWQ f16 scales and integer zero points, compressed-tensors' bf16
// scales in f16's range, GGUF Q4_0 / Q5_0 / Q8_0's d; half the header bytes, and the same values),
// or for GGUF Q4_K / Q5_K (kquant_panel_headers) the 16 columns' 6-bit scale and min bytes with
// each super-block's f16 d and dmin ahead of its 8 groups (the fold forms s = d·sc and the centre
// weight s·c − dmin·m: tot += s·a + (s·c − o)·Σx); FP4's are the 16 columns' scale bytes. The
// scales sit next to their codes, so each panel is one sequential stream. Columns past N are zero
// bytes (their lanes are never stored).
//
// Numerics and batch invariance: output (m, n) is one f32 lane. Per group, a = Σ x · v with FMA
// in ascending k from +0, v the exact code value (integers q − c, FP4 e2m1); then the group folds
// into a running total, g ascending from +0, and the end adds the bias:
//  * FP4: tot = fma(s, a, tot) with s the group's scale (exact), y = α · tot: the reference's
//    Σ x · ((e2m1 · s) · α) reassociated, within (K + G + 2)·u·Σ|x·w| (u = 2^-24), plus a few
//    f32 subnormal steps (2^-149) where MXFP4's smallest scales take a group's sum below 2^-126.
//  * Integers: tot = fma(s, a − (z − c) · Σx, tot) (Σx: the group's activations summed once per
//    row in a fixed order), i.e. Σ (q − z) · s · x with the zero point out of the per-weight
//    decode. Its bound is (K + G + 2)·u·Σ s·(|q − c| + |z − c|)·|x| instead of (K + 1)·u·Σ|x·w|;
//    for symmetric layers (z = c: GPTQ's sym=True, compressed-tensors' symmetric INT8) the two are
//    the same sum and the fold is tot = fma(s, a, tot) (no Σx), and for integer zero points a
//    one-hot x gives the reference's (float(q) − z) · s bit for bit.
// Taking scales and zero points out of the per-weight decode raised the batch-1 rate 15-23% and
// cost FP4 prefill 5-11% (the folds every 32 or 16 k; bench/README.md, twelfth session). The
// folds need each group whole in one K block, so per-channel layers (G = K) decode K at a time.
// Up to 6 rows (decode, small batches) decode the codes in registers; more rows decode four
// panels at a time, a K block of whole groups, to an L2-resident buffer and run row tiles over it
// (f32 form: f32 values, 6-row tiles; pair form below: bf16 pairs, 3-row tiles) — the same
// values in the same order, so a row's result is bit-identical alone or in any batch, under any
// column split.
//
// The bf16-pair form (QuantPanelForm::kBf16Pairs; 4-bit codes and byte codes of up to 6 bits on
// CPUs with AVX-512 BF16, the engine's default there): every 4-bit code value is exact in bf16
// (INT4 q − 8, E2M1), so a chunk lane stores column c's eight codes as two halves, k = 8t, 8t + 2,
// 8t + 4, 8t + 6 in bits 0-15 and the odd k in bits 16-31, and one shift and one `vpermw` (a
// 32-entry table, doubled so that the stray fifth index bit is ignored) give 16 columns' (w[2p],
// w[2p + 1]) bf16 pairs for `vdpbf16ps`: per 32 weights a shift, a permute and one dot product per
// activation part, where the f32 form takes two shifts, two permutes and two FMAs. Byte codes of at
// most 6 bits (INT3 / INT2, GGUF Q5 and Q6_K: centre ≤ 32, so each stored code − c is a 6-bit two's
// complement value) take it too: a lane holds k = 4t, 4t + 2 in its low half's two bytes and 4t +
// 1, 4t + 3 in the high half's, and `vpermt2w` over a 64-entry table (two registers) reads each
// word's low 6 bits, a shift of 8 giving the next pair: per 32 weights half a shift and one permute
// where the f32 form takes eight shifts, four conversions and two FMAs (one thread from L3 at batch
// 1, GGUF Q6_K: bench/README.md, fourteenth session). Activations come as RoundActsToBf16
// (bf16_dot_matmul.h) writes them: the hi + lo split of exact f32 x (two `vdpbf16ps` per pair), or
// hi alone for bf16 activations (--cpu_bf16_activations, x then holding bf16 values). Each output
// keeps two partial sums per group, a and b (split: the hi and the lo products; bf16: the even and
// the odd pairs), pairs ascending in each, and folds a + b as the f32 form folds its sum; Σx (of x
// as passed, in f32) and the epilogue are the f32 form's. Rows come in tiles of 3 (2 · 3 · 4
// accumulators), in registers up to 6 rows and over decoded blocks of bf16 pairs beyond, in the
// same order, so batch invariance holds as in the f32 form. Bound: the f32 form's with the split's
// activation error added, (2^-16 + (K + G + 2)·u)·Σ s·(|v| + |z − c|)·|x| (v the code value; FP4: z
// − c = 0), plus 2^-126-scale terms for `vdpbf16ps` reading bf16 denormals (lo of tiny x) as zero
// and flushing denormal sums. As bf16_dot_matmul.h's split, x must be finite and below
// 2^128·(1 − 2^-9) in magnitude (its bf16 rounding would overflow: an infinite x gives NaN where
// the f32 form gives ±inf). Why: one thread decoding from L3 at batch 1 ran INT4 g128 at 16 GB/s of
// weights in the f32 form, 26 with the split and 37 with bf16 activations (MXFP4, NVFP4: 14-15 ->
// 22-23); two threads from DRAM 21-25 -> 26-29 GB/s; M = 128 the same with the split and 1.5x with
// bf16 activations (bench/README.md, thirteenth session). One partial sum per output (a chain of
// 6-cycle `vdpbf16ps` per panel) held batch 1 to the f32 form's rate.
// Where AmxBf16Usable(), QuantPanelPairMatmul sends FP4 pair panels (MXFP4, NVFP4 W4A16) whose
// scale products are exact bf16, and INT4 pair panels with groups of whole 32s (or one per row),
// to the AMX route of quant_panel_amx.h at every row count (batch-invariant in its own order).
//
// The int16 route (QuantPanelInt16Matmul; AVX-512 VNNI, BF16 not needed; groups of at most 128 k,
// not K-quant headers): the same pair panels with int16 activations (int16_act_quant.h, one scale d
// per row and weight group) and the code values as int16 words (INT4 q − 8, 2 · e2m1, byte codes
// minus their centre sign-extended: up to 8 bits, in kInt16Pairs panels beyond 6), one `vpdpwssd`
// per weight pair into int32 sums (the register path: even and odd pairs apart; decoded blocks: one
// sum per output and the running totals in registers), exact over a group
// (|Σ| ≤ 128 · 128 · 32767 < 2^31); the fold takes d · float(sum) as the group's sum a (FP4: with
// s / 2) and Σx̂ = d · Σq for Σx. So the result is Σ w · x̂ to the f32 form's rounding, within
// (K + G + 3)·u·Σ s·(|v| + |z − c|)·|x| + Σ |w| · (1.005 · 2^-16 · amax_g + 2^-134) of the exact
// product (amax_g: the row's largest |x| in the weight's group; 2^-134 where d is subnormal); a
// non-finite x makes every output of its row NaN. FP4 group sums of doubled codes overflow f32
// where the f32 form's sum is within a factor of 2 of FLT_MAX. The error is relative to each
// group's largest |x|: an element far below its group's maximum (an outlier channel in the group)
// is represented more coarsely than bf16's relative rounding would; typical groups are 2^7 finer
// than bf16. Half the split's dot products: bench/README.md, nineteenth session.
#ifndef TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_MATMUL_H_
#define TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_MATMUL_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/fast/int16_act_quant.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::kernels::cpu::fast {

// How a layer's panels hold their codes: f32 form (QuantPanelMatmul, any AVX-512 or AVX2 CPU,
// every supported format), bf16 pairs (QuantPanelPairMatmul, AVX-512 BF16, 4-bit codes and byte codes
// of at most 6 bits; QuantPanelInt16Matmul too), or the same pair layout for the int16 route
// alone (kInt16Pairs: every byte code, 8-bit ones too, whose values no bf16 pair table holds;
// QuantPanelPairMatmul leaves y as it was on 8-bit ones).
enum class QuantPanelForm { kF32, kBf16Pairs, kInt16Pairs };

// Whether this CPU runs the panel kernel: AVX-512 F, BW and VL (every form), or AVX2 + FMA +
// F16C (the f32 form alone, quant_panel_avx2.cc; also under TESSERA_CPU_ISA=avx2).
bool QuantPanelAvailable();

// Where the f32 form runs: "avx512", or "avx2" (for the plan's kernel labels).
const char* QuantPanelTargetName();

// Whether it runs the bf16-pair form too (QuantPanelAvailable() and AVX-512 BF16).
bool QuantPanelPairsAvailable();

// Whether the panel kernel takes `w`, on a CPU where QuantPanelAvailable(), with no W8A8
// epilogue (row_scale / col_scale null): kInt4 codes with per-(column, group) scales and zero
// points (scale_rows 1, scale_row_stride = k / scale_k, scale_k a multiple of 8 dividing k);
// kInt8 byte codes the same way with G = min(scale_k, k) a multiple of 4 dividing k;
// kMxfp4 with k % 32 == 0 and no NaN scale (0xFF); kNvfp4 with k % 16 == 0 and no NaN scale (0x7F /
// 0xFF; such layers keep FastQuantMatmul's table decode, which propagates them). Reads every
// FP4 scale byte once.
bool QuantPanelSupported(const FastQuantWeights& w);

// Whether the bf16-pair form takes `w`: QuantPanelSupported(w), QuantPanelPairsAvailable() and
// 4-bit codes (kInt4, kMxfp4, kNvfp4) or byte codes whose largest is below 64 (centre ≤ 32:
// INT3 / INT2, GGUF Q5 / Q6_K).
bool QuantPanelPairsSupported(const FastQuantWeights& w);

// Bytes of the panels of `w` (its format, n, k, scale_k, and for integer codes its coding: a read
// of its zero points and scales, and of byte codes for their centre); the same for both forms.
int64_t QuantPanelsBytes(const FastQuantWeights& w);

// w (codes [n, k / 2] as nibble pairs, or [n, k] bytes; its scales, zero points or block scales)
// repacked into `dst` (QuantPanelsBytes, 64-byte aligned) in `form` (kBf16Pairs requires
// QuantPanelPairsSupported(w); byte codes above 6 bits, which have no pair form, are repacked in
// the f32 form whatever `form` says): the returned weights' q points at the panels (which hold
// the scales and zero points too), symmetric_panels, half_panel_headers, panel_centre and
// pair_panels say which headers, centre and form they got; everything else is w's. Panels are
// written independently, split over `pool` when given (the same bytes).
FastQuantWeights RepackQuantPanels(const FastQuantWeights& w, uint8_t* dst,
                                   QuantPanelForm form = QuantPanelForm::kF32,
                                   ThreadPool* pool = nullptr);

// FastQuantMatmul's contract on the f32-form panels: y [rows, w.n] for columns [n_begin, n_end),
// x [rows, w.k] in its natural order (no FastQuantPermuteActivations). Requires
// QuantPanelSupported(w) and w from RepackQuantPanels in the f32 form (pair panels: y is left as
// it was).
// group_sums: QuantPanelGroupSums's values for rows [0, rows), computed once per call by a
// caller that splits the columns over threads (null: the kernel computes them itself).
void QuantPanelMatmul(const FastQuantWeights& w, const float* x, int64_t rows, const float* bias,
                      float* y, int64_t n_begin, int64_t n_end,
                      const float* group_sums = nullptr);

// The same on the bf16-pair panels, with the activations also as RoundActsToBf16 wrote them
// (hi, and lo for the split form; lo null: hi alone, for bf16 activations, x then holding those
// bf16 values); x (natural order) gives the integer formats' group sums. Requires
// w from RepackQuantPanels in the pair form (w.pair_panels; f32-form panels: y is left as it
// was).
void QuantPanelPairMatmul(const FastQuantWeights& w, const float* x, const uint16_t* hi,
                          const uint16_t* lo, int64_t rows, const float* bias, float* y,
                          int64_t n_begin, int64_t n_end, const float* group_sums = nullptr);

// The activations' group sums Σx that integer panels with zero points fold (asymmetric INT4 and
// byte codes, K-quant headers), [rows][k / group]: how many floats `rows` rows take (0 where `w`
// folds none: FP4, symmetric panels), and rows [r0, r1) of them from x (sums holds every row of
// the call, row 0 first), the values each call would compute itself, in the same order. A caller that splits a call's
// columns over threads computes them once (each call of a split computed them for every row:
// 1.8% of an M = 128 INT4 g128 GEMM here, bench/README.md, twentieth session).
int64_t QuantPanelGroupSumsCount(const FastQuantWeights& w, int64_t rows);
void QuantPanelGroupSums(const FastQuantWeights& w, const float* x, int64_t r0, int64_t r1,
                         float* sums);

// Whether this CPU runs the int16 route (QuantPanelAvailable(), Int16ActsAvailable() and AVX-512
// VNNI; no BF16 needed, so Cascade Lake runs it, on kInt16Pairs panels).
bool QuantPanelInt16Available();

// Whether RepackQuantPanels(w, dst, kInt16Pairs) would give panels the int16 route takes
// (QuantPanelSupported(w), QuantPanelInt16Available(), and its group rule below).
bool QuantPanelInt16Takes(const FastQuantWeights& w);

// The activation group of the int16 route on `w` (QuantizeActsInt16's `group`): the panels' weight
// group where w holds pair panels (w.pair_panels) without K-quant headers, the CPU runs the route
// (QuantPanelInt16Available) and the group is a multiple of 16 of at most 128 k; 0 where the
// route does not take w.
int64_t QuantPanelInt16Group(const FastQuantWeights& w);

// QuantPanelPairMatmul's contract with int16 activations: `acts` as QuantizeActsInt16 wrote them
// for rows [0, rows) with QuantPanelInt16Group(w) (y is left as it was where that is 0).
void QuantPanelInt16Matmul(const FastQuantWeights& w, const Int16Acts& acts, int64_t rows,
                           const float* bias, float* y, int64_t n_begin, int64_t n_end);

namespace internal {

// The group geometry of a format on the panels: G codes per group of `bits` each (4, or 8 for
// byte codes), a header of `head` bytes before its chunks (integer codes: 16 centred zero points,
// unless symmetric, and 16 scales, f32 or f16, or K-quant's 16 scale and 16 min bytes; FP4: the
// 16 columns' scale bytes).
struct QuantPanelGeometry {
  int64_t group, head, bits;
  // K-quant panels: the super-block header (16 f16 d, then 16 f16 dmin) before every
  // kSuperGroups groups; 0 otherwise.
  int64_t super_head = 0;
  static constexpr int64_t kSuperGroups = 8;
  int64_t GroupBytes() const { return head + group * 2 * bits; }
  int64_t SuperBytes() const { return super_head + kSuperGroups * GroupBytes(); }
  // A panel of `groups` groups (K-quant: whole super-blocks), and group g's offset in it.
  int64_t PanelBytes(int64_t groups) const {
    return super_head != 0 ? groups / kSuperGroups * SuperBytes() : groups * GroupBytes();
  }
  int64_t GroupOffset(int64_t g) const {
    return super_head != 0
               ? g / kSuperGroups * SuperBytes() + super_head + g % kSuperGroups * GroupBytes()
               : g * GroupBytes();
  }
};
// Of panels that hold `w` (its symmetric_panels and half_panel_headers say which integer
// header).
QuantPanelGeometry QuantPanelGeometryOf(const FastQuantWeights& w);

// How a layer's integer codes sit in its panels: minus `centre` (INT4: 8; byte codes:
// 2^(bits − 1) for the bit length of the layer's largest code), and `symmetric` when every zero
// point equals the centre (headers of 16 scales alone; the folds subtract nothing), and `half`
// when every scale and centred zero point is exactly an f16 (headers of f16 values).
struct QuantPanelCoding {
  int centre = 8;
  bool symmetric = false;
  bool half = false;
};
QuantPanelCoding QuantPanelCodingOf(const FastQuantWeights& w);

// RepackQuantPanels with the coding given, for a layer repacked in parts of whole panels (every
// part with the layer's one coding; byte codes minus the centre must fit a signed byte).
FastQuantWeights RepackQuantPanelsAs(const FastQuantWeights& w, uint8_t* dst, QuantPanelForm form,
                                     QuantPanelCoding coding, ThreadPool* pool = nullptr);

// Lane c of a group's code chunks (`chunks`, 64 bytes apart) from the column's `count` bytes of
// codes as the checkpoint row holds them (nibble pairs, or one code per byte), in the form's lane
// order (byte codes minus `centre`).
void WriteCodeLanes(const uint8_t* row_codes, int64_t count, bool bytes, bool pairs, int centre,
                    int64_t c, uint8_t* chunks);

}  // namespace internal

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_QUANT_PANEL_MATMUL_H_
