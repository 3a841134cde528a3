#include "engine/model/decoder_model.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/backend/cpu/column_split.h"
#include "engine/backend/cpu/dense_linear.h"
#include "engine/common/status_macros.h"
#include "engine/model/decoder_attention.h"
#include "engine/model/kv_cache_scales.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fast/fast_elementwise.h"
#include "kernels/cpu/matmul_reference.h"
#include "kernels/cpu/rope.h"

namespace tessera::model {
namespace {

namespace kc = kernels::cpu;
namespace kf = kernels::cpu::fast;

class DenseLinearFactory : public LinearFactory {
 public:
  explicit DenseLinearFactory(kc::ThreadPool* pool) : pool_(pool) {}
  absl::StatusOr<std::unique_ptr<backend::Linear>> Create(const std::string& /*module*/,
                                                          const std::string& weight_name,
                                                          const io::TensorStore& store,
                                                          std::vector<float> bias) override {
    TESSERA_ASSIGN_OR_RETURN(io::TensorView view, store.Get(weight_name));
    TESSERA_ASSIGN_OR_RETURN(auto linear,
                             backend::cpu::DenseLinear::Create(view, std::move(bias), pool_));
    return std::unique_ptr<backend::Linear>(std::move(linear));
  }

 private:
  kc::ThreadPool* pool_;
};

absl::StatusOr<std::vector<float>> LoadVector(const io::TensorStore& store, const std::string& name,
                                              int64_t expected) {
  TESSERA_ASSIGN_OR_RETURN(io::TensorView view, store.Get(name));
  if (view.numel() != expected) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s' has shape %s, expected %d values", name, view.ShapeString(), expected));
  }
  return io::ToFloat32(view);
}

// An RMSNorm weight, with Gemma's (1 + w) folded in for HF checkpoints (offset 1; computed in
// f32 as transformers' `1.0 + self.weight.float()`).
absl::StatusOr<std::vector<float>> LoadNorm(const io::TensorStore& store, const std::string& name,
                                            int64_t expected, float offset) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<float> w, LoadVector(store, name, expected));
  if (offset != 0.0f) {
    for (float& x : w) x = offset + x;
  }
  return w;
}

absl::Status ExpectLinearShape(const backend::Linear& l, const std::string& name, int64_t n,
                               int64_t k) {
  if (l.out_features() != n || l.in_features() != k) {
    return absl::InvalidArgumentError(absl::StrFormat("tensor '%s' is [%d, %d], expected [%d, %d]",
                                                      name, l.out_features(), l.in_features(), n,
                                                      k));
  }
  return absl::OkStatus();
}

// A sparse MoE layer: the router as stored (exact f32 activations: it picks the experts, and
// vLLM and llama.cpp keep it unquantized too), each expert's gate / up / down from the factory
// under their HF module names, so the plan covers them as any other linear layer.
absl::StatusOr<std::unique_ptr<MoeBlock>> LoadMoeBlock(const ModelConfig& c, int layer,
                                                       const WeightNames& names,
                                                       const io::TensorStore& store,
                                                       LinearFactory& factory, kc::ThreadPool* pool) {
  const std::string router_name = names.Router(layer, c.moe_naming);
  TESSERA_ASSIGN_OR_RETURN(io::TensorView router_view, store.Get(router_name));
  std::vector<float> router_bias;
  if (c.moe_biases) {
    TESSERA_ASSIGN_OR_RETURN(
        router_bias, LoadVector(store, names.RouterBias(layer, c.moe_naming), c.num_experts));
  }
  TESSERA_ASSIGN_OR_RETURN(
      auto router, backend::cpu::DenseLinear::Create(router_view, std::move(router_bias), pool));
  TESSERA_RETURN_IF_ERROR(ExpectLinearShape(*router, router_name, c.num_experts, c.hidden_size));
  std::vector<ExpertMlp> experts(c.num_experts);
  const int64_t H = c.hidden_size, F = c.moe_intermediate_size;
  for (int e = 0; e < c.num_experts; ++e) {
    auto make = [&](LayerTensor t, int64_t n, int64_t k,
                    std::unique_ptr<backend::Linear>* out) -> absl::Status {
      // The factory knows which tensors the layer's format needs (a quantized checkpoint has
      // no plain `.weight`); its error names the tensor, this adds where it sits.
      const std::string wname = names.Expert(layer, e, t, c.moe_naming);
      std::vector<float> bias;
      if (c.moe_biases) {
        TESSERA_ASSIGN_OR_RETURN(bias,
                                 LoadVector(store, names.ExpertBias(layer, e, t, c.moe_naming), n));
      }
      auto made = factory.Create(WeightNames::ExpertModuleName(layer, e, t, c.moe_naming), wname,
                                 store, std::move(bias));
      if (!made.ok()) {
        return absl::Status(made.status().code(),
                            absl::StrFormat("%s (expert %d of %d in layer %d)",
                                            made.status().message(), e, c.num_experts, layer));
      }
      *out = std::move(*made);
      return ExpectLinearShape(**out, wname, n, k);
    };
    if (c.moe_naming == MoeNaming::kGptOss || c.moe_naming == MoeNaming::kGraniteMoe) {
      // gate and up in one projection (interleaved, or Granite's halves)
      TESSERA_RETURN_IF_ERROR(make(LayerTensor::kGateUp, 2 * F, H, &experts[e].gate_up));
    } else {
      TESSERA_RETURN_IF_ERROR(make(LayerTensor::kGate, F, H, &experts[e].gate));
      TESSERA_RETURN_IF_ERROR(make(LayerTensor::kUp, F, H, &experts[e].up));
    }
    TESSERA_RETURN_IF_ERROR(make(LayerTensor::kDown, H, F, &experts[e].down));
  }
  auto block = std::make_unique<MoeBlock>(std::move(router), std::move(experts),
                                          c.num_experts_per_tok, c.norm_topk_prob);
  if (c.moe_naming == MoeNaming::kGraniteMoe) block->SetGateUpHalves();
  if (c.mlp_activation == MlpActivation::kSwiGluClamped) {
    block->SetClampedSwiGlu(static_cast<float>(c.swiglu_alpha), static_cast<float>(c.swiglu_limit));
  }
  if (c.shared_expert_intermediate_size > 0) {
    // qwen2_moe's shared expert through the plan like the others; its output gate [1, hidden] as
    // stored, like the router (llama.cpp stores it as a vector, {hidden}).
    const int64_t S = c.shared_expert_intermediate_size;
    ExpertMlp shared;
    for (auto [t, n, k, out] : {std::tuple(LayerTensor::kGate, S, H, &shared.gate),
                                std::tuple(LayerTensor::kUp, S, H, &shared.up),
                                std::tuple(LayerTensor::kDown, H, S, &shared.down)}) {
      const std::string wname = names.SharedExpert(layer, t);
      TESSERA_ASSIGN_OR_RETURN(
          *out, factory.Create(WeightNames::SharedExpertModuleName(layer, t), wname, store, {}));
      TESSERA_RETURN_IF_ERROR(ExpectLinearShape(**out, wname, n, k));
    }
    const std::string gate_name = names.SharedExpertGate(layer);
    TESSERA_ASSIGN_OR_RETURN(io::TensorView gate_view, store.Get(gate_name));
    if (gate_view.rank() == 1) gate_view.shape = {1, gate_view.shape[0]};
    TESSERA_ASSIGN_OR_RETURN(auto gate, backend::cpu::DenseLinear::Create(gate_view, {}, pool));
    TESSERA_RETURN_IF_ERROR(ExpectLinearShape(*gate, gate_name, 1, c.hidden_size));
    block->SetSharedExpert(std::move(shared), std::move(gate));
  }
  return block;
}

}  // namespace

std::unique_ptr<LinearFactory> MakeDenseLinearFactory(kc::ThreadPool* pool) {
  return std::make_unique<DenseLinearFactory>(pool);
}

absl::StatusOr<std::unique_ptr<DecoderModel>> DecoderModel::Load(
    const ModelConfig& config, const io::TensorStore& store, NamingScheme naming,
    LinearFactory& factory, kc::ThreadPool* pool, runtime::KvCacheFormat kv_format) {
  TESSERA_RETURN_IF_ERROR(config.Validate());
  auto m = std::make_unique<DecoderModel>();
  m->kv_format_ = kv_format;
  m->config_ = config;
  m->pool_ = pool;
  m->inv_freq_ = RopeInverseFrequencies(config);
  if (config.sliding_rope_theta > 0) m->inv_freq_sliding_ = RopeInverseFrequencies(config, true);
  if (config.rope_scaling.type == RopeScaling::Type::kLongRope) {
    m->inv_freq_long_ = RopeInverseFrequencies(config, false, /*long_factors=*/true);
  }
  const WeightNames names(naming);
  const ModelConfig& c = config;

  TESSERA_ASSIGN_OR_RETURN(m->embedding_, store.Get(names.Embedding()));
  TESSERA_RETURN_IF_ERROR(m->embedding_.ExpectShape({c.vocab_size, c.hidden_size}));
  TESSERA_RETURN_IF_ERROR(backend::cpu::EncodingForDType(m->embedding_).status());
  const float offset = c.norm_weight_offset;
  TESSERA_ASSIGN_OR_RETURN(m->final_norm_,
                           LoadNorm(store, names.FinalNorm(), c.hidden_size, offset));

  auto linear = [&](int layer, LayerTensor t, std::optional<LayerTensor> bias_t, int64_t n,
                    int64_t k) -> absl::StatusOr<std::unique_ptr<backend::Linear>> {
    // A bias present is used (Llama's attention_bias covers o_proj too); a missing one is an
    // error where the architecture has it.
    std::vector<float> bias;
    const bool required = bias_t == LayerTensor::kOBias ? c.o_proj_bias : c.attention_bias;
    if (bias_t && store.Contains(names.Layer(layer, *bias_t))) {
      TESSERA_ASSIGN_OR_RETURN(bias, LoadVector(store, names.Layer(layer, *bias_t), n));
    } else if (bias_t && required) {
      return absl::NotFoundError(absl::StrCat("tensor '", names.Layer(layer, *bias_t),
                                              "' is missing (this architecture has attention "
                                              "projection biases)"));
    }
    const std::string wname = names.Layer(layer, t);
    TESSERA_ASSIGN_OR_RETURN(
        auto l, factory.Create(WeightNames::ModuleName(layer, t), wname, store, std::move(bias)));
    TESSERA_RETURN_IF_ERROR(ExpectLinearShape(*l, wname, n, k));
    return l;
  };

  for (int i = 0; i < c.num_layers; ++i) {
    Layer L;
    auto norm = [&](LayerTensor t, int64_t n, std::vector<float>* out) -> absl::Status {
      TESSERA_ASSIGN_OR_RETURN(*out, LoadNorm(store, names.Layer(i, t), n, offset));
      return absl::OkStatus();
    };
    if (c.pre_norms) {
      TESSERA_RETURN_IF_ERROR(norm(LayerTensor::kAttnNorm, c.hidden_size, &L.attn_norm));
    }
    if (c.sandwich_norms) {  // gemma2 / gemma3 (and olmo2 / olmo3, output norms only)
      if (c.pre_norms) {
        TESSERA_RETURN_IF_ERROR(norm(LayerTensor::kPreFfnNorm, c.hidden_size, &L.ffn_norm));
      }
      TESSERA_RETURN_IF_ERROR(norm(LayerTensor::kAttnPostNorm, c.hidden_size, &L.attn_post_norm));
      TESSERA_RETURN_IF_ERROR(norm(LayerTensor::kFfnPostNorm, c.hidden_size, &L.ffn_post_norm));
    } else {
      // gpt-oss GGUF files name the MLP's input norm post_attention_norm (HF:
      // post_attention_layernorm, kFfnNorm's name there too).
      TESSERA_RETURN_IF_ERROR(norm(c.architecture == Architecture::kGptOss
                                       ? LayerTensor::kAttnPostNorm
                                       : LayerTensor::kFfnNorm,
                                   c.hidden_size, &L.ffn_norm));
    }
    if (c.attention_sinks) {
      TESSERA_ASSIGN_OR_RETURN(L.sinks,
                               LoadVector(store, names.Layer(i, LayerTensor::kSinks), c.num_heads));
    }
    if (c.qk_norm || c.qk_norm_whole) {
      // Per head (qwen3, gemma3: head_dim weights) or over the whole projection (olmoe).
      TESSERA_RETURN_IF_ERROR(
          norm(LayerTensor::kQNorm, c.qk_norm_whole ? c.q_dim() : c.head_dim, &L.q_norm));
      TESSERA_RETURN_IF_ERROR(
          norm(LayerTensor::kKNorm, c.qk_norm_whole ? c.kv_dim() : c.head_dim, &L.k_norm));
    }
    if (c.fused_qkv) {
      TESSERA_ASSIGN_OR_RETURN(L.qkv, linear(i, LayerTensor::kQkv, std::nullopt,
                                             c.q_dim() + 2 * c.kv_dim(), c.hidden_size));
    } else {
      TESSERA_ASSIGN_OR_RETURN(
          L.q, linear(i, LayerTensor::kQ, LayerTensor::kQBias, c.q_dim(), c.hidden_size));
      TESSERA_ASSIGN_OR_RETURN(
          L.k, linear(i, LayerTensor::kK, LayerTensor::kKBias, c.kv_dim(), c.hidden_size));
      TESSERA_ASSIGN_OR_RETURN(
          L.v, linear(i, LayerTensor::kV, LayerTensor::kVBias, c.kv_dim(), c.hidden_size));
    }
    TESSERA_ASSIGN_OR_RETURN(
        L.o, linear(i, LayerTensor::kO, LayerTensor::kOBias, c.hidden_size, c.q_dim()));
    if (c.IsMoeLayer(i)) {
      TESSERA_ASSIGN_OR_RETURN(L.moe, LoadMoeBlock(c, i, names, store, factory, pool));
    } else if (c.fused_gate_up) {
      TESSERA_ASSIGN_OR_RETURN(L.gate_up, linear(i, LayerTensor::kGateUp, std::nullopt,
                                                 2 * c.intermediate_size, c.hidden_size));
      TESSERA_ASSIGN_OR_RETURN(
          L.down, linear(i, LayerTensor::kDown, std::nullopt, c.hidden_size, c.intermediate_size));
    } else {
      TESSERA_ASSIGN_OR_RETURN(
          L.gate, linear(i, LayerTensor::kGate, std::nullopt, c.intermediate_size, c.hidden_size));
      TESSERA_ASSIGN_OR_RETURN(
          L.up, linear(i, LayerTensor::kUp, std::nullopt, c.intermediate_size, c.hidden_size));
      TESSERA_ASSIGN_OR_RETURN(
          L.down, linear(i, LayerTensor::kDown, std::nullopt, c.hidden_size, c.intermediate_size));
    }
    if (kv_format == runtime::KvCacheFormat::kFp8E4m3) {
      TESSERA_ASSIGN_OR_RETURN(KvCacheScales kvs, ReadKvCacheScales(store, i));
      L.k_scale = kvs.k_scale;
      L.v_scale = kvs.v_scale;
    }
    m->layers_.push_back(std::move(L));
  }
  // An absent lm_head means tied embeddings (GGUF omits output.weight; HF sets the flag).
  const std::string head = (c.tie_word_embeddings || !store.Contains(names.LmHead()))
                               ? names.Embedding()
                               : names.LmHead();
  TESSERA_ASSIGN_OR_RETURN(m->lm_head_, factory.Create("lm_head", head, store, {}));
  TESSERA_RETURN_IF_ERROR(ExpectLinearShape(*m->lm_head_, head, c.vocab_size, c.hidden_size));
  return m;
}

absl::Status DecoderModel::EmbedToken(int32_t token, float* out) const {
  if (token < 0 || token >= config_.vocab_size) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "token id %d is outside the vocabulary [0, %d)", token, config_.vocab_size));
  }
  auto enc = backend::cpu::EncodingForDType(embedding_);
  kc::DecodeWeightRow(*enc, embedding_.bytes.data(), config_.hidden_size, token, out);
  if (config_.embedding_multiplier != 1.0) {  // granite
    const float m = static_cast<float>(config_.embedding_multiplier);
    for (int64_t i = 0; i < config_.hidden_size; ++i) out[i] *= m;
  }
  return absl::OkStatus();
}

absl::Status DecoderModel::Forward(absl::Span<const SequenceChunk> chunks, runtime::KvCache& cache,
                                   std::vector<float>* logits) {
  const ModelConfig& c = config_;
  // Validate everything before touching the cache, so a bad request changes nothing.
  if (cache.format() != kv_format_) {
    return absl::FailedPreconditionError(
        "KV cache format differs from the one the model was loaded for (kv_cache_format())");
  }
  TESSERA_ASSIGN_OR_RETURN(const int64_t total, ValidateChunksAndReserve(chunks, c, cache));

  // Row bookkeeping: which chunk and position each new token is.
  StepRows rows{chunks, std::vector<int>(total), std::vector<int64_t>(total)};
  {
    int64_t r = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      for (size_t j = 0; j < chunks[i].tokens.size(); ++j, ++r) {
        rows.chunk[r] = static_cast<int>(i);
        rows.position[r] = chunks[i].kv->length + static_cast<int64_t>(j);
        rows.max_context = std::max(rows.max_context, rows.position[r] + 1);
      }
    }
  }

  const int64_t H = c.hidden_size, Q = c.q_dim(), KV = c.kv_dim();
  // The dense MLP's width where any layer has one (a MoE block keeps its own buffers).
  const int64_t F = std::any_of(layers_.begin(), layers_.end(),
                                [](const Layer& L) { return L.moe == nullptr; })
                        ? c.intermediate_size
                        : 0;
  // `up` only where a layer keeps separate gate / up (phi3's fused output lands in `fused`).
  const int64_t F_up =
      std::any_of(layers_.begin(), layers_.end(), [](const Layer& L) { return L.up != nullptr; })
          ? F
          : 0;
  std::vector<float> fused;  // phi3's fused projections' outputs
  std::vector<float> h(total * H), xn(total * H), q(total * Q), k(total * KV), v(total * KV),
      attn(total * Q), tmp(total * H), gate(total * F), up(total * F_up);
  {
    int64_t r = 0;
    for (const SequenceChunk& ch : chunks) {
      for (int32_t t : ch.tokens) TESSERA_RETURN_IF_ERROR(EmbedToken(t, h.data() + (r++) * H));
    }
  }
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float scale = c.attention_scale > 0 ? static_cast<float>(c.attention_scale)
                                            : 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  // granite: each block's output times residual_multiplier, rounded before the residual add as
  // transformers computes `residual + hidden * residual_multiplier`. gemma2 / gemma3: each
  // block's output RMS-normed first (its post norm).
  const float residual = static_cast<float>(c.residual_multiplier);
  auto add_residual = [&](float* out, const std::vector<float>& post_norm) {
    if (!post_norm.empty()) kf::FastRmsNorm(out, post_norm.data(), total, H, eps, out);
    if (residual != 1.0f) {
      for (int64_t i = 0; i < total * H; ++i) out[i] *= residual;
    }
    kf::FastAddInPlace(h.data(), out, total * H);
  };
  const kc::RopePairing pairing = c.rope_style == RopeStyle::kRotateHalf
                                      ? kc::RopePairing::kRotateHalf
                                      : kc::RopePairing::kInterleaved;
  // Each row's RoPE cos / sin, once for all layers and for its q and k heads (and for Gemma 3's
  // sliding layers, their own base).
  const int64_t half = c.rope_dim / 2;
  // LongRoPE: each row with its sequence's factors (UsesLongRopeFactors).
  auto rope_table = [&](const std::vector<float>& inv_freq, float attention_factor,
                        std::vector<float>& cs, std::vector<float>& sn) {
    cs.resize(total * half);
    sn.resize(total * half);
    for (int64_t r = 0; r < total; ++r) {
      const bool long_rope = &inv_freq == &inv_freq_ && !inv_freq_long_.empty() &&
                             c.UsesLongRopeFactors(rows.chunks[rows.chunk[r]].kv->max_length);
      kc::RopeCosSin(rows.position[r], (long_rope ? inv_freq_long_ : inv_freq).data(), half,
                     cs.data() + r * half, sn.data() + r * half);
    }
    if (attention_factor != 1.0f) {  // YaRN: cos and sin scaled, as transformers' rotary_emb
      for (float& x : cs) x *= attention_factor;
      for (float& x : sn) x *= attention_factor;
    }
  };
  std::vector<float> rope_cos, rope_sin, sliding_cos, sliding_sin;
  rope_table(inv_freq_, static_cast<float>(c.rope_scaling.attention_factor), rope_cos, rope_sin);
  if (!inv_freq_sliding_.empty()) rope_table(inv_freq_sliding_, 1.0f, sliding_cos, sliding_sin);
  const kc::GeluApprox gelu =
      c.mlp_activation == MlpActivation::kGeluErf ? kc::GeluApprox::kErf : kc::GeluApprox::kTanh;
  // The MLP's gated activation, into `out` (which may alias gate_in).
  auto activate = [&](const float* gate_in, const float* up_in, int64_t n, float* out) {
    if (c.mlp_activation == MlpActivation::kSilu) {
      kf::FastSwiGlu(gate_in, up_in, n, out);
    } else if (c.mlp_activation == MlpActivation::kSwiGluClamped) {
      kf::FastSwiGluClamped(gate_in, up_in, n, static_cast<float>(c.swiglu_alpha),
                            static_cast<float>(c.swiglu_limit), out);
    } else {
      kf::FastGeluGlu(gate_in, up_in, n, gelu, out);
    }
  };

  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& L = layers_[li];
    const bool sliding = c.IsSlidingLayer(static_cast<int64_t>(li));
    // The block's input: normed, or (olmo2 / olmo3) the residual stream itself.
    const float* x = h.data();
    if (!L.attn_norm.empty()) {
      kf::FastRmsNorm(h.data(), L.attn_norm.data(), total, H, eps, xn.data());
      x = xn.data();
    }
    // q, k and v read the same input: their columns run in one parallel pass.
    if (L.qkv != nullptr) {
      // phi3: one [q; k; v] matrix, its output split per row.
      const int64_t QKV = Q + 2 * KV;
      fused.resize(total * QKV);
      L.qkv->Forward(x, total, fused.data());
      for (int64_t r = 0; r < total; ++r) {
        const float* f = fused.data() + r * QKV;
        std::copy_n(f, Q, q.data() + r * Q);
        std::copy_n(f + Q, KV, k.data() + r * KV);
        std::copy_n(f + Q + KV, KV, v.data() + r * KV);
      }
    } else {
      backend::cpu::ForwardSharedInput({L.q.get(), L.k.get(), L.v.get()}, x, total,
                                       {q.data(), k.data(), v.data()}, pool_);
    }
    const bool local_rope = sliding && !sliding_cos.empty();
    const bool rope = c.UsesRope(static_cast<int64_t>(li));  // SmolLM3's NoPE layers do not
    for (int64_t r = 0; r < total; ++r) {
      float* qr = q.data() + r * Q;
      float* kr = k.data() + r * KV;
      if (c.qk_norm) {
        kf::FastRmsNorm(qr, L.q_norm.data(), c.num_heads, c.head_dim, eps, qr);
        kf::FastRmsNorm(kr, L.k_norm.data(), c.num_kv_heads, c.head_dim, eps, kr);
      } else if (c.qk_norm_whole) {
        kf::FastRmsNorm(qr, L.q_norm.data(), 1, Q, eps, qr);
        kf::FastRmsNorm(kr, L.k_norm.data(), 1, KV, eps, kr);
      }
      if (c.clip_qkv > 0) {  // olmoe: after the norms, before RoPE (transformers' order)
        const float clip = static_cast<float>(c.clip_qkv);
        float* vr_mut = v.data() + r * KV;
        for (int64_t j = 0; j < Q; ++j) qr[j] = std::clamp(qr[j], -clip, clip);
        for (int64_t j = 0; j < KV; ++j) {
          kr[j] = std::clamp(kr[j], -clip, clip);
          vr_mut[j] = std::clamp(vr_mut[j], -clip, clip);
        }
      }
      const float* rc = (local_rope ? sliding_cos : rope_cos).data() + r * half;
      const float* rs = (local_rope ? sliding_sin : rope_sin).data() + r * half;
      if (rope) {
        kf::FastApplyRope(qr, c.num_heads, c.head_dim, c.rope_dim, rc, rs, pairing);
        kf::FastApplyRope(kr, c.num_kv_heads, c.head_dim, c.rope_dim, rc, rs, pairing);
      }
    }
    const LayerAttention layer{static_cast<int64_t>(li),
                               scale,
                               static_cast<float>(c.attn_logit_softcap),
                               sliding ? c.sliding_window : 0,
                               L.k_scale,
                               L.v_scale,
                               L.sinks.empty() ? nullptr : L.sinks.data()};
    AppendKv(c, rows, layer, k.data(), v.data(), cache);
    Attend(c, rows, layer, q.data(), cache, pool_, attn.data());
    L.o->Forward(attn.data(), total, tmp.data());
    add_residual(tmp.data(), L.attn_post_norm);
    x = h.data();
    if (!L.ffn_norm.empty()) {
      kf::FastRmsNorm(h.data(), L.ffn_norm.data(), total, H, eps, xn.data());
      x = xn.data();
    }
    if (L.moe != nullptr) {
      L.moe->Forward(x, total, tmp.data(), pool_);
    } else if (L.gate_up != nullptr) {
      // phi3: [gate; up] in one matrix; transformers' chunk(2) then up * silu(gate).
      fused.resize(total * 2 * F);
      L.gate_up->Forward(x, total, fused.data());
      for (int64_t r = 0; r < total; ++r) {
        const float* f = fused.data() + r * 2 * F;
        activate(f, f + F, F, gate.data() + r * F);
      }
      L.down->Forward(gate.data(), total, tmp.data());
    } else {
      backend::cpu::ForwardSharedInput({L.gate.get(), L.up.get()}, x, total,
                                       {gate.data(), up.data()}, pool_);
      activate(gate.data(), up.data(), total * F, gate.data());
      L.down->Forward(gate.data(), total, tmp.data());
    }
    add_residual(tmp.data(), L.ffn_post_norm);
  }
  for (const SequenceChunk& ch : chunks) ch.kv->length += static_cast<int64_t>(ch.tokens.size());

  // Logits for the requested rows only.
  std::vector<int64_t> out_rows;
  {
    int64_t r = 0;
    for (const SequenceChunk& ch : chunks) {
      const int64_t n = static_cast<int64_t>(ch.tokens.size());
      if (ch.all_logits) {
        for (int64_t j = 0; j < n; ++j) out_rows.push_back(r + j);
      } else if (ch.last_logits) {
        out_rows.push_back(r + n - 1);
      }
      r += n;
    }
  }
  std::vector<float> sel(out_rows.size() * H);
  for (size_t i = 0; i < out_rows.size(); ++i) {
    kf::FastRmsNorm(h.data() + out_rows[i] * H, final_norm_.data(), 1, H, eps, sel.data() + i * H);
  }
  logits->assign(out_rows.size() * c.vocab_size, 0.0f);
  if (!out_rows.empty())
    lm_head_->Forward(sel.data(), static_cast<int64_t>(out_rows.size()), logits->data());
  if (c.logits_scaling != 1.0) {  // granite: a division, as transformers writes it
    const float div = static_cast<float>(c.logits_scaling);
    for (float& l : *logits) l /= div;
  }
  if (c.final_logit_softcap > 0) {  // gemma2: cap · tanh(logits / cap), in transformers' order
    const float cap = static_cast<float>(c.final_logit_softcap);
    for (float& l : *logits) l = std::tanh(l / cap) * cap;
  }
  return absl::OkStatus();
}

}  // namespace tessera::model
