#include "kernels/cpu/scratch_arena.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

namespace tessera::kernels::cpu {
namespace {

constexpr int64_t kAlign = 64;
constexpr int64_t kFirstBlockBytes = int64_t{256} << 10;
// What a thread keeps between calls: a decode step's buffers and more, not a long prompt's.
constexpr int64_t kRetainBytes = int64_t{8} << 20;

struct FreeDeleter {
  void operator()(uint8_t* p) const { std::free(p); }
};

struct Block {
  std::unique_ptr<uint8_t, FreeDeleter> data;
  int64_t size = 0;
};

struct Arena {
  std::vector<Block> blocks;
  size_t block = 0;    // the block allocations come from
  int64_t offset = 0;  // bytes used in it
  int depth = 0;       // live frames
};

Arena& ThreadArena() {
  thread_local Arena arena;
  return arena;
}

}  // namespace

ScratchFrame::ScratchFrame() {
  Arena& a = ThreadArena();
  saved_block_ = a.block;
  saved_offset_ = a.offset;
  ++a.depth;
}

ScratchFrame::~ScratchFrame() {
  Arena& a = ThreadArena();
  a.block = saved_block_;
  a.offset = saved_offset_;
  if (--a.depth == 0) {
    int64_t kept = 0;
    size_t keep = 0;
    while (keep < a.blocks.size() && kept + a.blocks[keep].size <= kRetainBytes) {
      kept += a.blocks[keep++].size;
    }
    a.blocks.resize(keep);
  }
}

void* ScratchFrame::AllocBytes(int64_t bytes) {
  Arena& a = ThreadArena();
  bytes = std::max<int64_t>((bytes + kAlign - 1) / kAlign * kAlign, kAlign);
  // The first block from the current one on with room left; blocks too small are skipped for
  // the rest of this frame (their bytes come back when it ends).
  while (a.block < a.blocks.size() && a.offset + bytes > a.blocks[a.block].size) {
    ++a.block;
    a.offset = 0;
  }
  if (a.block == a.blocks.size()) {
    const int64_t last = a.blocks.empty() ? kFirstBlockBytes / 2 : a.blocks.back().size;
    Block b;
    b.size = std::max(bytes, 2 * last);
    b.data.reset(static_cast<uint8_t*>(std::aligned_alloc(kAlign, static_cast<size_t>(b.size))));
    if (b.data == nullptr) std::abort();  // as operator new would, without an exception
    a.blocks.push_back(std::move(b));
    a.offset = 0;
  }
  void* p = a.blocks[a.block].data.get() + a.offset;
  a.offset += bytes;
  return p;
}

}  // namespace tessera::kernels::cpu
