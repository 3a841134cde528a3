// Decode attention and the row kernels in tessera_matmul_bench, the vectorized kernels beside the
// scalar ones they replaced, in the same run (bench/README.md has the commands and results):
//  * BM_PagedAttention/<F32|F16|BF16|FP8>/<fast|scalar>/ctx:N[/SHAPE]: one query row of
//    TinyLlama-1.1B's attention (32 query heads, 4 KV heads, head_dim 64, 16-token blocks), or with
//    a SHAPE suffix Qwen3-0.6B's (16 / 8, head_dim 128: GQA groups of two) or Llama-3.2-1B's
//    (32 / 8, 64); heads split over the pool as the decoder splits them; every iteration reads
//    another layer's cache (distinct copies covering 256 MiB, or TESSERA_BENCH_COVER_MIB), so
//    KV_GB/s (K and V bytes per second) compares with the triad when the context is long.
//  * BM_PagedAttention/F16/fast/ctx:4096/gemma-3-1b[/window:512]: Gemma 3 1B's geometry (4 query
//    heads, 1 KV head, head_dim 256) over the whole context and through its sliding layers'
//    512-position window (KV_GB/s counts the positions attended).
//  * BM_RowKernel/<RmsNorm|SwiGlu|GeluGlu|SwiGluClamped>/<fast|scalar>: 16 rows (a batch-16
//    decode step) of width 2048 (RMSNorm) or 5632 (SwiGLU, GeGLU, gpt-oss's clamped SwiGLU), bytes
//    read and written per second.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/fast/fast_elementwise.h"
#include "kernels/cpu/fast/paged_attention.h"
#include "kernels/cpu/thread_pool.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::bench {

namespace {

namespace kc = kernels::cpu;
namespace kf = kernels::cpu::fast;

constexpr int64_t kBlockTokens = 16;

// The attention geometry of one model.
struct AttentionShape {
  const char* name;  // benchmark-name suffix; empty for TinyLlama (the original names)
  int64_t heads, kv_heads, head_dim;
};
constexpr AttentionShape kShapes[] = {
    {"", 32, 4, 64}, {"/qwen3-0.6b", 16, 8, 128}, {"/llama-3.2-1b", 32, 8, 64}};

template <typename T>
struct LayerCache {
  // V [blocks, kv_heads, block_tokens, head_dim], K transposed per block ([kv_heads, head_dim,
  // block_tokens]; random values either way), blocks in table order.
  std::vector<T> k, v;
  std::vector<const T*> kp, vp;
};

template <typename T>
std::vector<LayerCache<T>> Caches(const AttentionShape& shape, int64_t ctx, std::mt19937& rng,
                                  kc::KvHalf half) {
  const int64_t blocks = (ctx + kBlockTokens - 1) / kBlockTokens;
  const int64_t block_elems = kBlockTokens * shape.kv_heads * shape.head_dim;
  const int64_t bytes = 2 * blocks * block_elems * static_cast<int64_t>(sizeof(T));
  std::vector<LayerCache<T>> caches(std::max<int64_t>(1, CoverBytes() / bytes));
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& c : caches) {
    c.k.resize(blocks * block_elems);
    c.v.resize(blocks * block_elems);
    for (int64_t i = 0; i < blocks * block_elems; ++i) {
      if constexpr (sizeof(T) == 1) {
        c.k[i] = numeric::EncodeE4m3(nd(rng));
        c.v[i] = numeric::EncodeE4m3(nd(rng));
      } else if constexpr (sizeof(T) == 2) {
        auto enc = half == kc::KvHalf::kBf16 ? numeric::FloatToBf16 : numeric::FloatToHalf;
        c.k[i] = enc(nd(rng));
        c.v[i] = enc(nd(rng));
      } else {
        c.k[i] = nd(rng);
        c.v[i] = nd(rng);
      }
    }
    for (int64_t b = 0; b < blocks; ++b) {
      c.kp.push_back(c.k.data() + b * block_elems);
      c.vp.push_back(c.v.data() + b * block_elems);
    }
  }
  return caches;
}

template <typename T>
void BM_PagedAttention(benchmark::State& state, kc::ThreadPool* pool, bool fast, int64_t ctx,
                       kc::KvHalf half, AttentionShape shape, int64_t window) {
  const kc::AttentionOptions options{window > 0 ? std::max<int64_t>(0, ctx - window) : 0, 0.0f};
  const int64_t heads = shape.heads, kv_heads = shape.kv_heads, head_dim = shape.head_dim;
  std::mt19937 rng(7);
  const auto caches = Caches<T>(shape, ctx, rng, half);
  std::vector<float> q(heads * head_dim), out(heads * head_dim);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& e : q) e = nd(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  size_t next = 0;
  for (auto _ : state) {
    const LayerCache<T>& c = caches[next];
    next = (next + 1) % caches.size();
    pool->ParallelFor(heads, fast ? heads / kv_heads : 1, [&](int64_t b, int64_t e) {
      std::vector<float> scratch(kf::FastAttentionScratch(ctx, e - b));
      if constexpr (sizeof(T) == 1) {
        const kc::PagedKvViewFp8 view{c.kp.data(), c.vp.data(), kBlockTokens, kv_heads,
                                      head_dim,    0.02f,       0.03f};
        (fast ? kf::FastPagedAttentionFp8 : kc::PagedAttentionFp8)(
            q.data(), heads, view, ctx, scale, b, e, scratch.data(), out.data(), options);
      } else if constexpr (sizeof(T) == 2) {
        const kc::PagedKvView16 view{c.kp.data(), c.vp.data(), kBlockTokens,
                                     kv_heads,    head_dim,    half};
        (fast ? kf::FastPagedAttention16 : kc::PagedAttention16)(
            q.data(), heads, view, ctx, scale, b, e, scratch.data(), out.data(), options);
      } else {
        const kc::PagedKvView view{c.kp.data(), c.vp.data(), kBlockTokens, kv_heads, head_dim};
        (fast ? kf::FastPagedAttention : kc::PagedAttention)(
            q.data(), heads, view, ctx, scale, b, e, scratch.data(), out.data(), options);
      }
    });
    benchmark::DoNotOptimize(out.data());
  }
  const double kv_bytes = 2.0 * (ctx - options.first_position) * kv_heads * head_dim * sizeof(T);
  state.counters["KV_GB/s"] =
      benchmark::Counter(kv_bytes * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

enum class RowKernel { kRmsNorm, kSwiGlu, kGeluGlu, kSwiGluClamped };

void BM_RowKernel(benchmark::State& state, RowKernel kernel, bool fast) {
  const bool glu = kernel != RowKernel::kRmsNorm;
  const int64_t rows = 16, n = glu ? 5632 : 2048;
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> a(rows * n), b(rows * n), w(n), out(rows * n);
  for (auto& e : a) e = nd(rng);
  for (auto& e : b) e = nd(rng);
  for (auto& e : w) e = nd(rng);
  for (auto _ : state) {
    if (kernel == RowKernel::kSwiGlu) {
      (fast ? kf::FastSwiGlu : kc::SwiGlu)(a.data(), b.data(), rows * n, out.data());
    } else if (kernel == RowKernel::kSwiGluClamped) {
      (fast ? kf::FastSwiGluClamped : kc::SwiGluClamped)(a.data(), b.data(), rows * n, 1.702f, 7.0f,
                                                         out.data());
    } else if (kernel == RowKernel::kGeluGlu) {
      (fast ? kf::FastGeluGlu : kc::GeluGlu)(a.data(), b.data(), rows * n, kc::GeluApprox::kTanh,
                                             out.data());
    } else {
      (fast ? kf::FastRmsNorm : kc::RmsNorm)(a.data(), w.data(), rows, n, 1e-5f, out.data());
    }
    benchmark::DoNotOptimize(out.data());
  }
  const double bytes = (glu ? 3.0 : 2.0) * rows * n * sizeof(float);
  state.counters["GB/s"] =
      benchmark::Counter(bytes * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

}  // namespace

void RegisterAttentionBenchmarks(kc::ThreadPool* pool) {
  for (const AttentionShape& shape : kShapes) {
    for (int64_t ctx : {128, 1024, 4096}) {
      for (bool fast : {true, false}) {
        const std::string tail =
            std::string(fast ? "fast" : "scalar") + "/ctx:" + std::to_string(ctx) + shape.name;
        using Fn = void (*)(benchmark::State&, kc::ThreadPool*, bool, int64_t, kc::KvHalf,
                            AttentionShape, int64_t);
        const struct {
          const char* kv;
          Fn fn;
          kc::KvHalf half;
        } caches[] = {{"F32", BM_PagedAttention<float>, kc::KvHalf::kF16},
                      {"F16", BM_PagedAttention<uint16_t>, kc::KvHalf::kF16},
                      {"BF16", BM_PagedAttention<uint16_t>, kc::KvHalf::kBf16},
                      {"FP8", BM_PagedAttention<uint8_t>, kc::KvHalf::kF16}};
        for (const auto& c : caches) {
          benchmark::RegisterBenchmark(
              (std::string("BM_PagedAttention/") + c.kv + "/" + tail).c_str(), c.fn, pool, fast,
              ctx, c.half, shape, int64_t{0})
              ->UseRealTime()
              ->Unit(benchmark::kMicrosecond);
        }
      }
    }
  }
  // Gemma 3 1B's sliding layers: the same context through its 512-position window.
  const AttentionShape gemma{"/gemma-3-1b", 4, 1, 256};
  for (int64_t window : {0, 512}) {
    const std::string name = std::string("BM_PagedAttention/F16/fast/ctx:4096") + gemma.name +
                             (window > 0 ? "/window:512" : "");
    benchmark::RegisterBenchmark(name.c_str(), BM_PagedAttention<uint16_t>, pool, true, 4096,
                                 kc::KvHalf::kF16, gemma, window)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
  for (const auto& [kernel, label] :
       {std::pair{RowKernel::kRmsNorm, "RmsNorm/"}, std::pair{RowKernel::kSwiGlu, "SwiGlu/"},
        std::pair{RowKernel::kGeluGlu, "GeluGlu/"},
        std::pair{RowKernel::kSwiGluClamped, "SwiGluClamped/"}}) {
    for (bool fast : {true, false}) {
      const std::string name = std::string("BM_RowKernel/") + label + (fast ? "fast" : "scalar");
      benchmark::RegisterBenchmark(name.c_str(), BM_RowKernel, kernel, fast)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

}  // namespace tessera::bench
