// The CPU Linear for every quantized LinearSpec: FP8 W8A8 (static per-tensor, dynamic per-token
// with an optional upper bound, per-token-group with block weights) and W8A16; INT8 W8A8 with
// symmetric or asymmetric activations; integer weight-only (GPTQ, compressed-tensors, AWQ, Quark;
// groups, zero points, act-order; bitsandbytes LLM.int8 as INT8 per row); NVFP4 W4A4 (static or
// dynamic activation global scale) and W4A16; MXFP4 W4A16; bitsandbytes 4-bit (NF4 / FP4
// codebook, an f32 absmax per block: the quant panels' codebook decode, f32 form with exact
// activations, bf16 pairs with the codebook rounded under bf16 activations; no row kernel).
// Activations are quantized once per call with the reference formulas, then
// output columns are split across the thread pool.
// Fast paths (kernels/cpu/fast/fast_quant_matmul.h, chosen once at construction when the layout
// allows): FP8 W8A16 (any weight scale layout) and W8A8 with per-tensor/per-row weight scales and
// static or per-token activations (on the 16-column panels of fp8_panel_matmul.h when the
// weight scales are per tensor or per row: W8A8, and W8A16 with exact or bf16 activations), or
// (on AVX-512 BF16) 2-D block weight scales with per-token-group, per-token or static
// activations; 4-bit integer weight-only (any group size
// that is a multiple of 32, per-channel included, zero points; codes repacked into nibble pairs
// at load; act-order layers with their input channels sorted by group first, as Marlin does);
// NVFP4 W4A16 and W4A4; MXFP4 W4A16 (4-bit formats: K % 32 == 0; with f32 or bf16 activations on
// the 16-column panels of quant_panel_matmul.h, scales beside the codes, in its bf16-pair form
// where the CPU has AVX-512 BF16 and in its f32 form on other AVX-512 CPUs and on AVX2 ones; an
// FP4 layer with a NaN scale code stays on FastQuantMatmul, which needs AVX-512); 2/3/8-bit
// weight-only as byte codes (groups of a multiple of 16 or one per row). Everything else (INT4
// group 16, byte-code groups of other sizes, the 4-bit formats on CPUs without AVX2, FP4 NaN scale
// codes without AVX-512) runs the scalar reference kernels, and the plan's label says so.
// TESSERA_QUANT_REFERENCE=1 in the environment forces the reference kernels (A/B measurements).
// Int8 activations (spec.activation == kInt8Block32, chosen by CpuKernelSelector under
// --cpu_int8_activations for integer weight-only layers, NVFP4 W4A16 and MXFP4): each input row
// is quantized to int8 blocks of 32 and the products run on the 16-column VNNI tiles of
// kernels/cpu/fast/int4_x16.h;
// the reference path quantizes and dequantizes the activations the same way, then runs the float
// reference kernel.
#ifndef TESSERA_ENGINE_BACKEND_CPU_QUANTIZED_LINEAR_H_
#define TESSERA_ENGINE_BACKEND_CPU_QUANTIZED_LINEAR_H_

#include <memory>
#include <string>
#include <vector>

#include "engine/backend/linear.h"
#include "engine/quant/packed_weights.h"
#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/huge_page_buffer.h"
#include "kernels/cpu/scratch_arena.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::backend::cpu {

class QuantizedLinear : public Linear {
 public:
  QuantizedLinear(quant::PackedWeights weights, std::vector<float> bias,
                  kernels::cpu::ThreadPool* pool)
      : w_(std::move(weights)), bias_(std::move(bias)), pool_(pool) {
    SortActOrder();
    InitFast();
    ReleaseCheckpointCodes();
  }

  int64_t out_features() const override { return w_.spec.n; }
  int64_t in_features() const override { return w_.spec.k; }
  void Forward(const float* x, int64_t rows, float* y) const override;
  void ForwardColumns(const float* x, int64_t rows, float* y, ColumnSplit split) const override;
  std::string Describe() const override;
  int64_t weight_bytes() const override;
  std::vector<ByteSpan> weight_spans() const override;
  const quant::PackedWeights& weights() const { return w_; }
  // Whether Forward runs the fast kernel (for tests and benchmarks).
  bool uses_fast_path() const { return fast_ok_ || q8_ok_ || int8_dot_ok_; }
  // Whether Forward runs the pair panels' int16 route (a: int16 act; quantized_linear_int16.cc).
  bool uses_int16_route() const;
  // The scalar reference kernels, whatever the fast path would do (the tests' oracle). After
  // DropReferenceCodes it writes NaN.
  void ForwardReference(const float* x, int64_t rows, float* y) const;
  // Frees the layer's own copy of the codes (what the online quantizers and the code converters
  // produce) when Forward reads only its tiles or panels: a second copy of the weights otherwise.
  // weights() then has no codes and ForwardReference writes NaN. The model loader calls it.
  void DropReferenceCodes();

 private:
  // Act-order integer weight-only layers: input channels sorted by group at load
  // (PackedWeights::SortActOrder), so both paths below see contiguous groups; every call gathers
  // x through k_perm first (GatherActOrder). The int8-activation scheme quantizes blocks of 32 in
  // that sorted order, on both paths. quantized_linear_act_order.cc.
  void SortActOrder();
  const float* GatherActOrder(const float* x, int64_t rows,
                              kernels::cpu::ScratchFrame& scratch) const;
  // ForwardReference on activations already gathered by GatherActOrder.
  void ForwardReferenceSorted(const float* x, int64_t rows, float* y, ColumnSplit split) const;
  // Repacks what the fast kernel needs and fills fast_ / fast_ok_.
  void InitFast();
  // The codes as stored (checkpoint or owned copy): what weight_bytes counts beside the scales.
  // This, ReleaseCheckpointCodes, DropReferenceCodes, weight_bytes and weight_spans:
  // quantized_linear_memory.cc.
  int64_t CodeBytes() const;
  // When Forward reads only the layer's own tiles or panels, the checkpoint's pages of the codes
  // go back to the file (io::ReleaseMappedPages; a no-op for owned copies). ForwardReference
  // faults them back in.
  void ReleaseCheckpointCodes();
  // The fast Forward; false when this call must take the reference path.
  bool ForwardFast(const float* x, int64_t rows, float* y, ColumnSplit split,
                   kernels::cpu::ScratchFrame& scratch) const;
  // The int8-activation Forward (q8_ok_). quantized_linear_int8_acts.cc.
  void ForwardInt8Acts(const float* x, int64_t rows, float* y, ColumnSplit split,
                       kernels::cpu::ScratchFrame& scratch) const;
  // INT8 W8A8 on the VNNI panel kernel (kernels/cpu/fast/int8_dot_matmul.h), bit-identical to the
  // reference: InitInt8Dot repacks (returns whether it took the layer), ForwardInt8Dot runs it.
  // quantized_linear_int8.cc.
  bool InitInt8Dot();
  void ForwardInt8Dot(const float* x, int64_t rows, float* y, ColumnSplit split,
                      kernels::cpu::ScratchFrame& scratch) const;
  // int16 activations (a: int16 act): ForwardInt16 runs the pair panels' int16 route and returns
  // true, or (the layer's panels cannot take it) points x at x̂ = d · q in `scratch` and returns
  // false; RoundToInt16Groups writes x̂ [rows, k], what every other path multiplies (the reference
  // kernel, the split on panels without the route). quantized_linear_int16.cc.
  bool ForwardInt16(const float*& x, int64_t rows, float* y, ColumnSplit split,
                    kernels::cpu::ScratchFrame& scratch) const;
  void RoundToInt16Groups(const float* x, int64_t rows, float* out) const;
  // INT8 / INT3 / INT2 weight-only codes (one per byte) in the 16-column VNNI tiles for int8
  // activations (kernels/cpu/fast/int4_x16.h kU8x16); sets q8_ / q8_ok_ when it takes the layer.
  void InitIntBytesX16();

  quant::PackedWeights w_;
  std::vector<float> bias_;
  kernels::cpu::ThreadPool* pool_;
  kernels::cpu::fast::FastQuantWeights fast_;  // weights part; the epilogue is set per call
  bool fast_ok_ = false;
  // 4-bit formats on FastQuantMatmul (not the 4-bit panels): activations in its lane order.
  bool fast_permute_ = false;
  // FP8 block-scaled W8A8 without AVX-512 BF16: the FMA panels (or, for block shapes they do not
  // take, the Highway kernel) take the activations as code times scale and fold the weight block
  // scales into the decoded weights (W8A16's form).
  bool fp8_scaled_acts_ = false;
  kernels::cpu::fast::FastWeights q8_;  // int8-activation kernel's view of the weights
  // The 16-column int8-activation tiles q8_ points into (INT4 / INT8 / INT3 / INT2, NVFP4,
  // MXFP4), the INT8 W8A8 panels (int8_dot_ok_), the FP8 panels (fp8_panels_ok_) or the 4-bit
  // panels of INT4, MXFP4 and NVFP4 W4A16 (quant_panels_ok_).
  kernels::cpu::HugePageBuffer x16_;
  bool q8_ok_ = false;
  std::vector<int32_t> int8_col_sums_;  // Σ_k q[n, k] for the kernel's u8 shift
  bool int8_dot_ok_ = false;            // x16_ holds the INT8 W8A8 panels
  bool fp8_panels_ok_ = false;          // x16_ holds FP8 panels (fast_.q points into them)
  bool fp8_fma_ = false;                // ... run by Fp8PanelFmaMatmul (no BF16 FP8 kernel here)
  bool quant_panels_ok_ = false;     // x16_ holds quantized panels with their scales (and zeros)
  // ... in the bf16-pair form (4-bit codes on AVX-512 BF16: QuantPanelPairMatmul).
  bool quant_pairs_ = false;
};

}  // namespace tessera::backend::cpu

#endif  // TESSERA_ENGINE_BACKEND_CPU_QUANTIZED_LINEAR_H_
