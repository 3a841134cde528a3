// PackedWeights: a quantized linear weight in the canonical layout the CPU kernels take
// (kernels/cpu/quant/*.h), whatever checkpoint layout it came from. The unpackers here undo each
// producer's packing exactly (GPTQ v1/v2 along K with zero offsets, compressed-tensors
// offset-binary, AWQ's nibble interleave, ModelOpt/CT NVFP4 global-scale conventions, gpt-oss
// MXFP4 blocks, bitsandbytes' flat 4-bit blocks: bnb_4bit.h) and the online quantizers produce
// the same layout from high-precision weights.
// Byte buffers that need no transformation are views into the mapped checkpoint.
#ifndef TESSERA_ENGINE_QUANT_PACKED_WEIGHTS_H_
#define TESSERA_ENGINE_QUANT_PACKED_WEIGHTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/io/tensor_store.h"
#include "engine/quant/linear_spec.h"
#include "kernels/cpu/quant/codebook4_matmul.h"
#include "kernels/cpu/quant/fp4_matmul.h"
#include "kernels/cpu/quant/fp8_matmul.h"
#include "kernels/cpu/quant/int8_matmul.h"
#include "kernels/cpu/quant/int_weight_only_matmul.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::quant {

struct PackedWeights {
  LinearSpec spec;
  // Owned storage (views into the checkpoint are used when no conversion is needed).
  std::vector<uint8_t> bytes;        // codes / packed nibbles / e4m3 bytes
  std::vector<uint8_t> scale_bytes;  // e4m3 / e8m0 block scales
  std::vector<float> scales;         // f32 multipliers
  std::vector<float> zeros;          // int weight-only zero points (same units as codes)
  std::vector<int32_t> g_idx;
  std::vector<int32_t> azp_adj;      // int8 W8A8 asymmetric-activation correction
  std::vector<float> codebook;       // bitsandbytes 4-bit: the 16 code values (scales: absmax)
  const uint8_t* q = nullptr;         // -> bytes or the checkpoint
  const uint8_t* block_scales = nullptr;  // -> scale_bytes or the checkpoint
  float global_scale = 1.0f;          // NVFP4 α_w (multiplier)
  float global_divisor = 0.0f;        // NVFP4 compressed-tensors weight_global_scale (divisor)
  float input_scale = 0.0f;           // static activation scale (FP8/INT8), multiplier
  int32_t input_zero_point = 0;
  float input_global_scale = 0.0f;    // NVFP4 static activation global scale g (a divisor)
  // Integer weight-only codes: one per byte as loaded; PackInt4Pairs halves 4-bit ones in place.
  kernels::cpu::IntWeightPacking int_packing = kernels::cpu::IntWeightPacking::kU8;
  // After SortActOrder: position j of the codes (and of the activations a kernel must be given)
  // holds input channel k_perm[j]. Empty while the codes are in checkpoint order.
  std::vector<int32_t> k_perm;

  // For 4-bit integer weight-only formats with codes one per byte, repacks them into nibble pairs
  // (kU4Pairs, what the fast CPU kernel reads) and frees the byte copy. No-op otherwise.
  void PackInt4Pairs();

  // Act-order (GPTQ desc_act, compressed-tensors actorder=group): reorders the input channels of
  // integer weight-only codes by group (stable), as Marlin does, so that each group is one
  // contiguous run and the group-wise kernels apply; callers then gather activations through
  // k_perm. When every group ends up holding exactly group_size channels (always the case for
  // GPTQ, whose g_idx is perm⁻¹ / group_size) g_idx is dropped; otherwise it stays, sorted. The
  // product is the same sum over the same (x, w) pairs in another order. No-op without g_idx or
  // once the codes are packed (call it before PackInt4Pairs). engine/quant/act_order.cc.
  void SortActOrder();

  kernels::cpu::IntWeights AsInt() const;
  kernels::cpu::Fp8Weights AsFp8() const;
  kernels::cpu::Int8Weights AsInt8() const;
  kernels::cpu::Nvfp4Weights AsNvfp4() const;
  kernels::cpu::Mxfp4Weights AsMxfp4() const;
  kernels::cpu::Codebook4Weights AsCodebook4() const;

  // Row n of the dequantized weight in f32, as the format's reference dequantization computes it
  // (in checkpoint channel order, also after SortActOrder).
  void DequantizeRow(int64_t n, float* out) const;

 private:
  void DequantizeIntRow(int64_t n, float* out) const;
};

// Reads a quantized module's tensors (names from `prefix`) into the canonical layout. `spec`
// comes from QuantConfig::Resolve and says which layout the checkpoint uses.
absl::StatusOr<PackedWeights> LoadPackedWeights(const LinearSpec& spec, const std::string& prefix,
                                                const io::TensorStore& store);

// Quantizes a high-precision [n, k] weight with round-to-nearest into `spec`'s format
// (from OnlineSchemeSpec). Rows are quantized independently once the per-tensor scales are
// known, so with a `pool` they are split over its threads (the same bytes either way): online
// FP8 of TinyLlama-1.1B spent most of its 14 s load in this loop on one core.
absl::StatusOr<PackedWeights> QuantizeOnline(const LinearSpec& spec, const std::vector<float>& w,
                                             kernels::cpu::ThreadPool* pool = nullptr);

}  // namespace tessera::quant

#endif  // TESSERA_ENGINE_QUANT_PACKED_WEIGHTS_H_
