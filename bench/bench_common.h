// What the files of tessera_matmul_bench share: the thread pool every benchmark splits its work
// over (TESSERA_THREADS), the bytes of distinct weight copies a benchmark cycles through
// (TESSERA_BENCH_COVER_MIB), the LLM shapes and their registration, and a fast random stream for
// filling those copies. Defined in matmul_bench.cc unless inline here.
#ifndef TESSERA_BENCH_BENCH_COMMON_H_
#define TESSERA_BENCH_BENCH_COMMON_H_

#include <benchmark/benchmark.h>

#include <cstdint>
#include <span>
#include <string>

#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::bench {

// The pool of TESSERA_THREADS threads (default: all hardware threads), created on first use.
kernels::cpu::ThreadPool& Pool();

// The column grain of the engine's split (engine/backend/cpu/column_split.cc).
inline int64_t ColumnGrain(int64_t rows) { return kernels::cpu::fast::ColumnSplitUnit(rows); }

// 256 MiB (DRAM, never the L3) unless TESSERA_BENCH_COVER_MIB says otherwise; a small value keeps
// one copy cache-resident, which separates a kernel's compute limit from its memory limit.
int64_t CoverBytes();

struct Shape {
  const char* label;
  int64_t n, k;  // y = x · Wᵀ with W [n, k]
};

using ShapeBenchmark = void (*)(benchmark::State&, std::string, int64_t, int64_t, int64_t);

// Registers `<name>/<fmt>/<shape>/M:<m>`.
inline void Register(const std::string& name, ShapeBenchmark fn, const char* fmt, const Shape& s,
                     int64_t m) {
  benchmark::RegisterBenchmark(
      (name + "/" + fmt + "/" + s.label + "/M:" + std::to_string(m)).c_str(), fn, std::string(fmt),
      s.n, s.k, m)
      ->UseRealTime()
      ->Unit(benchmark::kMicrosecond);
}

// splitmix64: a fast random stream for filling hundreds of MiB.
inline uint64_t Mix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// p[i * step] ^= (random byte & mask) for i < count.
inline void XorStrided(uint8_t* p, int64_t count, int64_t step, uint8_t mask, uint64_t& s) {
  uint64_t r = 0;
  for (int64_t i = 0; i < count; ++i) {
    if ((i & 7) == 0) r = Mix(s);
    p[i * step] ^= static_cast<uint8_t>(r >> (8 * (i & 7))) & mask;
  }
}

// The registration of each file's benchmarks at the prefill / decode shapes `gemm`.
void RegisterQuantMatmulBenchmarks(std::span<const Shape> gemm);   // quant_matmul_bench.cc
void RegisterInt4x16Benchmarks(std::span<const Shape> gemm);       // int4_x16_bench.cc
void RegisterInt8DotBenchmarks(std::span<const Shape> gemm);       // int8_dot_bench.cc
void RegisterGgmlPanelBenchmarks(std::span<const Shape> gemm);     // ggml_panels_bench.cc
void RegisterAttentionBenchmarks(kernels::cpu::ThreadPool* pool);  // attention_bench.cc

}  // namespace tessera::bench

#endif  // TESSERA_BENCH_BENCH_COMMON_H_
