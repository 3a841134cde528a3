#include "engine/model/plan_linear_factory.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/backend/cpu/dense_linear.h"
#include "engine/backend/cpu/quantized_linear.h"
#include "engine/common/status_macros.h"
#include "engine/io/mapped_file.h"
#include "engine/quant/packed_weights.h"
#include "kernels/numeric/half.h"

namespace tessera::model {

std::vector<quant::LinearModule> DecoderLinearModules(const ModelConfig& c, NamingScheme naming,
                                                      const io::TensorStore& store) {
  const WeightNames names(naming);
  std::vector<quant::LinearModule> out;
  auto strip = [](std::string s) { return s.substr(0, s.size() - 7); };  // ".weight"
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string qkv = absl::StrCat("model.layers.", i, ".self_attn.qkv_proj");
    const std::string gate_up = absl::StrCat("model.layers.", i, ".mlp.gate_up_proj");
    struct Item { LayerTensor t; int64_t n, k; std::string group; };
    const Item items[] = {
        {LayerTensor::kQ, c.q_dim(), c.hidden_size, qkv},
        {LayerTensor::kK, c.kv_dim(), c.hidden_size, qkv},
        {LayerTensor::kV, c.kv_dim(), c.hidden_size, qkv},
        {LayerTensor::kO, c.hidden_size, c.q_dim(), ""},
        {LayerTensor::kGate, c.intermediate_size, c.hidden_size, gate_up},
        {LayerTensor::kUp, c.intermediate_size, c.hidden_size, gate_up},
        {LayerTensor::kDown, c.hidden_size, c.intermediate_size, ""},
    };
    const bool moe = c.IsMoeLayer(i);
    if (c.fused_qkv) {
      out.push_back({WeightNames::ModuleName(i, LayerTensor::kQkv),
                     strip(names.Layer(i, LayerTensor::kQkv)), c.q_dim() + 2 * c.kv_dim(),
                     c.hidden_size, ""});
    }
    if (c.fused_gate_up && !moe) {
      out.push_back({WeightNames::ModuleName(i, LayerTensor::kGateUp),
                     strip(names.Layer(i, LayerTensor::kGateUp)), 2 * c.intermediate_size,
                     c.hidden_size, ""});
    }
    for (const Item& it : items) {
      const bool mlp = it.t == LayerTensor::kGate || it.t == LayerTensor::kUp ||
                       it.t == LayerTensor::kDown;
      const bool qkv = it.t == LayerTensor::kQ || it.t == LayerTensor::kK || it.t == LayerTensor::kV;
      if ((moe && mlp) || (c.fused_qkv && qkv)) continue;
      if (c.fused_gate_up && (it.t == LayerTensor::kGate || it.t == LayerTensor::kUp)) continue;
      out.push_back({WeightNames::ModuleName(i, it.t), strip(names.Layer(i, it.t)), it.n, it.k, it.group});
    }
    if (!moe) continue;
    // Each expert's gate / up / down (vLLM fuses an expert's gate and up as w13; gpt-oss's HF
    // checkpoints store them fused, interleaved); the router stays as stored and is not in the
    // plan.
    const int64_t F = c.moe_intermediate_size, H = c.hidden_size;
    for (int e = 0; e < c.num_experts; ++e) {
      const std::string w13 = absl::StrCat("model.layers.", i, ".experts.", e, ".w13");
      std::vector<Item> experts = {{LayerTensor::kGate, F, H, w13},
                                   {LayerTensor::kUp, F, H, w13},
                                   {LayerTensor::kDown, H, F, ""}};
      if (c.moe_naming == MoeNaming::kGptOss || c.moe_naming == MoeNaming::kGraniteMoe) {
        experts = {{LayerTensor::kGateUp, 2 * F, H, ""}, {LayerTensor::kDown, H, F, ""}};
      }
      for (const Item& it : experts) {
        out.push_back({WeightNames::ExpertModuleName(i, e, it.t, c.moe_naming),
                       strip(names.Expert(i, e, it.t, c.moe_naming)), it.n, it.k, it.group});
      }
    }
    if (c.shared_expert_intermediate_size > 0) {
      const int64_t S = c.shared_expert_intermediate_size;
      const std::string gate_up = absl::StrCat("model.layers.", i, ".mlp.shared_expert.gate_up_proj");
      const Item shared[] = {{LayerTensor::kGate, S, H, gate_up},
                             {LayerTensor::kUp, S, H, gate_up},
                             {LayerTensor::kDown, H, S, ""}};
      for (const Item& it : shared) {
        out.push_back({WeightNames::SharedExpertModuleName(i, it.t),
                       strip(names.SharedExpert(i, it.t)), it.n, it.k, it.group});
      }
    }
  }
  const bool tied = c.tie_word_embeddings || !store.Contains(names.LmHead());
  out.push_back({"lm_head", strip(tied ? names.Embedding() : names.LmHead()), c.vocab_size,
                 c.hidden_size, ""});
  return out;
}

absl::StatusOr<std::unique_ptr<backend::Linear>> PlanLinearFactory::Create(
    const std::string& module, const std::string& weight_name, const io::TensorStore& store,
    std::vector<float> bias) {
  const quant::LinearSpec* spec = plan_.Find(module);
  if (spec == nullptr) return absl::InternalError(absl::StrCat("no precision plan entry for ", module));
  const std::string prefix = weight_name.substr(0, weight_name.size() - 7);
  using quant::WeightFormat;
  const bool dense = quant::IsHighPrecision(spec->weight_format) ||
                     (spec->weight_format >= WeightFormat::kGgufQ8_0);
  if (dense && spec->source.rfind("dequantized from", 0) != 0) {
    TESSERA_ASSIGN_OR_RETURN(io::TensorView view, store.Get(weight_name));
    const backend::cpu::DenseActivations acts =
        spec->activation == quant::ActivationFormat::kInt8Block32
            ? backend::cpu::DenseActivations::kInt8Block32
        : spec->activation == quant::ActivationFormat::kBf16 ? backend::cpu::DenseActivations::kBf16
                                                             : backend::cpu::DenseActivations::kFloat;
    TESSERA_ASSIGN_OR_RETURN(auto l, backend::cpu::DenseLinear::Create(view, std::move(bias), pool_,
                                                                       acts));
    if (l->reads_own_copy()) store.Release(weight_name);
    return std::unique_ptr<backend::Linear>(std::move(l));
  }
  if (dense) {
    // bf16 on a quantized layer: dequantize the stored weights once, keep them as bf16.
    TESSERA_ASSIGN_OR_RETURN(quant::LinearSpec stored,
                             quant_config_.Resolve(module, prefix, spec->n, spec->k, store));
    TESSERA_ASSIGN_OR_RETURN(quant::PackedWeights packed, quant::LoadPackedWeights(stored, prefix, store));
    std::vector<uint16_t> bf16(spec->n * spec->k);
    std::vector<float> row(spec->k);
    for (int64_t r = 0; r < spec->n; ++r) {
      packed.DequantizeRow(r, row.data());
      for (int64_t i = 0; i < spec->k; ++i) bf16[r * spec->k + i] = numeric::FloatToBf16(row[i]);
    }
    // The stored codes are dead weight now too (whole pages inside them; a no-op for codes the
    // loader converted into memory of its own).
    if (packed.q != nullptr) {
      const int64_t code_bytes = spec->n * spec->k * quant::WeightBits(stored.weight_format) / 8;
      io::ReleaseMappedPages({packed.q, static_cast<size_t>(code_bytes)});
    }
    owned_bf16_.push_back(std::move(bf16));
    io::TensorView view;
    view.name = absl::StrCat(module, " (dequantized)");
    view.dtype = io::DType::kBF16;
    view.shape = {spec->n, spec->k};
    view.bytes = absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(owned_bf16_.back().data()),
                                           owned_bf16_.back().size() * 2);
    TESSERA_ASSIGN_OR_RETURN(auto l, backend::cpu::DenseLinear::Create(view, std::move(bias), pool_));
    // bf16 repacked into the layer's panels (AVX-512 BF16, or AVX2's FMA panels): the dequantized
    // copy is dead weight.
    if (l->reads_own_copy()) std::vector<uint16_t>().swap(owned_bf16_.back());
    return std::unique_ptr<backend::Linear>(std::move(l));
  }
  quant::PackedWeights packed;
  if (spec->source == "online RTN") {
    TESSERA_ASSIGN_OR_RETURN(io::TensorView view, store.Get(weight_name));
    TESSERA_ASSIGN_OR_RETURN(std::vector<float> w, io::ToFloat32(view, pool_));
    TESSERA_ASSIGN_OR_RETURN(packed, quant::QuantizeOnline(*spec, w, pool_));
    io::ReleaseMappedPages(view.bytes);  // the layer keeps its own quantized copy
    store.Release(weight_name);
  } else {
    TESSERA_ASSIGN_OR_RETURN(packed, quant::LoadPackedWeights(*spec, prefix, store));
  }
  auto layer =
      std::make_unique<backend::cpu::QuantizedLinear>(std::move(packed), std::move(bias), pool_);
  layer->DropReferenceCodes();  // Forward reads the layer's tiles only, where it has them
  return std::unique_ptr<backend::Linear>(std::move(layer));
}

}  // namespace tessera::model
