// The vectorized paged attention (kernels/cpu/fast/paged_attention.h) against the scalar kernel
// (kernels/cpu/attention.h) on random caches: head_dim not a multiple of any vector width, grouped
// and plain heads, blocks that end mid-context, contexts of 1 to a few hundred positions, f32,
// f16, bf16 and FP8 E4M3 blocks. Outputs are convex combinations of V rows, so the bound is
// relative to max|v|. Splitting the heads across calls must not change a bit (the engine splits
// them over threads). Sliding windows and soft-capped scores (AttentionOptions) against a
// double-precision loop.
#include "kernels/cpu/fast/paged_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/fast/fp8_act_quant.h"
#include "kernels/cpu/fast/half_convert.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/hwy_targets_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

struct Shape {
  int64_t heads, kv_heads, head_dim, block_tokens, context;
};

// Blocks in a shuffled order, as a block table hands them out.
template <typename T>
struct Cache {
  std::vector<std::vector<T>> k, v;
  std::vector<const T*> kp, vp;
};

template <typename T, typename Gen>
Cache<T> RandomCache(const Shape& s, std::mt19937& rng, Gen gen) {
  Cache<T> c;
  const int64_t blocks = (s.context + s.block_tokens - 1) / s.block_tokens;
  const int64_t elems = s.block_tokens * s.kv_heads * s.head_dim;
  for (int64_t b = 0; b < blocks; ++b) {
    c.k.emplace_back(elems);
    c.v.emplace_back(elems);
    for (auto& e : c.k.back()) e = gen(rng);
    for (auto& e : c.v.back()) e = gen(rng);
  }
  std::vector<int64_t> order(blocks);
  for (int64_t b = 0; b < blocks; ++b) order[b] = b;
  std::shuffle(order.begin(), order.end(), rng);
  for (int64_t b : order) {
    c.kp.push_back(c.k[b].data());
    c.vp.push_back(c.v[b].data());
  }
  return c;
}

std::vector<float> RandomQ(const Shape& s, std::mt19937& rng, float spread) {
  std::normal_distribution<float> nd(0.0f, spread);
  std::vector<float> q(s.heads * s.head_dim);
  for (auto& e : q) e = nd(rng);
  return q;
}

class PagedAttentionTest : public ::testing::TestWithParam<std::tuple<Shape, float>> {};

// Heads in calls of `per_call` (the last one shorter), last call first: the engine splits heads
// over threads at any boundary.
template <typename Attend>
std::vector<float> SplitHeads(int64_t heads, int64_t head_dim, int64_t per_call, Attend attend) {
  std::vector<float> out(heads * head_dim, -7.0f);
  for (int64_t h = (heads - 1) / per_call * per_call; h >= 0; h -= per_call) {
    attend(h, std::min(heads, h + per_call), out.data());
  }
  return out;
}

// One head per call, or three, gives the same bits as all heads in one call (`all`).
// attend(b, e, scratch, out) runs heads [b, e) with scratch sized for that call only, so an
// overrun would show (ASan).
template <typename Attend>
void ExpectSplitCallsMatch(const Shape& s, const std::vector<float>& all, Attend attend) {
  for (const int64_t per_call : {1, 3}) {
    EXPECT_EQ(SplitHeads(s.heads, s.head_dim, per_call,
                         [&](int64_t b, int64_t e, float* out) {
                           std::vector<float> sc(FastAttentionScratch(s.context, e - b));
                           attend(b, e, sc.data(), out);
                         }),
              all)
        << per_call << " heads per call";
  }
}

void CheckF32(const Shape& s, float spread) {
  std::mt19937 rng(static_cast<uint32_t>(s.head_dim * 131 + s.context));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto cache = RandomCache<float>(s, rng, [&](std::mt19937& r) { return nd(r); });
  const auto q = RandomQ(s, rng, spread);
  const PagedKvView view{cache.kp.data(), cache.vp.data(), s.block_tokens, s.kv_heads, s.head_dim};
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));

  std::vector<float> want(q.size()), got(q.size(), -7.0f), scratch(s.context),
      fast_scratch(FastAttentionScratch(s.context, s.heads));
  PagedAttention(q.data(), s.heads, view, s.context, scale, 0, s.heads, scratch.data(),
                 want.data());
  FastPagedAttention(q.data(), s.heads, view, s.context, scale, 0, s.heads, fast_scratch.data(),
                     got.data());
  float vmax = 0;
  for (const auto& b : cache.v)
    for (float e : b) vmax = std::max(vmax, std::fabs(e));
  for (size_t i = 0; i < q.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-6f * vmax + 1e-5f * std::fabs(want[i])) << "element " << i;
  }

  ExpectSplitCallsMatch(s, got, [&](int64_t b, int64_t e, float* sc, float* out) {
    FastPagedAttention(q.data(), s.heads, view, s.context, scale, b, e, sc, out);
  });
}

TEST_P(PagedAttentionTest, F32MatchesScalarKernel) {
  const auto [s, spread] = GetParam();
  ForEachHwyTarget([&] { CheckF32(s, spread); });
}

void CheckFp8(const Shape& s, float spread) {
  std::mt19937 rng(static_cast<uint32_t>(s.head_dim * 977 + s.context));
  // Every code but the two NaNs: subnormals, zeros of both signs and ±448 included.
  const auto cache = RandomCache<uint8_t>(s, rng, [](std::mt19937& r) {
    uint8_t b;
    do b = static_cast<uint8_t>(r());
    while ((b & 0x7F) == 0x7F);
    return b;
  });
  const auto q = RandomQ(s, rng, spread / 64.0f);
  const PagedKvViewFp8 view{cache.kp.data(), cache.vp.data(), s.block_tokens, s.kv_heads,
                            s.head_dim,      0.01f,           0.37f};
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  std::vector<float> want(q.size()), got(q.size(), -7.0f), scratch(s.context),
      fast_scratch(FastAttentionScratch(s.context, s.heads));
  PagedAttentionFp8(q.data(), s.heads, view, s.context, scale, 0, s.heads, scratch.data(),
                    want.data());
  FastPagedAttentionFp8(q.data(), s.heads, view, s.context, scale, 0, s.heads, fast_scratch.data(),
                        got.data());
  const float vmax = 448.0f * 0.37f;
  for (size_t i = 0; i < q.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-6f * vmax + 1e-5f * std::fabs(want[i])) << "element " << i;
  }
  ExpectSplitCallsMatch(s, got, [&](int64_t b, int64_t e, float* sc, float* out) {
    FastPagedAttentionFp8(q.data(), s.heads, view, s.context, scale, b, e, sc, out);
  });

  // Scales of 256 and above: 2^120 · scale in one constant would overflow to inf (review).
  const PagedKvViewFp8 big{cache.kp.data(), cache.vp.data(),        s.block_tokens, s.kv_heads,
                           s.head_dim,      300.0f / 64.0f / 64.0f, 300.0f};
  PagedAttentionFp8(q.data(), s.heads, big, s.context, scale, 0, s.heads, scratch.data(),
                    want.data());
  FastPagedAttentionFp8(q.data(), s.heads, big, s.context, scale, 0, s.heads, fast_scratch.data(),
                        got.data());
  for (size_t i = 0; i < q.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-6f * 448.0f * 300.0f + 1e-5f * std::fabs(want[i]))
        << "element " << i;
  }
}

TEST_P(PagedAttentionTest, Fp8MatchesScalarKernel) {
  const auto [s, spread] = GetParam();
  ForEachHwyTarget([&] { CheckFp8(s, spread); });
}

// 16-bit blocks: the scalar kernel on them is PagedAttention on their exact f32 values, bit for
// bit (the same arithmetic in the same order), and the fast kernel agrees with it as for f32.
void CheckHalf(const Shape& s, float spread, KvHalf half) {
  std::mt19937 rng(static_cast<uint32_t>(s.head_dim * 313 + s.context));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto encode = half == KvHalf::kBf16 ? numeric::FloatToBf16 : numeric::FloatToHalf;
  auto decode = half == KvHalf::kBf16 ? numeric::Bf16ToFloat : numeric::HalfToFloat;
  const auto cache =
      RandomCache<uint16_t>(s, rng, [&](std::mt19937& r) { return encode(nd(r)); });
  // The same blocks widened to f32, in the same table order.
  std::vector<std::vector<float>> wide_k, wide_v;
  std::vector<const float*> wkp, wvp;
  for (size_t b = 0; b < cache.kp.size(); ++b) {
    const int64_t elems = s.block_tokens * s.kv_heads * s.head_dim;
    wide_k.emplace_back(elems);
    wide_v.emplace_back(elems);
    for (int64_t i = 0; i < elems; ++i) {
      wide_k.back()[i] = decode(cache.kp[b][i]);
      wide_v.back()[i] = decode(cache.vp[b][i]);
    }
    wkp.push_back(wide_k.back().data());
    wvp.push_back(wide_v.back().data());
  }
  const auto q = RandomQ(s, rng, spread);
  const PagedKvView16 view{cache.kp.data(), cache.vp.data(), s.block_tokens,
                           s.kv_heads,      s.head_dim,      half};
  const PagedKvView wide{wkp.data(), wvp.data(), s.block_tokens, s.kv_heads, s.head_dim};
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  std::vector<float> want(q.size()), wide_out(q.size()), got(q.size(), -7.0f), scratch(s.context),
      fast_scratch(FastAttentionScratch(s.context, s.heads));
  PagedAttention16(q.data(), s.heads, view, s.context, scale, 0, s.heads, scratch.data(),
                   want.data());
  PagedAttention(q.data(), s.heads, wide, s.context, scale, 0, s.heads, scratch.data(),
                 wide_out.data());
  ASSERT_EQ(want, wide_out);
  FastPagedAttention16(q.data(), s.heads, view, s.context, scale, 0, s.heads, fast_scratch.data(),
                       got.data());
  float vmax = 0;
  for (const auto& b : wide_v)
    for (float e : b) vmax = std::max(vmax, std::fabs(e));
  for (size_t i = 0; i < q.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], 2e-6f * vmax + 1e-5f * std::fabs(want[i])) << "element " << i;
  }
  std::vector<float> fast_wide(q.size());
  FastPagedAttention(q.data(), s.heads, wide, s.context, scale, 0, s.heads, fast_scratch.data(),
                     fast_wide.data());
  EXPECT_EQ(got, fast_wide) << "the 16-bit reader must widen exactly";
  ExpectSplitCallsMatch(s, got, [&](int64_t b, int64_t e, float* sc, float* out) {
    FastPagedAttention16(q.data(), s.heads, view, s.context, scale, b, e, sc, out);
  });
}

TEST_P(PagedAttentionTest, F16MatchesScalarKernel) {
  const auto [s, spread] = GetParam();
  ForEachHwyTarget([&] { CheckHalf(s, spread, KvHalf::kF16); });
}

TEST_P(PagedAttentionTest, Bf16MatchesScalarKernel) {
  const auto [s, spread] = GetParam();
  ForEachHwyTarget([&] { CheckHalf(s, spread, KvHalf::kBf16); });
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, PagedAttentionTest,
    ::testing::Combine(::testing::Values(Shape{32, 4, 64, 16, 100},   // TinyLlama
                                         Shape{8, 2, 72, 5, 33},      // 4 full vectors + tail
                                         Shape{6, 1, 80, 7, 1},       // one position
                                         Shape{4, 4, 3, 16, 17},      // head_dim below a vector
                                         Shape{16, 8, 128, 16, 300},  // two PV passes on AVX-512
                                         Shape{2, 2, 40, 32, 64},
                                         Shape{32, 4, 64, 16, 600},  // three context tiles
                                         // Tiles ending mid-block, a partial PV vector
                                         // reloaded across tiles, a group of 20 split in runs.
                                         Shape{8, 2, 40, 7, 600}, Shape{40, 2, 40, 24, 530}),
                       ::testing::Values(1.0f, 8.0f)));  // sharp softmax at 8

// Sliding windows, Gemma 2's soft cap and gpt-oss's attention sinks. The scalar kernel is checked
// against a double-precision loop over positions [first, context) read straight from the blocks (a
// window starting before, at and inside a block, one position wide, the whole context), then the
// fast kernel against the scalar one for every cache type, and for splitting heads over calls.
double RefAttention(const Shape& s, const Cache<float>& c, const std::vector<float>& q, float scale,
                    int64_t h, int64_t i, int64_t first, double cap, const float* sinks) {
  const int64_t bt = s.block_tokens, d = s.head_dim, kvh = h / (s.heads / s.kv_heads);
  std::vector<double> score;
  for (int64_t t = first; t < s.context; ++t) {
    const float* k = c.kp[t / bt] + kvh * d * bt + t % bt;
    double dot = 0;
    for (int64_t j = 0; j < d; ++j) dot += double{q[h * d + j]} * k[j * bt];
    double x = dot * scale;
    if (cap > 0) x = cap * std::tanh(x / cap);
    score.push_back(x);
  }
  double m = *std::max_element(score.begin(), score.end());
  if (sinks != nullptr) m = std::max(m, double{sinks[h]});
  double denom = sinks != nullptr ? std::exp(sinks[h] - m) : 0.0, num = 0;
  for (int64_t t = first; t < s.context; ++t) {
    const double e = std::exp(score[t - first] - m);
    denom += e;
    num += e * c.vp[t / bt][(kvh * bt + t % bt) * d + i];
  }
  return num / denom;
}

class AttentionWindowTest : public ::testing::TestWithParam<std::tuple<Shape, float, bool>> {};

TEST_P(AttentionWindowTest, WindowSoftcapAndSinksMatchReference) {
  const auto [s, softcap, with_sinks] = GetParam();
  std::mt19937 rng(static_cast<uint32_t>(s.head_dim * 71 + s.context));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto cache = RandomCache<float>(s, rng, [&](std::mt19937& r) { return nd(r); });
  const auto q = RandomQ(s, rng, 4.0f);  // sharp enough that masking a position shows
  // Sinks from well below to well above the scores (a head that attends to almost nothing).
  std::vector<float> sink_values(s.heads);
  for (int64_t h = 0; h < s.heads; ++h) sink_values[h] = -6.0f + 12.0f * h / s.heads;
  const float* sinks = with_sinks ? sink_values.data() : nullptr;
  const PagedKvView view{cache.kp.data(), cache.vp.data(), s.block_tokens, s.kv_heads, s.head_dim};
  // The same values as f16 and FP8 caches (each kernel against its scalar twin).
  auto widen = [&](auto encode) {
    using T = decltype(encode(0.0f));
    Cache<T> out;
    for (size_t b = 0; b < cache.k.size(); ++b) {
      out.k.emplace_back(cache.k[b].size());
      out.v.emplace_back(cache.v[b].size());
      for (size_t i = 0; i < cache.k[b].size(); ++i) {
        out.k.back()[i] = encode(cache.k[b][i]);
        out.v.back()[i] = encode(cache.v[b][i]);
      }
    }
    for (const float* kp : cache.kp) {
      const size_t b = std::find_if(cache.k.begin(), cache.k.end(),
                                    [&](const auto& blk) { return blk.data() == kp; }) -
                       cache.k.begin();
      out.kp.push_back(out.k[b].data());
      out.vp.push_back(out.v[b].data());
    }
    return out;
  };
  const auto c16 = widen(numeric::FloatToHalf);
  const auto c8 = widen([](float x) { return numeric::EncodeE4m3(x / 0.05f); });
  const PagedKvView16 view16{c16.kp.data(), c16.vp.data(), s.block_tokens,
                             s.kv_heads,    s.head_dim,    KvHalf::kF16};
  const PagedKvViewFp8 view8{c8.kp.data(), c8.vp.data(), s.block_tokens, s.kv_heads,
                             s.head_dim,   0.05f,        0.05f};
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  const int64_t bt = s.block_tokens;
  for (const int64_t first :
       {int64_t{0}, int64_t{1}, bt - 1, bt, bt + 3, 3 * bt, s.context / 2, s.context - 1}) {
    if (first < 0 || first >= s.context) continue;
    SCOPED_TRACE(testing::Message() << "first " << first);
    const AttentionOptions opt{first, softcap, sinks};
    std::vector<float> want(q.size()), scratch(s.context);
    PagedAttention(q.data(), s.heads, view, s.context, scale, 0, s.heads, scratch.data(),
                   want.data(), opt);
    for (int64_t h = 0; h < s.heads; ++h) {
      for (int64_t i = 0; i < s.head_dim; ++i) {
        const double ref = RefAttention(s, cache, q, scale, h, i, first, softcap, sinks);
        ASSERT_NEAR(want[h * s.head_dim + i], ref, 2e-5) << "head " << h << " dim " << i;
      }
    }
    std::vector<float> want16(q.size()), want8(q.size());
    PagedAttention16(q.data(), s.heads, view16, s.context, scale, 0, s.heads, scratch.data(),
                     want16.data(), opt);
    PagedAttentionFp8(q.data(), s.heads, view8, s.context, scale, 0, s.heads, scratch.data(),
                      want8.data(), opt);
    ForEachHwyTarget([&] {
      // The bounds of the unwindowed tests: relative to max|v| (about 4 for these normal values;
      // FP8's codes reach 448 · 0.05).
      auto check = [&](const std::vector<float>& ref, float vmax, auto attend) {
        std::vector<float> got(q.size(), -7.0f), sc(FastAttentionScratch(s.context, s.heads));
        attend(0, s.heads, sc.data(), got.data());
        for (size_t i = 0; i < q.size(); ++i) {
          ASSERT_NEAR(got[i], ref[i], 2e-6f * vmax + 1e-5f * std::fabs(ref[i])) << i;
        }
        ExpectSplitCallsMatch(s, got, attend);
      };
      check(want, 5.0f, [&](int64_t b, int64_t e, float* sc, float* out) {
        FastPagedAttention(q.data(), s.heads, view, s.context, scale, b, e, sc, out, opt);
      });
      check(want16, 5.0f, [&](int64_t b, int64_t e, float* sc, float* out) {
        FastPagedAttention16(q.data(), s.heads, view16, s.context, scale, b, e, sc, out, opt);
      });
      check(want8, 448.0f * 0.05f, [&](int64_t b, int64_t e, float* sc, float* out) {
        FastPagedAttentionFp8(q.data(), s.heads, view8, s.context, scale, b, e, sc, out, opt);
      });
    });
  }
}

// A window start before position 0 (a caller's max(0, p + 1 - W) skipped) is position 0.
TEST(AttentionWindow, NegativeFirstPositionIsTheWholeContext) {
  const Shape s{4, 2, 16, 4, 10};
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  const auto cache = RandomCache<float>(s, rng, [&](std::mt19937& r) { return nd(r); });
  const auto q = RandomQ(s, rng, 1.0f);
  const PagedKvView view{cache.kp.data(), cache.vp.data(), s.block_tokens, s.kv_heads, s.head_dim};
  std::vector<float> a(q.size()), b(q.size()), c(q.size()), d(q.size()), scratch(s.context),
      fast(FastAttentionScratch(s.context, s.heads));
  PagedAttention(q.data(), s.heads, view, s.context, 0.25f, 0, s.heads, scratch.data(), a.data());
  PagedAttention(q.data(), s.heads, view, s.context, 0.25f, 0, s.heads, scratch.data(), b.data(),
                 {-5, 0.0f});
  FastPagedAttention(q.data(), s.heads, view, s.context, 0.25f, 0, s.heads, fast.data(), c.data());
  FastPagedAttention(q.data(), s.heads, view, s.context, 0.25f, 0, s.heads, fast.data(), d.data(),
                     {-5, 0.0f});
  EXPECT_EQ(a, b);
  EXPECT_EQ(c, d);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionWindowTest,
    ::testing::Combine(::testing::Values(Shape{8, 2, 72, 5, 33}, Shape{6, 1, 80, 7, 1},
                                         Shape{4, 4, 3, 16, 17}, Shape{32, 4, 64, 16, 300},
                                         Shape{8, 2, 40, 7, 600}),
                       ::testing::Values(0.0f, 1.5f),  // 1.5: most scores are capped
                       ::testing::Bool()));            // attention sinks

TEST(PagedAttentionFp8, NanCodeGivesNanOutput) {
  const Shape s{2, 1, 16, 4, 6};
  std::mt19937 rng(3);
  auto cache = RandomCache<uint8_t>(s, rng, [](std::mt19937&) { return uint8_t{0x38}; });
  cache.k[0][5] = 0xFF;  // K (transposed block) of position 1 or 5 (block order is shuffled), dim 1
  const auto q = RandomQ(s, rng, 1.0f);
  const PagedKvViewFp8 view{
      cache.kp.data(), cache.vp.data(), s.block_tokens, s.kv_heads, s.head_dim, 1.0f, 1.0f};
  std::vector<float> want(q.size()), got(q.size()), scratch(s.context),
      fast_scratch(FastAttentionScratch(s.context, s.heads));
  PagedAttentionFp8(q.data(), s.heads, view, s.context, 0.25f, 0, s.heads, scratch.data(),
                    want.data());
  FastPagedAttentionFp8(q.data(), s.heads, view, s.context, 0.25f, 0, s.heads, fast_scratch.data(),
                        got.data());
  for (size_t i = 0; i < q.size(); ++i) {
    EXPECT_TRUE(std::isnan(want[i])) << i;
    EXPECT_TRUE(std::isnan(got[i])) << i;
  }
}

// Encoding rounds to nearest even once per element; f16 overflows to inf as IEEE conversion does
// (llama.cpp's f16 cache behaves the same), bf16 keeps the f32 range.
TEST(EncodeKv16, RoundsToNearestEven) {
  const float x[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, 70000.0f, -1e-8f, 3.0e38f};
  uint16_t h[5], b[5];
  EncodeKv16(x, 5, KvHalf::kF16, h);
  EncodeKv16(x, 5, KvHalf::kBf16, b);
  EXPECT_EQ(numeric::HalfToFloat(h[0]), 1.0f);  // tie to even
  EXPECT_EQ(numeric::HalfToFloat(h[1]), 1.0f + 0x1p-9f);
  EXPECT_TRUE(std::isinf(numeric::HalfToFloat(h[2])));
  EXPECT_EQ(h[3], 0x8000);  // -0: below half the smallest subnormal (2^-25)
  EXPECT_EQ(numeric::Bf16ToFloat(b[2]), 70144.0f);
  EXPECT_FALSE(std::isinf(numeric::Bf16ToFloat(b[4])));
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(h[i], numeric::FloatToHalf(x[i]));
    EXPECT_EQ(b[i], numeric::FloatToBf16(x[i]));
  }
}

// The decoder stores K and V through the vectorized encoders (half_convert.h, fp8_act_quant.h);
// the cache's contract is these scalar ones, so they must give the same codes (random rows of
// every length up to 70 with zeros, subnormals, ties, overflow, inf and NaN mixed in).
TEST(EncodeKv, VectorizedStoresMatchTheScalarEncoders) {
  std::mt19937 rng(12);
  std::normal_distribution<float> nd(0.0f, 30.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            1e-41f,
                            1.0f + 0x1p-11f,
                            65520.0f,
                            70000.0f,
                            3.0e38f,
                            std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN()};
  for (int64_t n = 0; n <= 70; ++n) {
    std::vector<float> x(n);
    for (int64_t i = 0; i < n; ++i) x[i] = i % 5 == 4 ? specials[(i / 5) % 9] : nd(rng);
    for (const KvHalf half : {KvHalf::kF16, KvHalf::kBf16}) {
      std::vector<uint16_t> want(n), got(n);
      EncodeKv16(x.data(), n, half, want.data());
      (half == KvHalf::kBf16 ? ConvertF32ToBf16 : ConvertF32ToF16)(x.data(), n, got.data());
      EXPECT_EQ(got, want) << "n " << n << " bf16 " << (half == KvHalf::kBf16);
    }
    std::vector<uint8_t> want8(n), got8(n);
    EncodeKvFp8(x.data(), n, 0.37f, want8.data());
    FastEncodeE4m3Divide(x.data(), n, 0.37f, got8.data());
    EXPECT_EQ(got8, want8) << "n " << n;
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
