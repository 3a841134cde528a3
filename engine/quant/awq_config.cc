// AutoAWQ GEMM (quant-formats.md §7.3): 4-bit, qweight [K, N/8] packed along N in the AWQ
// nibble order, qzeros [K/g, N/8] as stored, scales [K/g, N].
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/quant/config_parsers.h"
#include "engine/quant/name_match.h"

namespace tessera::quant {
namespace {

class AwqConfig : public QuantConfig {
 public:
  std::string method() const override { return "awq"; }
  std::string Summary() const override {
    return absl::StrFormat("awq %s 4-bit group %d%s", version_, group_size_, zero_point_ ? " zero_point" : "");
  }
  absl::StatusOr<LinearSpec> Resolve(const std::string& module, const std::string& prefix, int64_t n,
                                     int64_t k, const io::TensorStore& store) const override {
    if (module == "lm_head" || ModulesToNotConvertMatch(ignored_, module) ||
        !store.Contains(prefix + ".qweight")) {
      TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
      s.reason = "checkpoint: awq leaves this layer unquantized";
      return s;
    }
    if (k % group_size_ != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "layer %s: group size %d does not divide K = %d", module, group_size_, k));
    }
    if (n % 8 != 0) {
      return absl::InvalidArgumentError(absl::StrFormat("layer %s: AWQ needs N (%d) to be a multiple of 8", module, n));
    }
    const int64_t groups = k / group_size_;
    TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".qweight", {io::DType::kI32}, {k, n / 8}).status());
    TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + ".qzeros", {io::DType::kI32}, {groups, n / 8}).status());
    TESSERA_ASSIGN_OR_RETURN(io::TensorView sc, parse::RequireTensor(store, module, prefix + ".scales", {}, {groups, n}));
    LinearSpec s;
    s.module = module;
    s.n = n;
    s.k = k;
    s.weight_format = WeightFormat::kInt4Awq;
    s.weight_scale = ScaleGranularity::kGroup;
    s.group_size = group_size_;
    s.weight_scale_dtype = std::string(io::DTypeName(sc.dtype));
    s.zero_point = zero_point_ ? ZeroPointKind::kInt : ZeroPointKind::kNone;
    s.source = "awq gemm";
    s.reason = absl::StrFormat("checkpoint: awq gemm 4-bit group %d", group_size_);
    return s;
  }

  int64_t group_size_ = 128;
  bool zero_point_ = true;
  std::string version_ = "gemm";
  std::vector<std::string> ignored_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<QuantConfig>> ParseAwq(const OrderedJson& qc, const io::TensorStore& /*store*/) {
  auto c = std::make_unique<AwqConfig>();
  const int64_t bits = parse::IntOr(qc, "bits", parse::IntOr(qc, "w_bit", 4));
  c->group_size_ = parse::IntOr(qc, "group_size", parse::IntOr(qc, "q_group_size", 128));
  c->zero_point_ = parse::BoolOr(qc, "zero_point", true);
  c->version_ = absl::AsciiStrToLower(parse::StringOr(qc, "version", "gemm"));
  c->ignored_ = parse::StringList(qc, "modules_to_not_convert");
  if (bits != 4) return absl::InvalidArgumentError(absl::StrFormat("awq config: bits %d is not 4", bits));
  if (c->version_ != "gemm") {
    return absl::InvalidArgumentError(absl::StrCat("awq config: version '", c->version_, "' is not supported (gemm)"));
  }
  if (c->group_size_ <= 0) return absl::InvalidArgumentError("awq config: group_size must be > 0");
  return std::unique_ptr<QuantConfig>(std::move(c));
}

}  // namespace tessera::quant
