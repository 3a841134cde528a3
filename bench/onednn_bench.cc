// oneDNN's matmul (Debian libdnnl-dev) on the shapes of matmul_bench.cc, in the same binary, so
// that prefill GEMM rates of the fast kernels sit next to a vendor library's in one run. Compiled
// into tessera_matmul_bench only when CMake finds oneDNN (TESSERA_HAVE_ONEDNN).
//
// BM_OneDnnMatmul/<bf16|s8>/<shape>/M:<rows> computes y = x · Wᵀ with W [n, k] as the engine
// stores it (oneDNN's weights [K, N] in `ba` order):
//   bf16: src bf16 [M, K] × weights bf16 → dst f32.
//   s8:   src u8 [M, K] × weights s8 → dst f32 with per-column output scales (the u8·s8 form is
//         what avx512_core_vnni's vpdpbusd computes natively; s8 sources would need a
//         compensation term). The activation quantization is not part of the timing.
// As a serving engine would, the primitive is created once per benchmark with weights in
// format_tag::any (oneDNN's blocked layout) and the weights are reordered once, outside the timed
// loop. Like BM_Matmul, the timed loop walks over distinct copies of the weights covering 256 MiB
// (distinct values: this VM's host merges identical pages). Threads: oneDNN in Debian uses
// OpenMP, set to the pool's thread count (TESSERA_THREADS, default all hardware threads).
// Counters: GFLOP/s = 2·M·N·K per second (integer ops for s8) and weight_GB/s (stored weight
// bytes per second); the label names oneDNN's implementation.
#include <dlfcn.h>

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace tessera::bench {

// Called from matmul_bench.cc's main (declared there under TESSERA_HAVE_ONEDNN).
void RegisterOneDnnBenchmarks(int threads);
void AddOneDnnContext();

namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// The OpenMP runtime oneDNN links (libgomp) is found at run time, so this file needs no OpenMP
// flags; absent (a TBB or sequential build) the call is skipped and the context says so.
int SetOmpThreads(int threads) {
  using SetFn = void (*)(int);
  using GetFn = int (*)();
  auto set = reinterpret_cast<SetFn>(dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
  auto get = reinterpret_cast<GetFn>(dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  if (set == nullptr || get == nullptr) return -1;
  set(threads);
  return get();
}

int g_omp_threads = -1;

// splitmix64: fast distinct fill of hundreds of MiB.
uint64_t Mix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Random bf16 values of magnitude 2^-5..2^-3 (random sign and mantissa), or s8 codes in
// [-127, 127].
void FillRandom(dt type, uint8_t* p, int64_t bytes, uint64_t seed) {
  uint64_t s = seed;
  if (type == dt::bf16) {
    for (int64_t i = 0; i + 1 < bytes; i += 2) {
      const uint64_t r = Mix(s);
      const uint16_t h = static_cast<uint16_t>((r & 0x807F) | 0x3D00 | ((r >> 16) & 0x0080));
      std::memcpy(p + i, &h, 2);
    }
  } else {
    for (int64_t i = 0; i < bytes; i += 8) {
      const uint64_t r = Mix(s);
      for (int64_t j = 0; j < 8 && i + j < bytes; ++j) {
        const int8_t v = static_cast<int8_t>(r >> (8 * j));
        p[i + j] = static_cast<uint8_t>(v == -128 ? -127 : v);
      }
    }
  }
}

void BM_OneDnnMatmul(benchmark::State& state, dt type, int64_t n, int64_t k, int64_t m) {
  const dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const dt src_type = type == dt::bf16 ? dt::bf16 : dt::u8;
  const dnnl::memory::desc src_md({m, k}, src_type, tag::ab);
  const dnnl::memory::desc wei_any({k, n}, type, tag::any);
  const dnnl::memory::desc dst_md({m, n}, dt::f32, tag::ab);
  dnnl::primitive_attr attr;
  std::vector<float> col_scales;
  if (type == dt::s8) {
    col_scales.resize(n);
    uint64_t s = 3;
    for (auto& v : col_scales) v = 1e-4f * static_cast<float>(1 + Mix(s) % 64);
    attr.set_output_scales(1 << 1, col_scales);
  }
  dnnl::matmul::primitive_desc pd;
  try {
    pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src_md, wei_any, dst_md), attr, eng);
  } catch (const dnnl::error& e) {
    state.SkipWithError((std::string("oneDNN: ") + e.what()).c_str());
    return;
  }
  const dnnl::matmul mm(pd);

  // Weights: W [n, k] row-major is oneDNN's [K, N] in `ba`; reorder each copy once.
  const int64_t elt = type == dt::bf16 ? 2 : 1;
  const int64_t user_bytes = n * k * elt;
  const int64_t ncopies = std::max<int64_t>(1, (int64_t{256} << 20) / user_bytes);
  std::vector<uint8_t> user(user_bytes);
  const dnnl::memory::desc user_md({k, n}, type, tag::ba);
  std::vector<dnnl::memory> weights;
  for (int64_t c = 0; c < ncopies; ++c) {
    FillRandom(type, user.data(), user_bytes, 42 + static_cast<uint64_t>(c));
    dnnl::memory user_mem(user_md, eng, user.data());
    weights.emplace_back(pd.weights_desc(), eng);
    dnnl::reorder(user_mem, weights.back()).execute(strm, user_mem, weights.back());
  }
  strm.wait();

  dnnl::memory src(pd.src_desc(), eng), dst(pd.dst_desc(), eng);
  FillRandom(type == dt::bf16 ? dt::bf16 : dt::s8, static_cast<uint8_t*>(src.get_data_handle()),
             static_cast<int64_t>(pd.src_desc().get_size()), 7);
  std::vector<std::unordered_map<int, dnnl::memory>> args;
  for (const auto& w : weights) {
    args.push_back({{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dst}});
  }
  size_t next = 0;
  for (auto _ : state) {
    mm.execute(strm, args[next]);
    strm.wait();
    next = (next + 1) % args.size();
    benchmark::DoNotOptimize(dst.get_data_handle());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] =
      benchmark::Counter(static_cast<double>(pd.weights_desc().get_size()) * it / 1e9,
                         benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k * it / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(pd.impl_info_str());
}

const char* IsaName(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx512_mic: return "avx512_mic";
    case dnnl::cpu_isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    default: return "other";
  }
}

}  // namespace

void RegisterOneDnnBenchmarks(int threads) {
  g_omp_threads = SetOmpThreads(threads);
  struct Shape {
    const char* label;
    int64_t n, k;  // y = x · Wᵀ with W [n, k], as matmul_bench.cc
  };
  const Shape shapes[] = {{"4096x4096", 4096, 4096},       {"4096x14336", 14336, 4096},
                          {"14336x4096", 4096, 14336},     {"1.1b_qo", 2048, 2048},
                          {"1.1b_gate_up", 5632, 2048},    {"1.1b_down", 2048, 5632}};
  for (const dt type : {dt::bf16, dt::s8}) {
    for (const Shape& s : shapes) {
      for (int64_t m : {16, 128}) {
        const std::string name = std::string("BM_OneDnnMatmul/") +
                                 (type == dt::bf16 ? "bf16/" : "s8/") + s.label +
                                 "/M:" + std::to_string(m);
        benchmark::RegisterBenchmark(name.c_str(), BM_OneDnnMatmul, type, s.n, s.k, m)
            ->UseRealTime()
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

void AddOneDnnContext() {
  const dnnl_version_t* v = dnnl_version();
  const char* rt = v->cpu_runtime == DNNL_RUNTIME_OMP   ? "omp"
                   : v->cpu_runtime == DNNL_RUNTIME_TBB ? "tbb"
                   : v->cpu_runtime == DNNL_RUNTIME_SEQ ? "seq"
                                                        : "other";
  benchmark::AddCustomContext("dnnl_version", std::to_string(v->major) + "." +
                                                  std::to_string(v->minor) + "." +
                                                  std::to_string(v->patch) + " (" + rt + ")");
  benchmark::AddCustomContext("dnnl_isa", IsaName(dnnl::get_effective_cpu_isa()));
  benchmark::AddCustomContext("dnnl_threads", g_omp_threads < 0 ? std::string("not set")
                                                                : std::to_string(g_omp_threads));
}

}  // namespace tessera::bench
