// Entry point of the paged-attention kernel family: validation and launches of the KV append
// and the attention kernel. Generic code for every arch (f32 CUDA cores; decode attention is
// bound by reading the cache, not by arithmetic).
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/reduce.cuh"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cuda {
namespace {

constexpr int kWarps = 4;
constexpr int kPerLane = kMaxAttentionHeadDim / kWarpSize;  // 8 registers of q and of acc

__device__ __forceinline__ float* TokenRow(const DevicePagedKv& kv, const AttentionBatch& b,
                                           int32_t seq, int64_t pos, int64_t kv_head, bool v) {
  const int32_t block = b.block_tables[seq * b.max_blocks_per_seq + pos / kv.block_tokens];
  return kv.base + block * kv.block_stride + kv.layer_offset + (v ? kv.v_offset : 0) +
         ((pos % kv.block_tokens) * kv.kv_heads + kv_head) * kv.head_dim;
}

__global__ void AppendKvKernel(const float* __restrict__ k, const float* __restrict__ v,
                               DevicePagedKv kv, AttentionBatch batch) {
  const int64_t t = blockIdx.x;
  const int32_t seq = batch.token_seq[t];
  const int64_t pos = batch.positions[t];
  const int64_t row = kv.kv_heads * kv.head_dim;
  float* k_dst = TokenRow(kv, batch, seq, pos, 0, false);
  float* v_dst = TokenRow(kv, batch, seq, pos, 0, true);
  for (int64_t i = threadIdx.x; i < row; i += blockDim.x) {
    k_dst[i] = k[t * row + i];
    v_dst[i] = v[t * row + i];
  }
}

// Grid (heads, tokens), kWarps warps. Lane l holds dims l, l + 32, ... (< head_dim) of q and of
// the output; with head_dim < 32 (small test models) some lanes hold nothing and add 0.
__global__ void __launch_bounds__(kWarps * kWarpSize)
    PagedAttentionKernel(const float* __restrict__ q, int64_t heads, DevicePagedKv kv,
                         AttentionBatch batch, float scale, float* __restrict__ out,
                         uint16_t* __restrict__ out_bf16) {
  __shared__ float warp_max[kWarps];
  __shared__ float warp_sum[kWarps];
  __shared__ float warp_acc[kWarps][kMaxAttentionHeadDim];
  const int64_t h = blockIdx.x;
  const int64_t t = blockIdx.y;
  const int lane = threadIdx.x % kWarpSize;
  const int warp = threadIdx.x / kWarpSize;
  const int64_t d = kv.head_dim;
  const int64_t kv_head = h / (heads / kv.kv_heads);
  const int32_t seq = batch.token_seq[t];
  const int64_t len = batch.context_lens[t];
  const float* qh = q + (t * heads + h) * d;

  float qr[kPerLane];
  float acc[kPerLane];
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    qr[j] = lane + kWarpSize * j < d ? qh[lane + kWarpSize * j] : 0.0f;
    acc[j] = 0.0f;
  }
  float m = -INFINITY;  // running max of this warp's scores
  float l = 0.0f;       // running sum of exp(score - m)
  for (int64_t pos = warp; pos < len; pos += kWarps) {
    const float* kr = TokenRow(kv, batch, seq, pos, kv_head, false);
    const float* vr = TokenRow(kv, batch, seq, pos, kv_head, true);
    float dot = 0.0f;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      if (lane + kWarpSize * j < d) dot += qr[j] * kr[lane + kWarpSize * j];
    }
    const float s = WarpSum(dot) * scale;
    const float m_new = fmaxf(m, s);
    const float correction = expf(m - m_new);  // 0 on the first position (m = -inf)
    const float p = expf(s - m_new);
    l = l * correction + p;
#pragma unroll
    for (int j = 0; j < kPerLane; ++j) {
      if (lane + kWarpSize * j < d) acc[j] = acc[j] * correction + p * vr[lane + kWarpSize * j];
    }
    m = m_new;
  }
  if (lane == 0) {
    warp_max[warp] = m;
    warp_sum[warp] = l;
  }
#pragma unroll
  for (int j = 0; j < kPerLane; ++j) {
    if (lane + kWarpSize * j < d) warp_acc[warp][lane + kWarpSize * j] = acc[j];
  }
  __syncthreads();
  // Merge the warps: out = Σ_w acc_w e^(m_w - M) / Σ_w l_w e^(m_w - M).
  float global_max = -INFINITY;
  for (int w = 0; w < kWarps; ++w) global_max = fmaxf(global_max, warp_max[w]);
  float denom = 0.0f;
  for (int w = 0; w < kWarps; ++w) {
    if (warp_sum[w] > 0.0f) denom += warp_sum[w] * expf(warp_max[w] - global_max);
  }
  float* oh = out + (t * heads + h) * d;
  for (int64_t i = threadIdx.x; i < d; i += blockDim.x) {
    float num = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      if (warp_sum[w] > 0.0f) num += warp_acc[w][i] * expf(warp_max[w] - global_max);
    }
    const float o = denom > 0.0f ? num / denom : 0.0f;
    oh[i] = o;
    if (out_bf16 != nullptr) out_bf16[(t * heads + h) * d + i] = numeric::FloatToBf16(o);
  }
}

absl::Status CheckKv(const DevicePagedKv& kv, const AttentionBatch& batch, int64_t tokens) {
  if (kv.base == nullptr || kv.block_tokens <= 0 || kv.kv_heads <= 0 || kv.head_dim <= 0) {
    return absl::InvalidArgumentError("paged KV view is not set up");
  }
  if (batch.block_tables == nullptr || batch.token_seq == nullptr || batch.max_blocks_per_seq <= 0) {
    return absl::InvalidArgumentError("attention batch is not set up");
  }
  if (tokens < 0 || tokens > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("attention: ", tokens, " tokens (max 65535)"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status AppendKv(const float* k, const float* v, int64_t tokens, const DevicePagedKv& kv,
                      const AttentionBatch& batch, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckKv(kv, batch, tokens));
  if (batch.positions == nullptr) return absl::InvalidArgumentError("AppendKv needs positions");
  if (tokens == 0) return absl::OkStatus();
  AppendKvKernel<<<static_cast<unsigned>(tokens), 128, 0, stream>>>(k, v, kv, batch);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

absl::Status PagedAttention(const float* q, int64_t tokens, int64_t heads,
                            const DevicePagedKv& kv, const AttentionBatch& batch, float scale,
                            float* out, uint16_t* out_bf16, cudaStream_t stream) {
  TESSERA_RETURN_IF_ERROR(CheckKv(kv, batch, tokens));
  if (batch.context_lens == nullptr) {
    return absl::InvalidArgumentError("PagedAttention needs context_lens");
  }
  if (kv.head_dim > kMaxAttentionHeadDim) {
    return absl::InvalidArgumentError(
        absl::StrCat("PagedAttention: head_dim ", kv.head_dim, " must be <= 256"));
  }
  if (heads <= 0 || heads % kv.kv_heads != 0 || heads > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("PagedAttention: ", heads, " heads over ", kv.kv_heads, " KV heads"));
  }
  if (tokens == 0) return absl::OkStatus();
  const dim3 grid(static_cast<unsigned>(heads), static_cast<unsigned>(tokens));
  PagedAttentionKernel<<<grid, kWarps * kWarpSize, 0, stream>>>(q, heads, kv, batch, scale, out,
                                                                   out_bf16);
  RETURN_IF_LAUNCH_ERROR();
  return absl::OkStatus();
}

}  // namespace tessera::kernels::cuda
