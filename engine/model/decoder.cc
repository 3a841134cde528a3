#include "engine/model/decoder.h"

#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"

namespace tessera::model {

absl::StatusOr<int64_t> ValidateChunksAndReserve(absl::Span<const SequenceChunk> chunks,
                                                 const ModelConfig& c, runtime::KvCache& cache) {
  // Validate everything before touching the cache, so a bad request changes nothing.
  int64_t total = 0;
  int64_t need = 0;
  for (const SequenceChunk& ch : chunks) {
    const int64_t n = static_cast<int64_t>(ch.tokens.size());
    if (n == 0) return absl::InvalidArgumentError("a sequence chunk has no tokens");
    if (ch.kv->length + n > c.max_context) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "sequence of %d tokens exceeds the context length %d", ch.kv->length + n, c.max_context));
    }
    for (int32_t t : ch.tokens) {
      if (t < 0 || t >= c.vocab_size) {
        return absl::InvalidArgumentError(
            absl::StrFormat("token id %d is outside the vocabulary [0, %d)", t, c.vocab_size));
      }
    }
    total += n;
    need += cache.BlocksFor(ch.kv->length + n) - static_cast<int64_t>(ch.kv->blocks.size());
  }
  if (need > cache.free_blocks()) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "KV cache: this step needs %d more blocks, %d free", need, cache.free_blocks()));
  }
  for (const SequenceChunk& ch : chunks) {
    TESSERA_RETURN_IF_ERROR(
        cache.Reserve(*ch.kv, ch.kv->length + static_cast<int64_t>(ch.tokens.size())));
  }
  return total;
}

}  // namespace tessera::model
