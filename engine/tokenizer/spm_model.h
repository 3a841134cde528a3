// SentencePiece-style BPE as llama.cpp's llm_tokenizer_spm runs it for GGUF "llama"
// vocabularies: split into characters, repeatedly merge the adjacent pair whose concatenation is
// the vocabulary token with the highest score (leftmost on ties); a character that is not a
// token is spelled with <0xNN> byte tokens. Whitespace is already escaped to ▁ by the normalizer.
#ifndef TESSERA_ENGINE_TOKENIZER_SPM_MODEL_H_
#define TESSERA_ENGINE_TOKENIZER_SPM_MODEL_H_

#include <optional>
#include <string>
#include <vector>

#include "engine/tokenizer/model.h"

namespace tessera::tokenizer {

class SpmModel : public Model {
 public:
  explicit SpmModel(std::optional<int32_t> unk_id) : unk_id_(unk_id) {}
  void Encode(const Vocab& vocab, absl::string_view piece,
              std::vector<int32_t>* out) const override;
  std::string Name() const override { return "SentencePiece BPE"; }

 private:
  std::optional<int32_t> unk_id_;
};

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_SPM_MODEL_H_
