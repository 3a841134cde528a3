#include "engine/model/model_source.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"
#include "engine/io/renamed_tensor_store.h"
#include "engine/model/expert_stack_store.h"

namespace tessera::model {
namespace {

// llama.cpp stacks a MoE layer's experts into blk.L.ffn_{gate,up,down}_exps.weight, [E, N, K];
// each expert's slab gets the per-expert name the decoder asks for (and early Mixtral files use
// as tensors of their own, which then need nothing here).
absl::Status ExposeStackedExperts(const ModelConfig& c, io::GgufFile& file) {
  if (c.num_experts == 0) return absl::OkStatus();
  const WeightNames names(NamingScheme::kGguf);
  const int64_t H = c.hidden_size, F = c.moe_intermediate_size;
  for (int layer = 0; layer < static_cast<int>(c.num_layers); ++layer) {
    for (LayerTensor t : {LayerTensor::kGate, LayerTensor::kUp, LayerTensor::kDown}) {
      const std::string stacked = WeightNames::StackedExperts(layer, t);
      const io::GgufTensorInfo* info = file.FindInfo(stacked);
      if (info == nullptr) continue;  // per-expert tensors, or missing: the loader says which
      // GGUF dims [K, N, experts]: checked here, where the message can name the metadata.
      const std::vector<int64_t> want = t == LayerTensor::kDown
                                            ? std::vector<int64_t>{F, H, c.num_experts}
                                            : std::vector<int64_t>{H, F, c.num_experts};
      if (info->dims != want) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor '", stacked, "' has GGUF dims [", absl::StrJoin(info->dims, ", "),
            "], expected [", absl::StrJoin(want, ", "),
            "] from embedding_length, the experts' feed-forward length and expert_count"));
      }
      std::vector<std::string> slices;
      for (int e = 0; e < static_cast<int>(c.num_experts); ++e) {
        slices.push_back(names.Expert(layer, e, t, c.moe_naming));
      }
      TESSERA_RETURN_IF_ERROR(file.AddOuterSlices(stacked, slices));
      // gpt-oss: the experts' biases, stacked [E, N] (GGUF dims [N, experts]).
      const std::string biases = WeightNames::StackedExpertBiases(layer, t);
      if (!c.moe_biases) continue;
      const io::GgufTensorInfo* bias_info = file.FindInfo(biases);
      if (bias_info == nullptr) {
        return absl::NotFoundError(absl::StrCat("tensor '", biases, "' is missing (",
                                                c.architecture_name, " experts carry biases)"));
      }
      const std::vector<int64_t> want_bias{want[1], c.num_experts};
      if (bias_info->dims != want_bias) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor '", biases, "' has GGUF dims [", absl::StrJoin(bias_info->dims, ", "),
            "], expected [", absl::StrJoin(want_bias, ", "), "]"));
      }
      slices.clear();
      for (int e = 0; e < static_cast<int>(c.num_experts); ++e) {
        slices.push_back(names.ExpertBias(layer, e, t, c.moe_naming));
      }
      TESSERA_RETURN_IF_ERROR(file.AddOuterSlices(biases, slices));
    }
  }
  return absl::OkStatus();
}

// A rotation-factor tensor of rope_dim / 2 positive finite values, named in every error.
absl::StatusOr<std::vector<float>> ReadRopeFactors(const io::GgufFile& g, const std::string& name,
                                                   int64_t pairs) {
  TESSERA_ASSIGN_OR_RETURN(io::TensorView view, g.Get(name));
  TESSERA_ASSIGN_OR_RETURN(std::vector<float> factors, io::ToFloat32(view));
  if (static_cast<int64_t>(factors.size()) != pairs) {
    return absl::InvalidArgumentError(absl::StrCat("tensor '", name, "' has ", factors.size(),
                                                   " values, expected ", pairs,
                                                   " (rope.dimension_count / 2)"));
  }
  for (float f : factors) {
    if (!(f > 0) || !std::isfinite(f)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor '", name, "' holds a factor that is not a positive finite number"));
    }
  }
  return factors;
}

// llama.cpp's Phi-3 LongRoPE (convert_hf_to_gguf's Phi3MiniModel): rope_factors_short / _long,
// the long ones where a sequence's context exceeds rope.scaling.original_context_length (default
// context_length; llama.cpp compares its per-sequence context), cos and sin times
// rope.scaling.attn_factor (default 1).
absl::Status ReadLongRopeFactors(const io::GgufFile& g, ModelConfig& c) {
  const bool has_short = g.Contains("rope_factors_short.weight");
  const bool has_long = g.Contains("rope_factors_long.weight");
  if (has_short != has_long) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor '", has_short ? "rope_factors_long.weight" : "rope_factors_short.weight",
        "' is missing beside its LongRoPE twin"));
  }
  if (!has_short) return absl::OkStatus();
  RopeScaling& r = c.rope_scaling;
  r.type = RopeScaling::Type::kLongRope;
  TESSERA_ASSIGN_OR_RETURN(r.short_factor,
                           ReadRopeFactors(g, "rope_factors_short.weight", c.rope_dim / 2));
  TESSERA_ASSIGN_OR_RETURN(r.long_factor,
                           ReadRopeFactors(g, "rope_factors_long.weight", c.rope_dim / 2));
  const std::string arch = c.architecture_name;
  auto original = g.metadata().GetUint(arch + ".rope.scaling.original_context_length");
  r.original_max_position = original.ok() ? static_cast<int64_t>(*original) : c.max_context;
  auto attn = g.metadata().GetFloat(arch + ".rope.scaling.attn_factor");
  r.attention_factor = attn.ok() ? *attn : 1.0;
  return c.Validate();
}

}  // namespace

absl::StatusOr<ModelSource> ModelSource::Open(const std::string& path) {
  ModelSource src;
  src.path = path;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    const std::string cfg = (std::filesystem::path(path) / "config.json").string();
    std::ifstream in(cfg);
    if (!in) return absl::NotFoundError(absl::StrCat(path, " has no config.json"));
    std::stringstream ss;
    ss << in.rdbuf();
    src.config_json = ss.str();
    TESSERA_ASSIGN_OR_RETURN(src.config, ModelConfigFromHfJson(src.config_json));
    TESSERA_ASSIGN_OR_RETURN(src.store, io::OpenTensorStore(path));
    if (src.config.language_model_of_multimodal) {
      // The Hub's layout and transformers 5's; vision_tower.* / multi_modal_projector.* hidden.
      TESSERA_ASSIGN_OR_RETURN(
          src.store, io::RenamedTensorStore::Create(std::move(src.store),
                                                    {{"language_model.model.", "model."},
                                                     {"model.language_model.", "model."},
                                                     {"language_model.lm_head.", "lm_head."},
                                                     {"lm_head.", "lm_head."}}));
    }
    if (src.config.moe_naming == MoeNaming::kGptOss ||
        src.config.moe_naming == MoeNaming::kGraniteMoe) {
      TESSERA_ASSIGN_OR_RETURN(src.store,
                               ExpertStackStore::Create(std::move(src.store),
                                                        src.config.moe_naming == MoeNaming::kGptOss
                                                            ? ExpertStackLayout::kGptOss
                                                            : ExpertStackLayout::kGraniteMoe,
                                                        src.config.num_experts));
    }
    src.naming = NamingScheme::kHf;
    return src;
  }
  TESSERA_ASSIGN_OR_RETURN(src.store, io::OpenTensorStore(path));
  io::GgufFile* g = dynamic_cast<io::GgufFile*>(src.store.get());
  if (g == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        path, " is a bare safetensors file; a model needs an HF directory (config.json) or GGUF"));
  }
  TESSERA_ASSIGN_OR_RETURN(src.config, ModelConfigFromGguf(g->metadata()));
  src.naming = NamingScheme::kGguf;
  TESSERA_RETURN_IF_ERROR(ExposeStackedExperts(src.config, *g));
  // Rope frequency factors: llama.cpp's rope_freqs (Llama 3.1+), and Phi-3's LongRoPE factors.
  TESSERA_RETURN_IF_ERROR(ReadLongRopeFactors(*g, src.config));
  if (g->Contains("rope_freqs.weight")) {
    TESSERA_ASSIGN_OR_RETURN(src.config.rope_freq_factors,
                             ReadRopeFactors(*g, "rope_freqs.weight", src.config.rope_dim / 2));
  }
  if (src.config.fused_qkv) {  // phi3 files with attn_q / attn_k / attn_v run them unfused
    src.config.fused_qkv = g->Contains(WeightNames(NamingScheme::kGguf).Layer(0, LayerTensor::kQkv));
  }
  return src;
}

}  // namespace tessera::model
