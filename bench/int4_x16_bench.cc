// BM_Int4x16Matmul of tessera_matmul_bench: the 16-column int8-activation VNNI tiles
// (kernels/cpu/fast/int4_x16.h) the engine runs for Q4_0, Q8_0, Q6_K, Q3_K (its own 3-bit tiles;
// `weight_GB/s` counts the file's 3.4375 bits per weight), Q2_K (its own 2-bit tiles, the
// file's 2.625 bits per weight), IQ4_NL / IQ4_XS (nibbles through kvalues_iq4nl), the grid types
// IQ2_XXS / IQ3_XXS (4-bit table codes, 4.375 bits per weight; `weight_GB/s` counts the file's
// 2.0625 / 3.0625), INT4 / INT8 weight-only,
// NVFP4 and MXFP4 under --cpu_int8_activations (NVFP4 W4A4 always), at the shapes of
// matmul_bench.cc.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/bench_common.h"
#include "kernels/cpu/huge_page_buffer.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/numeric/half.h"

namespace tessera::bench {
namespace {

namespace kf = kernels::cpu::fast;

// ---- The 16-column int8-activation tiles (int4_x16.h) the engine runs under
// --cpu_int8_activations for Q4_0 and INT4 group 128 (and always for NVFP4 W4A4): random codes
// and scales per copy (256 MiB of distinct copies), activations quantized inside the timing with
// the rows split over the pool (as DenseLinear / QuantizedLinear do), then the column split.
// NVFP4 runs W4A16-style here (int8 activation blocks); W4A4 differs only in the quantizer. ----
struct TileCopy {
  std::vector<uint8_t> src, block_scales;
  std::vector<float> scales, zeros;
  kernels::cpu::HugePageBuffer tiles;  // as the engine allocates them (huge pages where granted)
  kf::FastWeights fw;
};

void BM_Int4x16Matmul(benchmark::State& state, std::string fmt, int64_t n, int64_t k, int64_t m) {
  const int64_t blocks = k / 32;
  int64_t stored = fmt == "Q4_0" ? n * blocks * 18 : fmt == "Q8_0" ? n * blocks * 34 : n * k / 2;
  if (fmt == "INT4_G128") stored += n * (k / 128) * 8;
  if (fmt == "INT8_G128") stored = n * k + n * (k / 128) * 8;  // GPTQ 8-bit: a byte per code
  if (fmt == "NVFP4") stored += n * k / 16;
  if (fmt == "MXFP4") stored += n * k / 32;
  if (fmt == "Q6_K") stored = n * (k / 256) * 210;
  if (fmt == "Q4_K") stored = n * (k / 256) * 144;
  if (fmt == "Q3_K") stored = n * (k / 256) * 110;
  if (fmt == "Q2_K") stored = n * (k / 256) * 84;
  if (fmt == "IQ4_NL") stored = n * blocks * 18;
  if (fmt == "IQ4_XS") stored = n * (k / 256) * 136;
  if (fmt == "IQ2_XXS") stored = n * (k / 256) * 66;
  if (fmt == "IQ3_XXS") stored = n * (k / 256) * 98;
  std::vector<TileCopy> copies(std::max<int64_t>(1, CoverBytes() / stored));
  std::mt19937 rng(42);
  for (TileCopy& c : copies) {
    if (fmt == "IQ4_NL" || fmt == "IQ4_XS" || fmt == "Q3_K" || fmt == "IQ2_XXS" ||
        fmt == "IQ3_XXS") {
      // Random codes (and scales) under a sane f16 d (IQ types: first; Q3_K: after 108 bytes).
      const auto type = fmt == "IQ4_NL"    ? kernels::cpu::GgmlBlockType::kIq4Nl
                        : fmt == "IQ4_XS"  ? kernels::cpu::GgmlBlockType::kIq4Xs
                        : fmt == "IQ2_XXS" ? kernels::cpu::GgmlBlockType::kIq2Xxs
                        : fmt == "IQ3_XXS" ? kernels::cpu::GgmlBlockType::kIq3Xxs
                                           : kernels::cpu::GgmlBlockType::kQ3_K;
      const int64_t d_at = fmt == "Q3_K" ? 108 : 0;
      const int64_t bb = kernels::cpu::GetGgmlBlockInfo(type).bytes;
      c.src.resize(stored);
      for (auto& b : c.src) b = static_cast<uint8_t>(rng());
      for (int64_t i = 0; i < stored / bb; ++i) {
        const uint16_t h = numeric::FloatToHalf(1e-4f + 1e-3f * (rng() % 100) / 100.0f);
        std::memcpy(c.src.data() + i * bb + d_at, &h, 2);
      }
      c.tiles = kernels::cpu::HugePageBuffer(kf::GgmlX16Bytes(type, n, k));
      c.fw = kf::RepackGgmlX16(type, c.src.data(), n, k, c.tiles.data());
      c.src.clear();
      c.src.shrink_to_fit();
      continue;
    }
    if (fmt == "Q2_K") {  // random codes and scale bytes, sane f16 d and dmin (bytes 80-83)
      c.src.resize(stored);
      for (auto& b : c.src) b = static_cast<uint8_t>(rng());
      for (int64_t i = 0; i < stored / 84; ++i) {
        const uint16_t h = numeric::FloatToHalf(1e-4f + 1e-3f * (rng() % 100) / 100.0f);
        std::memcpy(c.src.data() + i * 84 + 80, &h, 2);
        std::memcpy(c.src.data() + i * 84 + 82, &h, 2);
      }
      c.tiles = kernels::cpu::HugePageBuffer(kf::Q2_Kx16Bytes(n, k));
      c.fw = kf::RepackQ2_Kx16(c.src.data(), n, k, c.tiles.data());
      c.src.clear();
      c.src.shrink_to_fit();
      continue;
    }
    if (fmt == "Q6_K" || fmt == "Q4_K") {
      // Random codes and 6-bit scales, a sane f16 d (and Q4_K's dmin) per super-block: Q6_K's d
      // after 208 bytes of codes and scales, Q4_K's d and dmin before its 140.
      const bool q6 = fmt == "Q6_K";
      const int64_t bb = q6 ? 210 : 144;
      c.src.resize(stored);
      for (int64_t i = 0; i < stored / bb; ++i) {
        uint8_t* b = c.src.data() + i * bb;
        for (int j = 0; j < bb; ++j) b[j] = static_cast<uint8_t>(rng());
        const uint16_t h = numeric::FloatToHalf(1e-5f + 1e-4f * (rng() % 100) / 100.0f);
        std::memcpy(b + (q6 ? 208 : 0), &h, 2);
        if (!q6) std::memcpy(b + 2, &h, 2);
      }
      c.tiles = kernels::cpu::HugePageBuffer(q6 ? kf::Q6_Kx16Bytes(n, k) : kf::Q4_Kx16Bytes(n, k));
      c.fw = q6 ? kf::RepackQ6_Kx16(c.src.data(), n, k, c.tiles.data())
                : kf::RepackQ4_Kx16(c.src.data(), n, k, c.tiles.data());
      c.src.clear();
      c.src.shrink_to_fit();
      continue;
    }
    if (fmt == "Q4_0" || fmt == "Q8_0") {
      const int64_t bb = fmt == "Q4_0" ? 18 : 34;
      c.src.resize(n * blocks * bb);
      for (int64_t i = 0; i < n * blocks; ++i) {
        uint8_t* b = c.src.data() + i * bb;
        const uint16_t h = numeric::FloatToHalf(0.001f + 0.01f * (rng() % 100) / 100.0f);
        std::memcpy(b, &h, 2);
        for (int j = 2; j < bb; ++j) b[j] = static_cast<uint8_t>(rng());
      }
      if (bb == 18) {
        c.tiles = kernels::cpu::HugePageBuffer(kf::Q4_0x16Bytes(n, k));
        c.fw = kf::RepackQ4_0x16(c.src.data(), n, k, c.tiles.data());
      } else {
        c.tiles = kernels::cpu::HugePageBuffer(kf::Q8_0x16Bytes(n, k));
        c.fw = kf::RepackQ8_0x16(c.src.data(), n, k, c.tiles.data());
      }
      c.src.clear();
      c.src.shrink_to_fit();
      continue;
    }
    const bool bytes = fmt == "INT8_G128";
    c.src.resize(bytes ? n * k : n * k / 2);
    for (auto& b : c.src) b = static_cast<uint8_t>(rng());
    kf::FastWeights src;
    src.data = c.src.data();
    src.n = n;
    src.k = k;
    src.row_stride = bytes ? k : k / 2;
    if (fmt == "INT4_G128" || bytes) {
      for (int64_t i = 0; i < n * (k / 128); ++i) {
        c.scales.push_back(0.001f + 0.01f * (rng() % 100) / 100.0f);
        c.zeros.push_back(static_cast<float>(rng() % 16));
      }
      src.format = bytes ? kf::FastFormat::kU8Groups : kf::FastFormat::kU4Groups;
      src.group_scales = c.scales.data();
      src.group_zeros = c.zeros.data();
      src.group_size = 128;
      if (bytes) {
        c.tiles = kernels::cpu::HugePageBuffer(kf::U8x16Bytes(n, k, 128));
        c.fw = kf::RepackU8x16(src, c.tiles.data());
      } else {
        c.tiles = kernels::cpu::HugePageBuffer(kf::U4x16Bytes(n, k, 128));
        c.fw = kf::RepackU4x16(src, c.tiles.data());
      }
    } else if (fmt == "MXFP4") {  // E8M0 scales near 2^-7
      c.block_scales.resize(n * k / 32);
      for (auto& b : c.block_scales) b = static_cast<uint8_t>(118 + rng() % 4);
      c.tiles = kernels::cpu::HugePageBuffer(kf::Mxfp4x16Bytes(n, k));
      c.fw = kf::RepackMxfp4x16(c.src.data(), c.block_scales.data(), n, k, c.tiles.data());
    } else {
      c.block_scales.resize(n * k / 16);
      for (auto& b : c.block_scales) b = static_cast<uint8_t>(0x30 + rng() % 16);
      src.format = kf::FastFormat::kNvfp4Pairs;
      src.block_scales = c.block_scales.data();
      src.alpha = 0.5f;
      c.tiles = kernels::cpu::HugePageBuffer(kf::Nvfp4x16Bytes(n, k));
      c.fw = kf::RepackNvfp4x16(src, c.tiles.data());
    }
    c.src.clear();
    c.src.shrink_to_fit();
  }
  std::vector<float> x(m * k), y(m * n), d(m * blocks), sums(m * blocks), sums2(m * blocks);
  std::vector<int8_t> q(m * k);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  const bool halves = kf::X16NeedsHalfSums(copies[0].fw.format);  // per-half code sums
  size_t next = 0;
  for (auto _ : state) {
    const kf::FastWeights& fw = copies[next].fw;
    next = (next + 1) % copies.size();
    auto quantize = [&](int64_t r0, int64_t r1) {
      kf::QuantizeActsInt4x16(x.data(), k, r0, r1, q.data(), d.data(), sums.data(),
                              halves ? sums2.data() : nullptr);
    };
    if (m > 1) {
      Pool().ParallelFor(m, 1, quantize);
    } else {
      quantize(0, m);
    }
    kf::Int4x16Acts acts{m, q.data(), d.data(), sums.data()};
    if (halves) {
      acts.d2 = d.data();
      acts.s2 = sums2.data();
    }
    Pool().ParallelFor(n, ColumnGrain(m), [&](int64_t b, int64_t e) {
      kf::Int4x16Matmul(fw, acts, nullptr, y.data(), b, e);
    });
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] =
      benchmark::Counter(stored * it / 1e9, benchmark::Counter::kIsRate);
  // The bytes the kernel streams (the tiles: a few percent over the file's for the GGUF types,
  // more for the integer groups' f32 scales and zero points).
  state.counters["tile_GB/s"] = benchmark::Counter(
      static_cast<double>(copies[0].tiles.size()) * it / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k * it / 1e9, benchmark::Counter::kIsRate);
  state.SetLabel(kf::Int4x16KernelName());
}

}  // namespace

void RegisterInt4x16Benchmarks(std::span<const Shape> gemm) {
  for (const char* f :
       {"Q4_0", "INT4_G128", "NVFP4", "MXFP4", "Q8_0", "INT8_G128", "Q6_K", "Q4_K", "Q3_K", "Q2_K",
        "IQ4_NL", "IQ4_XS", "IQ2_XXS", "IQ3_XXS"}) {
    for (const Shape& s : gemm) {
      for (int64_t m : {1, 16, 128}) Register("BM_Int4x16Matmul", BM_Int4x16Matmul, f, s, m);
    }
  }
}

}  // namespace tessera::bench
