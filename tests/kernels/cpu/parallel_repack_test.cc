// The load-time repacks on the pool (kernels/cpu/fast/parallel_repack.h) write the same bytes,
// and describe the same matrix, as one call over all columns: every GGUF type with int8 tiles,
// the INT4 / INT8 / NVFP4 / MXFP4 tiles, the f16 / f32 / bf16 panels, column counts that end in
// a partial group, ranges of several groups on several threads, and the inline path; and
// RepackQuantPanels and RepackFp8Pairs on a pool against one thread.
#include "kernels/cpu/fast/parallel_repack.h"

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/float_panel_matmul.h"
#include "kernels/cpu/fast/fp8_panel_matmul.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu::fast {
namespace {

using T = GgmlBlockType;

std::vector<uint8_t> RandomBytes(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

void ExpectSameWeights(const FastWeights& a, const FastWeights& b) {
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.k, b.k);
  EXPECT_EQ(a.row_stride, b.row_stride);
  EXPECT_EQ(a.quant_offset, b.quant_offset);
  EXPECT_EQ(a.group_size, b.group_size);
  EXPECT_EQ(a.alpha, b.alpha);
}

// Runs `whole` once over all n columns and `over_pool` (a parallel_repack.h helper) on a pool
// and without one, and compares the bytes and the descriptions; then `part` (the one-call repack
// of columns [c0, c1)) one group per call, in descending and in ascending order: a call that
// wrote past its own record would leave its mark on a group written before it (descending: the
// one after it; ascending: the one before it), which no later call rewrites.
template <class Whole, class OverPool, class Part>
void ExpectSplitMatchesWhole(int64_t n, int64_t bytes, int64_t group_bytes, Whole whole,
                             OverPool over_pool, Part part) {
  auto one = hwy::AllocateAligned<uint8_t>(bytes);
  std::memset(one.get(), 0xCD, bytes);
  const FastWeights want = whole(one.get());
  ThreadPool pool(3);
  for (ThreadPool* p : {&pool, static_cast<ThreadPool*>(nullptr)}) {
    auto split = hwy::AllocateAligned<uint8_t>(bytes);
    std::memset(split.get(), 0x5A, bytes);  // other than `one`'s fill: every byte must be written
    const FastWeights got = over_pool(p, split.get());
    EXPECT_EQ(std::memcmp(one.get(), split.get(), bytes), 0) << (p ? "pool" : "inline");
    EXPECT_EQ(got.data, split.get());
    ExpectSameWeights(got, want);
  }
  const int64_t groups = (n + kRepackGroupColumns - 1) / kRepackGroupColumns;
  for (bool descending : {true, false}) {
    auto each = hwy::AllocateAligned<uint8_t>(bytes);
    std::memset(each.get(), 0x5A, bytes);
    for (int64_t i = 0; i < groups; ++i) {
      const int64_t g = descending ? groups - 1 - i : i;
      part(g * kRepackGroupColumns, std::min(n, (g + 1) * kRepackGroupColumns),
           each.get() + g * group_bytes);
    }
    EXPECT_EQ(std::memcmp(one.get(), each.get(), bytes), 0)
        << (descending ? "descending" : "ascending") << " groups";
  }
}

const std::vector<int64_t> kColumnCounts = {7, 16 * 9 + 5, 16 * 37};

TEST(ParallelRepackTest, GgmlTilesMatchOneCall) {
  const int64_t k = 512;
  for (T t : {T::kQ4_0, T::kQ4_1, T::kQ5_0, T::kQ5_1, T::kQ8_0, T::kQ4_K, T::kQ5_K, T::kQ6_K,
              T::kQ2_K, T::kQ3_K, T::kIq4Nl, T::kIq4Xs, T::kIq2Xxs, T::kIq2Xs, T::kIq2S,
              T::kIq3Xxs, T::kIq3S, T::kIq1S, T::kIq1M, T::kTq1_0, T::kTq2_0}) {
    ASSERT_TRUE(HasGgmlX16(t));
    const GgmlBlockInfo info = GetGgmlBlockInfo(t);
    const int64_t row_bytes = k / info.elements * info.bytes;
    for (int64_t n : kColumnCounts) {
      SCOPED_TRACE(testing::Message() << "type " << static_cast<int>(t) << ", n " << n);
      const std::vector<uint8_t> rows = RandomBytes(n * row_bytes, 7 + static_cast<uint32_t>(n));
      ExpectSplitMatchesWhole(
          n, GgmlX16Bytes(t, n, k), GgmlX16Bytes(t, kRepackGroupColumns, k),
          [&](uint8_t* dst) { return RepackGgmlX16(t, rows.data(), n, k, dst); },
          [&](ThreadPool* p, uint8_t* dst) {
            return RepackGgmlX16OverPool(p, t, rows.data(), n, k, dst);
          },
          [&](int64_t c0, int64_t c1, uint8_t* dst) {
            return RepackGgmlX16(t, rows.data() + c0 * row_bytes, c1 - c0, k, dst);
          });
    }
  }
}

// The weight-only integer and FP4 tiles QuantizedLinear builds for int8 activations.
TEST(ParallelRepackTest, GroupedAndFp4TilesMatchOneCall) {
  const int64_t k = 256, group = 64;
  for (int64_t n : kColumnCounts) {
    SCOPED_TRACE(testing::Message() << "n " << n);
    std::vector<float> scales(n * (k / group)), zeros(n * (k / group));
    std::mt19937 rng(9);
    for (size_t i = 0; i < scales.size(); ++i) {
      scales[i] = 1e-3f * static_cast<float>(1 + rng() % 50);
      zeros[i] = static_cast<float>(rng() % 16);
    }
    for (bool bytes : {false, true}) {  // kU4Groups (nibble pairs) and kU8Groups (bytes)
      const std::vector<uint8_t> codes = RandomBytes(bytes ? n * k : n * k / 2, 12);
      FastWeights src;
      src.format = bytes ? FastFormat::kU8Groups : FastFormat::kU4Groups;
      src.data = codes.data();
      src.n = n;
      src.k = k;
      src.row_stride = bytes ? k : k / 2;
      src.group_scales = scales.data();
      src.group_zeros = zeros.data();
      src.group_size = group;
      auto repack = bytes ? RepackU8x16 : RepackU4x16;
      auto size = [&](int64_t cols) {
        return bytes ? U8x16Bytes(cols, k, group) : U4x16Bytes(cols, k, group);
      };
      ExpectSplitMatchesWhole(
          n, size(n), size(kRepackGroupColumns), [&](uint8_t* dst) { return repack(src, dst); },
          [&](ThreadPool* p, uint8_t* dst) {
            return RepackGroupedOverPool(p, src, size(kRepackGroupColumns), dst, repack);
          },
          [&](int64_t c0, int64_t c1, uint8_t* dst) {
            FastWeights part = src;
            part.data = src.data + c0 * src.row_stride;
            part.group_scales = src.group_scales + c0 * (k / group);
            part.group_zeros = src.group_zeros + c0 * (k / group);
            part.n = c1 - c0;
            return repack(part, dst);
          });
    }
    const std::vector<uint8_t> pairs = RandomBytes(n * k / 2, 13);
    const std::vector<uint8_t> nv_scales = RandomBytes(n * k / 16, 14);
    FastWeights nv;
    nv.format = FastFormat::kNvfp4Pairs;
    nv.data = pairs.data();
    nv.n = n;
    nv.k = k;
    nv.row_stride = k / 2;
    nv.block_scales = nv_scales.data();
    nv.alpha = 0.37f;
    ExpectSplitMatchesWhole(
        n, Nvfp4x16Bytes(n, k), Nvfp4x16Bytes(kRepackGroupColumns, k),
        [&](uint8_t* dst) { return RepackNvfp4x16(nv, dst); },
        [&](ThreadPool* p, uint8_t* dst) { return RepackNvfp4x16OverPool(p, nv, dst); },
        [&](int64_t c0, int64_t c1, uint8_t* dst) {
          FastWeights part = nv;
          part.data = nv.data + c0 * (k / 2);
          part.block_scales = nv.block_scales + c0 * (k / 16);
          part.n = c1 - c0;
          return RepackNvfp4x16(part, dst);
        });
    const std::vector<uint8_t> mx_scales = RandomBytes(n * k / 32, 15);
    ExpectSplitMatchesWhole(
        n, Mxfp4x16Bytes(n, k), Mxfp4x16Bytes(kRepackGroupColumns, k),
        [&](uint8_t* dst) { return RepackMxfp4x16(pairs.data(), mx_scales.data(), n, k, dst); },
        [&](ThreadPool* p, uint8_t* dst) {
          return RepackMxfp4x16OverPool(p, pairs.data(), mx_scales.data(), n, k, dst);
        },
        [&](int64_t c0, int64_t c1, uint8_t* dst) {
          return RepackMxfp4x16(pairs.data() + c0 * (k / 2), mx_scales.data() + c0 * (k / 32),
                                c1 - c0, k, dst);
        });
  }
}

TEST(ParallelRepackTest, DensePanelsMatchOneCall) {
  struct Dense {
    FastFormat format;
    int64_t elem_bytes;
    int64_t (*bytes)(int64_t, int64_t);
    FastWeights (*repack)(const FastWeights&, uint8_t*);
  };
  const int64_t k = 96;
  // Random bits are fine for a repack (it moves or splits values, it does not compute with them).
  for (const Dense& d : {Dense{FastFormat::kF16, 2, F16PanelsBytes, RepackF16Panels},
                         Dense{FastFormat::kF32, 4, F32PanelsBytes, RepackF32Panels},
                         Dense{FastFormat::kBF16, 2, Bf16PairsBytes, RepackBf16Pairs}}) {
    for (int64_t n : kColumnCounts) {
      SCOPED_TRACE(testing::Message() << "format " << static_cast<int>(d.format) << ", n " << n);
      const std::vector<uint8_t> rows = RandomBytes(n * k * d.elem_bytes, 11);
      FastWeights src;
      src.format = d.format;
      src.data = rows.data();
      src.n = n;
      src.k = k;
      src.row_stride = k * d.elem_bytes;
      ExpectSplitMatchesWhole(
          n, d.bytes(n, k), d.bytes(kRepackGroupColumns, k),
          [&](uint8_t* dst) { return d.repack(src, dst); },
          [&](ThreadPool* p, uint8_t* dst) {
            return RepackPanelsOverPool(p, src, d.bytes, d.repack, dst);
          },
          [&](int64_t c0, int64_t c1, uint8_t* dst) {
            FastWeights part = src;
            part.data = src.data + c0 * src.row_stride;
            part.n = c1 - c0;
            return d.repack(part, dst);
          });
    }
  }
}

// RepackQuantPanels (quant_panel_matmul.h) splits its panels over a pool itself: the same bytes
// and description as on one thread, for INT4 (integer and fractional zero points), INT8 bytes,
// MXFP4 and NVFP4, in both forms.
TEST(ParallelRepackTest, QuantPanelsOnAPoolMatchOneThread) {
  const int64_t n = 16 * 11 + 5, k = 256, group = 64;
  std::mt19937 rng(3);
  ThreadPool pool(3);
  for (QuantDecode decode :
       {QuantDecode::kInt4, QuantDecode::kInt8, QuantDecode::kMxfp4, QuantDecode::kNvfp4}) {
    for (QuantPanelForm form : {QuantPanelForm::kF32, QuantPanelForm::kBf16Pairs}) {
      SCOPED_TRACE(testing::Message() << "decode " << static_cast<int>(decode) << ", form "
                                      << static_cast<int>(form));
      const bool integer = decode == QuantDecode::kInt4 || decode == QuantDecode::kInt8;
      const int64_t g = integer ? group : decode == QuantDecode::kMxfp4 ? 32 : 16;
      // Codes (nibble pairs, or bytes of up to 6 bits so that the pair form applies), scales,
      // zero points and block scales: random, the repack only moves and converts them.
      std::vector<uint8_t> codes = RandomBytes(decode == QuantDecode::kInt8 ? n * k : n * k / 2, 5);
      if (decode == QuantDecode::kInt8) {
        for (auto& c : codes) c &= 0x3F;
      }
      std::vector<float> scales(n * (k / g)), zeros(n * (k / g));
      for (size_t i = 0; i < scales.size(); ++i) {
        scales[i] = 1e-3f * static_cast<float>(1 + rng() % 50);
        zeros[i] = i % 3 == 0 ? static_cast<float>(rng() % 16) : 0.37f * static_cast<float>(i % 7);
      }
      std::vector<uint8_t> block_scales = RandomBytes(n * (k / g), 6);
      for (auto& b : block_scales) b = static_cast<uint8_t>(100 + b % 40);
      FastQuantWeights w;
      w.decode = decode;
      w.n = n;
      w.k = k;
      w.q = codes.data();
      if (integer) {
        w.scales = scales.data();
        w.zeros = zeros.data();
        w.scale_rows = 1;
        w.scale_row_stride = k / g;
        w.scale_k = g;
      } else {
        w.block_scales = block_scales.data();
        w.alpha = decode == QuantDecode::kNvfp4 ? 3.7e-3f : 1.0f;
      }
      const int64_t bytes = QuantPanelsBytes(w);
      auto one = hwy::AllocateAligned<uint8_t>(bytes);
      auto split = hwy::AllocateAligned<uint8_t>(bytes);
      std::memset(one.get(), 0xCD, bytes);
      std::memset(split.get(), 0x5A, bytes);
      const FastQuantWeights a = RepackQuantPanels(w, one.get(), form);
      const FastQuantWeights b = RepackQuantPanels(w, split.get(), form, &pool);
      EXPECT_EQ(std::memcmp(one.get(), split.get(), bytes), 0);
      EXPECT_EQ(b.q, split.get());
      EXPECT_EQ(a.pair_panels, b.pair_panels);
      EXPECT_EQ(a.symmetric_panels, b.symmetric_panels);
      EXPECT_EQ(a.half_panel_headers, b.half_panel_headers);
      EXPECT_EQ(a.panel_centre, b.panel_centre);
    }
  }
}

TEST(ParallelRepackTest, Fp8PairsOnAPoolMatchOneThread) {
  const int64_t k = 200;  // pairs in whole 64-byte steps of two: a padded last step
  ThreadPool pool(3);
  for (int64_t n : kColumnCounts) {
    const std::vector<uint8_t> codes = RandomBytes(n * k, 16);
    FastQuantWeights w;
    w.n = n;
    w.k = k;
    w.q = codes.data();
    const int64_t bytes = Fp8PairsBytes(n, k);
    auto one = hwy::AllocateAligned<uint8_t>(bytes);
    auto split = hwy::AllocateAligned<uint8_t>(bytes);
    std::memset(one.get(), 0xCD, bytes);
    std::memset(split.get(), 0x5A, bytes);
    RepackFp8Pairs(w, one.get());
    EXPECT_EQ(RepackFp8Pairs(w, split.get(), &pool).q, split.get());
    EXPECT_EQ(std::memcmp(one.get(), split.get(), bytes), 0) << n;
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
