#include "engine/quant/packed_weights.h"

#include <cmath>
#include <cstring>
#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/io/mapped_file.h"
#include "engine/quant/bnb_4bit.h"
#include "kernels/cpu/fast/abs_max.h"
#include "kernels/cpu/fast/fp4_weight_quant.h"
#include "kernels/cpu/fast/fp8_act_quant.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"

namespace tessera::quant {
namespace {

namespace kc = kernels::cpu;

absl::StatusOr<std::vector<float>> Floats(const io::TensorStore& store, const std::string& name) {
  TESSERA_ASSIGN_OR_RETURN(io::TensorView v, store.Get(name));
  return io::ToFloat32(v);
}

absl::StatusOr<float> Scalar(const io::TensorStore& store, const std::string& name) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<float> v, Floats(store, name));
  if (v.size() != 1) return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' is not a scalar"));
  return v[0];
}

absl::StatusOr<std::vector<int32_t>> Ints(const io::TensorStore& store, const std::string& name) {
  TESSERA_ASSIGN_OR_RETURN(io::TensorView v, store.Get(name));
  if (v.dtype == io::DType::kI32) return v.CopyAs<int32_t>();
  if (v.dtype == io::DType::kI64) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int64_t> w, v.CopyAs<int64_t>());
    return std::vector<int32_t>(w.begin(), w.end());
  }
  return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' is not I32/I64"));
}

// Value i of an LSB-first bitstream of `bits`-wide fields stored in 32-bit words (GPTQ packs 2, 4
// and 8 bits this way, and 3 bits across word boundaries, quant-formats.md §7.1).
uint32_t BitField(const uint32_t* words, int64_t i, int bits) {
  const int64_t pos = i * bits;
  const int64_t w = pos / 32;
  const int shift = static_cast<int>(pos % 32);
  uint64_t v = words[w] >> shift;
  if (shift + bits > 32) v |= static_cast<uint64_t>(words[w + 1]) << (32 - shift);
  return static_cast<uint32_t>(v) & ((1u << bits) - 1);
}

int BitsOf(WeightFormat f) { return WeightBits(f); }

// GPTQ (v1 / v2): qweight [K*b/32, N] along K; qzeros [G, N*b/32] along N; scales [G, N].
absl::Status UnpackGptq(const LinearSpec& s, const std::string& p, const io::TensorStore& st, PackedWeights& w) {
  const int b = BitsOf(s.weight_format);
  const int64_t n = s.n, k = s.k, g = s.group_size == -1 ? k : s.group_size, groups = k / g;
  TESSERA_ASSIGN_OR_RETURN(std::vector<int32_t> qw, Ints(st, p + ".qweight"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<int32_t> qz, Ints(st, p + ".qzeros"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<float> sc, Floats(st, p + ".scales"));
  const int64_t rows_q = k * b / 32, cols_z = n * b / 32;
  w.bytes.assign(n * k, 0);
  std::vector<uint32_t> column(rows_q);
  for (int64_t c = 0; c < n; ++c) {
    for (int64_t r = 0; r < rows_q; ++r) column[r] = static_cast<uint32_t>(qw[r * n + c]);
    for (int64_t kk = 0; kk < k; ++kk) w.bytes[c * k + kk] = static_cast<uint8_t>(BitField(column.data(), kk, b));
  }
  const bool v1 = s.source == "gptq v1";
  w.scales.resize(n * groups);
  w.zeros.resize(n * groups);
  for (int64_t gi = 0; gi < groups; ++gi) {
    const uint32_t* zrow = reinterpret_cast<const uint32_t*>(qz.data() + gi * cols_z);
    for (int64_t c = 0; c < n; ++c) {
      const uint32_t z = BitField(zrow, c, b);
      // v1 stores zero - 1 (AutoGPTQ's packer); vLLM's reader adds 1 back without re-masking.
      w.zeros[c * groups + gi] = static_cast<float>(v1 ? z + 1 : z);
      w.scales[c * groups + gi] = sc[gi * n + c];
    }
  }
  if (s.act_order) {
    TESSERA_ASSIGN_OR_RETURN(w.g_idx, Ints(st, p + ".g_idx"));
    if (static_cast<int64_t>(w.g_idx.size()) != k) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "layer %s: g_idx has %d entries, expected in_features = %d", s.module, w.g_idx.size(), k));
    }
    for (int32_t gi : w.g_idx) {
      if (gi < 0 || gi >= groups) return absl::InvalidArgumentError(absl::StrFormat("layer %s: g_idx value %d outside [0, %d)", s.module, gi, groups));
    }
  }
  return absl::OkStatus();
}

// compressed-tensors pack-quantized: weight_packed [N, ceil(K/pf)] along K, offset-binary;
// weight_zero_point [ceil(N/pf), G] along N, offset-binary; weight_scale [N, G].
absl::Status UnpackCtPacked(const LinearSpec& s, const std::string& p, const io::TensorStore& st, PackedWeights& w) {
  const int b = BitsOf(s.weight_format);
  const int64_t n = s.n, k = s.k, pf = 32 / b, words = (k + pf - 1) / pf;
  const int64_t groups = s.group_size > 0 ? k / s.group_size : 1;
  TESSERA_ASSIGN_OR_RETURN(std::vector<int32_t> packed, Ints(st, p + ".weight_packed"));
  TESSERA_ASSIGN_OR_RETURN(w.scales, Floats(st, p + ".weight_scale"));
  w.bytes.assign(n * k, 0);
  for (int64_t r = 0; r < n; ++r) {
    const uint32_t* row = reinterpret_cast<const uint32_t*>(packed.data() + r * words);
    for (int64_t kk = 0; kk < k; ++kk) w.bytes[r * k + kk] = static_cast<uint8_t>(BitField(row, kk, b));
  }
  const float offset = static_cast<float>(1 << (b - 1));
  w.zeros.assign(n * groups, offset);
  if (s.zero_point != ZeroPointKind::kNone) {
    TESSERA_ASSIGN_OR_RETURN(std::vector<int32_t> zp, Ints(st, p + ".weight_zero_point"));
    for (int64_t gi = 0; gi < groups; ++gi) {
      for (int64_t r = 0; r < n; ++r) {
        // Packed along N: field r % pf of word [r / pf, gi].
        const uint32_t word = static_cast<uint32_t>(zp[(r / pf) * groups + gi]);
        const uint32_t u = (word >> (b * (r % pf))) & ((1u << b) - 1);
        w.zeros[r * groups + gi] = static_cast<float>(u);  // (u - off) + off: the code of zero
      }
    }
  }
  if (s.act_order) {
    TESSERA_ASSIGN_OR_RETURN(w.g_idx, Ints(st, p + ".weight_g_idx"));
    if (static_cast<int64_t>(w.g_idx.size()) != k) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "layer %s: weight_g_idx has %d entries, expected in_features = %d", s.module,
          w.g_idx.size(), k));
    }
    for (int64_t kk = 0; kk < k; ++kk) {
      if (w.g_idx[kk] < 0) {  // -1: unset, the channel's natural group
        w.g_idx[kk] = static_cast<int32_t>(s.group_size > 0 ? kk / s.group_size : 0);
      }
      if (w.g_idx[kk] >= groups) return absl::InvalidArgumentError(absl::StrFormat("layer %s: weight_g_idx value %d outside [0, %d)", s.module, w.g_idx[kk], groups));
    }
  }
  return absl::OkStatus();
}

// AWQ GEMM (and Quark int4/uint4 in the same layout): qweight [K, N/8] along N with the AWQ
// nibble order; qzeros [K/g, N/8] likewise; scales [K/g, N]. `twos_complement` (Quark int4:
// amd-quark's Pack_4_bits writes value & 0xF and sign-extends on unpack) maps a nibble c to the
// offset-binary code c ^ 8 = signed(c) + 8, and the zero point likewise (absent: signed 0 -> 8),
// so that code - zero = signed(c) - signed(z) in the shared (q - z) * s dequantization.
absl::Status UnpackAwq(const LinearSpec& s, const std::string& qname, const std::string& zname,
                       const std::string& sname, bool twos_complement, const io::TensorStore& st,
                       PackedWeights& w) {
  const uint32_t flip = twos_complement ? 8 : 0;
  static constexpr int kRev[8] = {0, 4, 1, 5, 2, 6, 3, 7};
  const int64_t n = s.n, k = s.k, groups = k / s.group_size, cols = n / 8;
  TESSERA_ASSIGN_OR_RETURN(std::vector<int32_t> qw, Ints(st, qname));
  TESSERA_ASSIGN_OR_RETURN(std::vector<float> sc, Floats(st, sname));
  w.bytes.assign(n * k, 0);
  for (int64_t kk = 0; kk < k; ++kk) {
    for (int64_t c = 0; c < cols; ++c) {
      const uint32_t word = static_cast<uint32_t>(qw[kk * cols + c]);
      for (int j = 0; j < 8; ++j) w.bytes[(8 * c + j) * k + kk] = ((word >> (4 * kRev[j])) & 15) ^ flip;
    }
  }
  w.scales.resize(n * groups);
  w.zeros.assign(n * groups, 8.0f);
  std::vector<int32_t> qz;
  if (st.Contains(zname)) {
    TESSERA_ASSIGN_OR_RETURN(qz, Ints(st, zname));
  }
  for (int64_t gi = 0; gi < groups; ++gi) {
    for (int64_t c = 0; c < n; ++c) {
      w.scales[c * groups + gi] = sc[gi * n + c];
      if (!qz.empty()) {
        const uint32_t word = static_cast<uint32_t>(qz[gi * cols + c / 8]);
        w.zeros[c * groups + gi] = static_cast<float>(((word >> (4 * kRev[c % 8])) & 15) ^ flip);
      }
    }
  }
  return absl::OkStatus();
}

// bitsandbytes LLM.int8: weight I8 [N, K], SCB F32 [N]: codes q + 128 with zero point 128 and
// scale SCB / 127 per row (one group of K). bnb's int8_vectorwise_dequant rounds twice, (q · SCB)
// · f32(1/127); q · fl(SCB / 127) is within 3 · 2^-24 of it relatively.
absl::Status UnpackBnbInt8(const LinearSpec& s, const std::string& p, const io::TensorStore& st,
                           PackedWeights& w) {
  TESSERA_ASSIGN_OR_RETURN(io::TensorView q, st.Get(p + ".weight"));
  TESSERA_ASSIGN_OR_RETURN(std::vector<float> scb, Floats(st, p + ".SCB"));
  w.bytes.resize(static_cast<size_t>(s.n * s.k));
  for (size_t i = 0; i < w.bytes.size(); ++i) {
    w.bytes[i] = static_cast<uint8_t>(static_cast<int8_t>(q.bytes[i]) + 128);
  }
  w.scales.resize(static_cast<size_t>(s.n));
  for (int64_t r = 0; r < s.n; ++r) w.scales[r] = scb[r] / 127.0f;
  w.zeros.assign(static_cast<size_t>(s.n), 128.0f);
  return absl::OkStatus();
}

// A checkpoint tensor an unpacker converted into memory of the layer's own: its mapped pages go
// back to the file (a no-op for bytes outside every map). Left resident, they doubled a converted
// model's RSS: TinyLlama NF4 peaked at 1364 MiB, 886 once released (862 quantized online).
void ReleaseConverted(const io::TensorStore& st, const std::string& name) {
  if (auto v = st.Get(name); v.ok()) io::ReleaseMappedPages(v->bytes);
  st.Release(name);
}

const uint8_t* Bytes(const io::TensorStore& st, const std::string& name) {
  auto v = st.Get(name);
  return v.ok() ? v->bytes.data() : nullptr;
}

}  // namespace

kc::IntWeights PackedWeights::AsInt() const {
  kc::IntWeights w;
  w.packing = int_packing;
  w.q = q;
  w.scales = scales.data();
  w.zeros = zeros.data();
  w.num_groups = spec.group_size > 0 ? spec.k / spec.group_size : 1;
  w.group_size = spec.group_size > 0 ? spec.group_size : spec.k;
  w.g_idx = g_idx.empty() ? nullptr : g_idx.data();
  return w;
}

void PackedWeights::PackInt4Pairs() {
  const bool int4 = spec.weight_format == WeightFormat::kInt4 ||
                    spec.weight_format == WeightFormat::kInt4Awq;
  if (!int4 || int_packing != kc::IntWeightPacking::kU8 || q == nullptr) return;
  const int64_t n = spec.n, k = spec.k, row_bytes = kc::IntWeightRowBytes(kc::IntWeightPacking::kU4Pairs, k);
  std::vector<uint8_t> packed(static_cast<size_t>(n * row_bytes));
  for (int64_t r = 0; r < n; ++r) kc::PackU4Pairs(q + r * k, k, packed.data() + r * row_bytes);
  bytes = std::move(packed);
  q = bytes.data();
  int_packing = kc::IntWeightPacking::kU4Pairs;
}

kc::Fp8Weights PackedWeights::AsFp8() const {
  kc::Fp8Weights w;
  w.q = q;
  w.scales = scales.data();
  w.layout = spec.weight_scale == ScaleGranularity::kTensor   ? kc::Fp8WeightScaleLayout::kPerTensor
             : spec.weight_scale == ScaleGranularity::kBlock ? kc::Fp8WeightScaleLayout::kBlock
                                                             : kc::Fp8WeightScaleLayout::kPerRow;
  w.block_n = spec.block_n;
  w.block_k = spec.block_k;
  return w;
}

kc::Int8Weights PackedWeights::AsInt8() const {
  kc::Int8Weights w;
  w.q = reinterpret_cast<const int8_t*>(q);
  w.scales = scales.data();
  w.per_row = spec.weight_scale != ScaleGranularity::kTensor;
  w.azp_adj = azp_adj.empty() ? nullptr : azp_adj.data();
  return w;
}

kc::Nvfp4Weights PackedWeights::AsNvfp4() const { return {q, block_scales, global_scale}; }
kc::Mxfp4Weights PackedWeights::AsMxfp4() const { return {q, block_scales}; }
kc::Codebook4Weights PackedWeights::AsCodebook4() const {
  return {q, scales.data(), codebook.data(), spec.group_size};
}

void PackedWeights::DequantizeRow(int64_t n, float* out) const {
  switch (spec.weight_format) {
    case WeightFormat::kFp8E4m3: kc::DequantizeFp8WeightRow(AsFp8(), spec.k, n, out); return;
    case WeightFormat::kInt8:
      if (spec.activation == ActivationFormat::kInt8 || zeros.empty()) {
        kc::DequantizeInt8WeightRow(AsInt8(), spec.k, n, out);
      } else {
        DequantizeIntRow(n, out);
      }
      return;
    case WeightFormat::kNvfp4: {
      // Each producer combines the block scale with the global scale first, then multiplies:
      // compressed-tensors q * (sf / global_scale), ModelOpt q * (sf * weight_scale_2).
      const uint8_t* row = q + n * (spec.k / 2);
      const uint8_t* sf = block_scales + n * (spec.k / 16);
      for (int64_t i = 0; i < spec.k; ++i) {
        const float block = global_divisor != 0.0f ? numeric::DecodeE4m3(sf[i / 16]) / global_divisor
                                                   : numeric::DecodeE4m3(sf[i / 16]) * global_scale;
        out[i] = numeric::DecodeE2m1At(row, i) * block;
      }
      return;
    }
    case WeightFormat::kMxfp4: kc::DequantizeMxfp4WeightRow(AsMxfp4(), spec.k, n, out); return;
    case WeightFormat::kBnb4bit:
      kc::DequantizeCodebook4WeightRow(AsCodebook4(), spec.k, n, out);
      return;
    default: DequantizeIntRow(n, out); return;
  }
}

void PackedWeights::DequantizeIntRow(int64_t n, float* out) const {
  if (k_perm.empty()) {
    kc::DequantizeIntWeightRow(AsInt(), spec.k, n, out);
    return;
  }
  // Codes sorted by SortActOrder: dequantize in kernel order, scatter back to channels.
  std::vector<float> sorted(static_cast<size_t>(spec.k));
  kc::DequantizeIntWeightRow(AsInt(), spec.k, n, sorted.data());
  for (int64_t j = 0; j < spec.k; ++j) out[k_perm[j]] = sorted[j];
}

absl::StatusOr<PackedWeights> LoadPackedWeights(const LinearSpec& spec, const std::string& p,
                                                const io::TensorStore& st) {
  PackedWeights w;
  w.spec = spec;
  const std::string& src = spec.source;
  switch (spec.weight_format) {
    case WeightFormat::kInt2: case WeightFormat::kInt3: case WeightFormat::kInt4:
    case WeightFormat::kInt8:
      if (spec.weight_format == WeightFormat::kInt8 && spec.activation == ActivationFormat::kInt8) {
        w.q = Bytes(st, p + ".weight");
        TESSERA_ASSIGN_OR_RETURN(w.scales, Floats(st, p + ".weight_scale"));
        if (spec.activation_origin == ScaleOrigin::kStatic) {
          TESSERA_ASSIGN_OR_RETURN(w.input_scale, Scalar(st, p + ".input_scale"));
          if (st.Contains(p + ".input_zero_point")) {
            TESSERA_ASSIGN_OR_RETURN(float z, Scalar(st, p + ".input_zero_point"));
            w.input_zero_point = static_cast<int32_t>(z);
          }
        }
        if (spec.activation_asymmetric || w.input_zero_point != 0) {
          w.azp_adj.resize(spec.n);
          kc::ComputeInt8AzpAdjustment(reinterpret_cast<const int8_t*>(w.q), spec.n, spec.k, w.azp_adj.data());
        }
        return w;
      }
      if (src.rfind("gptq", 0) == 0) {
        TESSERA_RETURN_IF_ERROR(UnpackGptq(spec, p, st, w));
        ReleaseConverted(st, p + ".qweight");
      } else if (src == "bitsandbytes int8") {
        TESSERA_RETURN_IF_ERROR(UnpackBnbInt8(spec, p, st, w));
        ReleaseConverted(st, p + ".weight");
      } else {
        TESSERA_RETURN_IF_ERROR(UnpackCtPacked(spec, p, st, w));
        ReleaseConverted(st, p + ".weight_packed");
      }
      w.q = w.bytes.data();
      return w;
    case WeightFormat::kInt4Awq:
      if (src.rfind("quark", 0) == 0) {
        const bool twos_complement = src.rfind("quark int4", 0) == 0;
        TESSERA_RETURN_IF_ERROR(UnpackAwq(spec, p + ".weight", p + ".weight_zero_point", p + ".weight_scale",
                                          twos_complement, st, w));
        ReleaseConverted(st, p + ".weight");
      } else {
        TESSERA_RETURN_IF_ERROR(UnpackAwq(spec, p + ".qweight", p + ".qzeros", p + ".scales", false, st, w));
        ReleaseConverted(st, p + ".qweight");
      }
      w.q = w.bytes.data();
      return w;
    case WeightFormat::kFp8E4m3: {
      w.q = Bytes(st, p + ".weight");
      const std::string scale = st.Contains(p + ".weight_scale_inv") ? p + ".weight_scale_inv" : p + ".weight_scale";
      TESSERA_ASSIGN_OR_RETURN(w.scales, Floats(st, scale));
      if (spec.activation == ActivationFormat::kFp8 && spec.activation_origin == ScaleOrigin::kStatic) {
        TESSERA_ASSIGN_OR_RETURN(w.input_scale, Scalar(st, p + ".input_scale"));
      }
      return w;
    }
    case WeightFormat::kNvfp4: {
      const bool ct = spec.global_scale == GlobalScaleConvention::kDivisor;
      w.q = Bytes(st, ct ? p + ".weight_packed" : p + ".weight");
      w.block_scales = Bytes(st, p + ".weight_scale");
      if (ct) {
        TESSERA_ASSIGN_OR_RETURN(float gs, Scalar(st, p + ".weight_global_scale"));
        w.global_scale = 1.0f / gs;  // CT stores a divisor (vLLM reciprocates at load)
        w.global_divisor = gs;
        if (spec.activation == ActivationFormat::kNvfp4) {
          TESSERA_ASSIGN_OR_RETURN(w.input_global_scale, Scalar(st, p + ".input_global_scale"));
        }
      } else {
        TESSERA_ASSIGN_OR_RETURN(w.global_scale, Scalar(st, p + ".weight_scale_2"));
        if (spec.activation == ActivationFormat::kNvfp4) {
          TESSERA_ASSIGN_OR_RETURN(float in, Scalar(st, p + ".input_scale"));
          w.input_global_scale = 1.0f / in;
        }
      }
      return w;
    }
    case WeightFormat::kMxfp4:
      if (src == "gguf mxfp4") {
        // ggml's block_mxfp4: e, then qs[16] with element j in qs[j]'s low nibble and j + 16 in
        // its high one (dequantize_row_mxfp4); the layer's layout pairs elements 2m, 2m + 1.
        // kvalues_mxfp4 (doubled E2M1) times 2^(e - 128) is E2M1 times 2^(e - 127): the codes
        // and the E8M0 byte carry over unchanged.
        const uint8_t* blocks = Bytes(st, p + ".weight");
        if (blocks == nullptr) {
          return absl::NotFoundError(absl::StrCat("tensor '", p, ".weight' is missing"));
        }
        const int64_t count = spec.n * spec.k / 32;
        w.bytes.resize(static_cast<size_t>(count) * 16);
        w.scale_bytes.resize(static_cast<size_t>(count));
        for (int64_t b = 0; b < count; ++b) {
          const uint8_t* blk = blocks + b * 17;
          if (blk[0] == 0xFF) {  // ggml reads 2^127 where OCP's E8M0 (this layer's) means NaN
            return absl::InvalidArgumentError(
                absl::StrCat("tensor '", p, ".weight': MXFP4 block ", b,
                             " has the exponent byte 0xFF (NaN in OCP MX, 2^127 in ggml)"));
          }
          w.scale_bytes[b] = blk[0];
          uint8_t* out = w.bytes.data() + b * 16;
          for (int m = 0; m < 16; ++m) {
            auto code = [&](int i) { return i < 16 ? blk[1 + i] & 0x0F : blk[1 + i - 16] >> 4; };
            out[m] = static_cast<uint8_t>(code(2 * m) | (code(2 * m + 1) << 4));
          }
        }
        ReleaseConverted(st, p + ".weight");
        w.q = w.bytes.data();
        w.block_scales = w.scale_bytes.data();
      } else if (src == "mxfp4 gpt-oss") {
        w.q = Bytes(st, p + "_blocks");
        w.block_scales = Bytes(st, p + "_scales");
      } else {
        w.q = Bytes(st, src.rfind("quark", 0) == 0 ? p + ".weight" : p + ".weight_packed");
        w.block_scales = Bytes(st, p + ".weight_scale");
      }
      return w;
    case WeightFormat::kBnb4bit: {
      TESSERA_ASSIGN_OR_RETURN(std::optional<Bnb4bitState> state,
                               ReadBnb4bitState(st, spec.module, p, spec.n, spec.k));
      if (!state.has_value() || state->group != spec.group_size) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "layer %s: '%s.weight' has no bitsandbytes 4-bit state of group %d", spec.module, p,
            spec.group_size));
      }
      TESSERA_RETURN_IF_ERROR(
          UnpackBnb4bit(st, p, spec.n, spec.k, *state, &w.bytes, &w.scales, &w.codebook));
      ReleaseConverted(st, p + ".weight");
      w.q = w.bytes.data();
      return w;
    }
    default:
      return absl::InvalidArgumentError(absl::StrFormat(
          "layer %s: weight format %s is not a packed quantized format", spec.module,
          WeightFormatName(spec.weight_format)));
  }
}

namespace {

// std::nearbyint(v) for |v| <= 2^22 (and NaN) in the default rounding mode: adding and
// subtracting 1.5 · 2^23 rounds to an integer, ties to even. The online quantizers' v = w / s is
// at most 127 in magnitude (s = amax / 127 or / 7), and the libm call, which the baseline x86-64
// build cannot inline, was most of an online INT4 load.
inline float RoundHalfEven(float v) {
  constexpr float kMagic = 12582912.0f;  // 1.5 · 2^23
  return (v + kMagic) - kMagic;
}

}  // namespace

absl::StatusOr<PackedWeights> QuantizeOnline(const LinearSpec& spec, const std::vector<float>& wt,
                                             kernels::cpu::ThreadPool* pool) {
  PackedWeights w;
  w.spec = spec;
  const int64_t n = spec.n, k = spec.k;
  auto amax = [&](int64_t begin, int64_t count) {
    return kernels::cpu::fast::AbsMaxSkippingNanF32(wt.data() + begin, count);
  };
  // quantize_row(r) writes row r's codes and scales only.
  auto for_rows = [&](const std::function<void(int64_t)>& quantize_row) {
    kernels::cpu::ParallelForOrInline(pool, n, 1, [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) quantize_row(r);
    });
  };
  switch (spec.weight_format) {
    case WeightFormat::kFp8E4m3: {
      w.bytes.resize(n * k);
      const bool per_row = spec.weight_scale == ScaleGranularity::kRowwise;
      w.scales.assign(per_row ? n : 1, 1.0f);
      if (!per_row) {
        const float a = amax(0, n * k);
        w.scales[0] = a > 0 ? a / 448.0f : 1.0f;
      }
      for_rows([&](int64_t r) {
        if (per_row) {
          const float a = amax(r * k, k);
          w.scales[r] = a > 0 ? a / 448.0f : 1.0f;
        }
        // EncodeE4m3(w / s) for each element, vectorized (the same bytes).
        kernels::cpu::fast::FastEncodeE4m3Divide(wt.data() + r * k, k, w.scales[per_row ? r : 0],
                                                 w.bytes.data() + r * k);
      });
      break;
    }
    case WeightFormat::kInt8: {  // symmetric per-row, activations int8 per token
      w.bytes.resize(n * k);
      w.scales.resize(n);
      for_rows([&](int64_t r) {
        const float a = amax(r * k, k);
        const float s = a > 0 ? a / 127.0f : 1.0f;
        w.scales[r] = s;
        for (int64_t i = 0; i < k; ++i) {
          const float q = RoundHalfEven(wt[r * k + i] / s);
          w.bytes[r * k + i] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f)));
        }
      });
      break;
    }
    case WeightFormat::kInt4: {  // symmetric: code = rne(w / s) + 8 in [1, 15], s = amax / 7
      const int64_t gs = spec.group_size > 0 ? spec.group_size : k, groups = k / gs;
      w.bytes.resize(n * k);
      w.scales.resize(n * groups);
      w.zeros.assign(n * groups, 8.0f);
      for_rows([&](int64_t r) {
        for (int64_t g = 0; g < groups; ++g) {
          const float a = amax(r * k + g * gs, gs);
          const float s = a > 0 ? a / 7.0f : 1.0f;
          w.scales[r * groups + g] = s;
          for (int64_t i = g * gs; i < (g + 1) * gs; ++i) {
            const float q = std::clamp(RoundHalfEven(wt[r * k + i] / s), -8.0f, 7.0f);
            w.bytes[r * k + i] = static_cast<uint8_t>(q + 8);
          }
        }
      });
      break;
    }
    case WeightFormat::kNvfp4: {  // ModelOpt's recipe: α = amax / (6 * 448), sf = e4m3(amax_b / (6 α))
      const float a = amax(0, n * k);
      w.global_scale = a > 0 ? a / (6.0f * 448.0f) : 1.0f;
      w.bytes.assign(n * k / 2, 0);
      w.scale_bytes.resize(n * k / 16);
      kernels::cpu::ParallelForOrInline(pool, n, 1, [&](int64_t r0, int64_t r1) {
        kernels::cpu::fast::FastQuantizeNvfp4Weights(wt.data() + r0 * k, r1 - r0, k, w.global_scale,
                                                     w.bytes.data() + r0 * (k / 2),
                                                     w.scale_bytes.data() + r0 * (k / 16));
      });
      w.block_scales = w.scale_bytes.data();
      break;
    }
    case WeightFormat::kMxfp4: {  // OCP MX FLOOR rule: e = floor(log2 amax) - 2
      w.bytes.assign(n * k / 2, 0);
      w.scale_bytes.resize(n * k / 32);
      kernels::cpu::ParallelForOrInline(pool, n, 1, [&](int64_t r0, int64_t r1) {
        kernels::cpu::fast::FastQuantizeMxfp4Weights(wt.data() + r0 * k, r1 - r0, k,
                                                     w.bytes.data() + r0 * (k / 2),
                                                     w.scale_bytes.data() + r0 * (k / 32));
      });
      w.block_scales = w.scale_bytes.data();
      break;
    }
    case WeightFormat::kBnb4bit: {  // bitsandbytes' load_in_4bit: NF4 blocks of 64 along K
      const int64_t block = spec.group_size;
      w.bytes.assign(n * k / 2, 0);
      w.scales.resize(n * (k / block));
      w.codebook.assign(kBnbNf4Codebook, kBnbNf4Codebook + 16);
      for_rows([&](int64_t r) {
        QuantizeBnbNf4Row(wt.data() + r * k, k, block, w.bytes.data() + r * (k / 2),
                          w.scales.data() + r * (k / block));
      });
      break;
    }
    default:
      return absl::InvalidArgumentError(absl::StrFormat("layer %s: no online quantizer for %s", spec.module,
                                                        WeightFormatName(spec.weight_format)));
  }
  w.q = w.bytes.data();
  return w;
}

}  // namespace tessera::quant
