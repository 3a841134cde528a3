// The tokenizer interface the engine and the server use: text to token ids (Encode), ids to
// text (Decode, and TokenBytes for the incremental detokenizer), plus the special ids the
// sampler and the stop logic need. Two loaders build one: LoadHfTokenizer reads a Hugging Face
// tokenizer.json (byte-level BPE or SentencePiece-style BPE with byte fallback), and
// LoadGgufTokenizer reads the vocabulary embedded in a GGUF file ("llama" SentencePiece-style
// and "gpt2" byte-level BPE vocabularies, behaving as llama.cpp's llama-vocab.cpp does).
// Both are assembled from the same parts (added-token splitter, normalizer, pre-tokenizer,
// BPE model, token decoder); see pipeline_tokenizer.h.
#ifndef TESSERA_ENGINE_TOKENIZER_TOKENIZER_H_
#define TESSERA_ENGINE_TOKENIZER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/io/gguf_metadata.h"

namespace tessera::tokenizer {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // add_special: add BOS (and/or EOS) the way the tokenizer's post-processor or config says
  // (HF: tokenizer.json post_processor, else tokenizer_config add_bos_token/add_eos_token;
  // GGUF: tokenizer.ggml.add_bos_token/add_eos_token, BOS by default for "llama" vocabs).
  // parse_special: control/special tokens written in the text become single tokens; when false
  // they are tokenized as plain text (user-defined, non-special added tokens always match).
  virtual absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text, bool add_special,
                                                      bool parse_special = true) const = 0;
  // Full decode. skip_special drops control tokens. Unknown ids are INVALID_ARGUMENT naming the
  // id. Invalid UTF-8 (e.g. a lone byte-fallback token) becomes U+FFFD.
  virtual absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                             bool skip_special) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual std::optional<int32_t> bos_id() const = 0;
  // EOS plus end-of-turn / end-of-message ids when the vocabulary has them.
  virtual std::vector<int32_t> eos_ids() const = 0;
  // Control tokens (GGUF token type 3; HF added tokens marked special).
  virtual bool IsSpecial(int32_t id) const = 0;
  // The vocabulary string, for display ("" for an id out of range).
  virtual std::string TokenText(int32_t id) const = 0;
  // The bytes this token contributes when decoded in the middle of a stream: byte-fallback
  // <0xNN> is that byte, byte-level BPE characters map back to their bytes, metaspace ▁ is a
  // space. May be an incomplete UTF-8 sequence. "" for an id out of range.
  virtual std::string TokenBytes(int32_t id) const = 0;
  // Whether decoding strips one leading space from the first piece of a sequence
  // (SentencePiece add_dummy_prefix, Metaspace prepend_scheme first/always, Strip decoders).
  virtual bool StripsLeadingSpace() const = 0;
  // E.g. "gguf llama (SentencePiece BPE), 32000 tokens".
  virtual std::string Describe() const = 0;
};

// Reads `directory`/tokenizer.json and, when present, tokenizer_config.json (BOS/EOS tokens and
// add_bos_token/add_eos_token when tokenizer.json has no post_processor).
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadHfTokenizer(const std::string& directory);

// Reads the tokenizer.ggml.* keys.
absl::StatusOr<std::unique_ptr<Tokenizer>> LoadGgufTokenizer(const io::GgufMetadata& metadata);

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_TOKENIZER_H_
