#include "kernels/cpu/rope.h"

#include <cmath>
#include <vector>

namespace tessera::kernels::cpu {

void RopeCosSin(int64_t position, const float* inv_freq, int64_t half, float* cos_out,
                float* sin_out) {
  for (int64_t i = 0; i < half; ++i) {
    const float angle = static_cast<float>(position) * inv_freq[i];
    cos_out[i] = std::cos(angle);
    sin_out[i] = std::sin(angle);
  }
}

void ApplyRope(float* x, int64_t heads, int64_t head_dim, int64_t rope_dim, int64_t position,
               const float* inv_freq, RopePairing pairing) {
  const int64_t half = rope_dim / 2;
  float cos_buf[512], sin_buf[512];
  std::vector<float> big_cos, big_sin;
  float* c = cos_buf;
  float* s = sin_buf;
  if (half > 512) {
    big_cos.resize(half);
    big_sin.resize(half);
    c = big_cos.data();
    s = big_sin.data();
  }
  RopeCosSin(position, inv_freq, half, c, s);
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const int64_t a = pairing == RopePairing::kRotateHalf ? i : 2 * i;
      const int64_t b = pairing == RopePairing::kRotateHalf ? i + half : 2 * i + 1;
      const float x0 = v[a], x1 = v[b];
      v[a] = x0 * c[i] - x1 * s[i];
      v[b] = x1 * c[i] + x0 * s[i];
    }
  }
}

}  // namespace tessera::kernels::cpu
