// Rotary position embedding on the CPU, in both pairings a checkpoint can need: rotate-half
// (HF/NeoX: dims i and i + rope_dim/2) and interleaved (GGUF llama: dims 2i and 2i + 1). The
// caller supplies the per-pair inverse frequencies (already scaled for llama3/linear rope).
#ifndef TESSERA_KERNELS_CPU_ROPE_H_
#define TESSERA_KERNELS_CPU_ROPE_H_

#include <cstdint>

namespace tessera::kernels::cpu {

enum class RopePairing { kRotateHalf, kInterleaved };

// cos_out[i], sin_out[i] = cos, sin of the f32 angle position · inv_freq[i] for i < half, as
// transformers computes them: the one place the angles come from (ApplyRope, the decoder's
// vectorized rotation).
void RopeCosSin(int64_t position, const float* inv_freq, int64_t half, float* cos_out,
                float* sin_out);

// Rotates the first `rope_dim` dims of each of `heads` heads of `x` ([heads, head_dim]) in place
// for token position `position`; `inv_freq` has rope_dim / 2 entries.
void ApplyRope(float* x, int64_t heads, int64_t head_dim, int64_t rope_dim, int64_t position,
               const float* inv_freq, RopePairing pairing);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_ROPE_H_
