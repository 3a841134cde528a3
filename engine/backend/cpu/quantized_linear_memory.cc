// QuantizedLinear's memory: the bytes a forward pass streams (weight_bytes, weight_spans: what the
// benchmarks count and read as the roofline), and the copies of the codes it can give up once its
// own tiles or panels hold them (the checkpoint's pages, the online quantizers' owned bytes).
#include <vector>

#include "engine/backend/cpu/quantized_linear.h"
#include "engine/io/mapped_file.h"
#include "kernels/cpu/quant/fp4_matmul.h"

namespace tessera::backend::cpu {
namespace {

namespace kc = kernels::cpu;
namespace kf = kernels::cpu::fast;
using quant::ScaleOrigin;
using quant::WeightFormat;

}  // namespace

int64_t QuantizedLinear::CodeBytes() const {
  const auto& s = w_.spec;
  // INT3 / INT2 codes stay unpacked, a byte each (as the loaders leave them), on every path.
  const bool byte_codes = (s.weight_format == WeightFormat::kInt3 || s.weight_format == WeightFormat::kInt2) &&
                          w_.int_packing == kc::IntWeightPacking::kU8;
  return byte_codes ? s.n * s.k : s.n * s.k * quant::WeightBits(s.weight_format) / 8;
}

void QuantizedLinear::ReleaseCheckpointCodes() {
  if ((q8_ok_ || int8_dot_ok_ || fp8_panels_ok_ || quant_panels_ok_) && w_.q != nullptr) {
    io::ReleaseMappedPages({w_.q, static_cast<size_t>(CodeBytes())});
  }
}

int64_t QuantizedLinear::weight_bytes() const {
  // Everything a forward pass streams: codes plus scales / zero points (the bench's GB/s). The
  // byte tiles of INT3 / INT2 spend a byte per code, more than the checkpoint's bits.
  if ((q8_ok_ && q8_.format == kf::FastFormat::kU8x16) || quant_panels_ok_) return x16_.size();
  const auto& s = w_.spec;
  const int64_t codes = CodeBytes();
  switch (s.weight_format) {
    case WeightFormat::kNvfp4: return codes + s.n * s.k / kc::kNvfp4BlockSize;
    case WeightFormat::kMxfp4: return codes + s.n * s.k / kc::kMxfp4BlockSize;
    default:
      return codes + static_cast<int64_t>((w_.scales.size() + w_.zeros.size()) * sizeof(float));
  }
}

std::vector<Linear::ByteSpan> QuantizedLinear::weight_spans() const {
  // The 4-bit panels hold the scales, zero points and block scales beside the codes.
  if (q8_ok_ || int8_dot_ok_ || quant_panels_ok_) return {{x16_.data(), x16_.size()}};
  if (fp8_panels_ok_) {  // the panels hold the codes; the weight scales stay where they were
    const kc::Fp8Weights fw = w_.AsFp8();
    // (Block scales reach the panels too, on AVX2: avx2_panels.h.)
    const int64_t count =
        fw.layout == kc::Fp8WeightScaleLayout::kPerRow ? w_.spec.n
        : fw.layout == kc::Fp8WeightScaleLayout::kBlock
            ? kc::NumGroups(w_.spec.n, fw.block_n) * kc::NumGroups(w_.spec.k, fw.block_k)
            : 1;
    return {{x16_.data(), x16_.size()},
            {reinterpret_cast<const uint8_t*>(fw.scales), count * static_cast<int64_t>(sizeof(float))}};
  }
  const auto& s = w_.spec;
  std::vector<ByteSpan> spans;
  auto add = [&](const void* p, int64_t bytes) {
    if (p != nullptr && bytes > 0) spans.push_back({static_cast<const uint8_t*>(p), bytes});
  };
  const bool int_codes = s.weight_format == WeightFormat::kInt4 || s.weight_format == WeightFormat::kInt4Awq ||
                         s.weight_format == WeightFormat::kInt3 || s.weight_format == WeightFormat::kInt2;
  const int64_t code_bytes = !int_codes ? s.n * s.k * quant::WeightBits(s.weight_format) / 8
                             : w_.int_packing == kc::IntWeightPacking::kU4Pairs ? s.n * ((s.k + 1) / 2)
                                                                                : s.n * s.k;
  add(w_.q, code_bytes);
  add(w_.scales.data(), static_cast<int64_t>(w_.scales.size() * sizeof(float)));
  add(w_.zeros.data(), static_cast<int64_t>(w_.zeros.size() * sizeof(float)));
  if (s.weight_format == WeightFormat::kNvfp4) add(w_.block_scales, s.n * s.k / kc::kNvfp4BlockSize);
  if (s.weight_format == WeightFormat::kMxfp4) add(w_.block_scales, s.n * s.k / kc::kMxfp4BlockSize);
  return spans;
}

void QuantizedLinear::DropReferenceCodes() {
  if (!(q8_ok_ || int8_dot_ok_ || fp8_panels_ok_ || quant_panels_ok_) || w_.bytes.empty() ||
      w_.q != w_.bytes.data()) {
    return;
  }
  // W8A8 with per-token asymmetric activations falls back to the reference for a call whose zero
  // point leaves int8's range (ForwardInt8Dot): it keeps its codes.
  const auto& s = w_.spec;
  if (int8_dot_ok_ && s.activation_origin != ScaleOrigin::kStatic && s.activation_asymmetric) return;
  std::vector<uint8_t>().swap(w_.bytes);
  w_.q = nullptr;
  // The 4-bit panels carry the scales, zero points and block scales too (ForwardReference: NaN).
  if (quant_panels_ok_) {
    std::vector<float>().swap(w_.scales);
    std::vector<float>().swap(w_.zeros);
    fast_.scales = fast_.zeros = nullptr;
    if (w_.block_scales != nullptr && w_.block_scales == w_.scale_bytes.data()) {
      std::vector<uint8_t>().swap(w_.scale_bytes);
      w_.block_scales = nullptr;
      fast_.block_scales = nullptr;
    }
  }
}

}  // namespace tessera::backend::cpu
