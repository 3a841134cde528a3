// GPU micro-benchmarks of the CUDA kernels: achieved TFLOP/s and GB/s against the device's
// peaks (DeviceInfo), one table row per case. Exits 0 with a note when there is no device.
#include <cstdio>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "kernels/cuda/activation_quant.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cublaslt_gemm.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/cuda/fp8_gemm.h"
#include "kernels/cuda/nvfp4_gemm.h"
#include "kernels/cuda/w4a16_gemm.h"

namespace kc = tessera::kernels::cuda;

namespace {

kc::DeviceBuffer Zeros(size_t bytes) {
  auto b = kc::DeviceBuffer::Allocate(bytes);
  if (!b.ok()) std::abort();
  cudaMemset(b->data(), 0, bytes);
  return std::move(*b);
}

// Mean milliseconds of `fn` over `iters` runs after warm-up; -1 when it fails.
double TimeMs(const std::function<absl::Status()>& fn, int iters = 20) {
  for (int i = 0; i < 3; ++i) {
    if (!fn().ok()) return -1;
  }
  auto start = kc::CudaEvent::Create();
  auto stop = kc::CudaEvent::Create();
  if (!start.ok() || !stop.ok() || !start->Record(nullptr).ok()) return -1;
  for (int i = 0; i < iters; ++i) {
    if (!fn().ok()) return -1;
  }
  if (!stop->Record(nullptr).ok()) return -1;
  auto ms = stop->ElapsedMsSince(*start);
  return ms.ok() ? *ms / iters : -1;
}

void Row(const std::string& name, double ms, double flops, double bytes, double peak_tflops,
         double peak_gbs) {
  if (ms < 0) {
    std::printf("| %-34s | %9s | %8s | %6s | %8s | %6s |\n", name.c_str(), "failed", "", "", "",
                "");
    return;
  }
  const double tflops = flops / (ms * 1e-3) * 1e-12, gbs = bytes / (ms * 1e-3) * 1e-9;
  std::printf("| %-34s | %9.4f | %8.2f | %5.1f%% | %8.1f | %5.1f%% |\n", name.c_str(), ms, tflops,
              peak_tflops > 0 ? 100 * tflops / peak_tflops : 0.0, gbs, 100 * gbs / peak_gbs);
}

}  // namespace

int main() {
  auto info = kc::QueryDevice(0);
  if (!info.ok()) {
    std::printf("gpu_bench: no device (%s)\n", info.status().ToString().c_str());
    return 0;
  }
  std::printf("%s sm_%d, %d SMs, %.2f GHz, peak bf16 %.0f TF, fp8 %.0f TF, %.0f GB/s\n",
              info->name.c_str(), info->sm, info->multiprocessors, info->clock_ghz,
              info->PeakBf16Tflops(), info->PeakFp8Tflops(), info->memory_bandwidth_gbs);
  std::printf("| %-34s | %9s | %8s | %6s | %8s | %6s |\n", "case", "ms", "TFLOP/s", "%peak",
              "GB/s", "%peak");
  const double bw = info->memory_bandwidth_gbs;
  const int64_t n = 8192, k = 8192;
  kc::DeviceBuffer w4 = Zeros(n * k / 2), sf = Zeros(n * k / 16), x = Zeros(4096 * k * 2),
                   y = Zeros(4096 * n * 4);
  for (int64_t m : {1, 16, 512, 4096}) {
    kc::W4A16Weights w{kc::W4Format::kNvfp4, w4.as<uint8_t>(), sf.as<uint8_t>(), 1.0f};
    const double ms = TimeMs([&] {
      return kc::W4A16Gemm(w, n, k, x.as<uint16_t>(), m, nullptr, y.as<float>(), nullptr);
    });
    Row("w4a16 nvfp4 m=" + std::to_string(m) + " 8192x8192", ms, 2.0 * m * n * k,
        n * k / 2 + n * k / 16 + m * k * 2 + m * n * 4, info->PeakBf16Tflops(), bw);
  }
  if (auto lt = kc::CublasLtGemm::Create(); lt.ok()) {
    // The decoder's prefill path for 4-bit weights: dequantize the layer once, cuBLASLt bf16.
    kc::DeviceBuffer wb = Zeros(n * k * 2);
    kc::W4A16Weights w{kc::W4Format::kNvfp4, w4.as<uint8_t>(), sf.as<uint8_t>(), 1.0f};
    for (int64_t m : {128, 512, 4096}) {
      const kc::LtGemmConfig c{kc::LtGemmKind::kBf16, m, n, k, kc::LtScaleMode::kNone,
                               kc::LtScaleMode::kNone, true};
      const double ms = TimeMs([&]() -> absl::Status {
        if (absl::Status st = kc::DequantizeW4ToBf16(w, n, k, wb.as<uint16_t>(), nullptr);
            !st.ok()) {
          return st;
        }
        return (*lt)->Run(c, {wb.data(), x.data(), nullptr, nullptr, 1.0f, y.data()}, nullptr);
      });
      Row("nvfp4 dequant+cublaslt m=" + std::to_string(m), ms, 2.0 * m * n * k,
          n * k / 2 + n * k / 16 + 2.0 * n * k * 2 + m * k * 2 + m * n * 4,
          info->PeakBf16Tflops(), bw);
    }
  }
  {
    // INT4 group 128 (GPTQ/AWQ) and MXFP4 decode shapes: the weight stream is the roofline.
    kc::DeviceBuffer scales = Zeros(n * (k / 128) * 4), zeros = Zeros(n * (k / 128) * 4);
    kc::W4A16Weights int4{kc::W4Format::kInt4, w4.as<uint8_t>(), nullptr, 1.0f,
                          scales.as<float>(), zeros.as<float>(), 128};
    kc::W4A16Weights mx{kc::W4Format::kMxfp4, w4.as<uint8_t>(), sf.as<uint8_t>(), 1.0f};
    for (int64_t m : {1, 16}) {
      for (auto [name, wt, extra] : {std::tuple{"int4 g128", &int4, n * (k / 128) * 8.0},
                                     std::tuple{"mxfp4", &mx, n * k / 32.0}}) {
        const double ms = TimeMs([&] {
          return kc::W4A16Gemm(*wt, n, k, x.as<uint16_t>(), m, nullptr, y.as<float>(), nullptr);
        });
        Row("w4a16 " + std::string(name) + " m=" + std::to_string(m) + " 8192x8192", ms,
            2.0 * m * n * k, n * k / 2 + extra + m * k * 2 + m * n * 4, info->PeakBf16Tflops(),
            bw);
      }
    }
  }
  if (auto lt = kc::CublasLtGemm::Create(); lt.ok()) {
    // The peer in the same run: cuBLASLt's own bf16 GEMM on the same shapes.
    kc::DeviceBuffer wb = Zeros(n * k * 2);
    for (int64_t m : {1, 16, 4096}) {
      const kc::LtGemmConfig c{kc::LtGemmKind::kBf16, m, n, k, kc::LtScaleMode::kNone,
                               kc::LtScaleMode::kNone, true};
      const double ms = TimeMs([&] {
        return (*lt)->Run(c, {wb.data(), x.data(), nullptr, nullptr, 1.0f, y.data()}, nullptr);
      });
      Row("cublaslt bf16 m=" + std::to_string(m) + " 8192x8192", ms, 2.0 * m * n * k,
          n * k * 2.0 + m * k * 2 + m * n * 4, info->PeakBf16Tflops(), bw);
    }
  }
  if (auto lt = kc::CublasLtGemm::Create(); lt.ok()) {
    // Scales sized for the largest layout (128x128 blocks and per-token groups of 128).
    kc::DeviceBuffer w8 = Zeros(n * k), x8 = Zeros(4096 * k), sw = Zeros(n * k / 128 * 4),
                     sx = Zeros(4096 * (k / 128) * 4), yb = Zeros(4096 * n * 2);
    for (auto [scales, p] :
         {std::pair{"per-token/channel",
                    kc::Fp8GemmProblem{n, k, kc::Fp8ActScale::kPerToken,
                                       kc::Fp8WeightScale::kPerChannel}},
          std::pair{"per-tensor", kc::Fp8GemmProblem{n, k, kc::Fp8ActScale::kPerTensor,
                                                     kc::Fp8WeightScale::kPerTensor}},
          std::pair{"block128", kc::Fp8GemmProblem{n, k, kc::Fp8ActScale::kPerTokenGroup128,
                                                   kc::Fp8WeightScale::kBlock128}}}) {
      auto path = kc::ChooseFp8Path(p, info->sm);
      if (!path.ok()) {
        std::printf("| fp8 %-30s | %s\n", scales, path.status().ToString().c_str());
        continue;
      }
      for (int64_t m : {1, 16, 4096}) {
        // Block scaling runs on rows padded to a multiple of 4, as the decoder does.
        const int64_t rows = kc::Fp8GemmRows(p, m);
        const kc::Fp8GemmArgs a{w8.as<uint8_t>(), sw.as<float>(), x8.as<uint8_t>(),
                                sx.as<float>(),   rows,           yb.as<uint16_t>(),
                                y.as<float>()};
        const double ms = TimeMs([&] { return kc::Fp8Gemm(**lt, p, *path, a, nullptr); });
        Row("fp8 " + std::string(scales) + " m=" + std::to_string(m) +
                (rows != m ? " (pad " + std::to_string(rows) + ")" : ""),
            ms, 2.0 * m * n * k, n * k + m * k + m * n * 2, info->PeakFp8Tflops(), bw);
      }
    }
  }
  if (auto lt = kc::CublasLtGemm::Create(); lt.ok()) {
    // NVFP4 W4A4 (sm_100a / sm_120a builds on Blackwell): cuBLASLt's block-scaled FP4 GEMM alone,
    // and with the activation quantizer that writes the swizzled scales (the decoder's path).
    if (absl::Status st = kc::SupportsNvfp4W4A4(n, k, info->sm); !st.ok()) {
      std::printf("| %-34s | n/a: %s\n", "nvfp4 w4a4 cublaslt", st.ToString().c_str());
    } else {
      const int64_t max_m = 4096;
      kc::DeviceBuffer wsf = Zeros(kc::SwizzledScaleBytes(n, k / 16)), xq = Zeros(max_m * k / 2),
                       xsf = Zeros(kc::SwizzledScaleBytes(max_m, k / 16)),
                       yb = Zeros(max_m * n * 2);
      auto g = kc::DeviceBuffer::FromVector(std::vector<float>{1.0f});
      if (!g.ok()) std::abort();
      for (int64_t m : {1, 16, 512, 4096}) {
        const kc::Nvfp4W4A4Args a{
            w4.as<uint8_t>(), wsf.as<uint8_t>(), xq.as<uint8_t>(), xsf.as<uint8_t>(), m, 1.0f,
            yb.as<uint16_t>()};
        const double bytes = n * k / 2.0 + n * k / 16.0 + m * k / 2.0 + m * k / 16.0 + m * n * 2.0;
        Row("nvfp4 w4a4 cublaslt m=" + std::to_string(m),
            TimeMs([&] { return kc::Nvfp4W4A4Gemm(**lt, n, k, a, nullptr); }), 2.0 * m * n * k,
            bytes, info->PeakFp4Tflops(), bw);
        Row("nvfp4 w4a4 quant+cublaslt m=" + std::to_string(m), TimeMs([&]() -> absl::Status {
              if (absl::Status qs =
                      kc::QuantizeNvfp4Swizzled(y.as<float>(), m, k, g->as<float>(), 0,
                                                xq.as<uint8_t>(), xsf.as<uint8_t>(), nullptr);
                  !qs.ok()) {
                return qs;
              }
              return kc::Nvfp4W4A4Gemm(**lt, n, k, a, nullptr);
            }),
            2.0 * m * n * k, bytes + m * k * 4.0, info->PeakFp4Tflops(), bw);
      }
    }
  }
  {
    const int64_t rows = 4096, kk = 8192;
    kc::DeviceBuffer q = Zeros(rows * kk), s = Zeros(rows * 4), g = Zeros(rows * 4);
    Row("fp8 per-token quant 4096x8192", TimeMs([&] {
          return kc::QuantizeFp8PerToken(y.as<float>(), rows, kk, nullptr, 0.0f, q.as<uint8_t>(),
                                         s.as<float>(), nullptr);
        }), 0, rows * kk * 5.0, 0, bw);
    Row("nvfp4 quant 4096x8192", TimeMs([&] {
          return kc::QuantizeNvfp4(y.as<float>(), rows, kk, g.as<float>(), 1, q.as<uint8_t>(),
                                   s.as<uint8_t>(), nullptr);
        }), 0, rows * kk * 4.5, 0, bw);
  }
  {
    const int64_t seqs = 32, ctx = 4096, heads = 32, kv_heads = 8, d = 128, bt = 16;
    const int64_t blocks = seqs * ctx / bt, block_floats = bt * kv_heads * d;
    kc::DeviceBuffer pool = Zeros(blocks * 2 * block_floats * 4);
    std::vector<int32_t> tables(blocks), seq(seqs), lens(seqs, ctx);
    for (int64_t i = 0; i < blocks; ++i) tables[i] = static_cast<int32_t>(i);
    for (int64_t i = 0; i < seqs; ++i) seq[i] = static_cast<int32_t>(i);
    auto dt = kc::DeviceBuffer::FromVector(tables);
    auto ds = kc::DeviceBuffer::FromVector(seq);
    auto dl = kc::DeviceBuffer::FromVector(lens);
    kc::DeviceBuffer q = Zeros(seqs * heads * d * 4), o = Zeros(seqs * heads * d * 4);
    const kc::DevicePagedKv kv{pool.as<float>(), 2 * block_floats, 0, block_floats, bt, kv_heads,
                               d};
    const kc::AttentionBatch batch{dt->as<int32_t>(), ctx / bt, ds->as<int32_t>(), nullptr,
                                   dl->as<int32_t>()};
    Row("paged decode attn 32 seq x 4096 ctx", TimeMs([&] {
          return kc::PagedAttention(q.as<float>(), seqs, heads, kv, batch, 0.088f, o.as<float>(),
                                    nullptr, nullptr);
        }), 4.0 * seqs * heads * ctx * d, 2.0 * seqs * ctx * kv_heads * d * 4, 0, bw);
  }
  return 0;
}
