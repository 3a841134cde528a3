// The one Tokenizer implementation: both loaders describe a tokenizer as the same pipeline of
// parts, the way tokenizers structures tokenizer.json. Encode: added-token split -> normalizer
// (per raw fragment) -> pre-tokenizer -> model (per piece) -> BOS/EOS template. Decode: each
// token's bytes (TokenDecoding) concatenated, one leading space stripped where the format says
// so, invalid UTF-8 repaired. Keeping one implementation means the HF and GGUF paths cannot
// drift apart in how they treat special tokens, unknown ids or streaming.
#ifndef TESSERA_ENGINE_TOKENIZER_PIPELINE_TOKENIZER_H_
#define TESSERA_ENGINE_TOKENIZER_PIPELINE_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/tokenizer/added_tokens.h"
#include "engine/tokenizer/model.h"
#include "engine/tokenizer/normalizer.h"
#include "engine/tokenizer/pre_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "engine/tokenizer/vocab.h"

namespace tessera::tokenizer {

// How one token's text turns into bytes (tokenizer.json "decoder", or llama.cpp's
// token_to_piece for GGUF vocabularies).
struct TokenDecoding {
  bool byte_level = false;     // GPT-2 alphabet -> bytes (ByteLevel decoder)
  bool byte_fallback = false;  // "<0xNN>" -> the byte (ByteFallback decoder, GGUF byte tokens)
  // Literal replacements applied in order (Replace decoders, Metaspace's ▁ -> ' ').
  std::vector<std::pair<std::string, std::string>> replacements;
  bool strip_leading_space = false;  // Metaspace prepend / Strip(' ', 1, 0) / add_dummy_prefix
  // GGUF: control and user-defined tokens decode to their text unchanged (llama.cpp).
  bool raw_added_tokens = false;
};

struct PipelineParts {
  std::string description;  // Describe() without the token count
  Vocab vocab;
  std::vector<AddedToken> added_tokens;
  std::unique_ptr<Normalizer> normalizer;       // may be null
  std::unique_ptr<PreTokenizer> pre_tokenizer;  // may be null
  std::unique_ptr<Model> model;
  std::vector<int32_t> prefix_ids;  // added by Encode(add_special = true)
  std::vector<int32_t> suffix_ids;
  TokenDecoding decoding;
  std::optional<int32_t> bos_id;
  std::vector<int32_t> eos_ids;
};

class PipelineTokenizer : public Tokenizer {
 public:
  explicit PipelineTokenizer(PipelineParts parts);

  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text, bool add_special,
                                              bool parse_special) const override;
  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     bool skip_special) const override;
  int32_t vocab_size() const override { return parts_.vocab.size(); }
  std::optional<int32_t> bos_id() const override { return parts_.bos_id; }
  std::vector<int32_t> eos_ids() const override { return parts_.eos_ids; }
  bool IsSpecial(int32_t id) const override { return parts_.vocab.Has(id, kAttrControl); }
  std::string TokenText(int32_t id) const override;
  std::string TokenBytes(int32_t id) const override;
  bool StripsLeadingSpace() const override { return parts_.decoding.strip_leading_space; }
  std::string Describe() const override;

 private:
  PipelineParts parts_;
  AddedTokenSplitter splitter_;
};

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_PIPELINE_TOKENIZER_H_
