#include "kernels/cpu/scratch_arena.h"

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
// Arena memory not handed out by a live frame is poisoned, so ASan still reports a kernel that
// reads past its buffer (to the next 64 bytes) or a buffer used after its frame ended, as it did
// for the per-call vectors the arena replaced.
#define TESSERA_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define TESSERA_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define TESSERA_POISON(p, n) ((void)(p), (void)(n))
#define TESSERA_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace tessera::kernels::cpu {
namespace {

constexpr int64_t kAlign = 64;
constexpr int64_t kFirstBlockBytes = int64_t{256} << 10;
// What a thread keeps between calls: a decode step's buffers and more, not a long prompt's.
constexpr int64_t kRetainBytes = int64_t{8} << 20;

struct FreeDeleter {
  int64_t size = 0;
  void operator()(uint8_t* p) const {
    TESSERA_UNPOISON(p, size);  // give the allocator its memory back as it handed it out
    std::free(p);
  }
};

struct Block {
  std::unique_ptr<uint8_t, FreeDeleter> data;
  int64_t size = 0;
};

struct Arena {
  std::vector<Block> blocks;
  size_t block = 0;    // the block allocations come from
  int64_t offset = 0;  // bytes used in it
  int64_t before = 0;  // bytes of the blocks before it
  int64_t peak = 0;    // most bytes in use (skipped block ends included) since depth was 0
  int depth = 0;       // live frames
};

Arena& ThreadArena() {
  thread_local Arena arena;
  return arena;
}

Block NewBlock(int64_t bytes) {
  Block b;
  b.size = bytes;
  b.data = std::unique_ptr<uint8_t, FreeDeleter>(
      static_cast<uint8_t*>(std::aligned_alloc(kAlign, static_cast<size_t>(b.size))),
      FreeDeleter{b.size});
  if (b.data == nullptr) std::abort();  // as operator new would, without an exception
  TESSERA_POISON(b.data.get(), b.size);
  return b;
}

}  // namespace

ScratchFrame::ScratchFrame() {
  Arena& a = ThreadArena();
  saved_block_ = a.block;
  saved_offset_ = a.offset;
  saved_before_ = a.before;
  ++a.depth;
}

ScratchFrame::~ScratchFrame() {
  Arena& a = ThreadArena();
  for (size_t i = saved_block_; i < a.blocks.size(); ++i) {
    const int64_t from = i == saved_block_ ? saved_offset_ : 0;
    TESSERA_POISON(a.blocks[i].data.get() + from, a.blocks[i].size - from);
  }
  a.block = saved_block_;
  a.offset = saved_offset_;
  a.before = saved_before_;
  if (--a.depth != 0) return;
  // The outermost frame: a call that spilled into a second block, or into one past the budget,
  // leaves one block of its peak size (the next call of the same shape then fits in it) if that
  // is within the budget, and nothing otherwise.
  if (a.blocks.size() > 1 || (!a.blocks.empty() && a.blocks[0].size > kRetainBytes)) {
    const int64_t need = std::max(a.peak, kFirstBlockBytes);
    a.blocks.clear();
    if (need <= kRetainBytes) a.blocks.push_back(NewBlock((need + kAlign - 1) / kAlign * kAlign));
  }
  a.peak = 0;
}

void* ScratchFrame::AllocBytes(int64_t bytes) {
  Arena& a = ThreadArena();
  bytes = std::max<int64_t>((bytes + kAlign - 1) / kAlign * kAlign, kAlign);
  // The first block from the current one on with room left; blocks too small are skipped for
  // the rest of this frame (their bytes come back when it ends).
  while (a.block < a.blocks.size() && a.offset + bytes > a.blocks[a.block].size) {
    a.before += a.blocks[a.block].size;
    ++a.block;
    a.offset = 0;
  }
  if (a.block == a.blocks.size()) {
    const int64_t last = a.blocks.empty() ? kFirstBlockBytes / 2 : a.blocks.back().size;
    a.blocks.push_back(NewBlock(std::max(bytes, 2 * last)));
    a.offset = 0;
  }
  void* p = a.blocks[a.block].data.get() + a.offset;
  TESSERA_UNPOISON(p, bytes);
  a.offset += bytes;
  a.peak = std::max(a.peak, a.before + a.offset);
  return p;
}

}  // namespace tessera::kernels::cpu
