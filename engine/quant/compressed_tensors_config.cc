// compressed-tensors (quant-formats.md §5.3, §6.1, §7.2, §8.3, §9.3): config groups with targets
// and ignore lists, each with weight / input-activation QuantArgs and a format that may differ per
// group under `mixed-precision`.
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/quant/config_parsers.h"
#include "engine/quant/name_match.h"

namespace tessera::quant {
namespace {

using parse::CeilDiv;

struct QuantArgs {
  int64_t num_bits = 8;
  std::string type = "int";  // int | float
  std::string strategy;      // tensor | channel | group | block | token | tensor_group
  int64_t group_size = 0;
  int64_t block_n = 0, block_k = 0;
  bool symmetric = true;
  std::string dynamic = "false";  // "true" | "false" | "local"
  std::string actorder;           // "" | group | weight
};

absl::StatusOr<QuantArgs> ParseArgs(const OrderedJson& j, const std::string& where) {
  QuantArgs a;
  a.num_bits = parse::IntOr(j, "num_bits", 8);
  a.type = absl::AsciiStrToLower(parse::StringOr(j, "type", "int"));
  a.strategy = absl::AsciiStrToLower(parse::StringOr(j, "strategy", ""));
  a.group_size = parse::IntOr(j, "group_size", 0);
  a.symmetric = parse::BoolOr(j, "symmetric", true);
  if (auto d = j.find("dynamic"); d != j.end()) {
    if (d->is_boolean()) a.dynamic = d->get<bool>() ? "true" : "false";
    if (d->is_string()) a.dynamic = d->get<std::string>();
  }
  if (auto ao = j.find("actorder"); ao != j.end() && ao->is_string()) {
    a.actorder = ao->get<std::string>();
    if (a.actorder == "dynamic") a.actorder = "group";
    if (a.actorder == "static") a.actorder = "weight";
  }
  if (auto bs = j.find("block_structure"); bs != j.end()) {
    if (bs->is_array() && bs->size() == 2 && (*bs)[0].is_number_integer() &&
        (*bs)[1].is_number_integer() && (*bs)[0].get<int64_t>() > 0 && (*bs)[1].get<int64_t>() > 0) {
      a.block_n = (*bs)[0].get<int64_t>();
      a.block_k = (*bs)[1].get<int64_t>();
    } else if (bs->is_string()) {
      std::string s = bs->get<std::string>();  // legacy "128x128"
      if (sscanf(s.c_str(), "%ldx%ld", &a.block_n, &a.block_k) != 2) {
        return absl::InvalidArgumentError(absl::StrCat(where, ".block_structure '", s, "' is not NxK"));
      }
    } else if (!bs->is_null()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".block_structure must be [rows, cols] positive integers or \"NxK\""));
    }
  }
  if (a.strategy.empty()) {
    a.strategy = a.group_size > 0 ? "group" : (a.group_size == -1 ? "channel" : "tensor");
  }
  if (a.type != "int" && a.type != "float") {
    return absl::InvalidArgumentError(absl::StrCat(where, ".type '", a.type, "' is not int or float"));
  }
  return a;
}

struct Group {
  std::string name;
  std::vector<std::string> targets;
  std::optional<QuantArgs> weights, inputs;
  std::string format;
};

class CompressedTensorsConfig : public QuantConfig {
 public:
  std::string method() const override { return "compressed-tensors"; }
  std::string Summary() const override {
    return absl::StrFormat("compressed-tensors (%s), %d config group(s)", format_, groups_.size());
  }

  absl::StatusOr<LinearSpec> Resolve(const std::string& module, const std::string& prefix, int64_t n,
                                     int64_t k, const io::TensorStore& store) const override {
    for (const std::string& ig : ignore_) {
      if (CompressedTensorsTargetMatch(ig, module) && (absl::StartsWith(ig, "re:") || ig == module)) {
        TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
        s.reason = absl::StrCat("checkpoint: compressed-tensors ignore '", ig, "'");
        return s;
      }
    }
    // vLLM order: name / regex targets first, then class-name targets.
    const Group* match = nullptr;
    for (int pass = 0; pass < 2 && match == nullptr; ++pass) {
      for (const Group& g : groups_) {
        for (const std::string& t : g.targets) {
          const bool by_name = absl::StartsWith(t, "re:") || t == module;
          if ((pass == 0) == by_name && CompressedTensorsTargetMatch(t, module)) {
            match = &g;
            break;
          }
        }
        if (match) break;
      }
    }
    if (match == nullptr || !match->weights || IsStoredDense(prefix, store)) {
      TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
      s.reason = match == nullptr ? "checkpoint: compressed-tensors, no config group targets it"
                                  : "checkpoint: compressed-tensors stores this layer unquantized";
      return s;
    }
    return FromGroup(*match, module, prefix, n, k, store);
  }

  absl::StatusOr<LinearSpec> FromGroup(const Group& g, const std::string& module,
                                       const std::string& prefix, int64_t n, int64_t k,
                                       const io::TensorStore& store) const {
    const QuantArgs& w = *g.weights;
    const std::string fmt = g.format.empty() ? format_ : g.format;
    LinearSpec s;
    s.module = module;
    s.n = n;
    s.k = k;
    s.source = absl::StrCat("compressed-tensors ", fmt);
    s.reason = absl::StrFormat("checkpoint: compressed-tensors %s (%s)", g.name, fmt);
    auto scale_dtype = [&](const std::string& name) {
      auto v = store.Get(name);
      s.weight_scale_dtype = v.ok() ? std::string(io::DTypeName(v->dtype)) : "";
    };
    // Activations.
    if (g.inputs) {
      const QuantArgs& a = *g.inputs;
      s.activation_origin = a.dynamic == "false" ? ScaleOrigin::kStatic : ScaleOrigin::kDynamic;
      s.activation_asymmetric = !a.symmetric;
      if (a.strategy == "tensor") s.activation_scale = ScaleGranularity::kTensor;
      else if (a.strategy == "token") s.activation_scale = ScaleGranularity::kColwise;
      else if (a.strategy == "group") {
        s.activation_scale = ScaleGranularity::kGroup;
        s.activation_group = a.group_size;
      } else if (a.strategy == "tensor_group") {
        s.activation_scale = ScaleGranularity::kGroup;
        s.activation_group = a.group_size;
      } else {
        return absl::InvalidArgumentError(absl::StrFormat(
            "layer %s: input_activations strategy '%s' is not supported", module, a.strategy));
      }
      if (a.type == "float" && a.num_bits == 8) s.activation = ActivationFormat::kFp8;
      else if (a.type == "int" && a.num_bits == 8) s.activation = ActivationFormat::kInt8;
      else if (a.type == "float" && a.num_bits == 4) s.activation = ActivationFormat::kNvfp4;
      else {
        return absl::InvalidArgumentError(absl::StrFormat(
            "layer %s: input_activations of %s %d bits are not supported", module, a.type, a.num_bits));
      }
      if (s.activation_origin == ScaleOrigin::kStatic && s.activation != ActivationFormat::kNvfp4) {
        TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".input_scale"));
      }
    }
    if (w.type == "float" && w.num_bits == 8) {
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight", {io::DType::kF8E4M3}, {n, k}).status());
      s.weight_format = WeightFormat::kFp8E4m3;
      scale_dtype(prefix + ".weight_scale");
      if (w.strategy == "tensor") {
        s.weight_scale = ScaleGranularity::kTensor;
        TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".weight_scale"));
      } else if (w.strategy == "channel") {
        s.weight_scale = ScaleGranularity::kRowwise;
        TESSERA_ASSIGN_OR_RETURN(io::TensorView ws, parse::RequireTensor(store, module, prefix + ".weight_scale", {}));
        if (ws.numel() != n) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "layer %s: weight_scale has shape %s, expected [%d, 1]", module, ws.ShapeString(), n));
        }
      } else if (w.strategy == "block") {
        s.weight_scale = ScaleGranularity::kBlock;
        s.block_n = w.block_n > 0 ? w.block_n : 128;
        s.block_k = w.block_k > 0 ? w.block_k : 128;
        TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight_scale", {},
                                                     {CeilDiv(n, s.block_n), CeilDiv(k, s.block_k)}).status());
      } else {
        return absl::InvalidArgumentError(absl::StrFormat("layer %s: float8 weight strategy '%s' is not supported", module, w.strategy));
      }
      return s;
    }
    if (w.type == "int" && w.num_bits == 8 && fmt != "pack-quantized") {
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight", {io::DType::kI8}, {n, k}).status());
      s.weight_format = WeightFormat::kInt8;
      scale_dtype(prefix + ".weight_scale");
      TESSERA_ASSIGN_OR_RETURN(io::TensorView ws, parse::RequireTensor(store, module, prefix + ".weight_scale", {}));
      if (ws.numel() == 1) s.weight_scale = ScaleGranularity::kTensor;
      else if (ws.numel() == n) s.weight_scale = ScaleGranularity::kRowwise;
      else return absl::InvalidArgumentError(absl::StrFormat("layer %s: weight_scale has shape %s, expected [%d, 1] or [1]", module, ws.ShapeString(), n));
      if (!w.symmetric) return absl::InvalidArgumentError(absl::StrFormat("layer %s: int8 weights must be symmetric", module));
      return s;
    }
    if (w.type == "int" && (w.num_bits == 4 || w.num_bits == 8)) {
      const int64_t pf = 32 / w.num_bits;
      s.weight_format = w.num_bits == 4 ? WeightFormat::kInt4 : WeightFormat::kInt8;
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight_packed", {io::DType::kI32}, {n, CeilDiv(k, pf)}).status());
      int64_t groups = 1;
      if (w.strategy == "group") {
        if (w.group_size <= 0 || k % w.group_size != 0) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "layer %s: group size %d does not divide K = %d", module, w.group_size, k));
        }
        groups = k / w.group_size;
        s.weight_scale = ScaleGranularity::kGroup;
        s.group_size = w.group_size;
      } else if (w.strategy == "channel") {
        s.weight_scale = ScaleGranularity::kRowwise;
        s.group_size = -1;
      } else {
        return absl::InvalidArgumentError(absl::StrFormat("layer %s: pack-quantized strategy '%s' is not supported", module, w.strategy));
      }
      scale_dtype(prefix + ".weight_scale");
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight_scale", {}, {n, groups}).status());
      if (!w.symmetric) {
        s.zero_point = ZeroPointKind::kInt;
        TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight_zero_point", {io::DType::kI32}, {CeilDiv(n, pf), groups}).status());
      }
      if (store.Contains(prefix + ".weight_g_idx")) {
        TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight_g_idx", {io::DType::kI32, io::DType::kI64}, {k}).status());
        s.act_order = true;
      }
      return s;
    }
    if (w.type == "float" && w.num_bits == 4) {
      TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight_packed", {io::DType::kU8}, {n, k / 2}).status());
      const bool mx = fmt == "mxfp4-pack-quantized" || (w.group_size == 32 && w.strategy == "group");
      if (mx) {
        if (k % 32 != 0) return absl::InvalidArgumentError(absl::StrFormat("layer %s: MXFP4 K = %d is not a multiple of 32", module, k));
        s.weight_format = WeightFormat::kMxfp4;
        s.weight_scale = ScaleGranularity::kGroup;
        s.group_size = 32;
        s.weight_scale_dtype = "E8M0";
        TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".weight_scale", {io::DType::kU8, io::DType::kF8E8M0}, {n, k / 32}).status());
        return s;
      }
      if (k % 16 != 0) return absl::InvalidArgumentError(absl::StrFormat("layer %s: NVFP4 K = %d is not a multiple of 16", module, k));
      s.weight_format = WeightFormat::kNvfp4;
      s.weight_scale = ScaleGranularity::kGroup;
      s.group_size = 16;
      s.weight_scale_dtype = "F8_E4M3";
      s.global_scale = GlobalScaleConvention::kDivisor;
      TESSERA_ASSIGN_OR_RETURN(io::TensorView block_scales, parse::RequireTensor(store, module, prefix + ".weight_scale", {io::DType::kF8E4M3}, {n, k / 16}));
      s.nvfp4_scales_signed_or_nan = parse::HasSignedOrNanUe4m3(block_scales);
      TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".weight_global_scale"));
      if (s.activation == ActivationFormat::kNvfp4) {
        TESSERA_RETURN_IF_ERROR(parse::RequireScalar(store, module, prefix + ".input_global_scale"));
        s.activation_origin = ScaleOrigin::kStatic;  // global static, block scales dynamic ("local")
      }
      return s;
    }
    return absl::InvalidArgumentError(absl::StrFormat(
        "layer %s: compressed-tensors weights of %s %d bits (%s) are not supported", module, w.type,
        w.num_bits, fmt));
  }

  std::string format_;
  std::vector<Group> groups_;
  std::vector<std::string> ignore_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<QuantConfig>> ParseCompressedTensors(const OrderedJson& qc,
                                                                    const io::TensorStore& /*store*/) {
  auto c = std::make_unique<CompressedTensorsConfig>();
  c->format_ = parse::StringOr(qc, "format", "dense");
  c->ignore_ = parse::StringList(qc, "ignore");
  auto groups = qc.find("config_groups");
  if (groups == qc.end() || !groups->is_object()) {
    return absl::InvalidArgumentError("quantization_config.config_groups is missing");
  }
  for (auto it = groups->begin(); it != groups->end(); ++it) {
    Group g;
    g.name = it.key();
    const std::string where = absl::StrCat("config_groups.", g.name);
    g.targets = parse::StringList(it.value(), "targets");
    g.format = parse::StringOr(it.value(), "format", "");
    if (auto wj = it.value().find("weights"); wj != it.value().end() && wj->is_object()) {
      TESSERA_ASSIGN_OR_RETURN(g.weights, ParseArgs(*wj, where + ".weights"));
    }
    if (auto ij = it.value().find("input_activations"); ij != it.value().end() && ij->is_object()) {
      TESSERA_ASSIGN_OR_RETURN(g.inputs, ParseArgs(*ij, where + ".input_activations"));
    }
    c->groups_.push_back(std::move(g));
  }
  return std::unique_ptr<QuantConfig>(std::move(c));
}

}  // namespace tessera::quant
