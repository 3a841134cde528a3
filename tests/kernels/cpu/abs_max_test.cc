// The vectorized NaN-skipping amax (kernels/cpu/fast/abs_max.h) against the scalar fold
// std::max(amax, fabs(x)) from 0, on every compiled target, with NaN of both signs, inf, -0 and
// lengths around the vector widths.
#include "kernels/cpu/fast/abs_max.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/numeric/hd.h"
#include "tests/kernels/cpu/hwy_targets_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

TEST(AbsMaxTest, SkipsNanAndMatchesTheFold) {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  const float inf = std::numeric_limits<float>::infinity();
  ForEachHwyTarget([&] {
    for (const int64_t n : {0, 1, 5, 16, 31, 100, 4099}) {
      std::vector<float> x(n);
      for (auto& v : x) v = nd(rng);
      if (n > 3) {
        x[n / 2] = std::nanf("");
        x[n - 1] = -std::nanf("");
      }
      float want = 0;
      for (const float v : x) want = std::max(want, std::fabs(v));
      EXPECT_EQ(numeric::FloatToBits(AbsMaxSkippingNanF32(x.data(), n)), numeric::FloatToBits(want))
          << "n " << n;
      if (n > 3) {
        x[1] = -inf;
        EXPECT_EQ(AbsMaxSkippingNanF32(x.data(), n), inf) << "n " << n;
      }
    }
    const std::vector<float> zeros = {-0.0f, -0.0f, 0.0f};
    EXPECT_EQ(numeric::FloatToBits(AbsMaxSkippingNanF32(zeros.data(), 3)), 0u);
  });
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
