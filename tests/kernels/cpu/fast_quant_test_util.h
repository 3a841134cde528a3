// Helpers shared by the QuantizedLinear fast-path tests (fast_quant_test.cc: FP8 and integer
// formats; fast_quant_fp4_test.cc: NVFP4 and MXFP4): random quantized layers of each scheme and
// CheckLayer, which holds a layer's fast path to its reference path (tolerance and batch
// invariance as fast_quant_test.cc's header states).
#ifndef TESSERA_TESTS_KERNELS_CPU_FAST_QUANT_TEST_UTIL_H_
#define TESSERA_TESTS_KERNELS_CPU_FAST_QUANT_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "engine/backend/cpu/quantized_linear.h"
#include "engine/quant/packed_weights.h"
#include "gtest/gtest.h"
#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/float_panel_matmul.h"
#include "kernels/cpu/fast/fp8_bf16_matmul.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/cpu/quant/int8_matmul.h"
#include "kernels/cpu/quant/int_weight_only_matmul.h"
#include "kernels/cpu/thread_pool.h"
#include "tests/kernels/cpu/hwy_targets_test_util.h"

namespace tessera::backend::cpu::fast_quant_testing {

using quant::ActivationFormat;
using quant::PackedWeights;
using quant::ScaleGranularity;
using quant::ScaleOrigin;
using quant::WeightFormat;

using MakeWeights = std::function<PackedWeights()>;

// Whether f32-activation 4-bit and byte-code layers run on the quantized panels (AVX-512, or the
// f32 form's AVX2 kernel), which hold their codes and scales; elsewhere the 4-bit layers stay on
// the reference path.
inline bool QuantPanels() { return kernels::cpu::fast::QuantPanelAvailable(); }

// Whether the int8 tiles run a vector kernel (AVX-512 VNNI or AVX2).
inline bool Int8Tiles() { return kernels::cpu::fast::Int4x16TilesVectorized(); }

inline float Uniform(std::mt19937& rng, float lo, float hi) {
  return std::uniform_real_distribution<float>(lo, hi)(rng);
}

inline PackedWeights Fp8(int64_t n, int64_t k, ScaleGranularity scale, ActivationFormat act,
                         ScaleOrigin origin, uint32_t seed, int64_t block_k = 32) {
  std::mt19937 rng(seed);
  PackedWeights w;
  w.spec.n = n;
  w.spec.k = k;
  w.spec.weight_format = WeightFormat::kFp8E4m3;
  w.spec.weight_scale = scale;
  w.spec.activation = act;
  w.spec.activation_origin = origin;
  w.spec.activation_scale = ScaleGranularity::kColwise;
  w.spec.block_n = 16;
  w.spec.block_k = block_k;
  w.bytes.resize(n * k);
  for (auto& b : w.bytes) {
    do b = static_cast<uint8_t>(rng());
    while ((b & 0x7F) == 0x7F);  // no NaN codes
  }
  const int64_t count = scale == ScaleGranularity::kTensor ? 1
                        : scale == ScaleGranularity::kBlock
                            ? ((n + 15) / 16) * ((k + block_k - 1) / block_k)
                            : n;
  for (int64_t i = 0; i < count; ++i) w.scales.push_back(Uniform(rng, 1e-3f, 0.1f));
  w.q = w.bytes.data();
  w.input_scale = 0.02f;
  return w;
}

// INT8 W8A8: codes in [-128, 127], per-row or per-tensor scales; static activations (with a zero
// point when `zero_point`), dynamic per-token symmetric or asymmetric (`zero_point`).
inline PackedWeights Int8(int64_t n, int64_t k, ScaleGranularity scale, ScaleOrigin origin,
                          bool zero_point, uint32_t seed) {
  std::mt19937 rng(seed);
  PackedWeights w;
  w.spec.n = n;
  w.spec.k = k;
  w.spec.weight_format = WeightFormat::kInt8;
  w.spec.weight_scale = scale;
  w.spec.activation = ActivationFormat::kInt8;
  w.spec.activation_origin = origin;
  w.spec.activation_scale =
      origin == ScaleOrigin::kStatic ? ScaleGranularity::kTensor : ScaleGranularity::kColwise;
  w.spec.activation_asymmetric = zero_point;
  w.bytes.resize(n * k);
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng());
  for (int64_t i = 0; i < (scale == ScaleGranularity::kTensor ? 1 : n); ++i) {
    w.scales.push_back(Uniform(rng, 1e-3f, 0.05f));
  }
  w.q = w.bytes.data();
  w.input_scale = 0.02f;
  w.input_zero_point = zero_point && origin == ScaleOrigin::kStatic ? -7 : 0;
  w.azp_adj.resize(n);
  kernels::cpu::ComputeInt8AzpAdjustment(reinterpret_cast<const int8_t*>(w.q), n, k,
                                         w.azp_adj.data());
  return w;
}

// Integer weight-only codes of `bits` (2, 3, 4 or 8), one per byte as the loaders leave them.
inline PackedWeights IntCodes(int bits, int64_t n, int64_t k, int64_t group, uint32_t seed) {
  std::mt19937 rng(seed);
  PackedWeights w;
  w.spec.n = n;
  w.spec.k = k;
  w.spec.weight_format = bits == 8   ? WeightFormat::kInt8
                         : bits == 3 ? WeightFormat::kInt3
                         : bits == 2 ? WeightFormat::kInt2
                                     : WeightFormat::kInt4;
  w.spec.group_size = group;
  const uint32_t levels = 1u << bits;
  w.bytes.resize(n * k);
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng() % levels);
  const int64_t groups = group > 0 ? k / group : 1;
  const float mid = static_cast<float>(levels / 2), top = static_cast<float>(levels - 1);
  for (int64_t i = 0; i < n * groups; ++i) {
    w.scales.push_back(Uniform(rng, 1e-3f, 0.05f) * 16.0f / static_cast<float>(levels));
    w.zeros.push_back(i % 3 == 0 ? mid : Uniform(rng, 0.0f, top));  // fractional zero points
  }
  w.q = w.bytes.data();
  return w;
}

inline PackedWeights Int4(int64_t n, int64_t k, int64_t group, uint32_t seed) {
  return IntCodes(4, n, k, group, seed);
}

inline PackedWeights Fp4(WeightFormat fmt, int64_t n, int64_t k, ActivationFormat act,
                         ScaleOrigin origin, uint32_t seed) {
  std::mt19937 rng(seed);
  PackedWeights w;
  w.spec.n = n;
  w.spec.k = k;
  w.spec.weight_format = fmt;
  w.spec.activation = act;
  w.spec.activation_origin = origin;
  w.bytes.resize(n * k / 2);
  for (auto& b : w.bytes) b = static_cast<uint8_t>(rng());
  const int64_t block = fmt == WeightFormat::kNvfp4 ? 16 : 32;
  w.scale_bytes.resize(n * k / block);
  for (auto& b : w.scale_bytes) {
    b = fmt == WeightFormat::kNvfp4 ? static_cast<uint8_t>(rng() % 0x7F)  // UE4M3 without NaN
                                    : static_cast<uint8_t>(110 + rng() % 25);
  }
  w.q = w.bytes.data();
  w.block_scales = w.scale_bytes.data();
  w.global_scale = 3.7e-3f;
  w.input_global_scale = 450.0f;
  return w;
}

inline std::vector<float> RandomX(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x(rows * k);
  for (auto& v : x) v = Uniform(rng, -2.0f, 2.0f);
  if (rows > 1) x[k + 3] = 0.0f;  // a zero activation
  return x;
}

// w with its spec's activation form replaced (a flag's choice, as the CPU selector makes it).
inline PackedWeights WithActivation(PackedWeights w, ActivationFormat a) {
  w.spec.activation = a;
  return w;
}

// Two layers on the same weights whose specs differ in their activation form (f32 and bf16)
// give different outputs on the same inputs: the form really is applied.
inline void ExpectActivationFormsDiffer(PackedWeights a, PackedWeights b, uint32_t seed) {
  const QuantizedLinear la(std::move(a), {}, nullptr), lb(std::move(b), {}, nullptr);
  const int64_t n = la.out_features(), k = la.in_features();
  const std::vector<float> x = RandomX(3, k, seed);
  std::vector<float> ya(3 * n), yb(3 * n);
  la.Forward(x.data(), 3, ya.data());
  lb.Forward(x.data(), 3, yb.data());
  EXPECT_NE(ya, yb);
}

// The checks described at the top, for weights made by `make` (called once per layer built).
inline void CheckLayer(const MakeWeights& make, const char* name, bool expect_fast) {
  SCOPED_TRACE(name);
  const QuantizedLinear lin(make(), {}, nullptr);
  if (expect_fast) {
    EXPECT_TRUE(lin.uses_fast_path());
  }
  const int64_t n = lin.out_features(), k = lin.in_features();
  // The pages a benchmark reads as the decode roofline cover at least the bytes a Forward streams.
  int64_t span_bytes = 0;
  for (const auto& sp : lin.weight_spans()) {
    ASSERT_NE(sp.data, nullptr);
    span_bytes += sp.size;
  }
  EXPECT_GE(span_bytes, lin.weight_bytes());
  std::vector<float> w_row(k);
  const int64_t max_rows = 17;
  const std::vector<float> x = RandomX(max_rows, k, 1234 + static_cast<uint32_t>(n + k));

  // Accuracy against the reference path, for a GEMV-sized and a GEMM-sized call.
  for (const int64_t rows : {int64_t{3}, max_rows}) {
    std::vector<float> fast(rows * n), ref(rows * n);
    lin.Forward(x.data(), rows, fast.data());
    lin.ForwardReference(x.data(), rows, ref.data());
    for (int64_t c = 0; c < n; ++c) {
      lin.weights().DequantizeRow(c, w_row.data());
      for (int64_t r = 0; r < rows; ++r) {
        double sum_abs = 0.0;
        for (int64_t i = 0; i < k; ++i) sum_abs += 2.0 * std::fabs(x[r * k + i] * w_row[i]);
        const double u = std::ldexp(1.0, -24);
        const double tol =
            4.0 * (k + 8) * u * sum_abs + 8.0 * u * std::fabs(ref[r * n + c]) + 1e-30;
        ASSERT_NEAR(fast[r * n + c], ref[r * n + c], tol) << "row " << r << " col " << c;
      }
    }
  }

  // Batch invariance: each row alone vs. inside calls of every size (GEMV and GEMM paths).
  std::vector<float> alone(max_rows * n);
  for (int64_t r = 0; r < max_rows; ++r) lin.Forward(x.data() + r * k, 1, alone.data() + r * n);
  for (const int64_t rows : {2, 4, 5, 9, 17}) {
    std::vector<float> y(rows * n);
    lin.Forward(x.data(), rows, y.data());
    ASSERT_EQ(std::memcmp(y.data(), alone.data(), rows * n * sizeof(float)), 0) << rows << " rows";
  }
  // Column splits across threads.
  for (const int threads : {2, 3}) {
    kernels::cpu::ThreadPool pool(threads);
    const QuantizedLinear split(make(), {}, &pool);
    for (const int64_t rows : {1, 17}) {
      std::vector<float> y(rows * n);
      split.Forward(x.data(), rows, y.data());
      ASSERT_EQ(std::memcmp(y.data(), alone.data(), rows * n * sizeof(float)), 0)
          << threads << " threads, " << rows << " rows";
    }
  }
}

// W8A16 with f32 activations (the exact split) and with bf16 activations (--cpu_bf16_activations:
// both paths round x to bf16 first, then the kernel takes one vdpbf16ps per weight pair).

}  // namespace tessera::backend::cpu::fast_quant_testing

#endif  // TESSERA_TESTS_KERNELS_CPU_FAST_QUANT_TEST_UTIL_H_
