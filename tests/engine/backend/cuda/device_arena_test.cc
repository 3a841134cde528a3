// The arena's bump allocation without a device: regions over host memory (the arithmetic is the
// same), alignment, exhaustion naming the region, rewinding, and the counting region that sizes
// the one cudaMalloc.
#include "engine/backend/cuda/device_arena.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

#include "kernels/cuda/device.h"

namespace tessera::backend::cuda {
namespace {

using ::testing::HasSubstr;

TEST(DeviceArenaTest, RegionAlignsAndExhausts) {
  std::vector<char> host(1024 + kArenaAlignment);
  ArenaRegion r("scratch", host.data(), 1024);
  auto a = r.Allocate(10, "a");
  auto b = r.Allocate(300, "b");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(static_cast<char*>(*a), host.data());
  EXPECT_EQ(static_cast<char*>(*b), host.data() + 256);  // 10 bytes take one 256-byte unit
  EXPECT_EQ(r.used(), 768u);
  auto c = r.Allocate(600, "logits");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("'scratch': logits"));
  const size_t mark = r.mark();
  ASSERT_TRUE(r.Allocate(256, "d").ok());
  r.Rewind(mark);
  EXPECT_EQ(r.used(), 768u);
  auto zero = r.Allocate(0, "empty");  // still a distinct address
  ASSERT_TRUE(zero.ok());
  EXPECT_NE(*zero, *b);
}

TEST(DeviceArenaTest, MeasuringRegionCounts) {
  ArenaRegion m = ArenaRegion::Measuring("scratch");
  ASSERT_TRUE(m.AllocateArray<float>(100, "x").ok());
  ASSERT_TRUE(m.AllocateArray<uint16_t>(1000, "y").ok());
  EXPECT_EQ(m.used(), ArenaAligned(400) + ArenaAligned(2000));
  EXPECT_EQ(*m.AllocateArray<float>(1, "z"), nullptr);
}

TEST(DeviceArenaTest, CreateWithoutDeviceIsAnError) {
  if (kernels::cuda::DeviceCount().ok()) {
    auto arena = DeviceArena::Create(1 << 20);
    ASSERT_TRUE(arena.ok()) << arena.status();
    auto w = arena->Carve("weights", 1000);
    auto k = arena->Carve("kv", 2000);
    ASSERT_TRUE(w.ok() && k.ok());
    EXPECT_EQ(k->base(), w->base() + ArenaAligned(1000));
    EXPECT_FALSE(arena->Carve("too much", 1 << 20).ok());
    return;
  }
  auto arena = DeviceArena::Create(1 << 20);
  EXPECT_FALSE(arena.ok());
}

}  // namespace
}  // namespace tessera::backend::cuda
