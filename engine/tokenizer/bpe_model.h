// Rank-ordered BPE as tokenizers' models::bpe and llama.cpp's llm_tokenizer_bpe run it: split the
// piece into characters, then repeatedly merge the adjacent pair with the lowest merge rank
// (leftmost first on ties) until no pair has a rank. Options cover tokenizer.json's
// byte_fallback (<0xNN> tokens for characters outside the vocabulary), unk_token with fuse_unk,
// and ignore_merges (a piece that is itself a token is taken whole, as Llama 3 does).
#ifndef TESSERA_ENGINE_TOKENIZER_BPE_MODEL_H_
#define TESSERA_ENGINE_TOKENIZER_BPE_MODEL_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/tokenizer/model.h"

namespace tessera::tokenizer {

struct BpeOptions {
  bool byte_fallback = false;
  bool ignore_merges = false;
  bool fuse_unk = false;
  std::optional<int32_t> unk_id;
};

class BpeModel : public Model {
 public:
  // `merges` in rank order, as token texts. A merge whose parts or result the vocabulary lacks
  // is INVALID_ARGUMENT when `strict` (tokenizers refuses such files) and skipped otherwise
  // (GGUF files converted from odd tokenizers do contain a few).
  static absl::StatusOr<std::unique_ptr<BpeModel>> Create(
      const Vocab& vocab, const std::vector<std::pair<std::string, std::string>>& merges,
      BpeOptions options, bool strict);

  void Encode(const Vocab& vocab, absl::string_view piece,
              std::vector<int32_t>* out) const override;
  std::string Name() const override { return "BPE"; }

 private:
  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t Key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  BpeOptions options_;
  absl::flat_hash_map<uint64_t, Merge> merges_;
};

}  // namespace tessera::tokenizer

#endif  // TESSERA_ENGINE_TOKENIZER_BPE_MODEL_H_
