// BM_Int8DotMatmul of tessera_matmul_bench: INT8 W8A8 on the quad-panel kernels of
// kernels/cpu/fast/int8_dot_matmul.h (AVX-512 VNNI or AMX where the CPU has them, the AVX2 kernel
// of avx2_panels.h elsewhere), at the shapes of matmul_bench.cc.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"
#include "kernels/cpu/quant/int8_matmul.h"

namespace tessera::bench {
namespace {

namespace kc = kernels::cpu;
namespace kf = kernels::cpu::fast;

// ---- INT8 W8A8 (compressed-tensors int-quantized: per-channel weight scales, dynamic per-token
// symmetric activations) on the panel kernel (int8_dot_matmul.h: VNNI, or AVX2 without it), as
// QuantizedLinear runs it: the activations are quantized and shifted to u8 inside the timing (the
// fused quantizer, rows split over the pool); random codes in 256 MiB of distinct copies.
// INT8_W8A8_AVX2: the AVX2 kernel (avx2_panels.h) on any CPU with AVX2. ----
void BM_Int8DotMatmul(benchmark::State& state, std::string fmt, int64_t n, int64_t k, int64_t m) {
  const bool avx2 = fmt == "INT8_W8A8_AVX2";
  if (avx2 ? !kf::internal::Avx2PanelsAvailable() : !kf::Int8DotUsable()) {
    state.SkipWithError("no AVX2 on this CPU");
    return;
  }
  const auto kernel = avx2 ? kf::internal::Int8DotMatmulAvx2 : kf::Int8DotMatmul;
  struct Copy {
    hwy::AlignedFreeUniquePtr<uint8_t[]> panels;
    std::vector<int32_t> sums;
    std::vector<float> scales;
  };
  const int64_t stored = n * k + 4 * n;
  std::vector<Copy> copies(std::max<int64_t>(1, CoverBytes() / stored));
  std::mt19937 rng(42);
  std::vector<int8_t> q(n * k);
  for (Copy& c : copies) {
    for (auto& v : q) v = static_cast<int8_t>(rng());
    c.panels = hwy::AllocateAligned<uint8_t>(kf::Int8QuadsBytes(n, k));
    c.sums.resize(n);
    kf::RepackInt8Quads(q.data(), n, k, c.panels.get(), c.sums.data());
    c.scales.assign(n, 0.01f);
  }
  std::vector<float> x(m * k), y(m * n), sa(m);
  std::vector<int8_t> qa(m * k);  // not read by the kernel (Int8Activations::q)
  std::vector<uint8_t> u8(m * kf::Int8DotActStride(k));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  size_t next = 0;
  for (auto _ : state) {
    const Copy& c = copies[next];
    next = (next + 1) % copies.size();
    Pool().ParallelFor(m, 1, [&](int64_t r0, int64_t r1) {
      kf::QuantizeInt8PerTokenSymmetricU8(x.data(), k, r0, r1, sa.data(), u8.data());
    });
    const kf::Int8DotWeights w{c.panels.get(), c.sums.data(), c.scales.data(), true, n, k};
    const kc::Int8Activations a{qa.data(), sa.data(), nullptr, true};
    Pool().ParallelFor(n, ColumnGrain(m), [&](int64_t b, int64_t e) {
      kernel(w, u8.data(), a, m, nullptr, y.data(), b, e);
    });
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] = benchmark::Counter(stored * it / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * it / 1e9, benchmark::Counter::kIsRate);
}

}  // namespace

void RegisterInt8DotBenchmarks(std::span<const Shape> gemm) {
  for (const char* f : {"INT8_W8A8", "INT8_W8A8_AVX2"}) {
    for (const Shape& s : gemm) {
      for (int64_t m : {1, 16, 128}) Register("BM_Int8DotMatmul", BM_Int8DotMatmul, f, s, m);
    }
  }
}

}  // namespace tessera::bench
