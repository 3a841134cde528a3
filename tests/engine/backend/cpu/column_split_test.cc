// ForwardSharedInput (engine/backend/cpu/column_split.h) gives each layer's own Forward output bit
// for bit (1, 3, 17 rows; no pool and a 2-thread pool; N = 2048 / 200 / 40) for Dense (f32, bf16,
// Q4_0 x int8) and Quantized (INT4 g128 x int8, act-order too; FP8 and INT8 W8A8; NVFP4 W4A4;
// INT4 g16 reference) layers, mixed ones, and a layer without ForwardColumns at any position;
// every output is written (NaN-prefilled) and every column computed exactly once, inside split.
#include "engine/backend/cpu/column_split.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "engine/backend/cpu/dense_linear.h"
#include "engine/backend/cpu/quantized_linear.h"
#include "engine/io/tensor_view.h"
#include "engine/quant/packed_weights.h"
#include "gtest/gtest.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/cpu/quant/int8_matmul.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::backend::cpu {
namespace {

using kernels::cpu::ThreadPool;
using quant::ActivationFormat;
using quant::PackedWeights;
using quant::ScaleGranularity;
using quant::ScaleOrigin;
using quant::WeightFormat;

constexpr int64_t kK = 256;  // in_features shared by every layer

// A layer and the weight bytes a DenseLinear points into (declared first: destroyed last).
struct Built {
  std::vector<uint8_t> storage;
  std::unique_ptr<Linear> lin;
};
// Builds a layer of `n` outputs whose own Forward splits its columns over `pool`.
using Maker = std::function<Built(int64_t n, uint32_t seed, ThreadPool* pool)>;

std::vector<float> RandomFloats(int64_t count, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(count);
  for (float& f : v) f = dist(rng);
  return v;
}

// `count` random bytes below `mod`; mod 0: any E4M3 code but the NaNs (S.1111.111).
std::vector<uint8_t> RandomBytes(int64_t count, uint32_t seed, uint32_t mod) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(count);
  for (auto& c : v)
    c = static_cast<uint8_t>(mod > 0 ? rng() % mod : (rng() % 0x7F) | (rng() & 0x80));
  return v;
}

Built MakeDense(io::DType dtype, DenseActivations acts, int64_t n, uint32_t seed,
                ThreadPool* pool) {
  Built b;
  const std::vector<float> w = RandomFloats(n * kK, seed, -0.1f, 0.1f);
  if (dtype == io::DType::kF32) {
    b.storage.resize(w.size() * 4);
    std::memcpy(b.storage.data(), w.data(), b.storage.size());
  } else if (dtype == io::DType::kBF16) {
    b.storage.resize(w.size() * 2);
    for (size_t i = 0; i < w.size(); ++i) {
      const uint16_t hi = static_cast<uint16_t>(std::bit_cast<uint32_t>(w[i]) >> 16);
      std::memcpy(&b.storage[2 * i], &hi, 2);
    }
  } else {  // kQ4_0: blocks of 32 as an f16 scale in [2^-7, 2^-6) and 16 bytes of nibbles
    b.storage = RandomBytes(n * kK / 32 * 18, seed, 256);
    for (size_t i = 0; i < b.storage.size(); i += 18)
      b.storage[i + 1] = 0x20 | (b.storage[i + 1] & 3);
  }
  io::TensorView view{"w", dtype, {n, kK}, absl::MakeConstSpan(b.storage)};
  auto lin = DenseLinear::Create(view, RandomFloats(n, seed + 1, -1.0f, 1.0f), pool, acts);
  EXPECT_TRUE(lin.ok()) << lin.status();
  if (lin.ok()) b.lin = std::move(*lin);
  return b;
}

Maker Dense(io::DType dtype, DenseActivations acts = DenseActivations::kFloat) {
  return [=](int64_t n, uint32_t seed, ThreadPool* pool) {
    return MakeDense(dtype, acts, n, seed, pool);
  };
}

PackedWeights Spec(int64_t n, WeightFormat format, ActivationFormat act) {
  PackedWeights w;
  w.spec.n = n;
  w.spec.k = kK;
  w.spec.weight_format = format;
  w.spec.activation = act;
  w.spec.activation_origin = ScaleOrigin::kDynamic;
  return w;
}

// INT4 weight-only, group `group`, one code per byte with fractional zero points.
PackedWeights Int4(int64_t n, int64_t group, uint32_t seed) {
  PackedWeights w = Spec(n, WeightFormat::kInt4, ActivationFormat::kFloat);
  w.spec.group_size = group;
  w.bytes = RandomBytes(n * kK, seed, 16);
  w.scales = RandomFloats(n * kK / group, seed + 1, 1e-3f, 0.05f);
  w.zeros = RandomFloats(n * kK / group, seed + 2, 0.0f, 15.0f);
  w.q = w.bytes.data();
  return w;
}

PackedWeights Fp8W8A8(int64_t n, uint32_t seed) {
  PackedWeights w = Spec(n, WeightFormat::kFp8E4m3, ActivationFormat::kFp8);
  w.spec.weight_scale = ScaleGranularity::kRowwise;
  w.spec.activation_scale = ScaleGranularity::kColwise;
  w.bytes = RandomBytes(n * kK, seed, 0);
  w.scales = RandomFloats(n, seed + 1, 1e-3f, 0.1f);
  w.q = w.bytes.data();
  return w;
}

// INT8 W8A8 with per-row weight scales and per-token activations, `asymmetric` or not.
PackedWeights Int8W8A8(int64_t n, uint32_t seed, bool asymmetric) {
  PackedWeights w = Spec(n, WeightFormat::kInt8, ActivationFormat::kInt8);
  w.spec.weight_scale = ScaleGranularity::kRowwise;
  w.spec.activation_scale = ScaleGranularity::kColwise;
  w.spec.activation_asymmetric = asymmetric;
  w.bytes = RandomBytes(n * kK, seed, 256);
  w.scales = RandomFloats(n, seed + 1, 1e-3f, 0.05f);
  w.q = w.bytes.data();
  w.azp_adj.resize(n);
  kernels::cpu::ComputeInt8AzpAdjustment(reinterpret_cast<const int8_t*>(w.q), n, kK,
                                         w.azp_adj.data());
  return w;
}

PackedWeights Nvfp4W4A4(int64_t n, uint32_t seed) {
  PackedWeights w = Spec(n, WeightFormat::kNvfp4, ActivationFormat::kNvfp4);
  w.bytes = RandomBytes(n * kK / 2, seed, 256);
  w.scale_bytes = RandomBytes(n * kK / 16, seed + 1, 0x7F);  // UE4M3 block scales, no NaN
  w.q = w.bytes.data();
  w.block_scales = w.scale_bytes.data();
  w.global_scale = 3.7e-3f;
  return w;
}

Maker Quantized(std::function<PackedWeights(int64_t n, uint32_t seed)> make) {
  return [make](int64_t n, uint32_t seed, ThreadPool* pool) {
    auto bias = RandomFloats(n, seed + 9, -1.0f, 1.0f);
    return Built{{}, std::make_unique<QuantizedLinear>(make(n, seed), std::move(bias), pool)};
  };
}

PackedWeights Int4G128Int8Acts(int64_t n, uint32_t seed) {
  PackedWeights w = Int4(n, 128, seed);
  w.spec.activation = ActivationFormat::kInt8Block32;
  return w;
}

PackedWeights Int4ActOrderInt8Acts(int64_t n, uint32_t seed) {
  PackedWeights w = Int4G128Int8Acts(n, seed);
  w.spec.act_order = true;
  std::vector<int32_t> rank(kK);
  std::iota(rank.begin(), rank.end(), 0);
  std::shuffle(rank.begin(), rank.end(), std::mt19937(seed + 3));
  for (int32_t r : rank) w.g_idx.push_back(r / 128);
  return w;
}

// INT4 g128 with int16 activations (--cpu_int16_activations): the pair panels' int16 route where
// this CPU runs it, else x̂ on the other kernels.
PackedWeights Int4G128Int16Acts(int64_t n, uint32_t seed) {
  PackedWeights w = Int4(n, 128, seed);
  w.spec.activation = ActivationFormat::kInt16Group;
  w.spec.activation_scale = ScaleGranularity::kGroup;
  w.spec.activation_group = 128;
  return w;
}

// INT8 weight-only (GPTQ 8-bit, compressed-tensors W8A16) g128 with int16 activations: 8-bit
// codes on the int16 route's own pair panels.
PackedWeights Int8G128Int16Acts(int64_t n, uint32_t seed) {
  PackedWeights w = Int4G128Int16Acts(n, seed);
  w.spec.weight_format = WeightFormat::kInt8;
  w.bytes = RandomBytes(n * kK, seed, 256);
  w.zeros = RandomFloats(n * kK / 128, seed + 2, 0.0f, 255.0f);
  w.q = w.bytes.data();
  return w;
}

PackedWeights Int4ActOrderInt16Acts(int64_t n, uint32_t seed) {
  PackedWeights w = Int4ActOrderInt8Acts(n, seed);
  w.spec.activation = ActivationFormat::kInt16Group;
  w.spec.activation_group = 128;
  return w;
}

// The test-only layers: N outputs, kK inputs.
class TestLinear : public Linear {
 public:
  explicit TestLinear(int64_t n) : n_(n) {}
  int64_t out_features() const override { return n_; }
  int64_t in_features() const override { return kK; }
  std::string Describe() const override { return "test layer"; }
  int64_t weight_bytes() const override { return 0; }

 protected:
  int64_t n_;
};

// A layer that keeps Linear's default ForwardColumns: y computed in Forward, split never called.
class PlainLinear : public TestLinear {
 public:
  using TestLinear::TestLinear;
  void Forward(const float* x, int64_t rows, float* y) const override {
    ++calls;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t j = 0; j < n_; ++j) y[r * n_ + j] = x[r * kK + j % kK] * (j + 1) - x[r * kK];
    }
  }
  mutable std::atomic<int> calls{0};
};

Maker Plain() {
  return [](int64_t n, uint32_t, ThreadPool*) {
    return Built{{}, std::make_unique<PlainLinear>(n)};
  };
}

// A layer whose runs count how often each output is computed (y starts at 0, each run adds 1),
// and flag a run outside its split callback.
class CountingLinear : public TestLinear {
 public:
  using TestLinear::TestLinear;
  void Forward(const float* x, int64_t rows, float* y) const override {
    ForwardColumns(x, rows, y, [](int64_t n, const ColumnRun& run) { run(0, n); });
  }
  void ForwardColumns(const float*, int64_t rows, float* y, ColumnSplit split) const override {
    std::fill(y, y + rows * n_, 0.0f);
    std::atomic<bool> active{true};
    const ColumnRun run = [&, y, rows](int64_t b, int64_t e) {
      if (!active.load() || b < 0 || e > n_ || b > e) bad_run = true;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t c = b; c < e; ++c) y[r * n_ + c] += 1.0f;
      }
    };
    split(n_, run);
    active = false;
  }
  mutable std::atomic<bool> bad_run{false};
};

// One NaN-filled output per layer for `rows` rows; `ys` gets pointers to them.
std::vector<std::vector<float>> NanOutputs(const std::vector<const Linear*>& layers, int64_t rows,
                                           std::vector<float*>& ys) {
  std::vector<std::vector<float>> out;
  ys.clear();
  for (const Linear* l : layers) {
    out.emplace_back(rows * l->out_features(), std::numeric_limits<float>::quiet_NaN());
    ys.push_back(out.back().data());
  }
  return out;
}

// Builds one layer per maker (out_features from `ns`) for each pool setting and checks that
// ForwardSharedInput gives every layer's Forward output bit for bit, every element written, for
// 1, 3 and 17 rows; a second call (scratch blocks reused) gives the same bits again.
void ExpectSharedMatchesSeparate(const std::vector<Maker>& makers, const std::vector<int64_t>& ns,
                                 float x_lo = -2, float x_hi = 2) {
  ThreadPool pool2(2);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
    SCOPED_TRACE(pool == nullptr ? "no pool" : "2-thread pool");
    std::vector<Built> built;
    std::vector<const Linear*> layers;
    for (size_t i = 0; i < makers.size(); ++i) {
      built.push_back(makers[i](ns[i], 100 + 7 * static_cast<uint32_t>(i), pool));
      ASSERT_NE(built.back().lin, nullptr);
      ASSERT_EQ(built.back().lin->in_features(), kK);
      layers.push_back(built.back().lin.get());
    }
    for (const int64_t rows : {int64_t{1}, int64_t{3}, int64_t{17}}) {
      SCOPED_TRACE(testing::Message() << rows << " rows");
      const std::vector<float> x =
          RandomFloats(rows * kK, 42 + static_cast<uint32_t>(rows), x_lo, x_hi);
      std::vector<std::vector<float>> expected;
      for (const Linear* l : layers) {
        expected.emplace_back(rows * l->out_features(), -7.0f);
        l->Forward(x.data(), rows, expected.back().data());
      }
      for (int call = 0; call < 2; ++call) {
        std::vector<float*> ys;
        const std::vector<std::vector<float>> actual = NanOutputs(layers, rows, ys);
        ForwardSharedInput(layers, x.data(), rows, ys, pool);
        for (size_t i = 0; i < layers.size(); ++i) {
          SCOPED_TRACE(testing::Message() << "layer " << i << " (" << layers[i]->Describe()
                                          << ", N = " << ns[i] << "), call " << call);
          for (size_t j = 0; j < actual[i].size(); ++j) {
            ASSERT_FALSE(std::isnan(expected[i][j])) << "Forward left output " << j << " NaN";
            ASSERT_FALSE(std::isnan(actual[i][j])) << "output " << j << " never written";
            ASSERT_EQ(std::bit_cast<uint32_t>(actual[i][j]),
                      std::bit_cast<uint32_t>(expected[i][j]))
                << "output " << j << ": " << actual[i][j] << " vs Forward " << expected[i][j];
          }
        }
      }
    }
  }
}

// 200 ends inside a 16-column unit and, at 17 rows, inside a 64-column one (ColumnSplitUnit).
const std::vector<int64_t> kQkv = {2048, 200, 40};

TEST(ColumnSplitTest, DenseF32) {
  const Maker f32 = Dense(io::DType::kF32);
  ExpectSharedMatchesSeparate({f32, f32, f32}, kQkv);
}

TEST(ColumnSplitTest, DenseBf16) {
  const Maker hi_lo = Dense(io::DType::kBF16),
              bf16 = Dense(io::DType::kBF16, DenseActivations::kBf16);
  ExpectSharedMatchesSeparate({hi_lo, hi_lo, hi_lo}, kQkv);
  ExpectSharedMatchesSeparate({bf16, bf16, bf16}, kQkv);
}

TEST(ColumnSplitTest, DenseQ4_0Int8Activations) {
  const Maker q4 = Dense(io::DType::kQ4_0, DenseActivations::kInt8Block32);
  ExpectSharedMatchesSeparate({q4, q4, q4}, kQkv);
}

TEST(ColumnSplitTest, QuantizedInt4Group128Int8Activations) {
  const Maker m = Quantized(Int4G128Int8Acts);
  ExpectSharedMatchesSeparate({m, m, m}, kQkv);
  const Maker act_order = Quantized(Int4ActOrderInt8Acts);
  ExpectSharedMatchesSeparate({act_order, m, act_order}, kQkv);
}

// int16 activations (INT4, act-order too: channels sorted by group, and 8-bit INT8 codes): the
// split gives Forward's bits, and
// Forward (the int16 route) agrees with the reference kernel on x̂ to f32 rounding, alone and in a
// batch.
TEST(ColumnSplitTest, QuantizedInt4Group128Int16Activations) {
  const Maker m = Quantized(Int4G128Int16Acts), act_order = Quantized(Int4ActOrderInt16Acts),
              int8 = Quantized(Int8G128Int16Acts);
  ExpectSharedMatchesSeparate({m, m, m}, kQkv);
  ExpectSharedMatchesSeparate({act_order, m, int8}, kQkv);
  for (const Maker& make : {m, act_order, int8}) {
    const Built built = make(200, 5, nullptr);
    const auto& layer = static_cast<const QuantizedLinear&>(*built.lin);
    EXPECT_EQ(layer.uses_int16_route(), kernels::cpu::fast::QuantPanelInt16Available());
    const int64_t rows = 7;
    const std::vector<float> x = RandomFloats(rows * kK, 77, -2, 2);
    std::vector<float> fast(rows * 200), ref(rows * 200), one(200);
    layer.Forward(x.data(), rows, fast.data());
    layer.ForwardReference(x.data(), rows, ref.data());
    for (int64_t r = 0; r < rows; ++r) {
      layer.Forward(x.data() + r * kK, 1, one.data());
      ASSERT_EQ(std::memcmp(one.data(), fast.data() + r * 200, 200 * 4), 0) << "row " << r;
    }
    for (size_t i = 0; i < fast.size(); ++i) {
      ASSERT_NEAR(fast[i], ref[i], 2e-4 * (1 + std::fabs(ref[i]))) << i;
    }
  }
}

TEST(ColumnSplitTest, QuantizedW8A8AndNvfp4W4A4) {
  const Maker fp8 = Quantized(Fp8W8A8), nvfp4 = Quantized(Nvfp4W4A4);
  ExpectSharedMatchesSeparate({fp8, fp8, fp8}, kQkv);
  ExpectSharedMatchesSeparate({nvfp4, nvfp4, nvfp4}, kQkv);
  for (const bool asymmetric : {false, true}) {
    const Maker int8 =
        Quantized([=](int64_t n, uint32_t seed) { return Int8W8A8(n, seed, asymmetric); });
    ExpectSharedMatchesSeparate({int8, int8, int8}, kQkv);
  }
}

// Rows far from zero give asymmetric INT8 activations a zero point outside int8's range: the
// layer prepares for the VNNI kernel, then falls back to the reference kernel through the same
// split (quantized_linear_int8.cc).
TEST(ColumnSplitTest, Int8AsymmetricZeroPointFallback) {
  const Maker int8 = Quantized([](int64_t n, uint32_t seed) { return Int8W8A8(n, seed, true); });
  ExpectSharedMatchesSeparate({int8, int8, int8}, kQkv, 50, 54);
}

TEST(ColumnSplitTest, QuantizedReferenceKernels) {
  const Maker m = Quantized([](int64_t n, uint32_t seed) { return Int4(n, 16, seed); });
  ExpectSharedMatchesSeparate({m, m}, {256, 40});
}

TEST(ColumnSplitTest, DenseAndQuantizedMixed) {
  const Maker q4_0 = Dense(io::DType::kQ4_0, DenseActivations::kInt8Block32);
  ExpectSharedMatchesSeparate(
      {q4_0, Quantized(Int4G128Int8Acts), Quantized(Nvfp4W4A4), Dense(io::DType::kBF16)},
      {2048, 256, 40, 72});
}

TEST(ColumnSplitTest, LayerWithoutColumnSplitAnywhereInTheList) {
  const Maker q = Quantized(Int4G128Int8Acts), d = Dense(io::DType::kF32);
  ExpectSharedMatchesSeparate({Plain(), q, d}, kQkv);
  ExpectSharedMatchesSeparate({q, Plain(), d}, kQkv);
  ExpectSharedMatchesSeparate({q, d, Plain()}, kQkv);
  ExpectSharedMatchesSeparate({Plain(), Plain()}, {40, 17});
}

// Each layer's Forward runs once and each column of each layer is computed exactly once, by runs
// inside that layer's split callback, whatever the layers' sizes and positions.
TEST(ColumnSplitTest, EveryColumnComputedExactlyOnce) {
  ThreadPool pool2(2);
  for (ThreadPool* pool : {static_cast<ThreadPool*>(nullptr), &pool2}) {
    CountingLinear a(40), b(2048), c(1), e(33);
    PlainLinear plain(17);
    const std::vector<const Linear*> layers = {&a, &plain, &b, &c, &e};
    const int64_t rows = 3;
    const std::vector<float> x = RandomFloats(rows * kK, 1, -1, 1);
    std::vector<float*> yp;
    const std::vector<std::vector<float>> ys = NanOutputs(layers, rows, yp);
    ForwardSharedInput(layers, x.data(), rows, yp, pool);
    EXPECT_EQ(plain.calls.load(), 1);
    for (const CountingLinear* l : {&a, &b, &c, &e}) EXPECT_FALSE(l->bad_run.load());
    for (size_t i : {0u, 2u, 3u, 4u}) {
      for (size_t j = 0; j < ys[i].size(); ++j) {
        ASSERT_EQ(ys[i][j], 1.0f) << "layer " << i << " element " << j;
      }
    }
    for (float v : ys[1]) ASSERT_FALSE(std::isnan(v));
  }
}

}  // namespace
}  // namespace tessera::backend::cpu
