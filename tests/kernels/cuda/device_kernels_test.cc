// Device tests of every CUDA kernel against the CPU reference on random data. Quantizers must
// match bit for bit; everything else within a per-format NMSE bound. Each test GTEST_SKIP()s
// when no device is usable.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <set>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/cpu/quant/fp4_matmul.h"
#include "kernels/cpu/quant/fp8_matmul.h"
#include "kernels/cpu/quant/int_weight_only_matmul.h"
#include "kernels/cpu/rope.h"
#include "kernels/cuda/activation_quant.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/fp8_gemm.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cuda/cuda_test_util.h"

namespace tessera::kernels::cuda {
namespace {

using testing::Alloc;
using testing::Download;
using testing::Nmse;
using testing::RandomBytes;
using testing::RandomFloats;
using testing::Upload;

TEST(ActivationQuantDeviceTest, Fp8PerTokenMatchesCpuBitForBit) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 37, k = 1000;
  std::vector<float> x = RandomFloats(rows * k, 3.0f, 1);
  x[5] = 0;  // and a row of zeros
  for (int64_t i = 0; i < k; ++i) x[2 * k + i] = 0;
  std::vector<uint8_t> q_ref(rows * k);
  std::vector<float> s_ref(rows);
  const float ub = 5.0f;
  cpu::QuantizeFp8PerToken(x.data(), rows, k, &ub, cpu::kFp8PerTokenMinScale, q_ref.data(),
                           s_ref.data());
  DeviceBuffer dx = Upload(x), dub = Upload(std::vector<float>{ub});
  DeviceBuffer dq = Alloc(rows * k), ds = Alloc(rows * 4);
  ASSERT_OK(QuantizeFp8PerToken(dx.as<float>(), rows, k, dub.as<float>(),
                                  cpu::kFp8PerTokenMinScale, dq.as<uint8_t>(), ds.as<float>(),
                                  nullptr));
  EXPECT_EQ(Download<uint8_t>(dq, rows * k), q_ref);
  EXPECT_EQ(Download<float>(ds, rows), s_ref);
}

TEST(ActivationQuantDeviceTest, Fp8PerTokenGroupMatchesCpuInBothLayouts) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 9, k = 1000, group = 128, groups = cpu::NumGroups(k, group);
  std::vector<float> x = RandomFloats(rows * k, 2.0f, 2);
  std::vector<uint8_t> q_ref(rows * k);
  std::vector<float> s_ref(rows * groups);
  cpu::QuantizeFp8PerTokenGroup(x.data(), rows, k, group, cpu::kFp8PerTokenGroupEps, q_ref.data(),
                                s_ref.data());
  DeviceBuffer dx = Upload(x), dq = Alloc(rows * k), ds = Alloc(rows * groups * 4);
  for (GroupScaleLayout layout : {GroupScaleLayout::kRowMajor, GroupScaleLayout::kGroupMajor}) {
    ASSERT_OK(QuantizeFp8PerTokenGroup(dx.as<float>(), rows, k, group,
                                         cpu::kFp8PerTokenGroupEps, layout, dq.as<uint8_t>(),
                                         ds.as<float>(), nullptr));
    EXPECT_EQ(Download<uint8_t>(dq, rows * k), q_ref);
    const std::vector<float> s = Download<float>(ds, rows * groups);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t g = 0; g < groups; ++g) {
        const float got = layout == GroupScaleLayout::kRowMajor ? s[m * groups + g]
                                                                : s[g * rows + m];
        EXPECT_EQ(got, s_ref[m * groups + g]);
      }
    }
  }
}

TEST(ActivationQuantDeviceTest, Nvfp4MatchesCpuBitForBit) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 11, k = 512;
  std::vector<float> x = RandomFloats(rows * k, 1.5f, 3);
  std::vector<float> g_ref(rows);
  cpu::Nvfp4DynamicGlobalScalePerRow(x.data(), rows, k, g_ref.data());
  std::vector<uint8_t> q_ref(rows * k / 2), sf_ref(rows * k / 16);
  ASSERT_TRUE(cpu::QuantizeNvfp4(x.data(), rows, k, g_ref.data(), 1, q_ref.data(), sf_ref.data()));
  DeviceBuffer dx = Upload(x), dg = Alloc(rows * 4), dq = Alloc(rows * k / 2),
               dsf = Alloc(rows * k / 16);
  ASSERT_OK(Nvfp4DynamicGlobalScalePerRow(dx.as<float>(), rows, k, dg.as<float>(), nullptr));
  EXPECT_EQ(Download<float>(dg, rows), g_ref);
  ASSERT_OK(QuantizeNvfp4(dx.as<float>(), rows, k, dg.as<float>(), 1, dq.as<uint8_t>(),
                            dsf.as<uint8_t>(), nullptr));
  EXPECT_EQ(Download<uint8_t>(dq, rows * k / 2), q_ref);
  EXPECT_EQ(Download<uint8_t>(dsf, rows * k / 16), sf_ref);
}

TEST(ElementwiseDeviceTest, RmsNormSwiGluEmbeddingRope) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 5, n = 896;
  std::vector<float> x = RandomFloats(rows * n, 1.0f, 4), w = RandomFloats(n, 1.0f, 5);
  std::vector<float> ref(rows * n);
  cpu::RmsNorm(x.data(), w.data(), rows, n, 1e-6f, ref.data());
  DeviceBuffer dx = Upload(x), dw = Upload(w), dout = Alloc(rows * n * 4),
               dbf = Alloc(rows * n * 2);
  ASSERT_OK(RmsNorm(dx.as<float>(), dw.as<float>(), rows, n, 1e-6f, dout.as<float>(),
                      dbf.as<uint16_t>(), nullptr));
  EXPECT_LT(Nmse(Download<float>(dout, rows * n), ref), 1e-12);

  std::vector<float> up = RandomFloats(rows * n, 1.0f, 6), swi(rows * n);
  cpu::SwiGlu(x.data(), up.data(), rows * n, swi.data());
  DeviceBuffer dup = Upload(up);
  ASSERT_OK(SwiGlu(dx.as<float>(), dup.as<float>(), rows * n, dout.as<float>(), nullptr,
                     nullptr));
  EXPECT_LT(Nmse(Download<float>(dout, rows * n), swi), 1e-12);

  const std::vector<int32_t> tokens = {3, 0, 7};
  std::vector<uint16_t> table(10 * n);
  for (size_t i = 0; i < table.size(); ++i) table[i] = numeric::FloatToBf16(0.01f * i);
  DeviceBuffer dt = Upload(table), dtok = Upload(tokens);
  ASSERT_OK(Embedding(dt.data(), TableDtype::kBf16, 10, n, dtok.as<int32_t>(), 3,
                        dout.as<float>(), nullptr));
  const std::vector<float> emb = Download<float>(dout, 3 * n);
  for (int r = 0; r < 3; ++r) {
    for (int64_t i = 0; i < n; i += 97) {
      EXPECT_EQ(emb[r * n + i], numeric::Bf16ToFloat(table[tokens[r] * n + i]));
    }
  }

  const int64_t heads = 4, head_dim = 128;
  std::vector<float> q = RandomFloats(3 * heads * head_dim, 1.0f, 7), q_ref = q;
  std::vector<float> inv_freq(head_dim / 2);
  for (int64_t i = 0; i < head_dim / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / head_dim);
  const std::vector<int32_t> pos = {0, 17, 40000};
  for (int t = 0; t < 3; ++t) {
    cpu::ApplyRope(q_ref.data() + t * heads * head_dim, heads, head_dim, head_dim, pos[t],
                   inv_freq.data(), cpu::RopePairing::kRotateHalf);
  }
  DeviceBuffer dq = Upload(q), dpos = Upload(pos), dfreq = Upload(inv_freq);
  ASSERT_OK(Rope(dq.as<float>(), 3, heads, head_dim, head_dim, dpos.as<int32_t>(),
                   dfreq.as<float>(), RopePairing::kRotateHalf, nullptr));
  EXPECT_LT(Nmse(Download<float>(dq, q.size()), q_ref), 1e-10);
}

// Every register width of the RmsNorm kernel (rows of 64 .. 8192) and the loop kernel above it;
// AddRmsNorm stores h + delta and normalizes it.
TEST(ElementwiseDeviceTest, RmsNormAndAddRmsNormEveryWidth) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const int64_t rows = 3;
  for (int64_t n : {64, 896, 2048, 4096, 5000, 8192, 9000}) {
    std::vector<float> h = RandomFloats(rows * n, 1.0f, 30), delta = RandomFloats(rows * n, 1.0f, 31),
                       w = RandomFloats(n, 1.0f, 32), ref(rows * n), sum(rows * n);
    for (size_t i = 0; i < sum.size(); ++i) sum[i] = h[i] + delta[i];
    cpu::RmsNorm(sum.data(), w.data(), rows, n, 1e-6f, ref.data());
    DeviceBuffer dh = Upload(h), dd = Upload(delta), dw = Upload(w), dout = Alloc(rows * n * 4),
                 dbf = Alloc(rows * n * 2);
    ASSERT_OK(AddRmsNorm(dh.as<float>(), dd.as<float>(), dw.as<float>(), rows, n, 1e-6f,
                         dout.as<float>(), dbf.as<uint16_t>(), nullptr));
    EXPECT_EQ(Download<float>(dh, rows * n), sum) << n;
    const std::vector<float> got = Download<float>(dout, rows * n);
    EXPECT_LT(Nmse(got, ref), 1e-12) << n;
    const std::vector<uint16_t> bf = Download<uint16_t>(dbf, rows * n);
    for (int64_t i = 0; i < rows * n; i += 61) EXPECT_EQ(bf[i], numeric::FloatToBf16(got[i]));
    // In place (out == x), as the decoder's final norm runs.
    ASSERT_OK(RmsNorm(dh.as<float>(), dw.as<float>(), rows, n, 1e-6f, dh.as<float>(), nullptr,
                      nullptr));
    EXPECT_EQ(Download<float>(dh, rows * n), got) << n;
  }
}

TEST(ElementwiseDeviceTest, RopeQkMatchesTwoRopes) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const int64_t tokens = 3, q_heads = 8, k_heads = 2, d = 64;
  std::vector<float> q = RandomFloats(tokens * q_heads * d, 1.0f, 33),
                     k = RandomFloats(tokens * k_heads * d, 1.0f, 34), q_ref = q, k_ref = k;
  std::vector<float> inv_freq(d / 2);
  for (int64_t i = 0; i < d / 2; ++i) inv_freq[i] = std::pow(500000.0f, -2.0f * i / d);
  const std::vector<int32_t> pos = {2, 9, 1000};
  for (int t = 0; t < tokens; ++t) {
    cpu::ApplyRope(q_ref.data() + t * q_heads * d, q_heads, d, d, pos[t], inv_freq.data(),
                   cpu::RopePairing::kInterleaved);
    cpu::ApplyRope(k_ref.data() + t * k_heads * d, k_heads, d, d, pos[t], inv_freq.data(),
                   cpu::RopePairing::kInterleaved);
  }
  DeviceBuffer dq = Upload(q), dk = Upload(k), dpos = Upload(pos), dfreq = Upload(inv_freq);
  ASSERT_OK(RopeQk(dq.as<float>(), q_heads, dk.as<float>(), k_heads, tokens, d, d,
                   dpos.as<int32_t>(), dfreq.as<float>(), RopePairing::kInterleaved, nullptr));
  EXPECT_LT(Nmse(Download<float>(dq, q.size()), q_ref), 1e-10);
  EXPECT_LT(Nmse(Download<float>(dk, k.size()), k_ref), 1e-10);

  // Rotate-half over the first 32 of 64 dims (partial rotary, as Phi and GLM run it).
  const int64_t rope_dim = 32;
  q_ref = q;
  k_ref = k;
  for (int t = 0; t < tokens; ++t) {
    cpu::ApplyRope(q_ref.data() + t * q_heads * d, q_heads, d, rope_dim, pos[t], inv_freq.data(),
                   cpu::RopePairing::kRotateHalf);
    cpu::ApplyRope(k_ref.data() + t * k_heads * d, k_heads, d, rope_dim, pos[t], inv_freq.data(),
                   cpu::RopePairing::kRotateHalf);
  }
  DeviceBuffer dq2 = Upload(q), dk2 = Upload(k);
  ASSERT_OK(RopeQk(dq2.as<float>(), q_heads, dk2.as<float>(), k_heads, tokens, d, rope_dim,
                   dpos.as<int32_t>(), dfreq.as<float>(), RopePairing::kRotateHalf, nullptr));
  EXPECT_LT(Nmse(Download<float>(dq2, q.size()), q_ref), 1e-10);
  EXPECT_LT(Nmse(Download<float>(dk2, k.size()), k_ref), 1e-10);
  // k and its head count must agree.
  EXPECT_FALSE(RopeQk(dq2.as<float>(), q_heads, nullptr, k_heads, tokens, d, d,
                      dpos.as<int32_t>(), dfreq.as<float>(), RopePairing::kRotateHalf, nullptr)
                   .ok());
}

// TinyLlama's decode shape (q 1024 pairs over 4 blocks, k 128 in the first) and a q wide enough
// that its pairs outnumber the 64-block cap and each thread strides over several.
TEST(ElementwiseDeviceTest, RopeQkSplitsPairsOverBlocks) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  struct Shape {
    int64_t q_heads, k_heads, d;
  };
  for (const Shape& s : {Shape{32, 4, 64}, Shape{160, 4, 256}}) {
    const int64_t tokens = 2;
    std::vector<float> q = RandomFloats(tokens * s.q_heads * s.d, 1.0f, 35),
                       k = RandomFloats(tokens * s.k_heads * s.d, 1.0f, 36), q_ref = q, k_ref = k;
    std::vector<float> inv_freq(s.d / 2);
    for (int64_t i = 0; i < s.d / 2; ++i) inv_freq[i] = std::pow(10000.0f, -2.0f * i / s.d);
    const std::vector<int32_t> pos = {5, 3000};
    for (int t = 0; t < tokens; ++t) {
      cpu::ApplyRope(q_ref.data() + t * s.q_heads * s.d, s.q_heads, s.d, s.d, pos[t],
                     inv_freq.data(), cpu::RopePairing::kRotateHalf);
      cpu::ApplyRope(k_ref.data() + t * s.k_heads * s.d, s.k_heads, s.d, s.d, pos[t],
                     inv_freq.data(), cpu::RopePairing::kRotateHalf);
    }
    DeviceBuffer dq = Upload(q), dk = Upload(k), dpos = Upload(pos), dfreq = Upload(inv_freq);
    ASSERT_OK(RopeQk(dq.as<float>(), s.q_heads, dk.as<float>(), s.k_heads, tokens, s.d, s.d,
                     dpos.as<int32_t>(), dfreq.as<float>(), RopePairing::kRotateHalf, nullptr));
    EXPECT_LT(Nmse(Download<float>(dq, q.size()), q_ref), 1e-10) << s.q_heads;
    EXPECT_LT(Nmse(Download<float>(dk, k.size()), k_ref), 1e-10) << s.q_heads;
  }
}

TEST(AttentionDeviceTest, PagedDecodeAndPrefillMatchCpu) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const int64_t layers = 2, kv_heads = 2, heads = 8, d = 128, block_tokens = 16, blocks = 12;
  const int64_t block_floats = block_tokens * kv_heads * d;
  std::vector<float> pool = RandomFloats(blocks * layers * 2 * block_floats, 1.0f, 8);
  // Sequence 0: blocks {5, 2, 9} with 40 positions; sequence 1: blocks {0, 7} with 17.
  const std::vector<int32_t> tables = {5, 2, 9, 0, 7, 0};
  const int64_t max_blocks = 3, layer = 1;
  // Query tokens: the decode token of seq 0 and three prefill tokens of seq 1 (causal).
  const std::vector<int32_t> token_seq = {0, 1, 1, 1};
  const std::vector<int32_t> lens = {40, 15, 16, 17};
  std::vector<float> q = RandomFloats(4 * heads * d, 1.0f, 9), ref(4 * heads * d);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  // The device pool is token-major ([token][kv_head][dim] per block); the CPU reference reads
  // head-major blocks with K transposed (kernels/cpu/attention.h), so each referenced block is
  // copied into that layout first.
  std::vector<std::vector<float>> cpu_blocks;
  cpu_blocks.reserve(4 * max_blocks * 2);
  auto to_cpu = [&](const float* src, bool transposed_k) {
    std::vector<float> dst(block_floats);
    for (int64_t tok = 0; tok < block_tokens; ++tok) {
      for (int64_t h = 0; h < kv_heads; ++h) {
        for (int64_t i = 0; i < d; ++i) {
          const float x = src[(tok * kv_heads + h) * d + i];
          dst[transposed_k ? (h * d + i) * block_tokens + tok : (h * block_tokens + tok) * d + i] = x;
        }
      }
    }
    cpu_blocks.push_back(std::move(dst));
    return cpu_blocks.back().data();
  };
  for (int t = 0; t < 4; ++t) {
    std::vector<const float*> kb, vb;
    for (int b = 0; b < max_blocks; ++b) {
      const float* base = pool.data() + (tables[token_seq[t] * max_blocks + b] * layers + layer) *
                                            2 * block_floats;
      kb.push_back(to_cpu(base, true));
      vb.push_back(to_cpu(base + block_floats, false));
    }
    cpu::PagedKvView view{kb.data(), vb.data(), block_tokens, kv_heads, d};
    std::vector<float> scratch(lens[t]);
    cpu::PagedAttention(q.data() + t * heads * d, heads, view, lens[t], scale, 0, heads,
                        scratch.data(), ref.data() + t * heads * d);
  }
  DeviceBuffer dpool = Upload(pool), dtables = Upload(tables), dseq = Upload(token_seq),
               dlens = Upload(lens), dq = Upload(q), dout = Alloc(q.size() * 4),
               dbf = Alloc(q.size() * 2);
  DevicePagedKv kv{dpool.as<float>(), layers * 2 * block_floats, layer * 2 * block_floats,
                   block_floats, block_tokens, kv_heads, d};
  AttentionBatch batch{dtables.as<int32_t>(), max_blocks, dseq.as<int32_t>(), nullptr,
                       dlens.as<int32_t>()};
  ASSERT_OK(PagedAttention(dq.as<float>(), 4, heads, kv, batch, scale, dout.as<float>(),
                           dbf.as<uint16_t>(), nullptr));
  const std::vector<float> got = Download<float>(dout, q.size());
  EXPECT_LT(Nmse(got, ref), 1e-10);
  const std::vector<uint16_t> bf = Download<uint16_t>(dbf, q.size());
  for (size_t i = 0; i < q.size(); ++i) ASSERT_EQ(bf[i], numeric::FloatToBf16(got[i])) << i;
}

// x rounded to bf16 is what the kernel sees; the reference gets the same values.
std::vector<uint16_t> ToBf16(std::vector<float>& x) {
  std::vector<uint16_t> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    out[i] = numeric::FloatToBf16(x[i]);
    x[i] = numeric::Bf16ToFloat(out[i]);
  }
  return out;
}

class W4A16DeviceTest : public ::testing::TestWithParam<W4Format> {};

TEST_P(W4A16DeviceTest, MatchesCpuReference) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const W4Format format = GetParam();
  // N not a multiple of the block's 16 or 32 (or of 8), K not a multiple of the 8-warp K split
  // (512); K = 2688 and 4608 give each warp six and nine chunks (2688: the last round partial).
  // The small N run the narrow 16-column tiles; N = 12296 needs more narrow blocks than a GPU
  // holds at once, so it runs the wide 32-column tiles; 4096 x 33 rows runs wide where its
  // single row runs narrow, so the batch-invariance check below compares the two widths.
  std::set<int> widths;
  for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 256, 512}, {5, 200, 256},
                         {33, 384, 1024}, {1, 36, 384}, {3, 77, 640}, {130, 44, 896},
                         {1, 96, 2688}, {17, 64, 4608}, {2, 12296, 512}, {33, 4096, 512}}) {
    std::vector<float> x = RandomFloats(m * k, 1.0f, 10);
    const std::vector<uint16_t> xb = ToBf16(x);
    const std::vector<uint8_t> packed = RandomBytes(n * k / 2, 11);
    std::vector<float> ref(m * n), bias = RandomFloats(n, 1.0f, 12);
    W4A16Weights w;
    w.format = format;
    DeviceBuffer dpacked = Upload(packed), dscales, dzeros, dsf;
    std::vector<uint8_t> sf;
    std::vector<float> scales, zeros;
    const int64_t group = 128;
    if (format == W4Format::kNvfp4) {
      sf = RandomBytes(n * k / 16, 13, 0x20, 0x50);
      cpu::Nvfp4Weights cw{packed.data(), sf.data(), 0.37f};
      ASSERT_TRUE(cpu::MatmulNvfp4W4A16(cw, n, k, x.data(), m, bias.data(), ref.data(), 0, n));
      w.global_scale = 0.37f;
    } else if (format == W4Format::kMxfp4) {
      sf = RandomBytes(n * k / 32, 14, 120, 130);
      cpu::Mxfp4Weights cw{packed.data(), sf.data()};
      ASSERT_TRUE(cpu::MatmulMxfp4W4A16(cw, n, k, x.data(), m, bias.data(), ref.data(), 0, n));
    } else {
      scales = RandomFloats(n * k / group, 0.01f, 15);
      zeros = std::vector<float>(n * k / group, 8.0f);
      cpu::IntWeights cw{cpu::IntWeightPacking::kU4Pairs, packed.data(), scales.data(),
                         zeros.data(), k / group, group, nullptr};
      ASSERT_TRUE(cpu::MatmulIntWeightOnly(cw, n, k, x.data(), m, bias.data(), ref.data(), 0, n));
      dscales = Upload(scales);
      dzeros = Upload(zeros);
      w.scales = dscales.as<float>();
      w.zeros = dzeros.as<float>();
      w.group_size = group;
    }
    if (!sf.empty()) {
      dsf = Upload(sf);
      w.block_scales = dsf.as<uint8_t>();
    }
    w.packed = dpacked.as<uint8_t>();
    DeviceBuffer dx = Upload(xb), dbias = Upload(bias), dy = Alloc(m * n * 4);
    ASSERT_OK(W4A16Gemm(w, n, k, dx.as<uint16_t>(), m, dbias.as<float>(), dy.as<float>(),
                          nullptr));
    widths.insert(W4A16BlockColumns(format, n, m));
    // NVFP4/MXFP4 weights are exact in bf16: only f32 summation order differs. INT4 weights
    // are rounded to bf16 (relative error 2^-9 per weight, NMSE ~ 2^-18 / 3).
    const double bound = format == W4Format::kInt4 ? 1e-5 : 1e-10;
    EXPECT_LT(Nmse(Download<float>(dy, m * n), ref), bound) << m << "x" << n << "x" << k;
    if (m > 1) {  // batch invariance: row 0 alone gives the same bits as row 0 of the batch
      widths.insert(W4A16BlockColumns(format, n, 1));
      DeviceBuffer dy1 = Alloc(n * 4);
      ASSERT_OK(W4A16Gemm(w, n, k, dx.as<uint16_t>(), 1, dbias.as<float>(), dy1.as<float>(),
                            nullptr));
      const std::vector<float> all = Download<float>(dy, n), one = Download<float>(dy1, n);
      EXPECT_EQ(std::memcmp(all.data(), one.data(), n * 4), 0) << m << "x" << n << "x" << k;
    }

    // The prefill path: the same bf16 weights dequantized once, then cuBLASLt's bf16 GEMM with
    // W4A16Gemm's α (NVFP4's global scale) and the bias added after.
    DeviceBuffer dw = Alloc(n * k * 2), dy2 = Alloc(m * n * 4);
    ASSERT_OK(DequantizeW4ToBf16(w, n, k, dw.as<uint16_t>(), nullptr));
    auto lt = CublasLtGemm::Create();
    ASSERT_TRUE(lt.ok()) << lt.status();
    const LtGemmConfig c{LtGemmKind::kBf16, m, n, k, LtScaleMode::kNone, LtScaleMode::kNone, true};
    const float alpha = format == W4Format::kNvfp4 ? w.global_scale : 1.0f;
    ASSERT_OK((*lt)->Run(c, {dw.data(), dx.data(), nullptr, nullptr, alpha, dy2.data()}, nullptr));
    ASSERT_OK(AddBiasRows(dy2.as<float>(), dbias.as<float>(), m, n, nullptr));
    EXPECT_LT(Nmse(Download<float>(dy2, m * n), ref), bound) << "dequantized, " << m << "x" << n;
  }
  EXPECT_EQ(widths, (std::set<int>{16, 32})) << "both block widths ran";
}

// Random device weights of one format for W4A16GemmGroup's test (INT4 with group `group`).
struct DeviceW4 {
  W4A16Weights w;
  DeviceBuffer packed, scales, zeros, block_scales;
};
DeviceW4 RandomDeviceW4(W4Format format, int64_t n, int64_t k, int64_t group, uint32_t seed) {
  DeviceW4 d;
  d.w.format = format;
  d.packed = Upload(RandomBytes(n * k / 2, seed));
  d.w.packed = d.packed.as<uint8_t>();
  if (format == W4Format::kInt4) {
    d.scales = Upload(RandomFloats(n * k / group, 0.01f, seed + 1));
    d.zeros = Upload(std::vector<float>(n * k / group, 7.0f));
    d.w.scales = d.scales.as<float>();
    d.w.zeros = d.zeros.as<float>();
    d.w.group_size = group;
  } else {
    const bool nvfp4 = format == W4Format::kNvfp4;
    d.block_scales = Upload(nvfp4 ? RandomBytes(n * k / 16, seed + 2, 0x20, 0x50)
                                  : RandomBytes(n * k / 32, seed + 2, 120, 130));
    d.w.block_scales = d.block_scales.as<uint8_t>();
    // Each NVFP4 layer its own α, so that a group taking another member's α cannot pass.
    d.w.global_scale = nvfp4 ? 0.37f + 0.11f * static_cast<float>(seed % 3) : 1.0f;
  }
  return d;
}

// The decoder's q / k / v and gate / up: one grouped launch (or, past the resident grid, the
// widest alone and the rest by the same rule) stores the same bits as W4A16Gemm run on each layer
// alone. Both a single grouped launch and a split one must have run.
TEST_P(W4A16DeviceTest, GroupMatchesSeparateLaunches) {
  TESSERA_REQUIRE_CUDA_DEVICE();
  const W4Format format = GetParam();
  struct Case {
    int64_t m, k;
    std::vector<int64_t> n;
  };
  std::set<int> launches;
  for (const Case& c : {Case{1, 2048, {2048, 256, 256}}, Case{5, 512, {200, 36}},
                        Case{17, 1024, {64, 384, 8}}, Case{1, 2048, {5632, 5632}},
                        Case{3, 512, {12296, 4096, 96}}, Case{1, 1024, {4096, 1024, 1024}},
                        Case{2, 640, {77}}}) {
    launches.insert(W4A16GroupLaunches(format, c.n, c.m));
    const std::vector<uint16_t> xb = [&] {
      std::vector<float> x = RandomFloats(c.m * c.k, 1.0f, 40);
      return ToBf16(x);
    }();
    DeviceBuffer dx = Upload(xb);
    std::vector<DeviceW4> weights;
    std::vector<DeviceBuffer> biases, alone, grouped;
    std::vector<W4A16GroupMember> members;
    for (size_t i = 0; i < c.n.size(); ++i) {
      const int64_t n = c.n[i];
      weights.push_back(RandomDeviceW4(format, n, c.k, 128, 41 + 7 * static_cast<uint32_t>(i)));
      biases.push_back(i % 2 == 0 ? Upload(RandomFloats(n, 1.0f, 60 + i)) : DeviceBuffer());
      alone.push_back(Alloc(c.m * n * 4));
      // NaN until written, so that a column the group skips cannot match.
      grouped.push_back(Upload(std::vector<float>(c.m * n, std::nanf(""))));
    }
    for (size_t i = 0; i < c.n.size(); ++i) {
      const float* bias = i % 2 == 0 ? biases[i].as<float>() : nullptr;
      ASSERT_OK(W4A16Gemm(weights[i].w, c.n[i], c.k, dx.as<uint16_t>(), c.m, bias,
                          alone[i].as<float>(), nullptr));
      members.push_back({&weights[i].w, c.n[i], bias, grouped[i].as<float>()});
    }
    ASSERT_OK(W4A16GemmGroup(members, c.k, dx.as<uint16_t>(), c.m, nullptr));
    for (size_t i = 0; i < c.n.size(); ++i) {
      const std::vector<float> a = Download<float>(alone[i], c.m * c.n[i]),
                               g = Download<float>(grouped[i], c.m * c.n[i]);
      EXPECT_EQ(std::memcmp(a.data(), g.data(), a.size() * 4), 0)
          << "member " << i << " of " << c.n.size() << ", m " << c.m << ", n " << c.n[i];
    }
  }
  EXPECT_TRUE(launches.count(1) == 1 && launches.count(2) == 1) << "grouped and split launches";
}

INSTANTIATE_TEST_SUITE_P(Formats, W4A16DeviceTest,
                         ::testing::Values(W4Format::kNvfp4, W4Format::kMxfp4, W4Format::kInt4));

}  // namespace
}  // namespace tessera::kernels::cuda
