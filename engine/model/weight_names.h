// Where each decoder weight lives in a checkpoint. HF directories and GGUF files name the same
// tensors differently (model.layers.3.self_attn.q_proj.weight vs blk.3.attn_q.weight); the decoder
// asks by role and layer, and the precision plan reports HF module names for both.
#ifndef TESSERA_ENGINE_MODEL_WEIGHT_NAMES_H_
#define TESSERA_ENGINE_MODEL_WEIGHT_NAMES_H_

#include <string>

namespace tessera::model {

enum class LayerTensor {
  kAttnNorm,
  kQ,
  kK,
  kV,
  kO,
  kQBias,
  kKBias,
  kVBias,
  kQNorm,
  kKNorm,
  kFfnNorm,
  kGate,
  kUp,
  kDown,
  kQkv,
  kGateUp,  // phi3's fused projections (GGUF attn_qkv; ffn_up holding gate and up)
  // gemma2 / gemma3's sandwich norms: the MLP input norm (HF pre_feedforward_layernorm, GGUF
  // ffn_norm) and the norms of the attention and MLP outputs (HF post_attention_layernorm /
  // post_feedforward_layernorm, GGUF post_attention_norm / post_ffw_norm). HF's
  // post_attention_layernorm is kFfnNorm everywhere else.
  kPreFfnNorm,
  kAttnPostNorm,
  kFfnPostNorm,
  kOBias,  // gpt-oss's attention output bias
  kSinks,  // gpt-oss's per-head attention sink logits
};

enum class NamingScheme { kHf, kGguf };

// How an HF checkpoint names a sparse MoE block's router and experts: Qwen's
// mlp.gate / mlp.experts.E.{gate,up,down}_proj, or Mixtral's block_sparse_moe.gate /
// block_sparse_moe.experts.E.{w1,w3,w2}, gpt-oss's mlp.router and its experts stacked in
// mlp.experts.{gate_up_proj,down_proj}[_blocks,_scales,_bias], which ModelSource shows per
// expert as mlp.experts.E.gate_up_proj (gate and up rows interleaved) and mlp.experts.E.down_proj,
// or Granite MoE's block_sparse_moe.router.layer and block_sparse_moe.{input,output}_linear
// stacks, shown as block_sparse_moe.experts.E.{input_linear ([gate; up]), output_linear}
// (ExpertStackStore).
enum class MoeNaming { kQwen, kMixtral, kGptOss, kGraniteMoe };

class WeightNames {
 public:
  explicit WeightNames(NamingScheme scheme) : scheme_(scheme) {}
  std::string Embedding() const;
  std::string FinalNorm() const;
  std::string LmHead() const;
  std::string Layer(int layer, LayerTensor t) const;
  // The HF module name of a linear layer ("model.layers.3.self_attn.q_proj"), whatever the scheme.
  static std::string ModuleName(int layer, LayerTensor t);

  // A sparse MoE layer's router weight, [num_experts, hidden] (GGUF: blk.L.ffn_gate_inp.weight).
  std::string Router(int layer, MoeNaming moe) const;
  // gpt-oss's router bias, [num_experts] (GGUF blk.L.ffn_gate_inp.bias).
  std::string RouterBias(int layer, MoeNaming moe) const;
  // Expert e's gate, up or down weight (t is kGate, kUp or kDown). In GGUF this is
  // blk.L.ffn_gate.E.weight: a tensor of its own in early Mixtral files, otherwise the slab E of
  // the stacked blk.L.ffn_gate_exps.weight (StackedExperts) that ModelSource exposes by this name.
  std::string Expert(int layer, int expert, LayerTensor t, MoeNaming moe) const;
  // GGUF's stacked [num_experts, N, K] tensor of every expert's t.
  static std::string StackedExperts(int layer, LayerTensor t);
  // gpt-oss: expert e's bias of t ("...experts.5.gate_up_proj.bias", GGUF blk.L.ffn_gate.5.bias:
  // the slab of the stacked [num_experts, N] blk.L.ffn_gate_exps.bias, StackedExpertBiases).
  std::string ExpertBias(int layer, int expert, LayerTensor t, MoeNaming moe) const;
  static std::string StackedExpertBiases(int layer, LayerTensor t);
  // The HF module name of expert e's t ("model.layers.3.mlp.experts.5.up_proj"), whatever the
  // scheme, so plan rules read the same for both containers.
  static std::string ExpertModuleName(int layer, int expert, LayerTensor t, MoeNaming moe);

  // qwen2_moe's shared expert: its gate / up / down weight (GGUF blk.L.ffn_gate_shexp.weight) and
  // the [1, hidden] gate of its output (GGUF blk.L.ffn_gate_inp_shexp.weight).
  std::string SharedExpert(int layer, LayerTensor t) const;
  std::string SharedExpertGate(int layer) const;
  // "model.layers.3.mlp.shared_expert.up_proj", whatever the scheme.
  static std::string SharedExpertModuleName(int layer, LayerTensor t);

 private:
  NamingScheme scheme_;
};

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_WEIGHT_NAMES_H_
