// GGUF block weights (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K, Q5_K, Q6_K, MXFP4, IQ4_NL, IQ4_XS and
// the grid types IQ1_* / IQ2_* / IQ3_*) repacked at load
// into the quantized-weight panels of quant_panel_matmul.h, which DenseLinear runs for them with
// exact f32 activations (--cpu_int8_activations=false) on AVX-512 CPUs, and in the f32 form on
// AVX2 ones.
//
// Why: those layers ran FastMatmul's per-column row kernels (Q4_0 / Q8_0 repacked rows, the other
// types decoded to f32 tiles), whose batch-1 decode streamed 27% (Q4_0), 50% (Q8_0) and 18%
// (Q4_K_M) of the triad on the TinyLlama-1.1B shape, where INT4 group-128 on the panels streams
// 77-85% (bench/README.md, fourteenth session). Every GGUF type is an integer code per weight
// times a scale per 32 (Q6_K: 16) values, plus an offset for the affine types, so each block's
// runs become panel groups:
//   Q4_0   INT4 codes q, s = d, symmetric (z = 8): w = (q − 8)·d
//   Q4_1   INT4 codes q, s = d, z = −m / d: w = d·q + m
//   Q4_K   INT4 codes per sub-block of 32 under the K-quant header (kquant_panel_headers): the
//          sub-block's 6-bit sc_j and m_j bytes, and per super-block its f16 d and dmin, so the
//          kernel forms s = d·sc_j and o = dmin·m_j exactly: w = s·(q − c) + (c·s − o), c = 8
//   Q5_0   byte codes 0-31 (centre 16), s = d, symmetric
//   Q5_1   byte codes 0-31, s = d, z = −m / d
//   Q5_K   byte codes 0-31 per sub-block, as Q4_K with c = 16
//   Q6_K   byte codes 0-63 (centre 32) per 16 values, s = d·sc (int8 sc, so s may be negative),
//          symmetric
//   Q8_0   byte codes q + 128 (centre 128), s = d, symmetric
//   MXFP4  E2M1 codes and the block's E8M0 byte (ggml's doubled values times its halved scale are
//          the same numbers)
//   IQ4_NL / IQ4_XS  byte codes kv + 128 (centre 128), s = d (IQ4_XS: d·(ls − 32)), symmetric
//   grid   byte codes v + 16 (IQ1_*, IQ3_S; centre 16) or v + 64 (IQ2_*, IQ3_XXS), v the type's
//          table value (ggml_iq_dequant.h), s = d·mult per 16 or 32 values, symmetric
// Symmetric types keep headers of scales alone, as f16 where the scale is the block's d
// (quant_panel_matmul.h): Q4_0 and Q8_0 stream exactly the file's 4.5 and 8.5 bits per weight,
// Q5_0 8.5 (5.5 in the file), Q6_K 10 (6.56); Q4_K 4.625 (4.5), Q5_K 8.625 (5.5); Q4_1 6 (5), Q5_1
// 10 (6), with f32 zero points and scales. The K-quant header took Q4_K from 6 bits per weight
// (f32 s and z per group) to 4.625: TinyLlama Q4_K_M batch-1 decode with exact activations
// +6-22%, peak RSS 1059 -> 920 MiB (bench/README.md, fourteenth session). Where the CPU has
// AVX-512 BF16 the
// types whose codes fit 6 bits take the bf16-pair form (4-bit codes, the 5- and 6-bit byte codes,
// IQ1_* and IQ3_S), the 7- and 8-bit ones (Q8_0, IQ4_*, IQ2_*, IQ3_XXS) the f32 form.
//
// Numerics: quant_panel_matmul.h's bound with v = q − c (in the pair form the exact f32
// activations enter as their hi + lo bf16 split, which adds its 2^-16 term and turns an infinite
// x into NaN, as for FP8 W8A16 and dense bf16) and, for Q4_1 / Q5_1, z = −o / s rounded to f32
// (and z − c once more), for the K-quants c·s − o rounded once, which its (K + G + 2)·u·|z − c|
// term covers; the reference (DequantizeGgmlBlocks) rounds each weight once more, u·|w|. Batch
// invariance as the panels'. A Q4_1 / Q5_1 block whose d is 0 (its weights all m) is stored as
// codes c + 1 with s = m and z = c (K-quant sub-blocks with a zero scale need nothing: w = −o).
// Not taken (FastMatmul keeps them): a non-finite scale or offset of an affine type, and
// an MXFP4 scale byte of 255 (ggml reads it as 2^127, the panels as NaN).
#ifndef TESSERA_KERNELS_CPU_FAST_GGML_QUANT_PANELS_H_
#define TESSERA_KERNELS_CPU_FAST_GGML_QUANT_PANELS_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::kernels::cpu::fast {

// Whether the panels take the [n, k] weight of `type` at `blocks` (k a multiple of the type's
// block, QuantPanelAvailable(), every block held: see above; never Q2_K or Q3_K, which DenseLinear
// rewrites as Q6_K first). Reads each block's scale fields.
bool GgmlQuantPanelsSupported(GgmlBlockType type, const uint8_t* blocks, int64_t n, int64_t k);

// The form the weight takes on this CPU: bf16 pairs for every type but Q8_0 under
// QuantPanelPairsAvailable(), f32 otherwise.
QuantPanelForm GgmlQuantPanelForm(GgmlBlockType type);

// Bytes of its panels (64-byte aligned destination).
int64_t GgmlQuantPanelsBytes(GgmlBlockType type, int64_t n, int64_t k);

// The weight repacked into `dst` in `form` (the pair form only where GgmlQuantPanelForm would
// give it; the engine passes GgmlQuantPanelForm(type)), panels split over `pool` when given. The
// result holds no pointer into `blocks` (its scale and zero-point pointers are null: the panels
// carry them); its pair_panels says the form: run it with QuantPanelPairMatmul or
// QuantPanelMatmul. Requires GgmlQuantPanelsSupported.
FastQuantWeights RepackGgmlQuantPanels(GgmlBlockType type, const uint8_t* blocks, int64_t n,
                                       int64_t k, uint8_t* dst, QuantPanelForm form,
                                       ThreadPool* pool = nullptr);

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_GGML_QUANT_PANELS_H_
