// ScratchFrame (kernels/cpu/scratch_arena.h): every allocation is 64-byte aligned and writable
// (zero-count ones too); allocations of one frame and of nested frames never overlap, also when
// they outgrow the first 256 KiB block and the arena has to add blocks (each is filled with its own
// pattern and checked after every later allocation); an inner frame's memory is handed out again
// once it ends while the outer frame's data stays intact; consecutive outermost frames reuse the
// same memory (a decode step maps nothing new); and frames on two threads running at the same
// time are independent.
#include "kernels/cpu/scratch_arena.h"

#include <barrier>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::kernels::cpu {
namespace {

bool Aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

uint8_t PatternByte(int id, int64_t i) {
  return static_cast<uint8_t>((id * 131 + 17) ^ (i * 7) ^ (i >> 9));
}

// One allocation under test: its bytes hold PatternByte(id, i).
struct Chunk {
  uint8_t* p;
  int64_t bytes;
  int id;
};

class Tracker {
 public:
  // Allocates `bytes` bytes from `frame` (the innermost live frame), checks the alignment and
  // that the new range overlaps no live chunk, and fills it with its pattern.
  uint8_t* Add(ScratchFrame& frame, int64_t bytes) {
    uint8_t* p = frame.Alloc<uint8_t>(bytes);
    EXPECT_NE(p, nullptr);
    EXPECT_TRUE(Aligned64(p)) << static_cast<void*>(p);
    for (const Chunk& c : chunks_) {
      const bool disjoint = p + bytes <= c.p || c.p + c.bytes <= p;
      EXPECT_TRUE(disjoint) << "new " << bytes << " bytes at " << static_cast<void*>(p)
                            << " overlap chunk " << c.id << " (" << c.bytes << " bytes at "
                            << static_cast<void*>(c.p) << ")";
    }
    const int id = next_id_++;
    for (int64_t i = 0; i < bytes; ++i) p[i] = PatternByte(id, i);
    chunks_.push_back({p, bytes, id});
    return p;
  }
  // Checks every live chunk still holds its pattern.
  void Verify() const {
    for (const Chunk& c : chunks_) {
      for (int64_t i = 0; i < c.bytes; ++i) {
        if (c.p[i] != PatternByte(c.id, i)) {
          ADD_FAILURE() << "chunk " << c.id << " (" << c.bytes << " bytes) clobbered at byte " << i;
          break;
        }
      }
    }
  }
  // Forgets the chunks of a frame that ended (the last `count` added).
  void Drop(size_t count) { chunks_.resize(chunks_.size() - count); }
  size_t size() const { return chunks_.size(); }

 private:
  std::vector<Chunk> chunks_;
  int next_id_ = 0;
};

TEST(ScratchArenaTest, AllocationsAreAlignedAndWritable) {
  ScratchFrame frame;
  uint8_t* bytes = frame.Alloc<uint8_t>(3);
  float* floats = frame.Alloc<float>(17);
  double* doubles = frame.Alloc<double>(1000);
  int8_t* codes = frame.Alloc<int8_t>(64 * 1024 + 1);
  uint16_t* halves = frame.Alloc<uint16_t>(5);
  for (const void* p : {static_cast<const void*>(bytes), static_cast<const void*>(floats),
                        static_cast<const void*>(doubles), static_cast<const void*>(codes),
                        static_cast<const void*>(halves)}) {
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(Aligned64(p)) << p;
  }
  std::memset(bytes, 0xAB, 3);
  for (int i = 0; i < 17; ++i) floats[i] = static_cast<float>(i) * 0.5f;
  for (int i = 0; i < 1000; ++i) doubles[i] = -i;
  std::memset(codes, 0x7F, 64 * 1024 + 1);
  for (int i = 0; i < 5; ++i) halves[i] = static_cast<uint16_t>(0xBEEF + i);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(bytes[i], 0xAB);
  for (int i = 0; i < 17; ++i) EXPECT_EQ(floats[i], static_cast<float>(i) * 0.5f);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(doubles[i], -i);
  for (int i = 0; i < 64 * 1024 + 1; ++i) ASSERT_EQ(codes[i], 0x7F) << i;
  for (int i = 0; i < 5; ++i) EXPECT_EQ(halves[i], 0xBEEF + i);
}

TEST(ScratchArenaTest, ZeroCountAllocationIsNonNullAndAligned) {
  ScratchFrame frame;
  float* a = frame.Alloc<float>(0);
  ASSERT_NE(a, nullptr);
  EXPECT_TRUE(Aligned64(a));
  int64_t* b = frame.Alloc<int64_t>(0);
  ASSERT_NE(b, nullptr);
  EXPECT_TRUE(Aligned64(b));
  // A real allocation after the empty ones is still aligned and usable.
  float* c = frame.Alloc<float>(100);
  EXPECT_TRUE(Aligned64(c));
  for (int i = 0; i < 100; ++i) c[i] = 1.0f;
}

// Allocations of one frame and of three nested frames, small and larger than the first block
// (300 KiB; 20 MiB, which no block kept from an earlier call can hold), never overlap and are
// never clobbered by later allocations of the same or an inner frame.
TEST(ScratchArenaTest, FramesAndNestedFramesNeverOverlap) {
  Tracker t;
  ScratchFrame outer;
  t.Add(outer, 1000);
  t.Add(outer, 200 * 1024);
  t.Add(outer, 300 * 1024);  // cannot share the first 256 KiB block with the previous one
  t.Add(outer, 1);
  t.Verify();
  {
    ScratchFrame middle;
    t.Add(middle, 64);
    t.Add(middle, 20 << 20);
    t.Add(middle, 4096 + 3);
    t.Verify();
    {
      ScratchFrame inner;
      t.Add(inner, 1 << 20);
      t.Add(inner, 7);
      t.Add(inner, 600 * 1024);
      t.Verify();
      t.Drop(3);
    }
    t.Add(middle, 2 << 20);
    t.Verify();
    t.Drop(4);
  }
  t.Add(outer, 100);
  t.Add(outer, 3 << 20);
  t.Verify();
}

// When an inner frame ends, the next allocation of the same size gets the inner frame's first
// pointer back (LIFO reuse), also after the inner frame had to move to a larger block; the outer
// frame's data is untouched by both.
TEST(ScratchArenaTest, InnerFrameMemoryIsReusedAndOuterStaysIntact) {
  for (const int64_t inner_bytes : {int64_t{5000}, int64_t{1} << 20, int64_t{40} << 20}) {
    SCOPED_TRACE(inner_bytes);
    Tracker t;
    ScratchFrame outer;
    t.Add(outer, 1000);
    t.Add(outer, 100 * 1024);
    uint8_t* first = nullptr;
    {
      ScratchFrame inner;
      first = inner.Alloc<uint8_t>(inner_bytes);
      std::memset(first, 0xCD, inner_bytes);
      inner.Alloc<float>(1000)[999] = 1.0f;
    }
    t.Verify();
    uint8_t* again = outer.Alloc<uint8_t>(inner_bytes);
    EXPECT_EQ(again, first);
    std::memset(again, 0xEF, inner_bytes);
    t.Verify();
    // The outer frame now owns that memory: a later inner frame must not hand it out again.
    {
      ScratchFrame inner;
      uint8_t* p = inner.Alloc<uint8_t>(inner_bytes);
      EXPECT_TRUE(p + inner_bytes <= again || again + inner_bytes <= p);
      std::memset(p, 0x11, inner_bytes);
    }
    for (int64_t i = 0; i < inner_bytes; ++i) ASSERT_EQ(again[i], 0xEF) << i;
    t.Verify();
  }
}

// The blocks are kept between outermost frames: a call that spilled into a second block leaves
// one block of its peak size, so from the second call of the same shape on every call gets the
// same pointers, all in that one block (a decode step maps nothing new). Heap memory of the
// blocks' sizes is held between the calls, so blocks freed and allocated again would not come
// back at the same addresses.
TEST(ScratchArenaTest, ConsecutiveOutermostFramesReuseTheSameMemory) {
  std::vector<void*> first, second, third;
  std::vector<std::vector<uint8_t>> hold;
  for (std::vector<void*>* out : {&first, &second, &third}) {
    {
      ScratchFrame frame;
      out->push_back(frame.Alloc<float>(2048));
      out->push_back(frame.Alloc<int8_t>(300 * 1024));
      ScratchFrame nested;
      out->push_back(nested.Alloc<float>(64));
    }
    for (const int64_t kib : {256, 512, 1024, 2048}) hold.emplace_back(kib * 1024, uint8_t{1});
  }
  EXPECT_EQ(second, third);
  // One block: the allocations follow each other (sizes rounded to 64 bytes).
  auto* base = static_cast<uint8_t*>(second[0]);
  EXPECT_EQ(static_cast<uint8_t*>(second[1]), base + 2048 * 4);
  EXPECT_EQ(static_cast<uint8_t*>(second[2]), base + 2048 * 4 + 300 * 1024);
}

// Two threads nest frames and allocate at the same time (a barrier between steps makes the
// allocations interleave); each thread's chunks keep their patterns and no chunk of one thread
// overlaps a live chunk of the other.
TEST(ScratchArenaTest, FramesOnTwoThreadsAreIndependent) {
  constexpr int kRounds = 20;
  std::barrier sync(2);
  struct Shared {
    std::vector<Chunk> live;
  };
  Shared shared[2];
  bool overlap[2] = {false, false};
  bool clobbered[2] = {false, false};
  auto body = [&](int tid) {
    for (int round = 0; round < kRounds; ++round) {
      ScratchFrame outer;
      std::vector<Chunk> mine;
      auto add = [&](ScratchFrame& f, int64_t bytes) {
        uint8_t* p = f.Alloc<uint8_t>(bytes);
        const int id = tid * 100000 + round * 100 + static_cast<int>(mine.size());
        for (int64_t i = 0; i < bytes; ++i) p[i] = PatternByte(id, i);
        mine.push_back({p, bytes, id});
      };
      add(outer, 1000 + tid * 64 + round);
      add(outer, (300 + round * 13) * 1024);
      sync.arrive_and_wait();
      ScratchFrame inner;
      add(inner, 64 * 1024);
      add(inner, round % 4 == 0 ? (9 << 20) : 4096);
      shared[tid].live = mine;
      sync.arrive_and_wait();  // both threads' chunks are live and published
      for (const Chunk& a : mine) {
        for (const Chunk& b : shared[1 - tid].live) {
          if (!(a.p + a.bytes <= b.p || b.p + b.bytes <= a.p)) overlap[tid] = true;
        }
      }
      sync.arrive_and_wait();  // done reading the other thread's list
      for (const Chunk& c : mine) {
        for (int64_t i = 0; i < c.bytes; ++i) {
          if (c.p[i] != PatternByte(c.id, i)) clobbered[tid] = true;
        }
      }
      sync.arrive_and_wait();  // nobody frees while the other still checks
    }
  };
  std::thread other(body, 1);
  body(0);
  other.join();
  for (int tid = 0; tid < 2; ++tid) {
    EXPECT_FALSE(overlap[tid]) << "thread " << tid;
    EXPECT_FALSE(clobbered[tid]) << "thread " << tid;
  }
}

#if defined(__SANITIZE_ADDRESS__)
// Under ASan the arena poisons what no live frame handed out: a read past an allocation (beyond
// its 64-byte rounding) and a read after the frame ended are reported, as for a heap buffer.
uint8_t ReadByte(const uint8_t* p) { return *static_cast<const volatile uint8_t*>(p); }

TEST(ScratchArenaDeathTest, AsanSeesOverreadsAndUseAfterFrame) {
  EXPECT_DEATH(
      {
        ScratchFrame frame;
        uint8_t* p = frame.Alloc<uint8_t>(64);
        (void)frame.Alloc<uint8_t>(0);  // takes p[64..127] (64 bytes at least)
        ReadByte(p + 128);              // past everything the frame handed out
      },
      "AddressSanitizer");
  EXPECT_DEATH(
      {
        const uint8_t* p = nullptr;
        {
          ScratchFrame frame;
          p = frame.Alloc<uint8_t>(128);
        }
        ReadByte(p);
      },
      "AddressSanitizer");
}
#endif

}  // namespace
}  // namespace tessera::kernels::cpu
