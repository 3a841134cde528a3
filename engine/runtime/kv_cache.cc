#include "engine/runtime/kv_cache.h"

#include "absl/strings/str_format.h"

namespace tessera::runtime {

std::optional<KvCacheFormat> ParseKvCacheFormat(std::string_view name) {
  if (name == "f32") return KvCacheFormat::kF32;
  if (name == "f16" || name == "fp16" || name == "float16") return KvCacheFormat::kF16;
  if (name == "bf16" || name == "bfloat16") return KvCacheFormat::kBf16;
  if (name == "fp8" || name == "fp8_e4m3") return KvCacheFormat::kFp8E4m3;
  return std::nullopt;
}

const char* KvCacheFormatName(KvCacheFormat format) {
  switch (format) {
    case KvCacheFormat::kF32:
      return "f32";
    case KvCacheFormat::kF16:
      return "f16";
    case KvCacheFormat::kBf16:
      return "bf16";
    case KvCacheFormat::kFp8E4m3:
      return "fp8";
  }
  return "?";
}

int64_t KvCacheElementBytes(KvCacheFormat format) {
  switch (format) {
    case KvCacheFormat::kF32:
      return 4;
    case KvCacheFormat::kF16:
    case KvCacheFormat::kBf16:
      return 2;
    case KvCacheFormat::kFp8E4m3:
      return 1;
  }
  return 4;
}

KvCache::KvCache(int64_t num_layers, int64_t kv_heads, int64_t head_dim, int64_t block_tokens,
                 int64_t num_blocks, bool host_storage, KvCacheFormat format)
    : num_layers_(num_layers),
      block_tokens_(block_tokens),
      num_blocks_(num_blocks),
      block_floats_(block_tokens * kv_heads * head_dim),
      format_(format) {
  const size_t elements =
      host_storage ? static_cast<size_t>(num_blocks * num_layers * 2 * block_floats_) : 0;
  switch (format) {
    case KvCacheFormat::kF32:
      storage_.resize(elements);
      break;
    case KvCacheFormat::kF16:
    case KvCacheFormat::kBf16:
      halves_.resize(elements);
      break;
    case KvCacheFormat::kFp8E4m3:
      bytes_.resize(elements);
      break;
  }
  free_.reserve(num_blocks);
  for (int64_t b = num_blocks - 1; b >= 0; --b) free_.push_back(static_cast<int32_t>(b));
}

absl::Status KvCache::Reserve(SequenceKv& seq, int64_t new_length) {
  const int64_t need = BlocksFor(new_length) - static_cast<int64_t>(seq.blocks.size());
  if (need <= 0) return absl::OkStatus();
  if (need > free_blocks()) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "KV cache: %d more blocks needed, %d free of %d", need, free_blocks(), num_blocks_));
  }
  for (int64_t i = 0; i < need; ++i) {
    seq.blocks.push_back(free_.back());
    free_.pop_back();
  }
  return absl::OkStatus();
}

void KvCache::Release(SequenceKv& seq) {
  for (auto it = seq.blocks.rbegin(); it != seq.blocks.rend(); ++it) free_.push_back(*it);
  seq.blocks.clear();
  seq.length = 0;
}

}  // namespace tessera::runtime
