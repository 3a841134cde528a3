// The model step of a tokenizer: one pre-tokenized piece in, token ids out. Two algorithms
// cover the vocabularies we load: rank-ordered BPE merges (bpe_model.h: tokenizer.json "BPE",
// GGUF "gpt2") and SentencePiece's score-ordered merges (spm_model.h: GGUF "llama").
#ifndef TESSERA_ENGINE_TOKENIZER_MODEL_H_
#define TESSERA_ENGINE_TOKENIZER_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/tokenizer/vocab.h"

namespace tessera::tokenizer {

class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of `piece` to `out`. Never fails: characters the vocabulary lacks become
  // byte-fallback tokens, the unknown token, or nothing, as the model's rules say.
  virtual void Encode(const Vocab& vocab, absl::string_view piece,
                      std::vector<int32_t>* out) const = 0;
  virtual std::string Name() const = 0;
};

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_MODEL_H_
