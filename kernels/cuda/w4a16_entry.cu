// Entry point of the W4A16 kernel family: the capability query, argument validation and the
// format dispatch. Arch cascade: one generic mma.sync kernel serves sm_80 and every later arch
// (Hopper and Blackwell still execute warp-level MMA); below sm_80 there is no bf16 MMA. Native
// FP4 MMA (W4A4) lives in the cuBLASLt block-scaled path, not here.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/w4a16_gemm.h"
#include "kernels/cuda/w4a16_kernel.cuh"

namespace tessera::kernels::cuda {
namespace {

absl::string_view FormatName(W4Format f) {
  switch (f) {
    case W4Format::kNvfp4: return "nvfp4";
    case W4Format::kMxfp4: return "mxfp4";
    case W4Format::kInt4: return "int4";
  }
  return "?";
}

// Blocks of the narrow-tile kernel (W4A16GroupKernel's with kGroup, which has its own registers
// and its own cache) that the current device holds at once (all SMs), or -1 when that cannot be
// queried (then launches use the wide tiles and groups are not launched as one). Cached per device: the first call is
// a driver query, made by a pass that runs eagerly before any graph capture (CudaDecoder
// captures a shape's second pass). A failed query's error is cleared so that the launch check
// after it does not report it; an error already pending is left alone (and not queried over).
template <typename Dequant, bool kGroup = false>
int64_t NarrowResidentBlocks() {
  constexpr int kMaxDevices = 64;
  static std::array<std::atomic<int64_t>, kMaxDevices> cache{};  // 0: not queried yet
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= kMaxDevices) {
    (void)cudaGetLastError();
    return -1;
  }
  int64_t blocks = cache[dev].load(std::memory_order_relaxed);
  if (blocks != 0) return blocks;
  if (cudaPeekAtLastError() != cudaSuccess) return -1;
  int per_sm = 0, sms = 0;
  cudaError_t occupancy;
  if constexpr (kGroup) {
    occupancy = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, w4a16::W4A16GroupKernel<Dequant, w4a16::kNarrowTiles>,
        w4a16::kWarpsPerBlock * 32, 0);
  } else {
    occupancy = cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, w4a16::W4A16Kernel<Dequant, w4a16::kNarrowTiles>, w4a16::kWarpsPerBlock * 32,
        0);
  }
  if (occupancy != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess ||
      per_sm <= 0 || sms <= 0) {
    (void)cudaGetLastError();
    blocks = -1;
  } else {
    blocks = static_cast<int64_t>(per_sm) * sms;
  }
  cache[dev].store(blocks, std::memory_order_relaxed);
  return blocks;
}

template <typename Dequant>
int BlockColumns(int64_t n, int64_t m) {
  constexpr int64_t kNarrowCols = 8 * w4a16::kNarrowTiles;
  const int64_t row_blocks = (m + w4a16::kBlockM - 1) / w4a16::kBlockM;
  const int64_t narrow_blocks = (n + kNarrowCols - 1) / kNarrowCols * row_blocks;
  return narrow_blocks <= NarrowResidentBlocks<Dequant>() ? 8 * w4a16::kNarrowTiles
                                                          : 8 * w4a16::kWideTiles;
}

template <typename Dequant, int kTiles>
void LaunchTiles(const uint8_t* packed, const Dequant& dequant, float alpha, int64_t n, int64_t k,
                 const uint16_t* x, int64_t m, const float* bias, float* y, cudaStream_t stream) {
  constexpr int64_t kCols = 8 * kTiles;
  const dim3 grid(static_cast<unsigned>((n + kCols - 1) / kCols),
                  static_cast<unsigned>((m + w4a16::kBlockM - 1) / w4a16::kBlockM));
  w4a16::W4A16Kernel<Dequant, kTiles><<<grid, w4a16::kWarpsPerBlock * 32, 0, stream>>>(
      packed, dequant, alpha, n, k, x, m, bias, y);
}

// Narrow (16-column) tiles when their whole grid is resident at once, which spreads the small N
// of decode over more SMs; wide (32-column) tiles otherwise, whose grid is half as many blocks
// and has a shorter tail. On an H200 (132 SMs): TinyLlama's projections (N = 256 .. 5632, one
// wave either way) decoded 9% (INT4) and 31% (NVFP4) faster with narrow tiles; N = K = 8192,
// M = 1 ran 24-32 us wide and 29-42 us narrow (512 blocks, two waves). Results are the same
// bits either way.
template <typename Dequant>
absl::Status Launch(const uint8_t* packed, const Dequant& dequant, float alpha, int64_t n,
                    int64_t k, const uint16_t* x, int64_t m, const float* bias, float* y,
                    cudaStream_t stream) {
  if (BlockColumns<Dequant>(n, m) == 8 * w4a16::kNarrowTiles) {
    LaunchTiles<Dequant, w4a16::kNarrowTiles>(packed, dequant, alpha, n, k, x, m, bias, y, stream);
  } else {
    LaunchTiles<Dequant, w4a16::kWideTiles>(packed, dequant, alpha, n, k, x, m, bias, y, stream);
  }
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

// The kernel's dequantization functor and epilogue α for `w` (its pointers checked by the caller).
template <typename Dequant>
Dequant DequantFor(const W4A16Weights& w, int64_t k);
template <>
w4a16::Nvfp4Dequant DequantFor(const W4A16Weights& w, int64_t k) {
  return {w.block_scales, k};
}
template <>
w4a16::Mxfp4Dequant DequantFor(const W4A16Weights& w, int64_t k) {
  return {w.block_scales, k};
}
template <>
w4a16::Int4Dequant DequantFor(const W4A16Weights& w, int64_t k) {
  return {w.scales, w.zeros, k / w.group_size, w.group_size};
}
float AlphaFor(const W4A16Weights& w) {
  return w.format == W4Format::kNvfp4 ? w.global_scale : 1.0f;
}

static_assert(kW4A16MaxGroup == w4a16::kMaxGroupMembers,
              "LaunchGroupTiles fills the kernel's member slots from W4A16GemmGroup's members");

template <typename Dequant, int kTiles>
void LaunchGroupTiles(absl::Span<const W4A16GroupMember> members, int64_t k, const uint16_t* x,
                      int64_t m, cudaStream_t stream) {
  constexpr int64_t kCols = 8 * kTiles;
  w4a16::Group<Dequant> group{};
  int64_t end = 0;
  for (int i = 0; i < w4a16::kMaxGroupMembers; ++i) {
    if (i < static_cast<int>(members.size())) {
      const W4A16GroupMember& mem = members[i];
      group.member[i] = {mem.weights->packed, DequantFor<Dequant>(*mem.weights, k),
                         AlphaFor(*mem.weights), mem.n, mem.bias, mem.y};
      end += (mem.n + kCols - 1) / kCols;
    } else {
      group.member[i] = group.member[i - 1];
    }
    group.block_end[i] = end;
  }
  const dim3 grid(static_cast<unsigned>(end),
                  static_cast<unsigned>((m + w4a16::kBlockM - 1) / w4a16::kBlockM));
  w4a16::W4A16GroupKernel<Dequant, kTiles><<<grid, w4a16::kWarpsPerBlock * 32, 0, stream>>>(
      group, k, x, m);
}

// Which members share a launch. All of them (two or more) when their narrow blocks are resident
// on the GPU at once: -1. Otherwise the widest member launches alone, with W4A16Gemm's own tile
// choice, and the rest go by the same rule: its index. So a GQA model's q / k / v that overflow
// the resident grid still run k and v together (Llama-3-8B on an H100: 256 + 64 + 64 narrow
// blocks against 264 resident). A single member is always alone: 0.
template <typename Dequant>
int LoneMember(absl::Span<const int64_t> ns, int64_t m) {
  constexpr int64_t kNarrowCols = 8 * w4a16::kNarrowTiles;
  const int64_t row_blocks = (m + w4a16::kBlockM - 1) / w4a16::kBlockM;
  int64_t narrow_blocks = 0;
  int widest = 0;
  for (size_t i = 0; i < ns.size(); ++i) {
    narrow_blocks += (ns[i] + kNarrowCols - 1) / kNarrowCols * row_blocks;
    if (ns[i] > ns[widest]) widest = static_cast<int>(i);
  }
  if (ns.size() > 1 && narrow_blocks <= NarrowResidentBlocks<Dequant, true>()) return -1;
  return widest;
}

template <typename Dequant>
absl::Status LaunchGroup(absl::Span<const W4A16GroupMember> members, int64_t k,
                         const uint16_t* x, int64_t m, cudaStream_t stream) {
  if (members.empty()) return absl::OkStatus();
  std::array<int64_t, kW4A16MaxGroup> ns{};
  for (size_t i = 0; i < members.size(); ++i) ns[i] = members[i].n;
  const int lone = LoneMember<Dequant>(absl::MakeConstSpan(ns.data(), members.size()), m);
  if (lone < 0) {
    LaunchGroupTiles<Dequant, w4a16::kNarrowTiles>(members, k, x, m, stream);
    RETURN_IF_LAUNCH_ERROR();
    return absl::OkStatus();
  }
  const W4A16GroupMember& alone = members[lone];
  TESSERA_RETURN_IF_ERROR(Launch(alone.weights->packed, DequantFor<Dequant>(*alone.weights, k),
                                 AlphaFor(*alone.weights), alone.n, k, x, m, alone.bias, alone.y,
                                 stream));
  std::array<W4A16GroupMember, kW4A16MaxGroup> rest;
  size_t count = 0;
  for (size_t i = 0; i < members.size(); ++i) {
    if (static_cast<int>(i) != lone) rest[count++] = members[i];
  }
  return LaunchGroup<Dequant>(absl::MakeConstSpan(rest.data(), count), k, x, m, stream);
}

template <typename Dequant>
int GroupLaunches(absl::Span<const int64_t> ns, int64_t m) {
  if (ns.empty()) return 0;
  const int lone = LoneMember<Dequant>(ns, m);
  if (lone < 0) return 1;
  std::array<int64_t, kW4A16MaxGroup> rest{};
  size_t count = 0;
  for (size_t i = 0; i < ns.size(); ++i) {
    if (static_cast<int>(i) != lone) rest[count++] = ns[i];
  }
  return 1 + GroupLaunches<Dequant>(absl::MakeConstSpan(rest.data(), count), m);
}

std::string ProblemName(const W4A16Problem& p) {
  return absl::StrCat("w4a16 ", FormatName(p.format), " [", p.n, " x ", p.k, "]");
}

// The shape and format rules, which hold on every arch. The message is built only on failure:
// this runs on every launch.
absl::Status CheckW4A16Shape(const W4A16Problem& p) {
  if (p.n <= 0 || p.k <= 0 || p.k % kW4A16KChunk != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(ProblemName(p), ": K must be a positive multiple of ", kW4A16KChunk));
  }
  if (p.format == W4Format::kInt4) {
    if (p.act_order) {
      return absl::UnimplementedError(
          absl::StrCat(ProblemName(p), ": act-order (g_idx) is not supported by the CUDA kernel"));
    }
    if (p.group_size <= 0 || p.group_size % 16 != 0 || p.k % p.group_size != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          ProblemName(p), ": group size ", p.group_size, " must be a multiple of 16 that divides K"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SupportsW4A16(const W4A16Problem& p, int sm) {
  const std::string what = ProblemName(p);
  if (sm < 80) {
    return absl::UnimplementedError(
        absl::StrCat(what, ": sm_", sm, " has no bf16 mma.sync (needs sm_80+)"));
  }
  if (!CanRunGenericKernels(sm)) {
    return absl::FailedPreconditionError(absl::StrCat(
        what, ": not compiled for sm_", sm, " (CMAKE_CUDA_ARCHITECTURES=", CompiledArchsString(),
        ")"));
  }
  return CheckW4A16Shape(p);
}

int W4A16BlockColumns(W4Format format, int64_t n, int64_t m) {
  switch (format) {
    case W4Format::kNvfp4: return BlockColumns<w4a16::Nvfp4Dequant>(n, m);
    case W4Format::kMxfp4: return BlockColumns<w4a16::Mxfp4Dequant>(n, m);
    case W4Format::kInt4: return BlockColumns<w4a16::Int4Dequant>(n, m);
  }
  return 8 * w4a16::kWideTiles;
}

namespace {

// W4A16Gemm's argument rules for one layer's weights.
absl::Status CheckW4A16Weights(const W4A16Weights& w, int64_t n, int64_t k) {
  // The shape rules only: the arch was checked by the selector, and a launch on an arch this
  // build has no code for fails with a CUDA error rather than running wrong code.
  TESSERA_RETURN_IF_ERROR(CheckW4A16Shape({w.format, n, k, w.group_size, false}));
  if (w.packed == nullptr) return absl::InvalidArgumentError("w4a16: null weight pointer");
  if (reinterpret_cast<uintptr_t>(w.packed) % 8 != 0) {
    return absl::InvalidArgumentError("w4a16: weights must be 8-byte aligned");
  }
  switch (w.format) {
    case W4Format::kNvfp4:
      if (w.block_scales == nullptr) return absl::InvalidArgumentError("nvfp4: no block scales");
      return absl::OkStatus();
    case W4Format::kMxfp4:
      if (w.block_scales == nullptr) return absl::InvalidArgumentError("mxfp4: no scales");
      return absl::OkStatus();
    case W4Format::kInt4:
      if (w.scales == nullptr || w.zeros == nullptr) {
        return absl::InvalidArgumentError("int4: no scales or zero points");
      }
      return absl::OkStatus();
  }
  return absl::InvalidArgumentError("w4a16: unknown format");
}

absl::Status CheckW4A16Rows(const uint16_t* x, int64_t m) {
  if (m < 0 || (m + w4a16::kBlockM - 1) / w4a16::kBlockM > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("w4a16: bad row count ", m));
  }
  if (x == nullptr) return absl::InvalidArgumentError("w4a16: null activation pointer");
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0) {
    return absl::InvalidArgumentError("w4a16: x must be 16-byte aligned");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status W4A16Gemm(const W4A16Weights& w, int64_t n, int64_t k, const uint16_t* x, int64_t m,
                       const float* bias, float* y, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckW4A16Weights(w, n, k));
  TESSERA_RETURN_IF_ERROR(CheckW4A16Rows(x, m));
  if (y == nullptr) return absl::InvalidArgumentError("w4a16: null output pointer");
  if (m == 0) return absl::OkStatus();
  const float alpha = AlphaFor(w);
  switch (w.format) {
    case W4Format::kNvfp4:
      return Launch(w.packed, DequantFor<w4a16::Nvfp4Dequant>(w, k), alpha, n, k, x, m, bias, y,
                    stream);
    case W4Format::kMxfp4:
      return Launch(w.packed, DequantFor<w4a16::Mxfp4Dequant>(w, k), alpha, n, k, x, m, bias, y,
                    stream);
    case W4Format::kInt4:
      return Launch(w.packed, DequantFor<w4a16::Int4Dequant>(w, k), alpha, n, k, x, m, bias, y,
                    stream);
  }
  return absl::InvalidArgumentError("w4a16: unknown format");
}

absl::Status W4A16GemmGroup(absl::Span<const W4A16GroupMember> members, int64_t k,
                            const uint16_t* x, int64_t m, cudaStream_t stream) {
  if (members.empty() || members.size() > static_cast<size_t>(kW4A16MaxGroup)) {
    return absl::InvalidArgumentError(
        absl::StrCat("w4a16 group: ", members.size(), " layers (1 to ", kW4A16MaxGroup, ")"));
  }
  for (size_t i = 0; i < members.size(); ++i) {
    const W4A16GroupMember& mem = members[i];
    if (mem.weights == nullptr || mem.y == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("w4a16 group member ", i, ": null weights or output"));
    }
    if (absl::Status s = CheckW4A16Weights(*mem.weights, mem.n, k); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat("w4a16 group member ", i, ": ", s.message()));
    }
    const W4A16Weights& first = *members[0].weights;
    if (mem.weights->format != first.format ||
        (first.format == W4Format::kInt4 && mem.weights->group_size != first.group_size)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "w4a16 group member ", i, ": different format or group size from member 0 (",
          FormatName(mem.weights->format), " g", mem.weights->group_size, " against ",
          FormatName(first.format), " g", first.group_size, ")"));
    }
  }
  TESSERA_RETURN_IF_ERROR(CheckW4A16Rows(x, m));
  if (m == 0) return absl::OkStatus();
  switch (members[0].weights->format) {
    case W4Format::kNvfp4: return LaunchGroup<w4a16::Nvfp4Dequant>(members, k, x, m, stream);
    case W4Format::kMxfp4: return LaunchGroup<w4a16::Mxfp4Dequant>(members, k, x, m, stream);
    case W4Format::kInt4: return LaunchGroup<w4a16::Int4Dequant>(members, k, x, m, stream);
  }
  return absl::InvalidArgumentError("w4a16: unknown format");
}

int W4A16GroupLaunches(W4Format format, absl::Span<const int64_t> ns, int64_t m) {
  if (ns.size() > static_cast<size_t>(kW4A16MaxGroup)) return -1;
  switch (format) {
    case W4Format::kNvfp4: return GroupLaunches<w4a16::Nvfp4Dequant>(ns, m);
    case W4Format::kMxfp4: return GroupLaunches<w4a16::Mxfp4Dequant>(ns, m);
    case W4Format::kInt4: return GroupLaunches<w4a16::Int4Dequant>(ns, m);
  }
  return -1;
}

absl::Status DequantizeW4ToBf16(const W4A16Weights& w, int64_t n, int64_t k, uint16_t* out,
                                cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckW4A16Shape({w.format, n, k, w.group_size, false}));
  if (w.packed == nullptr || out == nullptr) {
    return absl::InvalidArgumentError("w4a16 dequantize: null weights or output");
  }
  if (reinterpret_cast<uintptr_t>(out) % 4 != 0) {
    return absl::InvalidArgumentError("w4a16 dequantize: output must be 4-byte aligned");
  }
  const int64_t bytes = n * (k / 2);
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>((bytes + 255) / 256, 65535));
  uint32_t* out32 = reinterpret_cast<uint32_t*>(out);
  switch (w.format) {
    case W4Format::kNvfp4:
      if (w.block_scales == nullptr) return absl::InvalidArgumentError("nvfp4: no block scales");
      w4a16::DequantizeKernel<<<blocks, 256, 0, stream>>>(
          w.packed, w4a16::Nvfp4Dequant{w.block_scales, k}, n, k, out32);
      break;
    case W4Format::kMxfp4:
      if (w.block_scales == nullptr) return absl::InvalidArgumentError("mxfp4: no scales");
      w4a16::DequantizeKernel<<<blocks, 256, 0, stream>>>(
          w.packed, w4a16::Mxfp4Dequant{w.block_scales, k}, n, k, out32);
      break;
    case W4Format::kInt4:
      if (w.scales == nullptr || w.zeros == nullptr) {
        return absl::InvalidArgumentError("int4: no scales or zero points");
      }
      w4a16::DequantizeKernel<<<blocks, 256, 0, stream>>>(
          w.packed, w4a16::Int4Dequant{w.scales, w.zeros, k / w.group_size, w.group_size}, n, k,
          out32);
      break;
  }
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace tessera::kernels::cuda
