// Where each decoder weight lives in a checkpoint. HF directories and GGUF files name the same
// tensors differently (model.layers.3.self_attn.q_proj.weight vs blk.3.attn_q.weight); the decoder
// asks by role and layer, and the precision plan reports HF module names for both.
#ifndef TESSERA_ENGINE_MODEL_WEIGHT_NAMES_H_
#define TESSERA_ENGINE_MODEL_WEIGHT_NAMES_H_

#include <string>

namespace tessera::model {

enum class LayerTensor {
  kAttnNorm, kQ, kK, kV, kO, kQBias, kKBias, kVBias, kQNorm, kKNorm,
  kFfnNorm, kGate, kUp, kDown,
};

enum class NamingScheme { kHf, kGguf };

class WeightNames {
 public:
  explicit WeightNames(NamingScheme scheme) : scheme_(scheme) {}
  std::string Embedding() const;
  std::string FinalNorm() const;
  std::string LmHead() const;
  std::string Layer(int layer, LayerTensor t) const;
  // The HF module name of a linear layer ("model.layers.3.self_attn.q_proj"), whatever the scheme.
  static std::string ModuleName(int layer, LayerTensor t);

 private:
  NamingScheme scheme_;
};

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_WEIGHT_NAMES_H_
