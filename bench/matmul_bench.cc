// Google Benchmark of the fast CPU matmul kernels (kernels/cpu/fast) at LLM shapes, with a
// STREAM-style triad in the same binary so every report carries this machine's memory bandwidth
// next to the kernels' weight-streaming rate. Counters: weight_GB/s (bytes of the stored weight
// format read per second: the decode-relevant number at M=1), GFLOP/s (2·M·N·K per second) and,
// for the triad, GB/s with STREAM's convention (3 arrays × 4 bytes per element, no write-allocate).
// Threads: TESSERA_THREADS (default: all hardware threads), split over output columns exactly as
// DenseLinear does.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/model/synth_model.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/fast/ggml_repack.h"
#include "kernels/cpu/matmul_reference.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/numeric/half.h"

namespace tessera::bench {
namespace {

namespace kc = kernels::cpu;
namespace kf = kernels::cpu::fast;

kc::ThreadPool& Pool() {
  static kc::ThreadPool* pool = [] {
    const char* env = std::getenv("TESSERA_THREADS");
    return new kc::ThreadPool(env != nullptr ? std::atoi(env) : 0);
  }();
  return *pool;
}

// ---- STREAM triad: a = b + s·c over 3 × 64 MiB arrays. ----
void BM_Triad(benchmark::State& state) {
  const int64_t n = int64_t{16} << 20;
  auto a = hwy::AllocateAligned<float>(n), b = hwy::AllocateAligned<float>(n),
       c = hwy::AllocateAligned<float>(n);
  Pool().ParallelFor(n, 4096, [&](int64_t s, int64_t e) {
    // Distinct values on every page: a hypervisor that merges identical pages (this VM's host
    // does) would otherwise serve b and c from one cached page and report ~75 GB/s instead of
    // the ~44 GB/s DRAM delivers.
    for (int64_t i = s; i < e; ++i) {
      a[i] = 0;
      b[i] = static_cast<float>(i);
      c[i] = static_cast<float>(i ^ 0x5555);
    }
  });
  const float scalar = 3.0f;
  for (auto _ : state) {
    Pool().ParallelFor(n, 4096, [&](int64_t s, int64_t e) {
      float* __restrict pa = a.get();
      const float* __restrict pb = b.get();
      const float* __restrict pc = c.get();
      for (int64_t i = s; i < e; ++i) pa[i] = pb[i] + scalar * pc[i];
    });
    benchmark::DoNotOptimize(a[n / 2]);
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(3.0 * 4 * n * state.iterations() / 1e9,
                                              benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Triad)->UseRealTime()->Unit(benchmark::kMillisecond);

// ---- Weights of one format and shape, prepared as DenseLinear prepares them. ----
struct Prepared {
  std::vector<uint8_t> raw;                       // file layout
  hwy::AlignedFreeUniquePtr<uint8_t[]> repacked;  // Q8_0/Q4_0
  kf::FastWeights fw;
  int64_t stored_bytes = 0;
};

std::unique_ptr<Prepared> Prepare(const std::string& fmt, int64_t n, int64_t k) {
  auto p = std::make_unique<Prepared>();
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 0.02f);
  std::vector<float> row(k);
  int64_t row_bytes = 0;
  if (fmt == "F32") row_bytes = 4 * k;
  else if (fmt == "BF16" || fmt == "F16") row_bytes = 2 * k;
  else if (fmt == "Q8_0") row_bytes = k / 32 * 34;
  else if (fmt == "Q4_0") row_bytes = k / 32 * 18;
  else if (fmt == "Q4_K") row_bytes = k / 256 * 144;
  else if (fmt == "Q6_K") row_bytes = k / 256 * 210;
  p->raw.resize(n * row_bytes);
  p->stored_bytes = n * row_bytes;
  for (int64_t r = 0; r < n; ++r) {
    uint8_t* dst = p->raw.data() + r * row_bytes;
    if (fmt == "Q4_K" || fmt == "Q6_K") {
      // Random blocks with sane f16 scales: only the streaming and decode cost matters here.
      for (int64_t i = 0; i < row_bytes; ++i) dst[i] = static_cast<uint8_t>(rng());
      const int64_t bb = fmt == "Q4_K" ? 144 : 210, at = fmt == "Q4_K" ? 0 : 208;
      for (int64_t b = 0; b < row_bytes / bb; ++b) {
        const uint16_t h = numeric::FloatToHalf(0.001f);
        std::memcpy(dst + b * bb + at, &h, 2);
        if (fmt == "Q4_K") std::memcpy(dst + b * bb + 2, &h, 2);
      }
      continue;
    }
    for (auto& v : row) v = nd(rng);
    if (fmt == "F32") {
      std::memcpy(dst, row.data(), 4 * k);
    } else if (fmt == "BF16" || fmt == "F16") {
      for (int64_t i = 0; i < k; ++i) {
        const uint16_t h = fmt == "BF16" ? numeric::FloatToBf16(row[i]) : numeric::FloatToHalf(row[i]);
        std::memcpy(dst + 2 * i, &h, 2);
      }
    } else if (fmt == "Q8_0") {
      model::QuantizeQ8_0(row.data(), k, dst);
    } else {
      model::QuantizeQ4_0(row.data(), k, dst);
    }
  }
  kf::FastWeights& fw = p->fw;
  if (fmt == "Q8_0" || fmt == "Q4_0") {
    const auto t = fmt == "Q8_0" ? kc::GgmlBlockType::kQ8_0 : kc::GgmlBlockType::kQ4_0;
    p->repacked = hwy::AllocateAligned<uint8_t>(n * kf::RepackedRowStride(t, k));
    fw = kf::RepackGgmlRows(t, p->raw.data(), n, k, p->repacked.get());
    p->raw.clear();
    p->raw.shrink_to_fit();
    return p;
  }
  fw.data = p->raw.data();
  fw.n = n;
  fw.k = k;
  fw.row_stride = row_bytes;
  fw.format = fmt == "F32" ? kf::FastFormat::kF32 : fmt == "BF16" ? kf::FastFormat::kBF16
              : fmt == "F16" ? kf::FastFormat::kF16 : kf::FastFormat::kGgml;
  fw.ggml = fmt == "Q4_K" ? kc::GgmlBlockType::kQ4_K : kc::GgmlBlockType::kQ6_K;
  return p;
}

// One cached weight matrix at a time (the big shapes are hundreds of MiB).
const Prepared& Weights(const std::string& fmt, int64_t n, int64_t k) {
  static std::string key;
  static std::unique_ptr<Prepared> cached;
  const std::string want = fmt + "/" + std::to_string(n) + "/" + std::to_string(k);
  if (key != want) {
    cached.reset();
    cached = Prepare(fmt, n, k);
    key = want;
  }
  return *cached;
}

void BM_Matmul(benchmark::State& state, std::string fmt, int64_t n, int64_t k, int64_t m) {
  const Prepared& w = Weights(fmt, n, k);
  // Decode streams weights from DRAM, never from the 32 MiB L3: iterate over enough byte-wise
  // copies of the matrix (same values, different addresses) to cover 256 MiB.
  static std::vector<std::vector<uint8_t>> copies;
  static std::string copies_key;
  const int64_t span = w.fw.n * w.fw.row_stride;
  const int64_t ncopies = std::max<int64_t>(1, (int64_t{256} << 20) / std::max<int64_t>(span, 1));
  const std::string key = fmt + std::to_string(n) + "/" + std::to_string(k);
  if (copies_key != key) {
    copies.assign(ncopies - 1, std::vector<uint8_t>(w.fw.data, w.fw.data + span));
    copies_key = key;
  }
  std::vector<kf::FastWeights> views(1, w.fw);
  for (const auto& c : copies) {
    views.push_back(w.fw);
    views.back().data = c.data();
  }
  std::vector<float> x(m * k), y(m * n);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  size_t next = 0;
  for (auto _ : state) {
    const kf::FastWeights& fw = views[next];
    next = (next + 1) % views.size();
    Pool().ParallelFor(n, 16, [&](int64_t b, int64_t e) {
      kf::FastMatmul(fw, x.data(), m, nullptr, y.data(), b, e);
    });
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] = benchmark::Counter(w.stored_bytes * it / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * it / 1e9, benchmark::Counter::kIsRate);
}

// ---- QuantizedLinear's fast kernels (kernels/cpu/fast/fast_quant_matmul.h). Random codes with
// sane scales; only the streaming and decode cost matters. FP8 per-row scales, INT4 group 128
// with f32 scales and zero points, NVFP4 W4A16, MXFP4. weight_GB/s counts codes + scales.
struct QuantCopy {
  std::vector<uint8_t> q, block_scales;
};

void BM_QuantMatmul(benchmark::State& state, std::string fmt, int64_t n, int64_t k, int64_t m) {
  kf::FastQuantWeights w;
  w.n = n;
  w.k = k;
  int64_t q_bytes = n * k / 2, bs_bytes = 0;
  std::vector<float> scales, zeros;
  if (fmt == "FP8") {
    w.decode = kf::QuantDecode::kFp8;
    q_bytes = n * k;
    scales.assign(n, 0.01f);
    w.scale_rows = 1;
    w.scale_row_stride = 1;
    w.scale_k = k;
  } else if (fmt == "INT4_G128") {
    w.decode = kf::QuantDecode::kInt4;
    scales.assign(n * k / 128, 0.01f);
    zeros.assign(n * k / 128, 8.0f);
    w.scale_row_stride = k / 128;
    w.scale_k = 128;
  } else {
    w.decode = fmt == "NVFP4" ? kf::QuantDecode::kNvfp4 : kf::QuantDecode::kMxfp4;
    bs_bytes = n * k / (fmt == "NVFP4" ? 16 : 32);
    w.alpha = 0.5f;
  }
  w.scales = scales.data();
  w.zeros = zeros.data();
  const int64_t stored = q_bytes + bs_bytes + static_cast<int64_t>((scales.size() + zeros.size()) * 4);
  // Copies covering 256 MiB so that decode streams from DRAM (as BM_Matmul).
  std::vector<QuantCopy> copies(std::max<int64_t>(1, (int64_t{256} << 20) / stored));
  std::mt19937 rng(42);
  for (auto& c : copies) {
    c.q.resize(q_bytes);
    for (auto& b : c.q) b = static_cast<uint8_t>(rng() & 0x77);  // no FP8 NaN codes
    c.block_scales.assign(bs_bytes, fmt == "NVFP4" ? 0x38 : 0x7F);  // 1.0
  }
  w.q = copies[0].q.data();
  w.block_scales = copies[0].block_scales.data();
  if (!kf::FastQuantSupported(w)) {
    state.SkipWithError("not supported on this target");
    return;
  }
  std::vector<float> x(m * k), y(m * n);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  size_t next = 0;
  for (auto _ : state) {
    w.q = copies[next].q.data();
    w.block_scales = copies[next].block_scales.data();
    next = (next + 1) % copies.size();
    Pool().ParallelFor(n, 16, [&](int64_t b, int64_t e) {
      kf::FastQuantMatmul(w, x.data(), m, nullptr, y.data(), b, e);
    });
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] = benchmark::Counter(stored * it / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * it / 1e9, benchmark::Counter::kIsRate);
}

struct Shape {
  const char* label;
  int64_t n, k;  // y = x · Wᵀ with W [n, k]
};

void RegisterAll() {
  const Shape big[] = {{"4096x4096", 4096, 4096}, {"4096x14336", 14336, 4096},
                       {"14336x4096", 4096, 14336}};
  const Shape tiny[] = {{"1.1b_qo", 2048, 2048}, {"1.1b_kv", 256, 2048}, {"1.1b_gate_up", 5632, 2048},
                        {"1.1b_down", 2048, 5632}, {"1.1b_lm_head", 32000, 2048}};
  for (const char* f : {"FP8", "INT4_G128", "NVFP4", "MXFP4"}) {
    for (const Shape& s : {tiny[2], tiny[3]}) {
      for (int64_t m : {1, 16}) {
        benchmark::RegisterBenchmark(
            (std::string("BM_QuantMatmul/") + f + "/" + s.label + "/M:" + std::to_string(m)).c_str(),
            BM_QuantMatmul, std::string(f), s.n, s.k, m)
            ->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
    }
  }
  const char* formats[] = {"F32", "BF16", "F16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"};
  for (const char* f : formats) {
    for (const Shape& s : tiny) {
      for (int64_t m : {1, 16}) {
        benchmark::RegisterBenchmark(
            (std::string("BM_Matmul/") + f + "/" + s.label + "/M:" + std::to_string(m)).c_str(),
            BM_Matmul, std::string(f), s.n, s.k, m)
            ->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
    }
    for (const Shape& s : big) {
      for (int64_t m : {1, 16, 128}) {
        benchmark::RegisterBenchmark(
            (std::string("BM_Matmul/") + f + "/" + s.label + "/M:" + std::to_string(m)).c_str(),
            BM_Matmul, std::string(f), s.n, s.k, m)
            ->UseRealTime()->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tessera::bench::RegisterAll();
  benchmark::AddCustomContext("simd_target", tessera::kernels::cpu::fast::FastTargetName());
  benchmark::AddCustomContext("threads", std::to_string(tessera::bench::Pool().size()));
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
