// The built-in demo model: what `tessera serve` runs when no --model is given, so the server, its
// API, the scheduler and the deployment can be tried (and tested) with no checkpoint on disk.
// It is a small Llama (hidden 64, 2 layers, 4 heads, 2 KV heads, FFN 128, context 2048) whose
// weights are generated in memory from a fixed seed, and a byte-level tokenizer (one token per
// byte plus <unk>, <s>, </s>). The weights are random, so its text is gibberish by design; the
// numbers it computes are real and deterministic, which is what tests need. To keep the output
// readable, the output head only ever favours printable ASCII bytes and newline: the rows of
// every other token are zero, so greedy decoding picks a printable byte.
//
// Everything about it is labelled "demo" (ModelConfig::architecture_name, the tokenizer's
// Describe(), and the server's GetModelInfo.is_demo).
#ifndef TESSERA_ENGINE_MODEL_DEMO_MODEL_H_
#define TESSERA_ENGINE_MODEL_DEMO_MODEL_H_

#include <cstdint>
#include <memory>

#include "engine/io/tensor_store.h"
#include "engine/model/model_config.h"
#include "engine/model/weight_names.h"
#include "engine/tokenizer/tokenizer.h"

namespace tessera::model {

// Token ids of the demo vocabulary: three specials, then byte b is id kDemoFirstByteId + b.
inline constexpr int32_t kDemoUnkId = 0;
inline constexpr int32_t kDemoBosId = 1;
inline constexpr int32_t kDemoEosId = 2;
inline constexpr int32_t kDemoFirstByteId = 3;
inline constexpr int32_t kDemoVocabSize = kDemoFirstByteId + 256;

// The architecture ("tessera-demo-llama").
ModelConfig DemoModelConfig();

// The weights of `config` under HF names (NamingScheme::kHf), every tensor f32 and owned by the
// store. The same seed gives bit-identical weights on every machine (no std:: distributions).
std::unique_ptr<io::TensorStore> MakeDemoTensorStore(const ModelConfig& config, uint64_t seed = 42);

// The byte-level tokenizer of the demo vocabulary. Encode with add_special prepends <s>.
std::unique_ptr<tokenizer::Tokenizer> MakeDemoTokenizer();

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_DEMO_MODEL_H_
