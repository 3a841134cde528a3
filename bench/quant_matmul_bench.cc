// BM_QuantMatmul of tessera_matmul_bench: QuantizedLinear's fast kernels
// (kernels/cpu/fast/fast_quant_matmul.h) for FP8 (W8A16, W8A8, 128x128 blocks, bf16 activations),
// INT4 group 128, NVFP4 and MXFP4 with float activations, at the shapes of matmul_bench.cc.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/bench_common.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/fast/fp8_panel_matmul.h"
#include "kernels/cpu/fast/quant_panel_amx.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/cpu/huge_page_buffer.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"

namespace tessera::bench {
namespace {

namespace kf = kernels::cpu::fast;

// ---- QuantizedLinear's fast kernels (kernels/cpu/fast/fast_quant_matmul.h). Random codes with
// sane scales; only the streaming and decode cost matters. FP8 per-row scales, INT4 and INT8
// group 128 with f32 scales and zero points, NVFP4 W4A16, MXFP4. weight_GB/s counts codes + scales.
// Every copy (256 MiB in all, as BM_Matmul) has its own random codes and scales, so no two
// pages are identical.
struct QuantCopy {
  std::vector<uint8_t> q, block_scales;
  std::vector<float> scales, zeros;
  // FP8*_PANEL and the 4-bit *_PANEL: the codes as fp8_panel_matmul.h / quant_panel_matmul.h
  // read them.
  kernels::cpu::HugePageBuffer panels;
};

// The walks of the AMX route with every tile made and nothing multiplied (*_PAIRS_AMXDECODE): a
// one-row call's made tiles in the walk's order (two panels' K tile kt, then kt + 1).
void MakeEveryTile(kf::amx::Bf16TileMaker make, const void* ctx, int64_t k, int64_t n_begin,
                   int64_t n_end) {
  alignas(64) uint8_t tiles[2][1024];
  const int64_t ktiles = kf::Bf16PanelKTiles(k), p_end = (n_end + 15) / 16;
  for (int64_t p0 = n_begin / 16; p0 < p_end; p0 += 2) {
    for (int64_t kt = 0; kt < ktiles; ++kt) {
      make(ctx, p0, kt, tiles[0]);
      if (p0 + 1 < p_end) make(ctx, p0 + 1, kt, tiles[1]);
    }
  }
  benchmark::DoNotOptimize(tiles);
}
void DecodeOnlyMade(kf::amx::Bf16TileMaker make, const void* ctx, int64_t, int64_t k,
                    const uint16_t*, const uint16_t*, int64_t, const float*, float*,
                    int64_t n_begin, int64_t n_end) {
  MakeEveryTile(make, ctx, k, n_begin, n_end);
}
void DecodeOnlyGroup(kf::amx::Bf16TileMaker make, const void* ctx, const uint8_t*, int64_t, int64_t,
                     int64_t k, int64_t, const uint16_t*, const uint16_t*, int64_t, int64_t n_begin,
                     int64_t n_end, const kf::amx::GroupFolder&) {
  MakeEveryTile(make, ctx, k, n_begin, n_end);
}
constexpr kf::internal::AmxBf16Gemms kDecodeOnlyGemms{nullptr, DecodeOnlyMade, DecodeOnlyGroup};

void BM_QuantMatmul(benchmark::State& state, std::string fmt, int64_t n, int64_t k, int64_t m) {
  kf::FastQuantWeights w;
  w.n = n;
  w.k = k;
  int64_t q_bytes = n * k / 2, bs_bytes = 0, n_scales = 0, n_zeros = 0;
  static const float kUnit = 1.0f;
  std::vector<float> row_scales(m, 0.02f);
  // *_PAIRS_AMXDECODE (M = 1): the AMX route's tile decode alone (quant_panel_amx.h), every K
  // tile of every panel made once and nothing multiplied, on any AVX-512 CPU: the decode ceiling
  // of that route at batch 1, for CPUs whose AMX no machine here has.
  // FP8_PANEL_AMXDECODE: the same for the FP8 panels' AMX route (fp8_panel_matmul.h), whose
  // M = 1 rate on a Xeon with AMX is measured (bench/README.md, eighteenth session): the
  // calibration for the 4-bit ones.
  const bool amx_decode = fmt.ends_with("_AMXDECODE");
  if (amx_decode) fmt = fmt.substr(0, fmt.size() - 10);
  // FP8_PANEL / FP8_W8A8_PANEL: the same layers on the 16-column panels (fp8_panel_matmul.h), the
  // activations converted to bf16 (hi + lo for W8A16) inside the timing, rows over the pool.
  // FP8_BF16ACT: W8A16 under --cpu_bf16_activations, on the panels as QuantizedLinear runs it:
  // x rounded to bf16 (hi alone) inside the timing, one vdpbf16ps per weight pair.
  // *_PANEL_FMA: those panels in f32 FMA (Fp8PanelFmaMatmul: zmm on AVX-512 CPUs, ymm under
  // TESSERA_CPU_ISA=avx2), the engine's FP8 kernel where the BF16 one does not run, run here on
  // any CPU with AVX2; f32 activations as they come.
  const bool fma = fmt.ends_with("_PANEL_FMA");
  if (fma) fmt = fmt.substr(0, fmt.size() - 4);
  const bool bf16_act = fmt == "FP8_BF16ACT";
  const bool block_panel = fmt == "FP8_BLOCK_PANEL";
  const bool panel = fmt == "FP8_PANEL" || fmt == "FP8_W8A8_PANEL" || bf16_act || block_panel;
  if (panel) {
    fmt = fmt == "FP8_W8A8_PANEL" ? "FP8_W8A8" : block_panel ? "FP8_BLOCK_SCALED" : "FP8";
  }
  // INT4_G128_PANEL, INT8_G128_PANEL, NVFP4_PANEL, MXFP4_PANEL: the same layers on the 16-column
  // panels (quant_panel_matmul.h), as QuantizedLinear runs GPTQ / AWQ / compressed-tensors
  // weight-only, NVFP4 W4A16 and MXFP4 layers with f32 activations; INT4_G128, INT8_G128, NVFP4
  // and MXFP4 are FastQuantMatmul's row kernels.
  // INT4_G128_PAIRS, NVFP4_PAIRS, MXFP4_PAIRS: the bf16-pair form of those panels (AVX-512 BF16),
  // the engine's default for the 4-bit formats there, with the hi + lo split of exact f32
  // activations converted inside the timing; *_PAIRS_BF16: bf16 activations (hi alone,
  // --cpu_bf16_activations; x rounded once outside the timing, as a bf16 model's are);
  // *_PAIRS_I16: int16 activations per weight group (int16_act_quant.h, quantized inside the
  // timing; QuantPanelInt16Matmul, AVX-512 VNNI).
  const bool pairs_bf16 = fmt.ends_with("_PAIRS_BF16");
  const bool pairs_i16 = fmt.ends_with("_PAIRS_I16");
  const bool pairs = fmt.ends_with("_PAIRS") || pairs_bf16 || pairs_i16;
  if (pairs) fmt = fmt.substr(0, fmt.size() - (pairs_bf16 ? 11 : pairs_i16 ? 10 : 6));
  // NF4_G64_PANEL: bitsandbytes NF4 (blocks of 64, f32 absmax as double quant resolves them) on
  // the codebook panels' f32 form, as QuantizedLinear runs it (the only kernel for it).
  const bool quant_panel = fmt == "INT4_G128_PANEL" || fmt == "INT8_G128_PANEL" ||
                           fmt == "NVFP4_PANEL" || fmt == "MXFP4_PANEL" ||
                           fmt == "NF4_G64_PANEL" || pairs;
  if (quant_panel && !pairs) fmt = fmt.substr(0, fmt.size() - 6);
  // FP8_BLOCK_W8A8: DeepSeek-V3 / Qwen3-FP8 layers, 128x128 weight blocks and per-token-group-128
  // activation scales, both folded per block (FastQuantWeights::act_block_scales; the AVX-512 BF16
  // kernel). FP8_BLOCK_SCALED: the same layers as QuantizedLinear runs them without AVX-512 BF16,
  // the activations scaled per group beforehand (not timed) and FastQuantMatmul's Highway kernel;
  // FP8_BLOCK_PANEL_FMA: those on the FMA panels (zmm / ymm), since the twenty-first session.
  const bool block = fmt == "FP8_BLOCK_W8A8" || fmt == "FP8_BLOCK_SCALED";
  const int64_t k_blocks = (k + 127) / 128;
  std::vector<float> act_block_scales(m * k_blocks, 0.02f);
  if (block) {
    w.decode = kf::QuantDecode::kFp8;
    q_bytes = n * k;
    n_scales = (n + 127) / 128 * k_blocks;
    w.scale_rows = 128;
    w.scale_row_stride = k_blocks;
    w.scale_k = 128;
    if (fmt == "FP8_BLOCK_W8A8") {
      w.act_block_scales = true;
      w.act_block_scale = act_block_scales.data();
      w.act_block_row_stride = k_blocks;
      w.act_block_stride = 1;
    }
  } else if (fmt == "FP8" || fmt == "FP8_W8A8") {
    w.decode = kf::QuantDecode::kFp8;
    q_bytes = n * k;
    n_scales = n;
    w.scale_rows = 1;
    w.scale_row_stride = 1;
    w.scale_k = k;
  } else if (fmt == "INT4_G128" || fmt == "INT8_G128" || fmt == "INT4_PC") {
    // INT8_G128: byte codes (GPTQ 8-bit; INT3 / INT2 run the same kernel on unpacked codes).
    // INT4_PC: one group per row (per-channel scales and zero points).
    w.decode = fmt == "INT8_G128" ? kf::QuantDecode::kInt8 : kf::QuantDecode::kInt4;
    if (fmt == "INT8_G128") q_bytes = n * k;
    const int64_t group = fmt == "INT4_PC" ? k : 128;
    n_scales = n_zeros = n * k / group;
    w.scale_row_stride = k / group;
    w.scale_k = group;
  } else if (fmt == "NF4_G64") {
    static constexpr float kNf4[16] = {
        -1.0f, -0.6961928f, -0.52507305f, -0.3949175f, -0.28444138f, -0.18477343f, -0.09105004f,
        0.0f, 0.0795803f, 0.1609302f, 0.2461123f, 0.33791524f, 0.44070983f, 0.562617f,
        0.72295684f, 1.0f};
    // NF4_G64_PAIRS_BF16: --cpu_bf16_activations' form, the codebook rounded to bf16 on the pair
    // panels.
    static const std::vector<float> kNf4Bf16 = [] {
      std::vector<float> r(kNf4, kNf4 + 16);
      for (float& v : r) v = numeric::Bf16ToFloat(numeric::FloatToBf16(v));
      return r;
    }();
    w.decode = kf::QuantDecode::kCodebook4;
    w.codebook = pairs ? kNf4Bf16.data() : kNf4;
    n_scales = n * k / 64;
    w.scale_row_stride = k / 64;
    w.scale_k = 64;
  } else {
    w.decode = fmt == "NVFP4" ? kf::QuantDecode::kNvfp4 : kf::QuantDecode::kMxfp4;
    bs_bytes = n * k / (fmt == "NVFP4" ? 16 : 32);
    w.alpha = 0.5f;
  }
  const int64_t stored = q_bytes + bs_bytes + (n_scales + n_zeros) * 4;
  std::vector<QuantCopy> copies(std::max<int64_t>(1, CoverBytes() / stored));
  uint64_t seed = 42;
  for (auto& c : copies) {
    c.q.resize(q_bytes);
    XorStrided(c.q.data(), q_bytes, 1, 0x77, seed);  // ≤ 0x77: no FP8 NaN codes (0x7F / 0xFF)
    // Block scales near 1: E4M3 0x30-0x3F (NVFP4), E8M0 0x7E-0x81 (MXFP4).
    c.block_scales.assign(bs_bytes, fmt == "NVFP4" ? 0x30 : 0x7E);
    XorStrided(c.block_scales.data(), bs_bytes, 1, fmt == "NVFP4" ? 0x0F : 0x03, seed);
    c.scales.resize(n_scales);
    for (auto& v : c.scales) v = 0.01f * (1.0f + static_cast<float>(Mix(seed) % 64) / 64.0f);
    c.zeros.resize(n_zeros);
    for (auto& v : c.zeros) v = static_cast<float>(6 + Mix(seed) % 5);
  }
  const bool w8a8 = fmt == "FP8_W8A8" || block;
  auto use = [&](const QuantCopy& c) {
    w.q = c.q.data();
    w.block_scales = c.block_scales.data();
    w.scales = c.scales.data();
    w.zeros = c.zeros.data();
    if (w8a8 && !block) {
      // QuantizedLinear's W8A8 form: bare codes, the per-row weight scale and the per-token
      // activation scale in the epilogue.
      w.scales = &kUnit;
      w.scale_rows = n;
      w.scale_row_stride = 0;
      w.col_scale = c.scales.data();
      w.col_scale_stride = 1;
      w.row_scale = row_scales.data();
      w.row_scale_stride = 1;
    }
  };
  if (panel) {
    for (auto& c : copies) {
      use(c);
      c.panels = kernels::cpu::HugePageBuffer(kf::Fp8PairsBytes(n, k));
      kf::RepackFp8Pairs(w, c.panels.data());
      std::vector<uint8_t>().swap(c.q);
    }
  }
  kf::FastQuantWeights repacked;  // its headers and form (every copy's)
  if (quant_panel) {
    for (auto& c : copies) {
      use(c);
      c.panels = kernels::cpu::HugePageBuffer(kf::QuantPanelsBytes(w));
      if (pairs_i16 ? !kf::QuantPanelInt16Takes(w) : pairs && !kf::QuantPanelPairsSupported(w)) {
        break;
      }
      // *_PAIRS_I16 of 8-bit codes: the int16 route's own pairs (the same bytes as kBf16Pairs
      // for 4-bit codes).
      repacked = kf::RepackQuantPanels(w, c.panels.data(),
                                       pairs_i16 ? kf::QuantPanelForm::kInt16Pairs
                                       : pairs   ? kf::QuantPanelForm::kBf16Pairs
                                                 : kf::QuantPanelForm::kF32);
      std::vector<uint8_t>().swap(c.q);
    }
  }
  use(copies[0]);
  if (quant_panel) {
    repacked.q = copies[0].panels.data();
    w = repacked;  // its header kind, centre and form
  } else if (panel) {
    w.q = copies[0].panels.data();
  }
  if (quant_panel && !kf::QuantPanelSupported(w)) {
    state.SkipWithError("no AVX2 or AVX-512 on this CPU");
    return;
  }
  if (pairs && !pairs_i16 && !kf::QuantPanelPairsSupported(w)) {
    state.SkipWithError("no AVX-512 BF16 on this CPU");
    return;
  }
  if (amx_decode && quant_panel && !kf::QuantPanelAmxTakes(w)) {
    state.SkipWithError("the AMX route does not take this layer");
    return;
  }
  const int64_t i16_group = pairs_i16 ? kf::QuantPanelInt16Group(w) : 0;
  if (pairs_i16 && i16_group == 0) {
    state.SkipWithError("no AVX-512 VNNI on this CPU");
    return;
  }
  if (fma && !kf::internal::Avx2PanelsAvailable()) {
    state.SkipWithError("no AVX2 + FMA + F16C on this CPU");
    return;
  }
  if (panel && !fma && !kf::Fp8PanelSupported(w)) {
    state.SkipWithError("no AVX-512 BF16 on this CPU");
    return;
  }
  // Without AVX-512 the 4-bit formats run on the panels alone (their f32 form's AVX2 kernel).
  if (!quant_panel && !kf::FastQuantSupported(w)) {
    state.SkipWithError("not supported on this target");
    return;
  }
  std::vector<float> x(m * k), y(m * n);
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (auto& v : x) v = nd(rng);
  // W8A8 activations are E4M3 values (the per-token quantizer's output, not timed here, as
  // oneDNN's s8 rows do not time theirs).
  if (w8a8) {
    for (auto& v : x) v = numeric::DecodeE4m3(numeric::EncodeE4m3(v * 50.0f));
  }
  if (pairs_bf16) {
    for (auto& v : x) v = numeric::Bf16ToFloat(numeric::FloatToBf16(v));
  }
  std::vector<uint16_t> hi(panel || pairs ? m * kf::Bf16DotActStride(k) : 0);
  std::vector<uint16_t> lo(
      (panel && !w8a8 && !bf16_act) || (pairs && !pairs_bf16 && !pairs_i16) ? hi.size() : 0);
  std::vector<int16_t> q16(pairs_i16 ? hi.size() : 0);
  std::vector<float> d16(pairs_i16 ? m * (k / i16_group) : 0), s16(d16.size());
  uint16_t* lp = lo.empty() ? nullptr : lo.data();
  // The bf16 kernels' activations, converted once per call as the engine does (rows on the pool).
  auto convert_acts = [&] {
    auto convert = [&](int64_t r0, int64_t r1) {
      if (pairs_i16) {
        kf::QuantizeActsInt16(x.data(), k, i16_group, r0, r1, q16.data(), d16.data(), s16.data());
      } else {
        kf::RoundActsToBf16(x.data(), k, r0, r1, hi.data(), lp, nullptr);
      }
    };
    if (m > 1) {
      Pool().ParallelFor(m, 1, convert);
    } else {
      convert(0, m);
    }
  };
  // The integer folds' group sums, once per call as the engine computes them (rows on the pool).
  std::vector<float> group_sums(quant_panel ? kf::QuantPanelGroupSumsCount(w, m) : 0);
  float* gs = group_sums.empty() ? nullptr : group_sums.data();
  auto sum_groups = [&] {
    if (gs == nullptr) return;
    auto rows = [&](int64_t r0, int64_t r1) { kf::QuantPanelGroupSums(w, x.data(), r0, r1, gs); };
    if (m > 1) {
      Pool().ParallelFor(m, 1, rows);
    } else {
      rows(0, m);
    }
  };
  size_t next = 0;
  for (auto _ : state) {
    use(copies[next]);
    if (panel && fma) {
      w.q = copies[next].panels.data();
      next = (next + 1) % copies.size();
      Pool().ParallelFor(n, ColumnGrain(m), [&](int64_t b, int64_t e) {
        kf::Fp8PanelFmaMatmul(w, x.data(), m, nullptr, y.data(), b, e);
      });
      benchmark::DoNotOptimize(y.data());
      continue;
    }
    if (panel) {
      w.q = copies[next].panels.data();
      next = (next + 1) % copies.size();
      convert_acts();
      Pool().ParallelFor(n, ColumnGrain(m), [&](int64_t b, int64_t e) {
        if (amx_decode) {
          return kf::internal::Fp8PanelMatmulAmx(w, hi.data(), lp, m, nullptr, y.data(), b, e,
                                                 kDecodeOnlyGemms);
        }
        kf::Fp8PanelMatmul(w, hi.data(), lp, m, nullptr, y.data(), b, e);
      });
      benchmark::DoNotOptimize(y.data());
      continue;
    }
    if (quant_panel) {
      w.q = copies[next].panels.data();
      next = (next + 1) % copies.size();
      if (!pairs_i16) sum_groups();
      if (pairs) {
        convert_acts();
        Pool().ParallelFor(n, ColumnGrain(m), [&](int64_t b, int64_t e) {
          if (pairs_i16) {
            kf::QuantPanelInt16Matmul(w, {q16.data(), d16.data(), s16.data()}, m, nullptr, y.data(),
                                      b, e);
          } else if (amx_decode) {
            kf::internal::QuantPanelAmxMatmul(w, x.data(), hi.data(), lp, m, nullptr, y.data(), b,
                                              e, kDecodeOnlyGemms, gs);
          } else {
            kf::QuantPanelPairMatmul(w, x.data(), hi.data(), lp, m, nullptr, y.data(), b, e, gs);
          }
        });
        benchmark::DoNotOptimize(y.data());
        continue;
      }
      Pool().ParallelFor(n, ColumnGrain(m), [&](int64_t b, int64_t e) {
        kf::QuantPanelMatmul(w, x.data(), m, nullptr, y.data(), b, e, gs);
      });
      benchmark::DoNotOptimize(y.data());
      continue;
    }
    next = (next + 1) % copies.size();
    Pool().ParallelFor(n, ColumnGrain(m), [&](int64_t b, int64_t e) {
      kf::FastQuantMatmul(w, x.data(), m, nullptr, y.data(), b, e);
    });
    benchmark::DoNotOptimize(y.data());
  }
  const double it = static_cast<double>(state.iterations());
  state.counters["weight_GB/s"] =
      benchmark::Counter(stored * it / 1e9, benchmark::Counter::kIsRate);
  state.counters["GFLOP/s"] =
      benchmark::Counter(2.0 * m * n * k * it / 1e9, benchmark::Counter::kIsRate);
}

}  // namespace

void RegisterQuantMatmulBenchmarks(std::span<const Shape> gemm) {
  for (const char* f : {"FP8",
                        "FP8_W8A8",
                        "FP8_BLOCK_W8A8",
                        "FP8_BF16ACT",
                        "FP8_PANEL",
                        "FP8_W8A8_PANEL",
                        "FP8_PANEL_FMA",
                        "FP8_W8A8_PANEL_FMA",
                        "FP8_BLOCK_SCALED",
                        "FP8_BLOCK_PANEL_FMA",
                        "INT4_G128",
                        "INT4_G128_PANEL",
                        "INT8_G128",
                        "INT8_G128_PANEL",
                        "NVFP4",
                        "NVFP4_PANEL",
                        "MXFP4",
                        "MXFP4_PANEL",
                        "NF4_G64_PANEL",
                        "INT4_G128_PAIRS",
                        "NVFP4_PAIRS",
                        "MXFP4_PAIRS",
                        "INT4_G128_PAIRS_BF16",
                        "NVFP4_PAIRS_BF16",
                        "MXFP4_PAIRS_BF16",
                        "NF4_G64_PAIRS_BF16",
                        "INT4_G128_PAIRS_I16",
                        "NVFP4_PAIRS_I16",
                        "MXFP4_PAIRS_I16",
                        "INT8_G128_PAIRS_I16",
                        "INT4_PC_PAIRS",
                        "FP8_PANEL_AMXDECODE",
                        "INT4_G128_PAIRS_AMXDECODE",
                        "NVFP4_PAIRS_AMXDECODE",
                        "MXFP4_PAIRS_AMXDECODE"}) {
    for (const Shape& s : gemm) {
      // The FP8 panels also at 24-64 rows: where fp8_panel_matmul.cc's register path hands over
      // to its decode-to-bf16 GEMM (kRegisterRows). The 4-bit pair panels also at 4 and 6 rows
      // (a few concurrent sequences: the register path's 3-row tiles).
      const bool panels =
          std::string_view(f).starts_with("FP8") && std::string_view(f).ends_with("_PANEL");
      const bool pairs = std::string_view(f).find("_PAIRS") != std::string_view::npos;
      if (std::string_view(f).ends_with("_AMXDECODE")) {
        Register("BM_QuantMatmul", BM_QuantMatmul, f, s, 1);
        continue;
      }
      for (int64_t m : {1, 4, 6, 16, 24, 32, 48, 64, 128}) {
        if ((pairs && (m == 4 || m == 6)) || (panels && m > 1 && m != 4 && m != 6) || m == 1 ||
            m == 16 || m == 128) {
          Register("BM_QuantMatmul", BM_QuantMatmul, f, s, m);
        }
      }
    }
  }
}

}  // namespace tessera::bench
