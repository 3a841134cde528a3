// BM_GgmlQuantPanels of tessera_matmul_bench: GGUF block weights on the quantized panels
// (kernels/cpu/fast/ggml_quant_panels.h), which DenseLinear runs for them with exact f32
// activations on AVX-512, at the shapes of matmul_bench.cc. BM_Matmul/<Q8_0|Q4_0|Q4_K|Q6_K> times
// the FastMatmul row kernels they replaced there.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/ggml_quant_panels.h"
#include "kernels/cpu/huge_page_buffer.h"
#include "kernels/numeric/half.h"

namespace tessera::bench {
namespace {

namespace kf = kernels::cpu::fast;
using kernels::cpu::GgmlBlockType;

GgmlBlockType TypeOf(const std::string& fmt) {
  if (fmt == "Q4_0") return GgmlBlockType::kQ4_0;
  if (fmt == "Q4_1") return GgmlBlockType::kQ4_1;
  if (fmt == "Q8_0") return GgmlBlockType::kQ8_0;
  if (fmt == "Q4_K") return GgmlBlockType::kQ4_K;
  if (fmt == "Q5_K") return GgmlBlockType::kQ5_K;
  return GgmlBlockType::kQ6_K;
}

// Random codes with sane f16 scales (Q6_K's d at byte 208; the others' d, and m / dmin, at 0-3),
// repacked per copy (256 MiB of distinct copies); the activations' bf16 split (the pair form:
// every type but Q8_0 on AVX-512 BF16) inside the timing, rows over the pool, then the column
// split, as DenseLinear does.
void BM_GgmlQuantPanels(benchmark::State& state, std::string fmt, int64_t n, int64_t k,
                        int64_t m) {
  const GgmlBlockType type = TypeOf(fmt);
  const kernels::cpu::GgmlBlockInfo info = kernels::cpu::GetGgmlBlockInfo(type);
  const int64_t stored = n * (k / info.elements) * info.bytes;
  std::vector<uint8_t> src(stored);
  uint64_t seed = 42;
  if (!kf::QuantPanelAvailable()) {
    state.SkipWithError("no AVX2 or AVX-512 on this CPU");
    return;
  }
  std::vector<kernels::cpu::HugePageBuffer> copies(std::max<int64_t>(1, CoverBytes() / stored));
  std::vector<kf::FastQuantWeights> views;
  for (auto& c : copies) {
    for (int64_t i = 0; i < stored; i += 8) {
      const uint64_t r = Mix(seed);
      std::memcpy(src.data() + i, &r, std::min<int64_t>(8, stored - i));
    }
    for (int64_t b = 0; b < stored / info.bytes; ++b) {
      uint8_t* p = src.data() + b * info.bytes;
      const uint16_t h = numeric::FloatToHalf(1e-3f + 1e-3f * static_cast<float>(b % 7));
      std::memcpy(p + (type == GgmlBlockType::kQ6_K ? 208 : 0), &h, 2);
      if (type == GgmlBlockType::kQ4_1 || type == GgmlBlockType::kQ4_K ||
          type == GgmlBlockType::kQ5_K) {
        std::memcpy(p + 2, &h, 2);
      }
    }
    c = kernels::cpu::HugePageBuffer(kf::GgmlQuantPanelsBytes(type, n, k));
    views.push_back(kf::RepackGgmlQuantPanels(type, src.data(), n, k, c.data(),
                                              kf::GgmlQuantPanelForm(type)));
  }
  const bool pairs = views[0].pair_panels;
  std::vector<float> x(m * k), y(m * n);
  for (auto& v : x) v = static_cast<float>(static_cast<int64_t>(Mix(seed) % 2001) - 1000) / 500.0f;
  std::vector<uint16_t> hi(m * kf::Bf16DotActStride(k)), lo(hi.size());
  // The affine and K-quant types' group sums, once per call as the engine computes them.
  std::vector<float> sums(kf::QuantPanelGroupSumsCount(views[0], m));
  float* gs = sums.empty() ? nullptr : sums.data();
  size_t next = 0;
  for (auto _ : state) {
    const kf::FastQuantWeights& w = views[next];
    next = (next + 1) % views.size();
    if (pairs || gs != nullptr) {
      auto convert = [&](int64_t r0, int64_t r1) {
        if (pairs) kf::RoundActsToBf16(x.data(), k, r0, r1, hi.data(), lo.data(), nullptr);
        kf::QuantPanelGroupSums(w, x.data(), r0, r1, gs);
      };
      if (m > 1) {
        Pool().ParallelFor(m, 1, convert);
      } else {
        convert(0, m);
      }
    }
    Pool().ParallelFor(n, ColumnGrain(m), [&](int64_t b, int64_t e) {
      if (pairs) {
        kf::QuantPanelPairMatmul(w, x.data(), hi.data(), lo.data(), m, nullptr, y.data(), b, e, gs);
      } else {
        kf::QuantPanelMatmul(w, x.data(), m, nullptr, y.data(), b, e, gs);
      }
    });
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] =
      benchmark::Counter(stored * it / 1e9, benchmark::Counter::kIsRate);
  // The bytes the kernel streams: the panels (file bytes plus f32 scales, zero points for the
  // affine types).
  state.counters["panel_GB/s"] = benchmark::Counter(
      static_cast<double>(copies[0].size()) * it / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k * it / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(pairs ? "bf16 pairs, hi+lo split" : "f32 form");
}

}  // namespace

void RegisterGgmlPanelBenchmarks(std::span<const Shape> gemm) {
  for (const char* f : {"Q4_0", "Q4_1", "Q8_0", "Q4_K", "Q5_K", "Q6_K"}) {
    for (const Shape& s : gemm) {
      for (int64_t m : {1, 16, 128}) Register("BM_GgmlQuantPanels", BM_GgmlQuantPanels, f, s, m);
    }
  }
}

}  // namespace tessera::bench
