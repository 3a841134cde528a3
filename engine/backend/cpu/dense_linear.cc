#include "engine/backend/cpu/dense_linear.h"

#include <functional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/backend/cpu/column_split.h"
#include "engine/io/mapped_file.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/float_panel_matmul.h"
#include "kernels/cpu/fast/ggml_quant_panels.h"
#include "kernels/cpu/fast/ggml_repack.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/parallel_repack.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/fast/quant_panel_amx.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/cpu/ggml_kquants_as_q6k.h"
#include "kernels/cpu/scratch_arena.h"
#include "kernels/numeric/half.h"

namespace tessera::backend::cpu {

absl::StatusOr<kernels::cpu::WeightEncoding> EncodingForDType(const io::TensorView& view) {
  kernels::cpu::WeightEncoding enc;
  switch (view.dtype) {
    case io::DType::kF32: enc.dense = kernels::cpu::DenseType::kF32; break;
    case io::DType::kBF16: enc.dense = kernels::cpu::DenseType::kBF16; break;
    case io::DType::kF16: enc.dense = kernels::cpu::DenseType::kF16; break;
    default:
      enc.ggml = io::GgmlBlockTypeOf(view.dtype);
      if (!enc.ggml) {
        return absl::UnimplementedError(absl::StrFormat(
            "tensor '%s': weight dtype %s has no CPU kernel", view.name, io::DTypeName(view.dtype)));
      }
  }
  return enc;
}

absl::StatusOr<std::unique_ptr<DenseLinear>> DenseLinear::Create(const io::TensorView& weight,
                                                                 std::vector<float> bias,
                                                                 kernels::cpu::ThreadPool* pool,
                                                                 DenseActivations activations) {
  if (weight.rank() != 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s' has shape %s, expected a 2-D [out, in] weight", weight.name, weight.ShapeString()));
  }
  auto enc = EncodingForDType(weight);
  if (!enc.ok()) return enc.status();
  if (!bias.empty() && static_cast<int64_t>(bias.size()) != weight.shape[0]) {
    return absl::InvalidArgumentError(absl::StrFormat("bias of '%s' has %d values, expected %d",
                                                      weight.name, bias.size(), weight.shape[0]));
  }
  if (enc->ggml) {
    // Every GGUF path (the repacks, the rewrites, the row kernels) walks whole blocks of every
    // row: K must be a multiple of the block and the bytes exactly those (a GGUF reader's view
    // is; a hand-made one may not be).
    const int64_t block = kernels::cpu::GetGgmlBlockInfo(*enc->ggml).elements;
    const auto want = io::ByteSizeFor(weight.dtype, weight.shape[0] * weight.shape[1]);
    if (weight.shape[1] % block != 0 || !want.ok() ||
        *want != static_cast<int64_t>(weight.bytes.size())) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "tensor '%s': %s weight of shape %s needs K a multiple of %d and %d bytes, has %d",
          weight.name, io::DTypeName(weight.dtype), weight.ShapeString(), block,
          want.ok() ? *want : -1, weight.bytes.size()));
    }
  }
  const bool tiles = enc->ggml && kernels::cpu::fast::HasGgmlX16(*enc->ggml);
  if (activations == DenseActivations::kInt8Block32 && !tiles) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s': int8 activations need GGUF Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, "
        "Q5_K, Q6_K, IQ4_NL, IQ4_XS, IQ1-IQ3 grid or TQ1_0 / TQ2_0 weights, not %s",
        weight.name, io::DTypeName(weight.dtype)));
  }
  if (activations == DenseActivations::kBf16 && weight.dtype != io::DType::kBF16) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s': bf16 activations need bf16 weights, not %s", weight.name,
        io::DTypeName(weight.dtype)));
  }
  auto layer = std::make_unique<DenseLinear>(*enc, weight, std::move(bias), pool, activations);
  // Repacked: the checkpoint's pages of this tensor are not read again by the layer (a tied
  // embedding faults back only the rows it looks up).
  if (layer->reads_own_copy()) io::ReleaseMappedPages(weight.bytes);
  return layer;
}

DenseLinear::DenseLinear(kernels::cpu::WeightEncoding enc, const io::TensorView& weight,
                         std::vector<float> bias, kernels::cpu::ThreadPool* pool,
                         DenseActivations activations)
    : enc_(enc),
      weight_(weight),
      bias_(std::move(bias)),
      pool_(pool),
      activations_(activations) {
  const uint8_t* src = weight_.bytes.data();
  namespace kc = kernels::cpu;
  if (enc_.ggml && kc::RunsAsQ6K(*enc_.ggml) && activations_ != DenseActivations::kInt8Block32) {
    // Exact activations: Q3_K and Q2_K as Q6_K blocks (ggml_kquants_as_q6k.h), which every path
    // below takes; Q2_K's offsets as an f32 matrix [N, K / 16] for ForwardColumns. The Q6_K copy is
    // kept only where the layer reads its weights in place. With int8 activations neither needs
    // it: their own tiles (kQ3_Kx16, kQ2_Kx16: int4_x16.h) take the file's blocks.
    const bool q2 = enc_.ggml == kc::GgmlBlockType::kQ2_K;
    const int64_t rows = weight_.shape[0], blocks = weight_.shape[1] / 256;
    const int64_t block_bytes = q2 ? kc::kQ2KBlockBytes : kc::kQ3KBlockBytes;
    q6k_copy_.resize(rows * blocks * kc::kQ6KBlockBytes);
    if (q2) q2k_offsets_.resize(rows * blocks * 16);
    auto rewrite = [&](int64_t r0, int64_t r1) {
      const uint8_t* from = src + r0 * blocks * block_bytes;
      uint8_t* to = q6k_copy_.data() + r0 * blocks * kc::kQ6KBlockBytes;
      if (q2) {
        kc::Q2KBlocksAsQ6K(from, (r1 - r0) * blocks, to, q2k_offsets_.data() + r0 * blocks * 16);
      } else {
        kc::Q3KBlocksAsQ6K(from, (r1 - r0) * blocks, to);
      }
    };
    if (pool_ != nullptr) {
      pool_->ParallelFor(rows, 64, rewrite);
    } else {
      rewrite(0, rows);
    }
    src = q6k_copy_.data();
    enc_.ggml = kc::GgmlBlockType::kQ6_K;
    if (q2) {
      offsets_.format = kernels::cpu::fast::FastFormat::kF32;
      offsets_.data = reinterpret_cast<const uint8_t*>(q2k_offsets_.data());
      offsets_.n = rows;
      offsets_.k = blocks * 16;
      offsets_.row_stride = blocks * 16 * 4;
    }
  }
  Init(src);
  if (repacked_.data() != nullptr) std::vector<uint8_t>().swap(q6k_copy_);
}

void DenseLinear::Init(const uint8_t* src) {
  namespace kf = kernels::cpu::fast;
  const int64_t n = weight_.shape[0], k = weight_.shape[1];
  if (activations_ == DenseActivations::kInt8Block32) {
    // Int8 activations (Create checked the type has tiles): the 16-column tiles of int4_x16.h, one
    // layout for decode and batches, each type in its own form (Q2_K / Q3_K / Q4_K / Q5_K / Q6_K
    // in the file's numbers, 2.625 / 3.625 / 4.625 / 5.625 / 6.625 bits per weight).
    repacked_ = kernels::cpu::HugePageBuffer(kf::GgmlX16Bytes(*enc_.ggml, n, k));
    fast_ = kf::RepackGgmlX16OverPool(pool_, *enc_.ggml, src, n, k,
                                      repacked_.data());
    return;
  }
  if (enc_.ggml && activations_ == DenseActivations::kFloat &&
      kf::GgmlQuantPanelsSupported(*enc_.ggml, src, n, k)) {
    // Exact activations: the quantized panels (AVX-512, or the f32 form's AVX2 kernel), decode and
    // prefill alike.
    repacked_ = kernels::cpu::HugePageBuffer(kf::GgmlQuantPanelsBytes(*enc_.ggml, n, k));
    panels_ = kf::RepackGgmlQuantPanels(*enc_.ggml, src, n, k, repacked_.data(),
                                        kf::GgmlQuantPanelForm(*enc_.ggml), pool_);
    ggml_panels_ = true;
    // Q4_0 / Q4_1 / MXFP4 pair panels run as AMX tiles where granted (quant_panel_amx.h): the
    // one-time self-check at load, not in the first request.
    if (kf::QuantPanelAmxTakes(panels_)) kf::AmxBf16Usable();
    return;
  }
  if (enc_.ggml && kf::HasRepackedLayout(*enc_.ggml)) {
    repacked_ = kernels::cpu::HugePageBuffer(n * kf::RepackedRowStride(*enc_.ggml, k));
    fast_ = kf::RepackGgmlRows(*enc_.ggml, src, n, k, repacked_.data());
    return;
  }
  fast_.data = src;
  fast_.n = n;
  fast_.k = k;
  fast_.row_stride = kernels::cpu::WeightRowBytes(enc_, k);
  if (enc_.ggml) {
    fast_.format = kf::FastFormat::kGgml;
    fast_.ggml = *enc_.ggml;
  } else {
    fast_.format = *enc_.dense == kernels::cpu::DenseType::kF32    ? kf::FastFormat::kF32
                   : *enc_.dense == kernels::cpu::DenseType::kBF16 ? kf::FastFormat::kBF16
                                                                   : kf::FastFormat::kF16;
  }
  // The dense panels below, repacked on the pool (parallel_repack.h).
  auto repack_panels = [&](int64_t (*bytes)(int64_t, int64_t),
                           kf::FastWeights (*repack)(const kf::FastWeights&, uint8_t*)) {
    repacked_ = kernels::cpu::HugePageBuffer(bytes(n, k));
    fast_ = kf::RepackPanelsOverPool(pool_, fast_, bytes, repack, repacked_.data());
  };
  if (fast_.format == kf::FastFormat::kBF16 && kf::Bf16DotAvailable()) {
    // bf16 x bf16 on AVX-512 BF16 (bf16_dot_matmul.h) reads 16-column K-pair panels. Exact f32
    // activations without AMX multiply them in f32 FMA instead (zmm): two instructions per weight
    // pair as the hi + lo split's two vdpbf16ps, at its rate or above here, and the products of
    // the activations themselves (bench/README.md, twenty-second session). AMX tiles, and bf16
    // activations' one vdpbf16ps per pair, stay on the dot kernel.
    repack_panels(kf::Bf16PairsBytes, kf::RepackBf16Pairs);
    // AmxBf16Usable: its one-time self-check at load, not in the first request.
    bf16_fma_ = activations_ == DenseActivations::kFloat && !kf::AmxBf16Usable();
  } else if (fast_.format == kf::FastFormat::kBF16 && kf::Bf16PairsFmaAvailable()) {
    // Without AVX-512 BF16: the same panels in f32 FMA (zmm on AVX-512, avx2_panels.h without).
    repack_panels(kf::Bf16PairsBytes, kf::RepackBf16Pairs);
    bf16_fma_ = true;
  }
  if (fast_.format == kf::FastFormat::kF16 && kf::F16PanelAvailable()) {
    // f16 and f32 on AVX-512 or AVX2 (float_panel_matmul.h) read 16-column K panels: one stream
    // per panel.
    repack_panels(kf::F16PanelsBytes, kf::RepackF16Panels);
  }
  if (fast_.format == kf::FastFormat::kF32 && kf::F32PanelAvailable()) {
    repack_panels(kf::F32PanelsBytes, kf::RepackF32Panels);
  }
}

void DenseLinear::Forward(const float* x, int64_t rows, float* y) const {
  ForwardColumns(x, rows, y, [this, rows](int64_t n, const ColumnRun& run) {
    RunColumnsOnPool(pool_, n, rows, run);
  });
}

namespace {

// fn(r0, r1) over [0, rows), split over the pool for batches: the per-row activation conversions
// before a call's column split (each row's result depends on that row only).
void ForRows(kernels::cpu::ThreadPool* pool, int64_t rows,
             const std::function<void(int64_t, int64_t)>& fn) {
  if (pool != nullptr && rows > 1) {
    pool->ParallelFor(rows, 1, fn);
  } else {
    fn(0, rows);
  }
}

}  // namespace

void DenseLinear::ForwardColumns(const float* x, int64_t rows, float* y, ColumnSplit split) const {
  const int64_t n = out_features();
  const float* bias = bias_.empty() ? nullptr : bias_.data();
  namespace kf = kernels::cpu::fast;
  // Per-call buffers: alive until split returns, distinct from a sibling layer's.
  kernels::cpu::ScratchFrame scratch;
  ColumnRun run;
  kf::Int4x16Acts acts16;
  if (ggml_panels_) {
    const int64_t k = in_features();
    // The folds' group sums Σx once per call (affine and K-quant types), not per column range.
    float* sums = nullptr;
    if (const int64_t count = kf::QuantPanelGroupSumsCount(panels_, rows); count > 0) {
      sums = scratch.Alloc<float>(count);
      ForRows(pool_, rows,
              [&](int64_t r0, int64_t r1) { kf::QuantPanelGroupSums(panels_, x, r0, r1, sums); });
    }
    if (panels_.pair_panels) {
      // The hi + lo bf16 split of x, once per call (rows over the pool), as QuantizedLinear's
      // 4-bit layers take it.
      const int64_t stride = kf::Bf16DotActStride(k);
      uint16_t* hp = scratch.Alloc<uint16_t>(rows * stride);
      uint16_t* lp = scratch.Alloc<uint16_t>(rows * stride);
      ForRows(pool_, rows, [&](int64_t r0, int64_t r1) {
        kf::RoundActsToBf16(x, k, r0, r1, hp, lp, nullptr);
      });
      run = [=, this](int64_t b, int64_t e) {
        kf::QuantPanelPairMatmul(panels_, x, hp, lp, rows, bias, y, b, e, sums);
      };
    } else {
      // By value, as above: sums is this block's and goes out of scope before split runs.
      run = [=, this](int64_t b, int64_t e) {
        kf::QuantPanelMatmul(panels_, x, rows, bias, y, b, e, sums);
      };
    }
  } else if (activations_ == DenseActivations::kInt8Block32) {
    const int64_t k = in_features(), blocks = k / 32;
    int8_t* qp = scratch.Alloc<int8_t>(rows * k);
    float* dp = scratch.Alloc<float>(rows * blocks);
    float* sp = scratch.Alloc<float>(rows * blocks);
    // Q6_K, Q3_K and Q2_K scale half blocks: code sums per half (s2 the second halves').
    float* sp2 = kf::X16NeedsHalfSums(fast_.format) ? scratch.Alloc<float>(rows * blocks) : nullptr;
    ForRows(pool_, rows, [&](int64_t r0, int64_t r1) {
      kf::QuantizeActsInt4x16(x, k, r0, r1, qp, dp, sp, sp2);
    });
    acts16 = {rows, qp, dp, sp};
    acts16.s2 = sp2;
    run = [&](int64_t b, int64_t e) { kf::Int4x16Matmul(fast_, acts16, bias, y, b, e); };
  } else if (bf16_fma_) {
    // f32 activations as they are, or rounded to bf16 (once per call, rows over the pool).
    const float* xs = x;
    if (activations_ == DenseActivations::kBf16) {
      const int64_t k = in_features();
      float* rp = scratch.Alloc<float>(rows * k);
      ForRows(pool_, rows, [&](int64_t r0, int64_t r1) {
        for (int64_t i = r0 * k; i < r1 * k; ++i) {
          rp[i] = numeric::Bf16ToFloat(numeric::FloatToBf16(x[i]));
        }
      });
      xs = rp;
    }
    run = [=, this](int64_t b, int64_t e) {
      kf::Bf16PairsFmaMatmul(fast_, xs, rows, bias, y, b, e);
    };
  } else if (fast_.format == kf::FastFormat::kBf16Pairs ||
             (fast_.format == kf::FastFormat::kBF16 && activations_ == DenseActivations::kBf16)) {
    // bf16 weights (bf16_dot_matmul.h): the activations are converted once per call (hi + lo
    // split, or bf16 under kBf16), rows split over the pool.
    const int64_t k = in_features(), stride = kf::Bf16DotActStride(k);
    const bool dot = fast_.format == kf::FastFormat::kBf16Pairs;
    const bool split_acts = activations_ != DenseActivations::kBf16;
    uint16_t* hp = scratch.Alloc<uint16_t>(rows * stride);
    uint16_t* lp = split_acts ? scratch.Alloc<uint16_t>(rows * stride) : nullptr;
    float* rp = dot ? nullptr : scratch.Alloc<float>(rows * k);
    ForRows(pool_, rows,
            [&](int64_t r0, int64_t r1) { kf::RoundActsToBf16(x, k, r0, r1, hp, lp, rp); });
    // By value: hp, lp and rp go out of scope before split runs.
    if (dot) {
      run = [=, this](int64_t b, int64_t e) {
        kf::Bf16DotMatmul(fast_, hp, lp, rows, bias, y, b, e);
      };
    } else {
      run = [=, this](int64_t b, int64_t e) { kf::FastMatmul(fast_, rp, rows, bias, y, b, e); };
    }
  } else if (fast_.format == kf::FastFormat::kF16Panels) {
    run = [&](int64_t b, int64_t e) { kf::F16PanelMatmul(fast_, x, rows, bias, y, b, e); };
  } else if (fast_.format == kf::FastFormat::kF32Panels) {
    run = [&](int64_t b, int64_t e) { kf::F32PanelMatmul(fast_, x, rows, bias, y, b, e); };
  } else {
    run = [&](int64_t b, int64_t e) { kf::FastMatmul(fast_, x, rows, bias, y, b, e); };
  }
  if (!q2k_offsets_.empty()) {
    // Q2_K's offset term: Σ_16 (−dmin·m)·Σ_16 x, the sums of x once per call (each row's in one
    // order: batch-invariant), added to each column range after its product term.
    const int64_t k = in_features(), subs = k / 16;
    float* sums16 = scratch.Alloc<float>(rows * subs);
    ForRows(pool_, rows, [&](int64_t r0, int64_t r1) {
      for (int64_t i = r0 * subs; i < r1 * subs; ++i) {
        float t = 0;
        for (int64_t e = 0; e < 16; ++e) t += x[i * 16 + e];
        sums16[i] = t;
      }
    });
    run = [=, this, product = std::move(run)](int64_t b, int64_t e) {
      product(b, e);
      // The offset rows of columns [b, e) as a matrix of their own: a [rows, e − b] result, not
      // a [rows, n] buffer per call (prefill would allocate rows · n floats).
      kf::FastWeights range = offsets_;
      range.data += b * offsets_.row_stride;
      range.n = e - b;
      std::vector<float> yo(rows * (e - b));
      kf::FastMatmul(range, sums16, rows, nullptr, yo.data(), 0, e - b);
      for (int64_t m = 0; m < rows; ++m) {
        for (int64_t c = b; c < e; ++c) y[m * n + c] += yo[m * (e - b) + c - b];
      }
    };
  }
  split(n, run);
}

std::vector<Linear::ByteSpan> DenseLinear::weight_spans() const {
  if (repacked_.data() != nullptr && q2k_offsets_.empty()) {
    return {{repacked_.data(), repacked_.size()}};
  }
  std::vector<Linear::ByteSpan> spans;
  if (repacked_.data() != nullptr) spans.push_back({repacked_.data(), repacked_.size()});
  if (!q6k_copy_.empty()) {
    spans.push_back({q6k_copy_.data(), static_cast<int64_t>(q6k_copy_.size())});
  }
  if (!q2k_offsets_.empty()) {
    spans.push_back({reinterpret_cast<const uint8_t*>(q2k_offsets_.data()),
                     static_cast<int64_t>(q2k_offsets_.size() * sizeof(float))});
  }
  if (!spans.empty()) return spans;
  return {{weight_.bytes.data(), static_cast<int64_t>(weight_.bytes.size())}};
}

std::string DenseLinear::Describe() const {
  const bool rewritten = activations_ != DenseActivations::kInt8Block32;  // Q3_K / Q2_K as Q6_K
  const char* form = weight_.dtype == io::DType::kQ3_K && rewritten ? " (as Q6_K)"
                     : !q2k_offsets_.empty()                         ? " (as Q6_K + offsets)"
                                                                     : "";
  const std::string dtype = absl::StrCat(io::DTypeName(weight_.dtype), form);
  if (bf16_fma_) {
    return absl::StrCat("bf16 x ", activations_ == DenseActivations::kBf16 ? "bf16" : "f32",
                        " act / cpu-", kernels::cpu::fast::FloatPanelTargetName(), "-panels");
  }
  if (fast_.format == kernels::cpu::fast::FastFormat::kBf16Pairs) {
    return absl::StrCat("bf16 x ", activations_ == DenseActivations::kBf16 ? "bf16" : "hi+lo bf16",
                        kernels::cpu::fast::AmxBf16Usable() ? " act / cpu-amx-bf16"
                                                            : " act / cpu-avx512-bf16");
  }
  if (ggml_panels_) {
    const bool amx =
        kernels::cpu::fast::QuantPanelAmxTakes(panels_) && kernels::cpu::fast::AmxBf16Usable();
    return absl::StrCat(
        dtype,
        !panels_.pair_panels
            ? absl::StrCat(" / cpu-", kernels::cpu::fast::QuantPanelTargetName(), "-quant-panels")
        : amx ? " x hi+lo bf16 act / cpu-amx-bf16-quant-panels"
              : " x hi+lo bf16 act / cpu-avx512-bf16-quant-panels");
  }
  if (fast_.format == kernels::cpu::fast::FastFormat::kF16Panels ||
      fast_.format == kernels::cpu::fast::FastFormat::kF32Panels) {
    return absl::StrCat(fast_.format == kernels::cpu::fast::FastFormat::kF16Panels ? "f16" : "f32",
                        " / cpu-", kernels::cpu::fast::FloatPanelTargetName(), "-panels");
  }
  if (activations_ == DenseActivations::kInt8Block32) {
    return absl::StrCat(dtype, " x q8_0 act / cpu-",
                        kernels::cpu::fast::Int4x16KernelName());
  }
  return absl::StrCat(dtype, " / cpu-fast-",
                      kernels::cpu::fast::FastTargetName());
}

}  // namespace tessera::backend::cpu
