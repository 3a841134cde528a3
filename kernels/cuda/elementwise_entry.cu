// Entry point of the elementwise kernel family: validation and launches. All kernels are
// generic (no arch cascade): they are memory-bound, and the sm_80 code is what every later arch
// runs. Contraction into FMA is disabled where the CPU reference's rounding order matters
// (__fmul_rn / __fadd_rn), so the residual stream does not drift from the CPU path.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cuda {
namespace {

constexpr int kThreads = 256;

unsigned GridFor(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

__global__ void EmbeddingKernel(const void* __restrict__ table, bool bf16, int64_t vocab,
                                int64_t hidden, const int32_t* __restrict__ tokens,
                                float* __restrict__ out) {
  const int64_t r = blockIdx.x;
  const int32_t tok = tokens[r];
  for (int64_t i = threadIdx.x; i < hidden; i += blockDim.x) {
    float v;
    if (tok < 0 || tok >= vocab) {
      v = __int_as_float(0x7FC00000);
    } else if (bf16) {
      v = numeric::Bf16ToFloat(static_cast<const uint16_t*>(table)[tok * hidden + i]);
    } else {
      v = static_cast<const float*>(table)[tok * hidden + i];
    }
    out[r * hidden + i] = v;
  }
}

// One row per block, kPer elements per thread held in registers between the two passes. With
// `delta`, the row is x + delta (the residual add, rounded once as AddInPlace does), also stored
// to `sum_out`: the decoder saves the add's launch per norm. The squares are summed in the loop
// version's order: thread i adds elements i, i + 256, ... in double.
// Every load (x, delta, weight) is issued before the first store: `sum_out` is `x` itself in
// AddRmsNorm, so neither the compiler nor ptxas may move a load of x or delta past a store, and
// loads interleaved with the stores made one round trip to memory per element (ncu on an H100:
// 9.3 us for a 2048-wide row, most of a decode step's non-GEMM time).
template <int kPer>
__global__ void __launch_bounds__(kThreads)
    RmsNormRegsKernel(const float* x, const float* delta, float* sum_out,
                      const float* __restrict__ weight, int64_t n, float eps, float* out,
                      uint16_t* __restrict__ out_bf16) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * n;
  float v[kPer];
  float w[kPer];
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kThreads;
    v[j] = i < n ? x[base + i] : 0.0f;
    w[j] = i < n ? weight[i] : 0.0f;
  }
  if (delta != nullptr) {
    float d[kPer];
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kThreads;
      d[j] = i < n ? delta[base + i] : 0.0f;
    }
#pragma unroll
    for (int j = 0; j < kPer; ++j) {
      const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kThreads;
      v[j] = __fadd_rn(v[j], d[j]);
      if (i < n) sum_out[base + i] = v[j];
    }
  }
  double ss = 0;  // double, like the CPU reference, so the order of the sum does not matter
#pragma unroll
  for (int j = 0; j < kPer; ++j) ss += static_cast<double>(v[j]) * static_cast<double>(v[j]);
  ss = BlockSum(ss);
  const float mean = static_cast<float>(ss / static_cast<double>(n));
  const float inv = 1.0f / sqrtf(mean + eps);
#pragma unroll
  for (int j = 0; j < kPer; ++j) {
    const int64_t i = threadIdx.x + static_cast<int64_t>(j) * kThreads;
    if (i < n) {
      const float o = __fmul_rn(w[j], __fmul_rn(v[j], inv));
      out[base + i] = o;
      if (out_bf16 != nullptr) out_bf16[base + i] = numeric::FloatToBf16(o);
    }
  }
}

// Rows wider than the register version holds (kMaxRegsPerThread * kThreads).
__global__ void RmsNormKernel(const float* x, const float* __restrict__ weight, int64_t n,
                              float eps, float* out, uint16_t* __restrict__ out_bf16) {
  const int64_t r = blockIdx.x;
  const float* xr = x + r * n;
  double ss = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    ss += static_cast<double>(xr[i]) * static_cast<double>(xr[i]);
  }
  ss = BlockSum(ss);
  const float mean = static_cast<float>(ss / static_cast<double>(n));
  const float inv = 1.0f / sqrtf(mean + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const float v = __fmul_rn(weight[i], __fmul_rn(xr[i], inv));
    out[r * n + i] = v;
    if (out_bf16 != nullptr) out_bf16[r * n + i] = numeric::FloatToBf16(v);
  }
}

// blockIdx.y picks the tensor: 0 is x (x_heads), 1 is x2 (x2_heads), so the decoder rotates q and
// k in one launch. blockIdx.z splits a token's pairs over blocks: with one block per token a
// decode step's 1024 q pairs took four dependent load/store rounds in a single block.
__global__ void RopeKernel(float* __restrict__ x, int64_t x_heads, float* __restrict__ x2,
                           int64_t x2_heads, int64_t head_dim, int64_t rope_dim,
                           const int32_t* __restrict__ positions,
                           const float* __restrict__ inv_freq, bool interleaved) {
  const int64_t t = blockIdx.x;
  const int64_t heads = blockIdx.y == 0 ? x_heads : x2_heads;
  float* const base = blockIdx.y == 0 ? x : x2;
  const int64_t half = rope_dim / 2;
  const float pos = static_cast<float>(positions[t]);
  for (int64_t j = static_cast<int64_t>(blockIdx.z) * blockDim.x + threadIdx.x; j < heads * half;
       j += static_cast<int64_t>(gridDim.z) * blockDim.x) {
    const int64_t h = j / half;
    const int64_t i = j % half;
    const float angle = __fmul_rn(pos, inv_freq[i]);
    float s, c;
    sincosf(angle, &s, &c);
    float* v = base + (t * heads + h) * head_dim;
    const int64_t a = interleaved ? 2 * i : i;
    const int64_t b = interleaved ? 2 * i + 1 : i + half;
    const float x0 = v[a], x1 = v[b];
    v[a] = __fadd_rn(__fmul_rn(x0, c), -__fmul_rn(x1, s));
    v[b] = __fadd_rn(__fmul_rn(x1, c), __fmul_rn(x0, s));
  }
}

__global__ void SwiGluKernel(const float* __restrict__ gate, const float* __restrict__ up,
                             int64_t n, float* __restrict__ out, uint16_t* __restrict__ out_bf16) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float g = gate[i];
  const float v = __fmul_rn(g / (1.0f + expf(-g)), up[i]);
  out[i] = v;
  if (out_bf16 != nullptr) out_bf16[i] = numeric::FloatToBf16(v);
}

__global__ void AddKernel(float* __restrict__ y, const float* __restrict__ x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) y[i] += x[i];
}

__global__ void ToBf16Kernel(const float* __restrict__ x, int64_t n, uint16_t* __restrict__ out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) out[i] = numeric::FloatToBf16(x[i]);
}

absl::Status CheckCount(int64_t n, const char* what) {
  if (n < 0 || n / kThreads >= INT32_MAX) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": bad element count ", n));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status Embedding(const void* table, TableDtype dtype, int64_t vocab, int64_t hidden,
                       const int32_t* tokens, int64_t rows, float* out, cudaStream_t stream) {
  if (vocab <= 0 || hidden <= 0 || rows < 0 || rows > INT32_MAX) {
    return absl::InvalidArgumentError("Embedding: bad shape");
  }
  if (rows == 0) return absl::OkStatus();
  EmbeddingKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      table, dtype == TableDtype::kBf16, vocab, hidden, tokens, out);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

namespace {

inline constexpr int kMaxRegsPerThread = 32;

template <int kPer>
void LaunchRmsNormRegs(const float* x, const float* delta, float* sum_out, const float* weight,
                       int64_t rows, int64_t n, float eps, float* out, uint16_t* out_bf16,
                       cudaStream_t stream) {
  RmsNormRegsKernel<kPer><<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(
      x, delta, sum_out, weight, n, eps, out, out_bf16);
}

// The register version for rows of at most kMaxRegsPerThread * kThreads; false for wider rows.
bool RmsNormInRegisters(const float* x, const float* delta, float* sum_out, const float* weight,
                        int64_t rows, int64_t n, float eps, float* out, uint16_t* out_bf16,
                        cudaStream_t stream) {
  const int64_t per = (n + kThreads - 1) / kThreads;
  if (per <= 2) {
    LaunchRmsNormRegs<2>(x, delta, sum_out, weight, rows, n, eps, out, out_bf16, stream);
  } else if (per <= 4) {
    LaunchRmsNormRegs<4>(x, delta, sum_out, weight, rows, n, eps, out, out_bf16, stream);
  } else if (per <= 8) {
    LaunchRmsNormRegs<8>(x, delta, sum_out, weight, rows, n, eps, out, out_bf16, stream);
  } else if (per <= 16) {
    LaunchRmsNormRegs<16>(x, delta, sum_out, weight, rows, n, eps, out, out_bf16, stream);
  } else if (per <= kMaxRegsPerThread) {
    LaunchRmsNormRegs<kMaxRegsPerThread>(x, delta, sum_out, weight, rows, n, eps, out, out_bf16,
                                         stream);
  } else {
    return false;
  }
  return true;
}

}  // namespace

absl::Status RmsNorm(const float* x, const float* weight, int64_t rows, int64_t n, float eps,
                     float* out, uint16_t* out_bf16, cudaStream_t stream) {
  if (rows < 0 || rows > INT32_MAX || n <= 0) return absl::InvalidArgumentError("RmsNorm: bad shape");
  if (rows == 0) return absl::OkStatus();
  if (!RmsNormInRegisters(x, nullptr, nullptr, weight, rows, n, eps, out, out_bf16, stream)) {
    RmsNormKernel<<<static_cast<unsigned>(rows), kThreads, 0, stream>>>(x, weight, n, eps, out,
                                                                        out_bf16);
  }
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status AddRmsNorm(float* h, const float* delta, const float* weight, int64_t rows,
                        int64_t n, float eps, float* out, uint16_t* out_bf16,
                        cudaStream_t stream) {
  if (rows < 0 || rows > INT32_MAX || n <= 0) {
    return absl::InvalidArgumentError("AddRmsNorm: bad shape");
  }
  if (rows == 0) return absl::OkStatus();
  if (!RmsNormInRegisters(h, delta, h, weight, rows, n, eps, out, out_bf16, stream)) {
    TESSERA_RETURN_IF_ERROR(AddInPlace(h, delta, rows * n, stream));
    return RmsNorm(h, weight, rows, n, eps, out, out_bf16, stream);
  }
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status RopeQk(float* q, int64_t q_heads, float* k, int64_t k_heads, int64_t tokens,
                    int64_t head_dim, int64_t rope_dim, const int32_t* positions,
                    const float* inv_freq, RopePairing pairing, cudaStream_t stream) {
  if (tokens < 0 || tokens > INT32_MAX || q_heads <= 0 || k_heads < 0 || rope_dim <= 0 ||
      rope_dim % 2 != 0 || rope_dim > head_dim || (k == nullptr) != (k_heads == 0)) {
    return absl::InvalidArgumentError(absl::StrCat("Rope: bad shape (head_dim ", head_dim,
                                                   ", rope_dim ", rope_dim, ", k heads ",
                                                   k_heads, k == nullptr ? ", no k" : "", ")"));
  }
  if (tokens == 0) return absl::OkStatus();
  // Enough blocks for any real model's decode (Llama-3-70B's q: 64 heads x 64 pairs = 16 blocks)
  // while a long prefill's grid stays tokens x 2 x at most 64; past that threads stride.
  constexpr int64_t kMaxPairBlocks = 64;
  const int64_t pairs = std::max(q_heads, k_heads) * (rope_dim / 2);
  const int64_t pair_blocks = std::min(kMaxPairBlocks, (pairs + kThreads - 1) / kThreads);
  const dim3 grid(static_cast<unsigned>(tokens), k == nullptr ? 1u : 2u,
                  static_cast<unsigned>(pair_blocks));
  RopeKernel<<<grid, kThreads, 0, stream>>>(q, q_heads, k, k_heads, head_dim, rope_dim, positions,
                                            inv_freq, pairing == RopePairing::kInterleaved);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status Rope(float* x, int64_t tokens, int64_t heads, int64_t head_dim, int64_t rope_dim,
                  const int32_t* positions, const float* inv_freq, RopePairing pairing,
                  cudaStream_t stream) {
  return RopeQk(x, heads, nullptr, 0, tokens, head_dim, rope_dim, positions, inv_freq, pairing,
                stream);
}

absl::Status SwiGlu(const float* gate, const float* up, int64_t n, float* out, uint16_t* out_bf16,
                    cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckCount(n, "SwiGlu"));
  if (n == 0) return absl::OkStatus();
  SwiGluKernel<<<GridFor(n), kThreads, 0, stream>>>(gate, up, n, out, out_bf16);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status AddInPlace(float* y, const float* x, int64_t n, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckCount(n, "AddInPlace"));
  if (n == 0) return absl::OkStatus();
  AddKernel<<<GridFor(n), kThreads, 0, stream>>>(y, x, n);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status F32ToBf16(const float* x, int64_t n, uint16_t* out, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckCount(n, "F32ToBf16"));
  if (n == 0) return absl::OkStatus();
  ToBf16Kernel<<<GridFor(n), kThreads, 0, stream>>>(x, n, out);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace tessera::kernels::cuda
