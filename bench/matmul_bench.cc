// Google Benchmark of the fast CPU matmul kernels (kernels/cpu/fast) at LLM shapes, with a
// STREAM-style triad in the same binary so every report carries this machine's memory bandwidth
// next to the kernels' weight-streaming rate. Counters: weight_GB/s (bytes of the stored weight
// format read per second: the decode-relevant number at M=1), GFLOP/s (2·M·N·K per second) and,
// for the triad, GB/s with STREAM's convention (3 arrays × 4 bytes per element, no write-allocate).
// Threads: TESSERA_THREADS (default: all hardware threads), split over output columns exactly as
// DenseLinear does. BM_Peak* measure the compute roofline (f32 FMA, VNNI, BF16 dot on zmm
// registers, all pool threads) so GEMM rates can be quoted as a fraction of peak; with
// TESSERA_HAVE_ONEDNN, onednn_bench.cc adds oneDNN's matmul on the same shapes. The quantized
// formats' kernels (quant_matmul_bench.cc), the int8-activation tiles (int4_x16_bench.cc), INT8
// W8A8 (int8_dot_bench.cc) and attention / row kernels (attention_bench.cc) register from their
// own files.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "engine/model/ggml_quantize.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/float_panel_matmul.h"
#include "kernels/cpu/fast/ggml_repack.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/isa_limit.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/matmul_reference.h"
#include "kernels/cpu/quant/activation_quant.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/numeric/half.h"

namespace tessera::bench {

#ifdef TESSERA_HAVE_ONEDNN
// onednn_bench.cc.
void RegisterOneDnnBenchmarks(int threads);
void AddOneDnnContext();
#endif

// Bytes of distinct weight copies a benchmark cycles through: 256 MiB (DRAM, never the L3) unless
// TESSERA_BENCH_COVER_MIB says otherwise; a small value (e.g. 4) keeps one copy cache-resident,
// which separates a kernel's compute limit from its memory limit.
int64_t CoverBytes() {
  static const int64_t bytes = [] {
    const char* env = std::getenv("TESSERA_BENCH_COVER_MIB");
    const int64_t mib = env != nullptr ? std::max(std::atoll(env), 1LL) : 256;
    return mib << 20;
  }();
  return bytes;
}

kernels::cpu::ThreadPool& Pool() {
  static kernels::cpu::ThreadPool* pool = [] {
    const char* env = std::getenv("TESSERA_THREADS");
    return new kernels::cpu::ThreadPool(env != nullptr ? std::atoi(env) : 0);
  }();
  return *pool;
}

namespace {

namespace kc = kernels::cpu;
namespace kf = kernels::cpu::fast;

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

// ---- Compute roofline: 24 independent zmm accumulators per thread (more than latency × the
// two vector pipes), one instruction stream per pool thread. Ops count 2 per multiply-add: an
// FMA lane is 2 FLOP, a vpdpbusd lane 4 u8·s8 MACs = 8 ops, a vdpbf16ps lane 2 bf16 MACs =
// 4 FLOP. The loops are inline assembly (in functions compiled for the ISA, called only after
// __builtin_cpu_supports): with intrinsics GCC 12 copies accumulator arrays through the stack
// and the VNNI "peak" came out at half of what oneDNN's GEMM reaches. ----
constexpr int kPeakAcc = 24;
constexpr int64_t kPeakIters = int64_t{1} << 16;

#define TESSERA_PEAK_OP(op, r) op " %%zmm30, %%zmm31, %%zmm" #r "\n\t"
#define TESSERA_PEAK_8(op, a, b, c, d, e, f, g, h)                                         \
  TESSERA_PEAK_OP(op, a) TESSERA_PEAK_OP(op, b) TESSERA_PEAK_OP(op, c) TESSERA_PEAK_OP(op, d) \
  TESSERA_PEAK_OP(op, e) TESSERA_PEAK_OP(op, f) TESSERA_PEAK_OP(op, g) TESSERA_PEAK_OP(op, h)
#define TESSERA_PEAK_24(op)                                                            \
  TESSERA_PEAK_8(op, 0, 1, 2, 3, 4, 5, 6, 7) TESSERA_PEAK_8(op, 8, 9, 10, 11, 12, 13, 14, 15) \
  TESSERA_PEAK_8(op, 16, 17, 18, 19, 20, 21, 22, 23)
// zmm30/zmm31 = broadcast a/b, zmm0..23 = 0, then `iters` rounds of 24 independent `op`s.
#define TESSERA_PEAK_LOOP(op)                                                          \
  asm volatile("vpbroadcastd %k[a], %%zmm30\n\t"                                       \
               "vpbroadcastd %k[b], %%zmm31\n\t"                                       \
               TESSERA_PEAK_24("vpxord")                                               \
               "1:\n\t"                                                                \
               TESSERA_PEAK_24(op)                                                     \
               "dec %[n]\n\t"                                                          \
               "jnz 1b\n\t"                                                            \
               "vzeroupper\n\t"                                                        \
               : [n] "+r"(iters)                                                       \
               : [a] "r"(a), [b] "r"(b)                                                \
               : "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", \
                 "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", \
                 "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm30", \
                 "xmm31", "cc")

// a, b: the 32-bit lane patterns of the two operands (small values: no overflow, no denormals).
__attribute__((target("avx512f"))) void PeakFmaRun(int64_t iters) {
  const uint32_t a = 0x3A83126Fu, b = 0x3F800000u;  // 1e-3f, 1.0f
  TESSERA_PEAK_LOOP("vfmadd231ps");
}

__attribute__((target("avx512f,avx512vnni"))) void PeakVnniRun(int64_t iters) {
  const uint32_t a = 0x01020304u, b = 0x01FF01FFu;
  TESSERA_PEAK_LOOP("vpdpbusd");
}

// vpdpwssd: the int16 activation route of the 4-bit pair panels (quant_panel_matmul.h).
__attribute__((target("avx512f,avx512vnni"))) void PeakInt16Run(int64_t iters) {
  const uint32_t a = 0x00030002u, b = 0x00010001u;
  TESSERA_PEAK_LOOP("vpdpwssd");
}

__attribute__((target("avx512f,avx512bf16"))) void PeakBf16Run(int64_t iters) {
  const uint32_t a = 0x3A833A83u, b = 0x3F803F80u;  // bf16 pairs (~1e-3, ~1e-3), (1, 1)
  TESSERA_PEAK_LOOP("vdpbf16ps");
}

#undef TESSERA_PEAK_LOOP
#undef TESSERA_PEAK_24
#undef TESSERA_PEAK_8
#undef TESSERA_PEAK_OP

// ops_per_lane: operations one instruction performs per 32-bit lane.
void BM_Peak(benchmark::State& state, void (*run)(int64_t), bool supported, double ops_per_lane,
             const char* counter) {
  if (!supported) {
    state.SkipWithError("instruction not supported on this CPU");
    return;
  }
  const int threads = Pool().size();
  for (auto _ : state) {
    Pool().ParallelFor(threads, 1, [&](int64_t b, int64_t e) {
      for (int64_t t = b; t < e; ++t) run(kPeakIters);
    });
  }
  const double ops = ops_per_lane * 16 * kPeakAcc * kPeakIters * threads;
  state.counters[counter] =
      benchmark::Counter(ops * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
}

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

// Makes a copy of a prepared matrix differ from the original in every cache line while keeping
// every value valid: low mantissa bits of F32/BF16/F16 values, the codes of repacked Q4_0/Q8_0
// (block scales kept; Q8_0 codes stay in [-127, 127]) and all bytes of the Q4_K/Q6_K blocks but
// their f16 scales.
void Perturb(const std::string& fmt, const kf::FastWeights& fw, uint8_t* data, uint64_t seed) {
  uint64_t s = seed;
  const int64_t span = fw.n * fw.row_stride;
  if (fmt == "F32") {
    XorStrided(data, span / 4, 4, 0xFF, s);
  } else if (fmt == "BF16" || fmt == "F16") {
    XorStrided(data, span / 2, 2, fmt == "BF16" ? 0x07 : 0x3F, s);
  } else if (fmt == "Q4_0" || fmt == "Q8_0") {
    for (int64_t r = 0; r < fw.n; ++r) {
      uint8_t* q = data + r * fw.row_stride + fw.quant_offset;
      if (fmt == "Q4_0") {
        XorStrided(q, fw.k / 2, 1, 0xFF, s);
      } else {
        XorStrided(q, fw.k, 1, 0x0F, s);
        for (int64_t i = 0; i < fw.k; ++i) q[i] = q[i] == 0x80 ? 0x81 : q[i];
      }
    }
  } else {  // Q4_K: d, dmin at bytes 0-3 of 144; Q6_K: d at bytes 208-209 of 210
    const int64_t bb = fmt == "Q4_K" ? 144 : 210;
    for (int64_t b = 0; b < span / bb; ++b) {
      if (fmt == "Q4_K") XorStrided(data + b * bb + 4, 140, 1, 0xFF, s);
      else XorStrided(data + b * bb, 208, 1, 0xFF, s);
    }
  }
}

// Decode streams weights from DRAM, never from the 32 MiB L3: benchmarks iterate over enough
// copies of the matrix to cover 256 MiB. The copies hold different bytes: this VM's hypervisor
// merges identical pages, and byte-identical copies were then served from one cached page.
// One set cached at a time, next to Weights().
const std::vector<kf::FastWeights>& WeightViews(const std::string& fmt, int64_t n, int64_t k) {
  static std::vector<hwy::AlignedFreeUniquePtr<uint8_t[]>> copies;
  static std::vector<kf::FastWeights> views;
  static std::string copies_key;
  const Prepared& w = Weights(fmt, n, k);
  const std::string key = fmt + "/" + std::to_string(n) + "/" + std::to_string(k);
  if (copies_key != key) {
    copies.clear();
    views.assign(1, w.fw);
    const int64_t span = w.fw.n * w.fw.row_stride;
    const int64_t ncopies = std::max<int64_t>(1, CoverBytes() / std::max<int64_t>(span, 1));
    for (int64_t c = 1; c < ncopies; ++c) {
      copies.push_back(hwy::AllocateAligned<uint8_t>(span));
      std::memcpy(copies.back().get(), w.fw.data, span);
      Perturb(fmt, w.fw, copies.back().get(), 1000 + static_cast<uint64_t>(c));
      views.push_back(w.fw);
      views.back().data = copies.back().get();
    }
    copies_key = key;
  }
  return views;
}

// Times kernel(weights, x, y, n_begin, n_end) over the copies in `views`, columns split over the
// pool as DenseLinear splits them (ColumnGrain); random activations [m, k].
template <class Kernel>
void TimeDense(benchmark::State& state, int64_t stored_bytes,
               const std::vector<kf::FastWeights>& views, int64_t n, int64_t k, int64_t m,
               Kernel kernel) {
  std::vector<float> x(m * k), y(m * n);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  size_t next = 0;
  for (auto _ : state) {
    const kf::FastWeights& fw = views[next];
    next = (next + 1) % views.size();
    Pool().ParallelFor(n, ColumnGrain(m),
                       [&](int64_t b, int64_t e) { kernel(fw, x.data(), y.data(), b, e); });
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] =
      benchmark::Counter(stored_bytes * it / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k * it / 1e9, benchmark::Counter::kIsRate);
}

void BM_Matmul(benchmark::State& state, std::string fmt, int64_t n, int64_t k, int64_t m) {
  TimeDense(state, Weights(fmt, n, k).stored_bytes, WeightViews(fmt, n, k), n, k, m,
            [m](const kf::FastWeights& fw, const float* x, float* y, int64_t b, int64_t e) {
              kf::FastMatmul(fw, x, m, nullptr, y, b, e);
            });
}

// The distinct copies of WeightViews, each repacked once into the panel layout DenseLinear reads
// (bf16: RepackBf16Pairs, f16 / f32: RepackF16Panels / RepackF32Panels), one set cached
// at a time.
const std::vector<kf::FastWeights>& PanelViews(const std::string& fmt, int64_t n, int64_t k) {
  static std::vector<hwy::AlignedFreeUniquePtr<uint8_t[]>> packed;
  static std::vector<kf::FastWeights> packed_views;
  static std::string packed_key;
  const std::string key = fmt + "/" + std::to_string(n) + "/" + std::to_string(k);
  if (packed_key != key) {
    packed.clear();
    packed_views.clear();
    for (const kf::FastWeights& v : WeightViews(fmt, n, k)) {
      if (fmt == "BF16") {
        packed.push_back(hwy::AllocateAligned<uint8_t>(kf::Bf16PairsBytes(n, k)));
        packed_views.push_back(kf::RepackBf16Pairs(v, packed.back().get()));
      } else if (fmt == "F32") {
        packed.push_back(hwy::AllocateAligned<uint8_t>(kf::F32PanelsBytes(n, k)));
        packed_views.push_back(kf::RepackF32Panels(v, packed.back().get()));
      } else {
        packed.push_back(hwy::AllocateAligned<uint8_t>(kf::F16PanelsBytes(n, k)));
        packed_views.push_back(kf::RepackF16Panels(v, packed.back().get()));
      }
    }
    packed_key = key;
  }
  return packed_views;
}

// ---- The f16 / f32 panel kernels DenseLinear runs for f16 and f32 weights
// (float_panel_matmul.h; AVX-512, or AVX2 without it), on f32 activations as they come.
// BF16_FMA: bf16 pair panels in f32 FMA (Bf16PairsFmaMatmul, avx2_panels.h), DenseLinear's
// kernel for bf16 weights without AVX-512, run here on any CPU with AVX2. ----
void BM_FloatPanelMatmul(benchmark::State& state, std::string fmt, int64_t n, int64_t k,
                         int64_t m) {
  const bool bf16 = fmt == "BF16_FMA";
  if (bf16) fmt = "BF16";
  if (bf16 ? !kf::internal::Avx2PanelsAvailable() : !kf::F16PanelAvailable()) {
    state.SkipWithError(bf16 ? "no AVX2 + FMA + F16C on this CPU"
                             : "no AVX-512 or AVX2 on this CPU");
    return;
  }
  const auto kernel = bf16           ? kf::Bf16PairsFmaMatmul
                      : fmt == "F32" ? kf::F32PanelMatmul
                                     : kf::F16PanelMatmul;
  TimeDense(state, Weights(fmt, n, k).stored_bytes, PanelViews(fmt, n, k), n, k, m,
            [m, kernel](const kf::FastWeights& fw, const float* x, float* y, int64_t b, int64_t e) {
              kernel(fw, x, m, nullptr, y, b, e);
            });
}

// ---- The AVX-512 BF16 kernel DenseLinear runs for bf16 weights (bf16_dot_matmul.h): the
// activations are rounded to bf16 inside the timing (rows split over the pool, as DenseLinear
// does), then the columns are split. ----
// fmt "BF16": bf16 activations (--cpu_bf16_activations); "BF16_SPLIT": the default hi + lo split.
void BM_Bf16DotMatmul(benchmark::State& state, std::string fmt, int64_t n, int64_t k, int64_t m) {
  const bool split = fmt == "BF16_SPLIT";
  fmt = "BF16";
  if (!kf::Bf16DotAvailable()) {
    state.SkipWithError("no AVX-512 BF16 on this CPU");
    return;
  }
  const Prepared& w = Weights(fmt, n, k);
  const std::vector<kf::FastWeights>& packed_views = PanelViews(fmt, n, k);
  std::vector<float> x(m * k), y(m * n);
  std::vector<uint16_t> xb(m * kf::Bf16DotActStride(k)), lo(split ? xb.size() : 0);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  size_t next = 0;
  for (auto _ : state) {
    const kf::FastWeights& fw = packed_views[next];
    next = (next + 1) % packed_views.size();
    Pool().ParallelFor(m, 1, [&](int64_t r0, int64_t r1) {
      kf::RoundActsToBf16(x.data(), k, r0, r1, xb.data(), split ? lo.data() : nullptr, nullptr);
    });
    Pool().ParallelFor(n, ColumnGrain(m), [&](int64_t b, int64_t e) {
      kf::Bf16DotMatmul(fw, xb.data(), split ? lo.data() : nullptr, m, nullptr, y.data(), b, e);
    });
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] = benchmark::Counter(w.stored_bytes * it / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * it / 1e9, benchmark::Counter::kIsRate);
}

// ---- The int8-activation VNNI kernel for repacked Q4_0 / Q8_0 (q8_act_matmul.h), as
// DenseLinear runs it with --cpu_int8_activations: the activations are quantized once per call
// (serially, before the column split; inside the timing, it is part of the cost), then the
// columns are split over the pool. ----
void BM_Q8ActMatmul(benchmark::State& state, std::string fmt, int64_t n, int64_t k, int64_t m) {
  const Prepared& w = Weights(fmt, n, k);
  const std::vector<kf::FastWeights>& views = WeightViews(fmt, n, k);
  auto scratch = hwy::AllocateAligned<uint8_t>(kf::Q8ActScratchBytes(m, k));
  std::vector<float> x(m * k), y(m * n);
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  size_t next = 0;
  for (auto _ : state) {
    const kf::FastWeights& fw = views[next];
    next = (next + 1) % views.size();
    const kf::Q8Acts acts = kf::QuantizeActsQ8Block32(fw.format, x.data(), m, k, scratch.get());
    Pool().ParallelFor(n, ColumnGrain(m), [&](int64_t b, int64_t e) {
      kf::Q8ActMatmul(fw, acts, nullptr, y.data(), b, e);
    });
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] = benchmark::Counter(w.stored_bytes * it / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * m * n * k * it / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(kf::Q8ActKernelName());
}

void RegisterAll() {
  benchmark::RegisterBenchmark("BM_PeakFma", BM_Peak, PeakFmaRun,
                               __builtin_cpu_supports("avx512f") != 0, 2.0, "GFLOP/s")
      ->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_PeakVnni", BM_Peak, PeakVnniRun,
                               __builtin_cpu_supports("avx512vnni") != 0, 8.0, "GOP/s")
      ->UseRealTime()->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark("BM_PeakInt16Dot", BM_Peak, PeakInt16Run,
                               __builtin_cpu_supports("avx512vnni") != 0, 4.0, "GOP/s")
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
  benchmark::RegisterBenchmark(
      "BM_PeakBf16Dot", BM_Peak, PeakBf16Run,
      __builtin_cpu_supports("avx512bf16") != 0 && kf::Avx512ExtensionAllowed("avx512bf16"), 4.0,
      "GFLOP/s")
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);

  const Shape big[] = {{"4096x4096", 4096, 4096}, {"4096x14336", 14336, 4096},
                       {"14336x4096", 4096, 14336}};
  const Shape tiny[] = {{"1.1b_qo", 2048, 2048}, {"1.1b_kv", 256, 2048}, {"1.1b_gate_up", 5632, 2048},
                        {"1.1b_down", 2048, 5632}, {"1.1b_lm_head", 32000, 2048}};
  // The prefill shapes compared with oneDNN (onednn_bench.cc has the same list) get M = 128.
  auto prefill = [&](const Shape& s) {
    return std::string(s.label) != "1.1b_kv" && std::string(s.label) != "1.1b_lm_head";
  };
  const Shape gemm[] = {big[0], big[1], big[2], tiny[0], tiny[2], tiny[3]};
  RegisterQuantMatmulBenchmarks(gemm);
  const char* formats[] = {"F32", "BF16", "F16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"};
  for (const char* f : formats) {
    for (const Shape& s : tiny) {
      for (int64_t m : {1, 16, 128}) {
        if (m != 128 || prefill(s)) Register("BM_Matmul", BM_Matmul, f, s, m);
      }
    }
    for (const Shape& s : big) {
      for (int64_t m : {1, 16, 128}) Register("BM_Matmul", BM_Matmul, f, s, m);
    }
  }
  for (const char* f : {"F16", "F32", "BF16_FMA"}) {
    for (const Shape& s : tiny) {
      for (int64_t m : {1, 16, 128}) {
        if (m != 128 || prefill(s)) Register("BM_FloatPanelMatmul", BM_FloatPanelMatmul, f, s, m);
      }
    }
    for (const Shape& s : big) {
      for (int64_t m : {1, 16, 128}) Register("BM_FloatPanelMatmul", BM_FloatPanelMatmul, f, s, m);
    }
  }
  for (const char* f : {"BF16", "BF16_SPLIT"}) {
    for (const Shape& s : tiny) {
      for (int64_t m : {1, 16, 128}) {
        if (m != 128 || prefill(s)) Register("BM_Bf16DotMatmul", BM_Bf16DotMatmul, f, s, m);
      }
    }
    for (const Shape& s : big) {
      for (int64_t m : {1, 16, 128}) Register("BM_Bf16DotMatmul", BM_Bf16DotMatmul, f, s, m);
    }
  }
  RegisterInt8DotBenchmarks(gemm);
  for (const char* f : {"Q4_0", "Q8_0"}) {
    for (const Shape& s : gemm) {
      for (int64_t m : {1, 16, 128}) Register("BM_Q8ActMatmul", BM_Q8ActMatmul, f, s, m);
    }
  }
  RegisterInt4x16Benchmarks(gemm);
  RegisterGgmlPanelBenchmarks(gemm);
  RegisterAttentionBenchmarks(&Pool());
#ifdef TESSERA_HAVE_ONEDNN
  RegisterOneDnnBenchmarks(Pool().size());
#endif
}

}  // namespace
}  // namespace tessera::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tessera::bench::RegisterAll();
  benchmark::AddCustomContext("simd_target", tessera::kernels::cpu::fast::FastTargetName());
  benchmark::AddCustomContext("threads", std::to_string(tessera::bench::Pool().size()));
  benchmark::AddCustomContext("q8_act_kernel", tessera::kernels::cpu::fast::Q8ActKernelName());
  benchmark::AddCustomContext("int8_tile_kernel", tessera::kernels::cpu::fast::Int4x16KernelName());
  // Whether the bf16 and INT8 W8A8 panel rows below ran as AMX tiles (AMX granted and the
  // kernels' self-checks passed; TESSERA_DISABLE_AMX=1 turns them off).
  benchmark::AddCustomContext(
      "amx_tiles", std::string("bf16 ") +
                       (tessera::kernels::cpu::fast::AmxBf16Usable() ? "on" : "off") + ", int8 " +
                       (tessera::kernels::cpu::fast::AmxInt8Usable() ? "on" : "off"));
#ifdef TESSERA_HAVE_ONEDNN
  tessera::bench::AddOneDnnContext();
#endif
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
