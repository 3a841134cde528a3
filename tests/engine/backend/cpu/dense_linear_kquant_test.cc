// DenseLinear (engine/backend/cpu/dense_linear.h) on the formats whose fast layouts it builds at
// load: GGUF Q4_1, Q5_0, Q5_1, Q3_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS and the grid types (IQ2_XXS,
// IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M) and TQ1_0 / TQ2_0 under int8 activations (the
// 16-column VNNI tiles) against the same layer with f32 activations (the quantized panels on
// AVX-512, FastMatmul's decoders elsewhere), within the int8 activation rounding; f16 weights (the AVX-512 panels)
// against a double sum of the f16 values. The same GGUF types with f32 activations on the
// quantized panels, against a double sum of the reference's weights. Each is batch-invariant
// through Forward (a row alone = the same row among 7, bit for bit, on a 2-thread pool), and
// Describe names the kernel. Q3_K equals its Q6_K rewrite bit for bit in both modes; Q2_K (its own
// tiles, or Q6_K plus offsets with exact activations) follows a double sum.
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/backend/cpu/dense_linear.h"
#include "engine/io/tensor_view.h"
#include "gtest/gtest.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/float_panel_matmul.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/cpu/ggml_dequant.h"
#include "kernels/cpu/ggml_kquants_as_q6k.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/iq_grid_test_util.h"

namespace tessera::backend::cpu {
namespace {

constexpr int64_t kN = 40, kK = 512, kRows = 7;

// Random but valid GGUF blocks: every byte pattern decodes; the f16 scales kept sane (Q6_K: d at
// bytes 208-209 of 210; Q3_K: d at 108-109 of 110; Q2_K: d, dmin at 80-83 of 84; the others d,
// and m / dmin where they have one, at bytes 0-3; IQ4_NL / IQ4_XS get d's bytes again in their
// codes or scales_h, which any bytes are, and so do the grid types, IQ1_M's d spread over the top
// nibbles of its scale words).
std::vector<uint8_t> RandomBlocks(io::DType dtype, std::mt19937& rng) {
  const kernels::cpu::GgmlBlockInfo info =
      kernels::cpu::GetGgmlBlockInfo(*io::GgmlBlockTypeOf(dtype));
  const bool q6 = dtype == io::DType::kQ6_K, q3 = dtype == io::DType::kQ3_K;
  const bool q2 = dtype == io::DType::kQ2_K;
  const int64_t bb = info.bytes, blocks = kN * (kK / info.elements);
  std::vector<uint8_t> bytes(blocks * bb);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < blocks; ++i) {
    uint8_t* blk = bytes.data() + i * bb;
    const float scale = q6 ? 2e-4f : q3 ? 5e-4f : info.elements == 256 ? 1e-3f : 2e-2f;
    const uint16_t d = numeric::FloatToHalf(scale);
    const int64_t at = q6 ? 208 : q3 ? 108 : q2 ? 80 : 0;
    std::memcpy(blk + at, &d, 2);
    if (!q6 && !q3 && dtype != io::DType::kQ5_0) std::memcpy(blk + at + 2, &d, 2);
    if (dtype == io::DType::kIq1M || dtype == io::DType::kTq1_0 || dtype == io::DType::kTq2_0) {
      kernels::cpu::testing::SetIqGridHalf(*io::GgmlBlockTypeOf(dtype), blk, d);
    }
  }
  return bytes;
}

std::vector<float> Forward(const DenseLinear& l, const std::vector<float>& x, int64_t rows) {
  std::vector<float> y(rows * kN, std::nanf(""));
  l.Forward(x.data(), rows, y.data());
  return y;
}

void ExpectBatchInvariant(const DenseLinear& l, const std::vector<float>& x) {
  const std::vector<float> all = Forward(l, x, kRows);
  for (int64_t m = 0; m < kRows; ++m) {
    const std::vector<float> one(x.begin() + m * kK, x.begin() + (m + 1) * kK);
    const std::vector<float> y = Forward(l, one, 1);
    ASSERT_EQ(std::memcmp(y.data(), all.data() + m * kN, kN * 4), 0) << "row " << m;
  }
}

std::vector<float> Normal(int64_t n, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& e : v) e = nd(rng);
  return v;
}

class DenseLinearKQuantTest : public ::testing::TestWithParam<io::DType> {};

TEST_P(DenseLinearKQuantTest, Int8TilesFollowTheReferenceAndAreBatchInvariant) {
  std::mt19937 rng(static_cast<uint32_t>(GetParam()));
  kernels::cpu::ThreadPool pool(2);
  const std::vector<uint8_t> bytes = RandomBlocks(GetParam(), rng);
  const io::TensorView view{"w", GetParam(), {kN, kK}, absl::MakeConstSpan(bytes)};
  auto exact = DenseLinear::Create(view, {}, &pool, DenseActivations::kFloat);
  auto int8 = DenseLinear::Create(view, {}, &pool, DenseActivations::kInt8Block32);
  ASSERT_TRUE(exact.ok()) << exact.status();
  ASSERT_TRUE(int8.ok()) << int8.status();
  EXPECT_NE((*int8)->Describe().find("q8_0 act"), std::string::npos) << (*int8)->Describe();
  const std::vector<float> x = Normal(kRows * kK, rng);
  const std::vector<float> want = Forward(**exact, x, kRows), got = Forward(**int8, x, kRows);
  double worst = 0, scale = 0;
  for (int64_t i = 0; i < kRows * kN; ++i) {
    ASSERT_TRUE(std::isfinite(got[i])) << i;
    worst = std::max(worst, std::abs(double(got[i]) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  EXPECT_GT(worst, 0.0);           // the activations really were quantized
  EXPECT_LT(worst, 2e-2 * scale);  // int8 blocks of 32: well under 1% of the outputs' range
  ExpectBatchInvariant(**int8, x);
}

// f32 activations on AVX-512 or AVX2: the quantized panels (ggml_quant_panels.h; AVX2: their f32
// form's ymm kernel, labelled so), within their bound of
// a double sum of the reference's weights ((K + G + 3)·u with G ≤ 64, and the hi + lo split's
// 2^-16, per |x|·|s|·(|q − c| + |z − c|); the weight at the centre code lies within its group's
// codes' weights, so |s|·|z − c| ≤ max|w|), a row alone equal to the same row in a batch.
TEST_P(DenseLinearKQuantTest, ExactActivationsRunTheQuantPanels) {
  if (!kernels::cpu::fast::QuantPanelAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  std::mt19937 rng(static_cast<uint32_t>(GetParam()) + 1);
  kernels::cpu::ThreadPool pool(2);
  const std::vector<uint8_t> bytes = RandomBlocks(GetParam(), rng);
  const io::TensorView view{"w", GetParam(), {kN, kK}, absl::MakeConstSpan(bytes)};
  auto l = DenseLinear::Create(view, {}, &pool, DenseActivations::kFloat);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_NE((*l)->Describe().find("quant-panels"), std::string::npos) << (*l)->Describe();
  if (std::string_view(kernels::cpu::fast::QuantPanelTargetName()) == "avx2") {
    EXPECT_NE((*l)->Describe().find(" / cpu-avx2-quant-panels"), std::string::npos);
  }
  EXPECT_TRUE((*l)->reads_own_copy());
  const kernels::cpu::GgmlBlockType type = *io::GgmlBlockTypeOf(GetParam());
  const int64_t block = kernels::cpu::GetGgmlBlockInfo(type).elements;
  const std::vector<float> x = Normal(kRows * kK, rng);
  const std::vector<float> y = Forward(**l, x, kRows);
  std::vector<float> w(kK);
  for (int64_t n = 0; n < kN; ++n) {
    kernels::cpu::DequantizeGgmlBlocks(
        type, bytes.data() + n * (kK / block) * kernels::cpu::GetGgmlBlockInfo(type).bytes,
        kK / block, w.data());
    double top = 0;
    for (const float v : w) top = std::max(top, std::abs(double(v)));
    for (int64_t m = 0; m < kRows; ++m) {
      // |s|·(|q − c| + |z − c|) ≤ |w| + 2·max|w| (the weight at the centre code is in range).
      double sum = 0, mag = 0;
      for (int64_t i = 0; i < kK; ++i) {
        sum += double(x[m * kK + i]) * w[i];
        mag += std::abs(x[m * kK + i]) * (std::abs(w[i]) + 2 * top);
      }
      ASSERT_NEAR(y[m * kN + n], sum, (kK + 64 + 3) * 0x1p-24 * mag + 0x1p-16 * mag)
          << m << " " << n;
    }
  }
  ExpectBatchInvariant(**l, x);
}

// A view whose rows are not whole blocks (K = 16, the byte count right for its element count), or
// whose bytes fall one block short, is refused in both activation modes, naming the tensor.
TEST_P(DenseLinearKQuantTest, RefusesViewsThatAreNotWholeBlocks) {
  std::mt19937 rng(static_cast<uint32_t>(GetParam()) + 2);
  const std::vector<uint8_t> bytes = RandomBlocks(GetParam(), rng);
  const int64_t block_bytes =
      kernels::cpu::GetGgmlBlockInfo(*io::GgmlBlockTypeOf(GetParam())).bytes;
  const io::TensorView ragged{"blk.3.attn_q.weight", GetParam(), {kN * kK / 16, 16},
                              absl::MakeConstSpan(bytes)};
  const io::TensorView short_view{"blk.3.attn_q.weight", GetParam(), {kN, kK},
                                  absl::MakeConstSpan(bytes).first(bytes.size() - block_bytes)};
  for (const DenseActivations acts : {DenseActivations::kFloat, DenseActivations::kInt8Block32}) {
    for (const io::TensorView* v : {&ragged, &short_view}) {
      auto bad = DenseLinear::Create(*v, {}, nullptr, acts);
      ASSERT_FALSE(bad.ok()) << v->ShapeString();
      EXPECT_NE(bad.status().message().find("blk.3.attn_q.weight"), std::string::npos)
          << bad.status();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(KQuants, DenseLinearKQuantTest,
                         ::testing::Values(io::DType::kQ4_1, io::DType::kQ5_0, io::DType::kQ5_1,
                                           io::DType::kQ3_K, io::DType::kQ5_K, io::DType::kQ6_K,
                                           io::DType::kIq4Nl, io::DType::kIq4Xs,
                                           io::DType::kIq2Xxs, io::DType::kIq2Xs, io::DType::kIq2S,
                                           io::DType::kIq3Xxs, io::DType::kIq3S, io::DType::kIq1S,
                                           io::DType::kIq1M, io::DType::kTq1_0,
                                           io::DType::kTq2_0));

// GGUF Q3_K with f32 activations runs as Q6_K blocks of the same values
// (kernels/cpu/ggml_kquants_as_q6k.h) and gives the Q6_K layer of the rewritten blocks bit for bit;
// with int8 activations its own 3-bit tiles (kQ3_Kx16) give that layer's bits too (the same
// half-block integers under the same scales), and the plan's label says which form ran.
TEST(DenseLinearQ3KTest, RunsAsItsQ6KRewriteBitForBit) {
  std::mt19937 rng(33);
  kernels::cpu::ThreadPool pool(2);
  const std::vector<uint8_t> q3 = RandomBlocks(io::DType::kQ3_K, rng);
  std::vector<uint8_t> q6(q3.size() / kernels::cpu::kQ3KBlockBytes * kernels::cpu::kQ6KBlockBytes);
  kernels::cpu::Q3KBlocksAsQ6K(q3.data(), q3.size() / kernels::cpu::kQ3KBlockBytes, q6.data());
  const io::TensorView v3{"w3", io::DType::kQ3_K, {kN, kK}, absl::MakeConstSpan(q3)};
  const io::TensorView v6{"w6", io::DType::kQ6_K, {kN, kK}, absl::MakeConstSpan(q6)};
  const std::vector<float> x = Normal(kRows * kK, rng);
  for (const DenseActivations acts : {DenseActivations::kFloat, DenseActivations::kInt8Block32}) {
    auto l3 = DenseLinear::Create(v3, {}, &pool, acts);
    auto l6 = DenseLinear::Create(v6, {}, &pool, acts);
    ASSERT_TRUE(l3.ok()) << l3.status();
    ASSERT_TRUE(l6.ok()) << l6.status();
    const bool exact = acts == DenseActivations::kFloat;  // int8: Q3_K's own tiles (kQ3_Kx16)
    EXPECT_EQ((*l3)->Describe(),
              absl::StrCat(exact ? "Q3_K (as Q6_K)" : "Q3_K", (*l6)->Describe().substr(4)));
    EXPECT_EQ((*l3)->weight_bytes(), static_cast<int64_t>(q3.size()));  // the file's bytes
    const std::vector<float> y3 = Forward(**l3, x, kRows), y6 = Forward(**l6, x, kRows);
    EXPECT_EQ(std::memcmp(y3.data(), y6.data(), y3.size() * 4), 0) << (*l3)->Describe();
  }
}

// A Q2_K layer's outputs against a double sum of the reference dequantizer's weights (plus the
// bias): with f32 activations within f32 accumulation and the panels' hi + lo split, with int8
// activations within 2% of the outputs' range (int8 blocks of 32: well under 1%).
struct Q2KReference {
  std::vector<double> want, mag;

  Q2KReference(const std::vector<uint8_t>& bytes, int64_t n, int64_t k, const std::vector<float>& x,
               int64_t rows, const std::vector<float>& bias)
      : want(rows * n), mag(rows * n) {
    std::vector<float> w(k);
    for (int64_t c = 0; c < n; ++c) {
      kernels::cpu::DequantizeGgmlBlocks(kernels::cpu::GgmlBlockType::kQ2_K,
                                         bytes.data() + c * (k / 256) * 84, k / 256, w.data());
      for (int64_t m = 0; m < rows; ++m) {
        want[m * n + c] = bias.empty() ? 0.0 : bias[c];
        for (int64_t i = 0; i < k; ++i) {
          want[m * n + c] += double(x[m * k + i]) * w[i];
          mag[m * n + c] += std::abs(double(x[m * k + i])) * (std::abs(w[i]) + 1e-2);
        }
      }
    }
  }

  void Expect(const std::vector<float>& y, int64_t k, DenseActivations acts,
              const std::string& what) const {
    double worst = 0, scale = 0;
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_TRUE(std::isfinite(y[i])) << i;
      if (acts == DenseActivations::kFloat) {
        ASSERT_NEAR(y[i], want[i], (k + 64 + 3) * 0x1p-24 * mag[i] + 0x1p-16 * mag[i]) << i;
      }
      worst = std::max(worst, std::abs(y[i] - want[i]));
      scale = std::max(scale, std::abs(want[i]));
    }
    EXPECT_LT(worst, 2e-2 * scale) << what;
  }
};

// GGUF Q2_K with f32 activations runs as Q6_K blocks of its product terms plus an f32 product of
// its offsets with the sums of x over each 16 (kernels/cpu/ggml_kquants_as_q6k.h), within f32
// accumulation (and the panels' hi + lo split) of a double sum of the reference dequantizer's
// weights; with int8 activations on its own kQ2_Kx16 tiles (no rewrite, the file's bytes), within
// their rounding; both batch-invariant, labelled.
TEST(DenseLinearQ2KTest, ProductAndOffsetTermsFollowTheReference) {
  std::mt19937 rng(22);
  kernels::cpu::ThreadPool pool(2);
  const std::vector<uint8_t> bytes = RandomBlocks(io::DType::kQ2_K, rng);
  const io::TensorView view{"blk.0.ffn_up.weight", io::DType::kQ2_K, {kN, kK},
                            absl::MakeConstSpan(bytes)};
  // A view whose bytes are not its shape's blocks is refused, naming the tensor.
  const io::TensorView short_view{"blk.0.ffn_up.weight", io::DType::kQ2_K, {kN, kK},
                                  absl::MakeConstSpan(bytes).first(bytes.size() - 84)};
  auto bad = DenseLinear::Create(short_view, {}, &pool, DenseActivations::kInt8Block32);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("blk.0.ffn_up.weight"), std::string::npos);
  const std::vector<float> x = Normal(kRows * kK, rng);
  const Q2KReference ref(bytes, kN, kK, x, kRows, {});
  for (const DenseActivations acts : {DenseActivations::kFloat, DenseActivations::kInt8Block32}) {
    auto l = DenseLinear::Create(view, {}, &pool, acts);
    ASSERT_TRUE(l.ok()) << l.status();
    const bool exact = acts == DenseActivations::kFloat;
    EXPECT_EQ((*l)->Describe().rfind(exact ? "Q2_K (as Q6_K + offsets)" : "Q2_K x q8_0 act", 0), 0u)
        << (*l)->Describe();
    EXPECT_EQ((*l)->weight_bytes(), static_cast<int64_t>(bytes.size()));  // the file's bytes
    if (!exact) {  // the tiles alone (the file's bytes per weight), no offsets beside them
      const auto spans = (*l)->weight_spans();
      ASSERT_EQ(spans.size(), 1u);
      EXPECT_EQ(spans[0].size, kernels::cpu::fast::Q2_Kx16Bytes(kN, kK));
    }
    ref.Expect(Forward(**l, x, kRows), kK, acts, (*l)->Describe());
    ASSERT_FALSE(HasFatalFailure());
    ExpectBatchInvariant(**l, x);
  }
}

// Q2_K with a bias, K / 16 = 176 sums (not a multiple of any vector width: the offsets' f32 row
// tail), 21 columns and no thread pool (the inline rewrite with exact activations, the inline
// repack with int8 ones); a K that is not whole super-blocks is
// refused, naming the tensor.
TEST(DenseLinearQ2KTest, BiasOddShapesAndNoPool) {
  constexpr int64_t n = 21, k = 2816, rows = 3;
  std::mt19937 rng(23);
  std::vector<uint8_t> bytes(n * (k / 256) * 84);
  for (auto& b : bytes) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < n * (k / 256); ++i) {
    const uint16_t d = numeric::FloatToHalf(1e-3f), dmin = numeric::FloatToHalf(-2e-3f);
    std::memcpy(bytes.data() + i * 84 + 80, &d, 2);
    std::memcpy(bytes.data() + i * 84 + 82, &dmin, 2);
  }
  const io::TensorView view{"output.weight", io::DType::kQ2_K, {n, k}, absl::MakeConstSpan(bytes)};
  const io::TensorView ragged{"output.weight", io::DType::kQ2_K, {n * 11, 256},
                              absl::MakeConstSpan(bytes)};  // fine: whole blocks
  EXPECT_TRUE(DenseLinear::Create(ragged, {}, nullptr).ok());
  const io::TensorView bad_k{"output.weight", io::DType::kQ2_K, {n * 16, 176},
                             absl::MakeConstSpan(bytes)};
  auto bad = DenseLinear::Create(bad_k, {}, nullptr);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("output.weight"), std::string::npos);
  std::vector<float> bias(n);
  for (auto& b : bias) b = std::normal_distribution<float>(0.0f, 1.0f)(rng);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = nd(rng);
  const Q2KReference ref(bytes, n, k, x, rows, bias);
  for (const DenseActivations acts : {DenseActivations::kFloat, DenseActivations::kInt8Block32}) {
    auto l = DenseLinear::Create(view, bias, nullptr, acts);
    ASSERT_TRUE(l.ok()) << l.status();
    std::vector<float> y(rows * n, std::nanf(""));
    (*l)->Forward(x.data(), rows, y.data());
    ref.Expect(y, k, acts, (*l)->Describe());
    ASSERT_FALSE(HasFatalFailure());
  }
}

TEST(DenseLinearF16Test, PanelsMatchADoubleSumAndAreBatchInvariant) {
  if (!kernels::cpu::fast::F16PanelAvailable()) GTEST_SKIP() << "no AVX-512 or AVX2 on this CPU";
  std::mt19937 rng(5);
  kernels::cpu::ThreadPool pool(2);
  std::vector<uint16_t> w(kN * kK);
  for (auto& v : w) v = numeric::FloatToHalf(0.05f * Normal(1, rng)[0]);
  std::vector<float> bias = Normal(kN, rng);
  const io::TensorView view{
      "w",
      io::DType::kF16,
      {kN, kK},
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(w.data()), w.size() * 2)};
  auto l = DenseLinear::Create(view, bias, &pool, DenseActivations::kFloat);
  ASSERT_TRUE(l.ok()) << l.status();
  EXPECT_EQ((*l)->Describe(),
            absl::StrCat("f16 / cpu-", kernels::cpu::fast::FloatPanelTargetName(), "-panels"));
  const std::vector<float> x = Normal(kRows * kK, rng);
  const std::vector<float> y = Forward(**l, x, kRows);
  for (int64_t m = 0; m < kRows; ++m) {
    for (int64_t n = 0; n < kN; ++n) {
      double sum = bias[n], mag = std::abs(bias[n]);
      for (int64_t i = 0; i < kK; ++i) {
        const double p = double(x[m * kK + i]) * numeric::HalfToFloat(w[n * kK + i]);
        sum += p;
        mag += std::abs(p);
      }
      ASSERT_LE(std::abs(y[m * kN + n] - sum), (kK + 1) * 0x1p-24 * mag) << m << " " << n;
    }
  }
  ExpectBatchInvariant(**l, x);
}

// bf16 weights on whichever panels this CPU runs (exact activations: f32 FMA on the pair panels,
// zmm or ymm, or the hi + lo split where AMX runs it; bf16 activations: vdpbf16ps on AVX-512 BF16,
// else the FMA panels on the rounded x), the label naming it, each output within the split's
// bound of a double sum (the f32 form's is tighter), batch-invariant.
TEST(DenseLinearBf16Test, PanelsMatchADoubleSumAndAreBatchInvariant) {
  namespace kf = kernels::cpu::fast;
  std::mt19937 rng(6);
  kernels::cpu::ThreadPool pool(2);
  std::vector<uint16_t> w(kN * kK);
  for (auto& v : w) v = numeric::FloatToBf16(0.05f * Normal(1, rng)[0]);
  std::vector<float> bias = Normal(kN, rng);
  const io::TensorView view{
      "w",
      io::DType::kBF16,
      {kN, kK},
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(w.data()), w.size() * 2)};
  const std::vector<float> x = Normal(kRows * kK, rng);
  for (DenseActivations acts : {DenseActivations::kFloat, DenseActivations::kBf16}) {
    const bool bf16 = acts == DenseActivations::kBf16;
    auto l = DenseLinear::Create(view, bias, &pool, acts);
    ASSERT_TRUE(l.ok()) << l.status();
    // Exact activations take the f32 FMA panels wherever AMX does not run the split.
    if (kf::Bf16DotAvailable() && (bf16 || kf::AmxBf16Usable())) {
      EXPECT_NE((*l)->Describe().find(bf16 ? "bf16 x bf16 act" : "bf16 x hi+lo bf16 act"),
                std::string::npos)
          << (*l)->Describe();
    } else if (kf::Bf16PairsFmaAvailable() || kf::Bf16DotAvailable()) {
      EXPECT_EQ((*l)->Describe(),
                absl::StrCat("bf16 x ", bf16 ? "bf16" : "f32", " act / cpu-",
                             kf::FloatPanelTargetName(), "-panels"));
    } else {
      GTEST_SKIP() << "neither AVX-512 BF16 nor AVX2 panels on this CPU";
    }
    const std::vector<float> y = Forward(**l, x, kRows);
    for (int64_t m = 0; m < kRows; ++m) {
      for (int64_t n = 0; n < kN; ++n) {
        double sum = bias[n], mag = std::abs(bias[n]);
        for (int64_t i = 0; i < kK; ++i) {
          const float xi = x[m * kK + i];
          const double a = bf16 ? numeric::Bf16ToFloat(numeric::FloatToBf16(xi)) : xi;
          const double p = a * numeric::Bf16ToFloat(w[n * kK + i]);
          sum += p;
          mag += std::abs(p);
        }
        ASSERT_LE(std::abs(y[m * kN + n] - sum), (0x1p-16 * !bf16 + (kK + 2) * 0x1p-24) * mag)
            << (bf16 ? "bf16 acts " : "f32 acts ") << m << " " << n;
      }
    }
    ExpectBatchInvariant(**l, x);
  }
}

}  // namespace
}  // namespace tessera::backend::cpu
