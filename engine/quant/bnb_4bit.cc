#include "engine/quant/bnb_4bit.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/quant/config_parsers.h"
#include "nlohmann/json.hpp"

namespace tessera::quant {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

absl::Status Invalid(const std::string& module, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat("layer ", module, ": ", what));
}

// The f32 elements of a tensor whose dtype RequireTensor checked.
std::vector<float> Floats(const io::TensorView& v) {
  std::vector<float> out(static_cast<size_t>(v.numel()));
  std::memcpy(out.data(), v.bytes.data(), out.size() * sizeof(float));
  return out;
}

}  // namespace

absl::StatusOr<std::optional<Bnb4bitState>> ReadBnb4bitState(const io::TensorStore& store,
                                                             const std::string& module,
                                                             const std::string& prefix,
                                                             int64_t n, int64_t k) {
  const std::string w = prefix + ".weight";
  std::string qs_name;
  for (const char* type : {"nf4", "fp4"}) {
    const std::string name = absl::StrCat(w, ".quant_state.bitsandbytes__", type);
    if (!store.Contains(name)) continue;
    if (!qs_name.empty()) {
      return Invalid(module, absl::StrFormat("both '%s' and '%s' are present", qs_name, name));
    }
    qs_name = name;
  }
  if (qs_name.empty()) return std::optional<Bnb4bitState>();
  TESSERA_ASSIGN_OR_RETURN(io::TensorView qs,
                           parse::RequireTensor(store, module, qs_name, {io::DType::kU8}));
  const auto json = OrderedJson::parse(qs.bytes.begin(), qs.bytes.end(), nullptr, false);
  if (!json.is_object()) return Invalid(module, absl::StrCat("tensor '", qs_name, "' is not JSON"));
  Bnb4bitState s;
  s.quant_type = parse::StringOr(json, "quant_type", "");
  s.blocksize = parse::IntOr(json, "blocksize", 0);
  s.dtype = parse::StringOr(json, "dtype", "");
  const std::string suffix = qs_name.substr(qs_name.rfind("__") + 2);
  if (s.quant_type != suffix) {
    return Invalid(module, absl::StrFormat("tensor '%s' says quant_type '%s'", qs_name,
                                           s.quant_type));
  }
  // bitsandbytes writes 32 to 4096; anything even up to 2^24 is read (no overflow below).
  constexpr int64_t kMaxBlock = int64_t{1} << 24;
  if (s.blocksize <= 0 || s.blocksize % 2 != 0 || s.blocksize > kMaxBlock) {
    return Invalid(module, absl::StrFormat("tensor '%s': blocksize %d", qs_name, s.blocksize));
  }
  const auto shape = json.find("shape");
  if (shape == json.end() || !shape->is_array() || *shape != OrderedJson::array({n, k})) {
    return Invalid(module, absl::StrFormat("tensor '%s': shape %s, expected [%d, %d]", qs_name,
                                           shape == json.end() ? "missing" : shape->dump(), n, k));
  }
  if (k % s.blocksize == 0) {
    s.group = s.blocksize;
  } else if (s.blocksize % k == 0 && k % 2 == 0) {
    s.group = k;
  } else {
    return Invalid(module, absl::StrFormat("bitsandbytes blocks of %d straddle rows of K = %d "
                                           "unevenly (tessera needs one a multiple of the other)",
                                           s.blocksize, k));
  }
  // The codes: ceil(n·k / 2) bytes in whatever storage dtype.
  TESSERA_ASSIGN_OR_RETURN(io::TensorView codes, store.Get(w));
  if (static_cast<int64_t>(codes.bytes.size()) != CeilDiv(n * k, 2)) {
    return Invalid(module, absl::StrFormat("tensor '%s' holds %d bytes, expected %d 4-bit codes",
                                           w, codes.bytes.size(), n * k));
  }
  const int64_t blocks = CeilDiv(n * k, s.blocksize);
  TESSERA_RETURN_IF_ERROR(
      parse::RequireTensor(store, module, w + ".quant_map", {io::DType::kF32}, {16}).status());
  s.nested = json.contains("nested_offset");
  if (!s.nested) {
    TESSERA_RETURN_IF_ERROR(
        parse::RequireTensor(store, module, w + ".absmax", {io::DType::kF32}, {blocks}).status());
    return std::optional<Bnb4bitState>(s);
  }
  s.nested_blocksize = parse::IntOr(json, "nested_blocksize", 0);
  const auto offset = json.find("nested_offset");
  if (s.nested_blocksize <= 0 || s.nested_blocksize > kMaxBlock || !offset->is_number()) {
    return Invalid(module, absl::StrFormat("tensor '%s': nested_blocksize %d, nested_offset %s",
                                           qs_name, s.nested_blocksize, offset->dump()));
  }
  s.nested_offset = offset->get<float>();
  TESSERA_RETURN_IF_ERROR(
      parse::RequireTensor(store, module, w + ".absmax", {io::DType::kU8}, {blocks}).status());
  TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, w + ".nested_quant_map",
                                               {io::DType::kF32}, {256})
                              .status());
  TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, w + ".nested_absmax",
                                               {io::DType::kF32},
                                               {CeilDiv(blocks, s.nested_blocksize)})
                              .status());
  return std::optional<Bnb4bitState>(s);
}

absl::Status UnpackBnb4bit(const io::TensorStore& store, const std::string& prefix, int64_t n,
                           int64_t k, const Bnb4bitState& state, std::vector<uint8_t>* codes,
                           std::vector<float>* scales, std::vector<float>* codebook) {
  const std::string w = prefix + ".weight";
  TESSERA_ASSIGN_OR_RETURN(io::TensorView packed, store.Get(w));
  TESSERA_ASSIGN_OR_RETURN(io::TensorView map, store.Get(w + ".quant_map"));
  TESSERA_ASSIGN_OR_RETURN(io::TensorView absmax_view, store.Get(w + ".absmax"));
  *codebook = Floats(map);
  // K is even (ReadBnb4bitState), so flat byte j holds elements 2j and 2j + 1 of one row, 2j in
  // the high nibble: the row-major layout already, nibbles swapped.
  codes->resize(static_cast<size_t>(n * (k / 2)));
  for (size_t j = 0; j < codes->size(); ++j) {
    const uint8_t byte = packed.bytes[j];
    (*codes)[j] = static_cast<uint8_t>(byte >> 4 | byte << 4);
  }
  std::vector<float> absmax;
  if (state.nested) {
    TESSERA_ASSIGN_OR_RETURN(io::TensorView nmap_view, store.Get(w + ".nested_quant_map"));
    TESSERA_ASSIGN_OR_RETURN(io::TensorView nabs_view, store.Get(w + ".nested_absmax"));
    const std::vector<float> nmap = Floats(nmap_view), nabs = Floats(nabs_view);
    absmax.resize(absmax_view.bytes.size());
    for (size_t i = 0; i < absmax.size(); ++i) {
      // bnb: dequantize_blockwise (code[c] · absmax2 in f32), then += offset in f32.
      const float product = nmap[absmax_view.bytes[i]] * nabs[i / state.nested_blocksize];
      absmax[i] = product + state.nested_offset;
    }
  } else {
    absmax = Floats(absmax_view);
  }
  const int64_t groups = k / state.group;
  scales->resize(static_cast<size_t>(n * groups));
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t g = 0; g < groups; ++g) {
      (*scales)[r * groups + g] = absmax[(r * k + g * state.group) / state.blocksize];
    }
  }
  return absl::OkStatus();
}

void QuantizeBnbNf4Row(const float* x, int64_t k, int64_t block, uint8_t* codes, float* absmax) {
  float midpoints[15];
  for (int i = 0; i < 15; ++i) midpoints[i] = (kBnbNf4Codebook[i] + kBnbNf4Codebook[i + 1]) / 2;
  std::memset(codes, 0, static_cast<size_t>(k / 2));
  // Per block: the scaled values, then each code as a count of midpoints below, midpoint by
  // midpoint over the block (loops the compiler vectorizes: a scalar search per weight took
  // 10 s to quantize TinyLlama-1.1B).
  thread_local std::vector<float> scaled;
  thread_local std::vector<uint8_t> count;
  scaled.resize(static_cast<size_t>(block));
  count.resize(static_cast<size_t>(block));
  for (int64_t b = 0; b < k / block; ++b) {
    const float* xb = x + b * block;
    float amax = 0.0f;
    for (int64_t i = 0; i < block; ++i) amax = std::max(amax, std::fabs(xb[i]));
    absmax[b] = amax;
    const float inverse = 1.0f / std::max(amax, 1e-38f);
    for (int64_t i = 0; i < block; ++i) {
      scaled[i] = std::clamp(xb[i] * inverse, -1.0f, 1.0f);
      count[i] = 0;
    }
    for (const float m : midpoints) {
      for (int64_t i = 0; i < block; ++i) count[i] += m < scaled[i] ? 1 : 0;
    }
    for (int64_t i = 0; i < block; ++i) {
      const int64_t e = b * block + i;
      codes[e / 2] |= static_cast<uint8_t>(e % 2 == 0 ? count[i] : count[i] << 4);
    }
  }
}

}  // namespace tessera::quant
