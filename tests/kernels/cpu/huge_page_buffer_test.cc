// HugePageBuffer (kernels/cpu/huge_page_buffer.h): for sizes from 1 byte to 8 MiB + 5 the memory is
// zero-filled, writable over the whole size, 64-byte aligned, and 2 MiB aligned from 2 MiB up;
// HugePageBytes stays between 0 and the size rounded up to whole pages, also with several
// huge-page buffers alive at once (it is reported, never required to be > 0: CI machines may
// have THP off or fragmented memory); a default-constructed buffer is empty; move construction
// and assignment hand the memory over and leave the source empty.
#include "kernels/cpu/huge_page_buffer.h"

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace tessera::kernels::cpu {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kHugePage = 2 * kMiB;

int64_t RoundUpToPage(int64_t bytes) { return (bytes + 4095) / 4096 * 4096; }

uint8_t PatternByte(int64_t i) { return static_cast<uint8_t>(i * 31 + (i >> 12) + 1); }

// The THP mode from sysfs ("always", "madvise", "never"), or "" where it cannot be read.
std::string ThpMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(f, line)) return "";
  const size_t b = line.find('['), e = line.find(']');
  if (b == std::string::npos || e == std::string::npos || e < b) return "";
  return line.substr(b + 1, e - b - 1);
}

// Writes the pattern over the whole buffer and reads it back; false at the first mismatch.
bool FillAndCheck(const HugePageBuffer& buf) {
  uint8_t* p = buf.data();
  for (int64_t i = 0; i < buf.size(); ++i) p[i] = PatternByte(i);
  for (int64_t i = 0; i < buf.size(); ++i) {
    if (p[i] != PatternByte(i)) return false;
  }
  return true;
}

bool HoldsPattern(const HugePageBuffer& buf) {
  for (int64_t i = 0; i < buf.size(); ++i) {
    if (buf.data()[i] != PatternByte(i)) return false;
  }
  return true;
}

const int64_t kSizes[] = {1, 4095, 4096, kMiB + 3, 2 * kMiB, 8 * kMiB + 5};

TEST(HugePageBufferTest, ZeroFilledWritableAndAligned) {
  for (const int64_t size : kSizes) {
    SCOPED_TRACE(size);
    const HugePageBuffer buf(size);
    ASSERT_NE(buf.data(), nullptr);
    ASSERT_EQ(buf.size(), size);
    const auto addr = reinterpret_cast<uintptr_t>(buf.data());
    EXPECT_EQ(addr % 64, 0u);
    if (size >= kHugePage) {
      EXPECT_EQ(addr % kHugePage, 0u);
    }
    int64_t first_nonzero = -1;
    for (int64_t i = 0; i < size && first_nonzero < 0; ++i) {
      if (buf.data()[i] != 0) first_nonzero = i;
    }
    EXPECT_EQ(first_nonzero, -1);
    EXPECT_TRUE(FillAndCheck(buf));
  }
}

// HugePageBytes after the whole buffer was written: between 0 and the page-rounded size. Printed
// (with the THP mode) for the record, not asserted to be positive.
TEST(HugePageBufferTest, HugePageBytesIsWithinTheBuffer) {
  const std::string mode = ThpMode();
  for (const int64_t size : kSizes) {
    SCOPED_TRACE(size);
    const HugePageBuffer buf(size);
    ASSERT_TRUE(FillAndCheck(buf));
    const int64_t huge = buf.HugePageBytes();
    EXPECT_GE(huge, 0);
    EXPECT_LE(huge, RoundUpToPage(size));
    if (mode == "always" || mode == "madvise") {
      std::cout << "THP " << mode << ": " << size << " bytes, " << huge << " on huge pages\n";
      RecordProperty("huge_page_bytes_" + std::to_string(size), std::to_string(huge));
    }
  }
}

// Several huge-page-sized buffers alive at the same time (as a model's layers are): each one's
// HugePageBytes counts only its own pages, never a neighbour's.
TEST(HugePageBufferTest, HugePageBytesCountsOnlyItsOwnBuffer) {
  std::vector<HugePageBuffer> bufs;
  for (int i = 0; i < 12; ++i) {
    const int64_t size = i % 3 == 0 ? 2 * kMiB : i % 3 == 1 ? 4 * kMiB + 4096 : 6 * kMiB - 4096;
    bufs.emplace_back(size);
    ASSERT_TRUE(FillAndCheck(bufs.back()));
  }
  int64_t total = 0;
  for (const HugePageBuffer& buf : bufs) {
    const int64_t huge = buf.HugePageBytes();
    EXPECT_GE(huge, 0);
    EXPECT_LE(huge, RoundUpToPage(buf.size())) << "buffer of " << buf.size() << " bytes";
    total += huge;
  }
  std::cout << "THP " << ThpMode() << ": " << total << " bytes on huge pages in " << bufs.size()
            << " buffers\n";
  for (const HugePageBuffer& buf : bufs) EXPECT_TRUE(HoldsPattern(buf));
}

TEST(HugePageBufferTest, DefaultConstructedIsEmpty) {
  const HugePageBuffer buf;
  EXPECT_EQ(buf.data(), nullptr);
  EXPECT_EQ(buf.size(), 0);
  EXPECT_EQ(buf.HugePageBytes(), 0);
}

TEST(HugePageBufferTest, MoveConstructionTransfersOwnership) {
  for (const int64_t size : {int64_t{4095}, 8 * kMiB + 5}) {
    SCOPED_TRACE(size);
    HugePageBuffer src(size);
    ASSERT_TRUE(FillAndCheck(src));
    uint8_t* const p = src.data();
    HugePageBuffer dst(std::move(src));
    EXPECT_EQ(src.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state
    EXPECT_EQ(src.size(), 0);        // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(src.HugePageBytes(), 0);
    EXPECT_EQ(dst.data(), p);
    EXPECT_EQ(dst.size(), size);
    EXPECT_TRUE(HoldsPattern(dst));
  }
}

TEST(HugePageBufferTest, MoveAssignmentTransfersOwnership) {
  for (const int64_t size : {int64_t{1}, kMiB + 3, 2 * kMiB}) {
    SCOPED_TRACE(size);
    HugePageBuffer src(size);
    ASSERT_TRUE(FillAndCheck(src));
    uint8_t* const p = src.data();
    HugePageBuffer dst(3 * kMiB);  // owns memory already: released by the assignment
    dst.data()[0] = 1;
    dst = std::move(src);
    EXPECT_EQ(src.data(), nullptr);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(src.size(), 0);        // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(dst.data(), p);
    EXPECT_EQ(dst.size(), size);
    EXPECT_TRUE(HoldsPattern(dst));
    // Into an empty buffer, and back out again.
    HugePageBuffer empty;
    empty = std::move(dst);
    EXPECT_EQ(dst.data(), nullptr);  // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(dst.size(), 0);        // NOLINT(bugprone-use-after-move)
    EXPECT_EQ(empty.data(), p);
    EXPECT_TRUE(HoldsPattern(empty));
    // Assigning an empty buffer releases the memory and leaves both empty.
    empty = HugePageBuffer();
    EXPECT_EQ(empty.data(), nullptr);
    EXPECT_EQ(empty.size(), 0);
  }
}

// The VmFlags of the mapping that holds `p` ("hg" marks MADV_HUGEPAGE); empty if none is found.
std::string VmFlagsOf(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long lo = 0, hi = 0;
    const size_t dash = line.find('-'), space = line.find(' ');
    if (dash != std::string::npos && space != std::string::npos && dash < space &&
        std::sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) {
      inside = lo <= addr && addr < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line.substr(8);
  }
  return "";
}

// Buffers of 2 MiB and more are advised MADV_HUGEPAGE (whether the kernel then grants huge pages
// depends on the machine; the advice is what the code controls). Smaller ones are not.
TEST(HugePageBufferTest, LargeBuffersAreAdvisedHugePages) {
#if defined(__linux__)
  if (!std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good()) {
    GTEST_SKIP() << "no transparent huge pages in this kernel";
  }
  HugePageBuffer large(int64_t{6} << 20);
  HugePageBuffer small(int64_t{1} << 20);
  const std::string large_flags = VmFlagsOf(large.data()), small_flags = VmFlagsOf(small.data());
  ASSERT_FALSE(large_flags.empty());
  ASSERT_FALSE(small_flags.empty());
  EXPECT_NE(large_flags.find(" hg"), std::string::npos) << large_flags;
  EXPECT_EQ(small_flags.find(" hg"), std::string::npos) << small_flags;
#else
  GTEST_SKIP() << "Linux only";
#endif
}

}  // namespace
}  // namespace tessera::kernels::cpu
