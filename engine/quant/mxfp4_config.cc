// `mxfp4` (gpt-oss naming, quant-formats.md §9.2) for dense linear layers: `<module>_blocks`
// U8 [N, K/32, 16] and `<module>_scales` U8 E8M0 [N, K/32]; modules_to_not_convert as regex
// prefixes (the transformers mxfp4 integration).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/quant/config_parsers.h"
#include "engine/quant/name_match.h"

namespace tessera::quant {
namespace {

class Mxfp4Config : public QuantConfig {
 public:
  std::string method() const override { return "mxfp4"; }
  absl::StatusOr<LinearSpec> Resolve(const std::string& module, const std::string& prefix, int64_t n,
                                     int64_t k, const io::TensorStore& store) const override {
    bool skip = !store.Contains(prefix + "_blocks");
    for (const std::string& e : ignored_) skip |= RegexMatchFromStart(e, module);
    if (skip) {
      TESSERA_ASSIGN_OR_RETURN(LinearSpec s, DenseSpec(module, prefix, n, k, store));
      s.reason = "checkpoint: mxfp4 modules_to_not_convert";
      return s;
    }
    if (k % 32 != 0) return absl::InvalidArgumentError(absl::StrFormat("layer %s: MXFP4 K = %d is not a multiple of 32", module, k));
    TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + "_blocks", {io::DType::kU8}, {n, k / 32, 16}).status());
    TESSERA_RETURN_IF_ERROR(parse::RequireTensor(store, module, prefix + "_scales", {io::DType::kU8}, {n, k / 32}).status());
    return parse::Mxfp4Spec(module, n, k, "mxfp4 gpt-oss",
                            "checkpoint: mxfp4 (gpt-oss blocks/scales)");
  }
  std::vector<std::string> ignored_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<QuantConfig>> ParseMxfp4(const OrderedJson& qc, const io::TensorStore& /*store*/) {
  auto c = std::make_unique<Mxfp4Config>();
  c->ignored_ = parse::StringList(qc, "modules_to_not_convert");
  return std::unique_ptr<QuantConfig>(std::move(c));
}

}  // namespace tessera::quant
