// ToFloat32 (engine/io/tensor_view.h) on a thread pool gives the values it gives on one thread,
// bit for bit, for the element-wise dtypes it splits (random bit patterns, NaN and inf included,
// more elements than one range).
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "engine/io/tensor_view.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::io {
namespace {

TEST(TensorViewTest, ToFloat32OnAPoolMatchesOneThread) {
  const int64_t n = 300001;  // several 64 Ki ranges and a ragged end
  std::mt19937 rng(1);
  kernels::cpu::ThreadPool pool(3);
  struct Case {
    DType dtype;
    int64_t bytes_per_element;
  };
  for (const Case& c : {Case{DType::kF16, 2}, Case{DType::kBF16, 2}, Case{DType::kF32, 4},
                        Case{DType::kF8E4M3, 1}, Case{DType::kI8, 1}}) {
    std::vector<uint8_t> bytes(n * c.bytes_per_element);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    TensorView view;
    view.name = "t";
    view.dtype = c.dtype;
    view.shape = {n};
    view.bytes = absl::MakeConstSpan(bytes);
    absl::StatusOr<std::vector<float>> one = ToFloat32(view);
    absl::StatusOr<std::vector<float>> split = ToFloat32(view, &pool);
    ASSERT_TRUE(one.ok()) << one.status();
    ASSERT_TRUE(split.ok()) << split.status();
    ASSERT_EQ(one->size(), static_cast<size_t>(n));
    ASSERT_EQ(split->size(), static_cast<size_t>(n));
    EXPECT_EQ(std::memcmp(one->data(), split->data(), n * sizeof(float)), 0)
        << static_cast<int>(c.dtype);
  }
}

}  // namespace
}  // namespace tessera::io
