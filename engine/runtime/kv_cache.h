// The paged KV cache: a fixed pool of blocks, each holding K and V for `block_tokens` positions of
// every layer, handed out by a free-list allocator; a sequence owns a block table (SequenceKv).
// Memory is allocated once at start-up, so admission control can reason in blocks and a finished
// or cancelled sequence returns its blocks immediately.
#ifndef TESSERA_ENGINE_RUNTIME_KV_CACHE_H_
#define TESSERA_ENGINE_RUNTIME_KV_CACHE_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"

namespace tessera::runtime {

// The blocks and filled length of one sequence.
struct SequenceKv {
  std::vector<int32_t> blocks;
  int64_t length = 0;  // positions whose K/V are stored
};

class KvCache {
 public:
  // host_storage: allocate the K/V floats here (CPU backend); false when a device backend keeps
  // the blocks in its own memory and uses this object only as the block allocator.
  KvCache(int64_t num_layers, int64_t kv_heads, int64_t head_dim, int64_t block_tokens,
          int64_t num_blocks, bool host_storage = true);

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

  // [block_tokens, kv_heads, head_dim] for one layer of one block.
  float* KBlock(int64_t layer, int32_t block) { return Block(layer, block, 0); }
  float* VBlock(int64_t layer, int32_t block) { return Block(layer, block, 1); }

 private:
  float* Block(int64_t layer, int32_t block, int kv) {
    return storage_.data() + ((block * num_layers_ + layer) * 2 + kv) * block_floats_;
  }

  int64_t num_layers_;
  int64_t block_tokens_;
  int64_t num_blocks_;
  int64_t block_floats_;
  std::vector<float> storage_;
  std::vector<int32_t> free_;  // a stack: the most recently freed block is reused first
};

}  // namespace tessera::runtime

#endif  // TESSERA_ENGINE_RUNTIME_KV_CACHE_H_
