// The paged KV cache: a fixed pool of blocks, each holding K and V for `block_tokens` positions of
// every layer, handed out by a free-list allocator; a sequence owns a block table (SequenceKv).
// Memory is allocated once at start-up, so admission control can reason in blocks and a finished
// or cancelled sequence returns its blocks immediately. Storage formats: F32 (exact); F16 or BF16
// (half the bytes, each element rounded once when stored: llama.cpp's default KV type is f16,
// vLLM's the model's 16-bit dtype); FP8 E4M3 bytes (quant-formats.md §10: the model stores
// sat_e4m3(k / k_scale) and attention decodes fp32(kv8) * k_scale on the fly), a quarter.
#ifndef TESSERA_ENGINE_RUNTIME_KV_CACHE_H_
#define TESSERA_ENGINE_RUNTIME_KV_CACHE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace tessera::runtime {

enum class KvCacheFormat { kF32, kF16, kBf16, kFp8E4m3 };

// The --kv_cache_dtype spellings: "f32", "f16" (or "fp16", "float16"), "bf16" (or "bfloat16"),
// "fp8" (or "fp8_e4m3"); nullopt for anything else.
std::optional<KvCacheFormat> ParseKvCacheFormat(std::string_view name);
// The accepted spellings, for error messages.
inline constexpr char kKvCacheFormatNames[] = "f32, f16, bf16 or fp8";
// The canonical spelling ("f32", "f16", "bf16", "fp8").
const char* KvCacheFormatName(KvCacheFormat format);
// Bytes per stored K or V element.
int64_t KvCacheElementBytes(KvCacheFormat format);

// The blocks and filled length of one sequence.
struct SequenceKv {
  std::vector<int32_t> blocks;
  int64_t length = 0;  // positions whose K/V are stored
  // The longest the sequence may grow (prompt + max_new_tokens; a perplexity window), set by its
  // creator; 0: unknown (the model's context). A model whose rotation depends on it (LongRoPE)
  // decides once per sequence, so all of its cached keys share one rotation.
  int64_t max_length = 0;
};

class KvCache {
 public:
  // host_storage: allocate the K/V here (CPU backend); false when a device backend keeps the
  // blocks in its own memory and uses this object only as the block allocator. `format` picks
  // float, 16-bit or E4M3-byte blocks; only the matching accessors below are valid.
  KvCache(int64_t num_layers, int64_t kv_heads, int64_t head_dim, int64_t block_tokens,
          int64_t num_blocks, bool host_storage = true,
          KvCacheFormat format = KvCacheFormat::kF32);

  KvCacheFormat format() const { return format_; }

  int64_t block_tokens() const { return block_tokens_; }
  int64_t num_blocks() const { return num_blocks_; }
  int64_t free_blocks() const { return static_cast<int64_t>(free_.size()); }
  int64_t used_blocks() const { return num_blocks_ - free_blocks(); }
  double usage_ratio() const {
    return num_blocks_ == 0 ? 0.0 : static_cast<double>(used_blocks()) / num_blocks_;
  }
  int64_t BlocksFor(int64_t tokens) const { return (tokens + block_tokens_ - 1) / block_tokens_; }
  int64_t capacity_tokens() const { return num_blocks_ * block_tokens_; }

  // Grows `seq` to hold `new_length` positions; RESOURCE_EXHAUSTED (and no change) when the pool
  // has too few free blocks.
  absl::Status Reserve(SequenceKv& seq, int64_t new_length);
  // Returns every block of `seq` to the pool and empties it.
  void Release(SequenceKv& seq);

  // One layer of one block (kernels/cpu/attention.h): K transposed, [kv_heads, head_dim,
  // block_tokens]; V [kv_heads, block_tokens, head_dim].
  float* KBlock(int64_t layer, int32_t block) { return Block(layer, block, 0); }
  float* VBlock(int64_t layer, int32_t block) { return Block(layer, block, 1); }
  // The same layout in E4M3 bytes (format kFp8E4m3).
  uint8_t* KBlockFp8(int64_t layer, int32_t block) { return BlockFp8(layer, block, 0); }
  uint8_t* VBlockFp8(int64_t layer, int32_t block) { return BlockFp8(layer, block, 1); }
  // The same layout in f16 or bf16 bits (formats kF16, kBf16).
  uint16_t* KBlock16(int64_t layer, int32_t block) { return Block16(layer, block, 0); }
  uint16_t* VBlock16(int64_t layer, int32_t block) { return Block16(layer, block, 1); }

 private:
  // Layer-major, K and V apart: one layer's K blocks are adjacent in block-id order, so a
  // sequence's walk over a layer (blocks handed out in ascending order to a fresh pool) reads
  // neighbouring memory instead of one block every 2 · num_layers blocks.
  int64_t Offset(int64_t layer, int32_t block, int kv) const {
    return ((kv * num_layers_ + layer) * num_blocks_ + block) * block_floats_;
  }
  float* Block(int64_t layer, int32_t block, int kv) { return storage_.data() + Offset(layer, block, kv); }
  uint8_t* BlockFp8(int64_t layer, int32_t block, int kv) { return bytes_.data() + Offset(layer, block, kv); }
  uint16_t* Block16(int64_t layer, int32_t block, int kv) { return halves_.data() + Offset(layer, block, kv); }

  int64_t num_layers_;
  int64_t block_tokens_;
  int64_t num_blocks_;
  int64_t block_floats_;
  KvCacheFormat format_;
  std::vector<float> storage_;   // format kF32
  std::vector<uint8_t> bytes_;   // format kFp8E4m3
  std::vector<uint16_t> halves_;  // formats kF16, kBf16
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
};

}  // namespace tessera::runtime

#endif  // TESSERA_ENGINE_RUNTIME_KV_CACHE_H_
