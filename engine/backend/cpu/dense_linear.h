// The CPU Linear for unquantized and GGUF weights (f32, bf16, f16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
// Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS), running the Highway kernels of kernels/cpu/fast.
// With exact activations Q3_K is rewritten at load as Q6_K blocks of the same values, and Q2_K as
// Q6_K blocks of its product terms plus an f32 matrix of its offsets per 16 weights, multiplied by
// the sums of x over each 16 (kernels/cpu/ggml_kquants_as_q6k.h), on the Q6_K panels (without
// AVX2, FastMatmul on the rewrite); with int8 activations both take their own tiles (kQ3_Kx16,
// kQ2_Kx16). Without AVX-512, dense and
// most ggml types are read straight from the memory-mapped tensor; Q8_0 and Q4_0 are repacked
// once at load into
// the fast kernels' 64-byte-aligned layout (scales and quants each contiguous per row), with int8
// activations every GGUF block type but MXFP4 into the 16-column tiles of
// kernels/cpu/fast/int4_x16.h, bf16 into the 16-column K-pair panels of the vdpbf16ps kernel
// (AVX-512 BF16) or of the f32 FMA one (AVX2 without AVX-512: kernels/cpu/fast/avx2_panels.h), f16
// and f32 on AVX-512 or AVX2 into the 16-column K panels of float_panel_matmul.h, and with f32
// activations on AVX-512 every GGUF block type into the
// quantized panels of kernels/cpu/fast/ggml_quant_panels.h. A repacked tensor's pages of the
// checkpoint map are given back (io::ReleaseMappedPages), so the weights are resident once.
#ifndef TESSERA_ENGINE_BACKEND_CPU_DENSE_LINEAR_H_
#define TESSERA_ENGINE_BACKEND_CPU_DENSE_LINEAR_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/backend/linear.h"
#include "engine/io/tensor_view.h"
#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/huge_page_buffer.h"
#include "kernels/cpu/matmul_reference.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::backend::cpu {

// The kernel encoding of a checkpoint dtype, or an error naming the tensor.
absl::StatusOr<kernels::cpu::WeightEncoding> EncodingForDType(const io::TensorView& view);

// What the layer feeds its kernel. kInt8Block32 (GGUF Q4_0/1, Q5_0/1, Q8_0, Q2_K to Q6_K, IQ4_NL,
// IQ4_XS)
// quantizes each input row to int8 blocks of 32 per call and runs the VNNI kernel on the weights
// repacked in 16-column tiles (kernels/cpu/fast/int4_x16.h).
// kBf16 (bf16 weights only) rounds each input row to bf16 (kernels/cpu/fast/bf16_dot_matmul.h);
// kFloat on bf16 weights runs the same kernel on the exact hi + lo split of the f32 rows (on AVX2
// without AVX-512 the FMA panels take the f32 rows themselves).
enum class DenseActivations { kFloat, kInt8Block32, kBf16 };

class DenseLinear : public Linear {
 public:
  // `weight` must be [N, K] and outlive this object (it points into the mapped checkpoint).
  // `bias` is empty or N values. `pool` may be null (single-threaded). `activations` other than
  // kFloat on a weight type they do not apply to is an error naming the tensor.
  static absl::StatusOr<std::unique_ptr<DenseLinear>> Create(
      const io::TensorView& weight, std::vector<float> bias, kernels::cpu::ThreadPool* pool,
      DenseActivations activations = DenseActivations::kFloat);

  DenseLinear(kernels::cpu::WeightEncoding enc, const io::TensorView& weight,
              std::vector<float> bias, kernels::cpu::ThreadPool* pool,
              DenseActivations activations = DenseActivations::kFloat);

  int64_t out_features() const override { return weight_.shape[0]; }
  int64_t in_features() const override { return weight_.shape[1]; }
  void Forward(const float* x, int64_t rows, float* y) const override;
  void ForwardColumns(const float* x, int64_t rows, float* y, ColumnSplit split) const override;
  std::string Describe() const override;
  int64_t weight_bytes() const override { return static_cast<int64_t>(weight_.bytes.size()); }
  std::vector<ByteSpan> weight_spans() const override;
  // Whether Forward reads only the layer's own repacked copy, never `weight`'s bytes again (so an
  // owner of those bytes may free them; shape and dtype stay in use).
  bool reads_own_copy() const { return repacked_.data() != nullptr || !q6k_copy_.empty(); }

 private:
  // The constructor's choice of kernel and repack, from the weight's blocks at `src` (the
  // checkpoint's, or the Q6_K rewrite of Q3_K / Q2_K).
  void Init(const uint8_t* src);

  kernels::cpu::WeightEncoding enc_;
  io::TensorView weight_;
  std::vector<float> bias_;
  kernels::cpu::ThreadPool* pool_;
  kernels::cpu::fast::FastWeights fast_;
  // GGUF blocks with f32 activations on the quantized panels (ggml_quant_panels.h), when
  // ggml_panels_; fast_ then unused.
  bool ggml_panels_ = false;
  kernels::cpu::fast::FastQuantWeights panels_;
  // bf16 pair panels run by Bf16PairsFmaMatmul (no AVX-512): f32 activations, f32 FMA.
  bool bf16_fma_ = false;
  // GGUF rows, tiles or quantized panels; bf16 pair, f16 and f32 K panels.
  kernels::cpu::HugePageBuffer repacked_;
  // GGUF Q3_K / Q2_K weights rewritten as Q6_K blocks (exact activations only), where no repacked
  // copy replaces them, and Q2_K's offsets −dmin·m per 16 weights ([N, K / 16] f32, read
  // by offsets_: FastMatmul's f32 rows) (kernels/cpu/ggml_kquants_as_q6k.h).
  std::vector<uint8_t> q6k_copy_;
  std::vector<float> q2k_offsets_;
  kernels::cpu::fast::FastWeights offsets_;
  DenseActivations activations_ = DenseActivations::kFloat;
};

}  // namespace tessera::backend::cpu

#endif  // TESSERA_ENGINE_BACKEND_CPU_DENSE_LINEAR_H_
