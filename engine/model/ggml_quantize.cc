// ggml's reference quantizers, ported statement for statement (see ggml_quantize.h).
#include "engine/model/ggml_quantize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/numeric/half.h"

namespace tessera::model {
namespace {

void PutHalf(uint8_t* p, float v) {
  const uint16_t h = numeric::FloatToHalf(v);
  std::memcpy(p, &h, 2);
}

}  // namespace

void QuantizeQ8_0(const float* x, int64_t k, uint8_t* out) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32, out += 34) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    PutHalf(out, d);
    for (int j = 0; j < 32; ++j)
      out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(std::roundf(x[j] * id)));
  }
}

void QuantizeQ4_0(const float* x, int64_t k, uint8_t* out) {
  for (int64_t b = 0; b < k / 32; ++b, x += 32, out += 18) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    PutHalf(out, d);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j] * id + 8.5f)));
      const int q1 = std::min(15, static_cast<int>(static_cast<int8_t>(x[j + 16] * id + 8.5f)));
      out[2 + j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void QuantizeMxfp4(const float* x, int64_t k, uint8_t* out) {
  static constexpr float kValues[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
  auto best_index = [](float v, float d) {  // best_index_mxfp4: the first of equal errors
    int best = 0;
    float best_err = std::fabs(kValues[0] * d - v);
    for (int i = 1; i < 16; ++i) {
      const float err = std::fabs(kValues[i] * d - v);
      if (err < best_err) {
        best = i;
        best_err = err;
      }
    }
    return best;
  };
  for (int64_t b = 0; b < k / 32; ++b, x += 32, out += 17) {
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[j]));
    const uint8_t e = amax > 0.0f ? static_cast<uint8_t>(std::floor(std::log2(amax)) - 2 + 127) : 0;
    // GGML_E8M0_TO_FP32_HALF: 2^(e - 128), e = 0 and 1 as the subnormals 2^-128 and 2^-127.
    const float d = std::ldexp(1.0f, static_cast<int>(e) - 128);
    out[0] = e;
    for (int j = 0; j < 16; ++j) {
      out[1 + j] = static_cast<uint8_t>(best_index(x[j], d) | (best_index(x[j + 16], d) << 4));
    }
  }
}

namespace {

// ggml-quants.c nearest_int: round half to even through the float mantissa (valid for
// |fval| <= 2^22), kept bit-exact so the codes match llama.cpp's on ties.
int NearestInt(float fval) {
  const float val = fval + 12582912.0f;  // 1.5 * 2^23
  int32_t i;
  std::memcpy(&i, &val, sizeof(i));
  return (i & 0x007fffff) - 0x00400000;
}

// ggml-quants.c make_qkx2_quants: an affine code x ~ scale * L + min (min <= 0, L in 0..nmax)
// for n values, searching nstep + 1 candidate inverse scales around nmax / (max - min) and
// refitting scale and min by weighted least squares for each. Returns scale, stores -min.
float MakeQkx2Quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                     float* the_min, uint8_t* Laux, float rmin, float rdelta, int nstep,
                     bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.0f;
  }
  float iscale = nmax / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = NearestInt(iscale * (x[i] - min));
    L[i] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  if (nstep < 1) {
    *the_min = -min;
    return scale;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = NearestInt(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = static_cast<uint8_t>(l);
      const float w = weights[i];
      sum_l += w * l;
      sum_l2 += w * l * l;
      sum_xl += w * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// ggml-quants.c get_scale_min_k4: sub-block j's 6-bit scale and min from the 12 packed bytes.
void GetScaleMinK4(int j, const uint8_t* q, uint8_t* d, uint8_t* m) {
  if (j < 4) {
    *d = q[j] & 63;
    *m = q[j + 4] & 63;
  } else {
    *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    *m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

float HalfRoundTrip(uint8_t* p, float v) {
  PutHalf(p, v);
  uint16_t h;
  std::memcpy(&h, p, 2);
  return numeric::HalfToFloat(h);
}

// quantize_row_q4_K_ref and quantize_row_q5_K_ref (llama.cpp's ggml/src/ggml-quants.c, the path
// llama-quantize takes without an importance matrix) share everything but the code width and the
// search constants: a port of both, statement for statement, to give llama.cpp's codes (not
// checked byte for byte against a llama.cpp build; gguf-py decodes these blocks as we do).
// Layouts (ggml-common.h): block_q4_K f16 d, f16 dmin, u8 scales[12], u8 qs[128] (144 bytes);
// block_q5_K the same then u8 qh[32] before u8 qs[128] (176 bytes).
void QuantizeAffineK(const float* x, int64_t k, uint8_t* out, bool five_bits) {
  const int nmax = five_bits ? 31 : 15;
  const int64_t block_bytes = five_bits ? 176 : 144;
  uint8_t L[256], Laux[32];
  float weights[32], mins[8], scales[8];
  for (int64_t b = 0; b < k / 256; ++b, x += 256, out += block_bytes) {
    uint8_t* sc_bytes = out + 4;
    float max_scale = 0;  // the min is subtracted, so scales are never negative
    float max_min = 0;
    for (int j = 0; j < 8; ++j) {
      float sum_x2 = 0;
      for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
      const float av_x = std::sqrt(sum_x2 / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = MakeQkx2Quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux,
                                 five_bits ? -0.5f : -1.0f, 0.1f, five_bits ? 15 : 20, false);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    std::memset(sc_bytes, 0, 12);
    for (int j = 0; j < 8; ++j) {
      // uint8_t truncation before the clamp, exactly as ggml does it.
      const auto ls =
          std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_scale * scales[j])));
      const auto lm = std::min<uint8_t>(63, static_cast<uint8_t>(NearestInt(inv_min * mins[j])));
      if (j < 4) {
        sc_bytes[j] = ls;
        sc_bytes[j + 4] = lm;
      } else {
        sc_bytes[j + 4] = (ls & 0xF) | ((lm & 0xF) << 4);
        sc_bytes[j - 4] |= ((ls >> 4) << 6);
        sc_bytes[j - 0] |= ((lm >> 4) << 6);
      }
    }
    // The codes are re-fitted against the f16-rounded super-block scales that dequantization sees.
    const float d_all = HalfRoundTrip(out, max_scale / 63.0f);
    const float dmin_all = HalfRoundTrip(out + 2, max_min / 63.0f);
    for (int j = 0; j < 8; ++j) {
      uint8_t sc, m;
      GetScaleMinK4(j, sc_bytes, &sc, &m);
      const float d = d_all * sc;
      if (!d) continue;
      const float dm = dmin_all * m;
      for (int ii = 0; ii < 32; ++ii) {
        const int l = NearestInt((x[32 * j + ii] + dm) / d);
        L[32 * j + ii] = static_cast<uint8_t>(std::max(0, std::min(nmax, l)));
      }
    }
    // Chunk c of 64 values: low nibbles hold values 0..31, high nibbles 32..63; Q5_K's fifth bits
    // go to qh, bit 2c for the low half of chunk c and 2c + 1 for the high half.
    uint8_t* qh = five_bits ? out + 16 : nullptr;  // Q4_K codes never exceed 15
    uint8_t* qs = out + (five_bits ? 48 : 16);
    if (five_bits) std::memset(qh, 0, 32);
    uint8_t m1 = 1, m2 = 2;
    for (int j = 0; j < 256; j += 64, qs += 32) {
      for (int l = 0; l < 32; ++l) {
        int l1 = L[j + l], l2 = L[j + l + 32];
        if (l1 > 15) {
          l1 -= 16;
          qh[l] |= m1;
        }
        if (l2 > 15) {
          l2 -= 16;
          qh[l] |= m2;
        }
        qs[l] = static_cast<uint8_t>(l1 | (l2 << 4));
      }
      m1 = static_cast<uint8_t>(m1 << 2);
      m2 = static_cast<uint8_t>(m2 << 2);
    }
  }
}

}  // namespace

void QuantizeQ4_K(const float* x, int64_t k, uint8_t* out) { QuantizeAffineK(x, k, out, false); }

void QuantizeQ5_K(const float* x, int64_t k, uint8_t* out) { QuantizeAffineK(x, k, out, true); }

namespace {

constexpr float kGroupMaxEps = 1e-15f;  // ggml-quants.c GROUP_MAX_EPS

// ggml-quants.c make_qx_quants with rmse_type 1 and no importance weights (what
// quantize_row_q6_K_ref passes): a symmetric code x ~ scale * (L - nmax), L in 0..2·nmax − 1,
// trying 19 inverse scales around nmax / max and keeping the best x²-weighted least-squares fit.
float MakeQxQuants(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  float iscale = -nmax / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = std::max(-nmax, std::min(nmax - 1, NearestInt(iscale * x[i])));
    L[i] = static_cast<int8_t>(l + nmax);
    const float w = x[i] * x[i];
    sumlx += w * x[i] * l;
    suml2 += w * l * l;
  }
  float scale = suml2 ? sumlx / suml2 : 0.0f;
  float best = scale * sumlx;
  for (int is = -9; is <= 9; ++is) {
    if (is == 0) continue;
    iscale = -(nmax + 0.1f * is) / max;
    sumlx = suml2 = 0;
    for (int i = 0; i < n; ++i) {
      const int l = std::max(-nmax, std::min(nmax - 1, NearestInt(iscale * x[i])));
      const float w = x[i] * x[i];
      sumlx += w * x[i] * l;
      suml2 += w * l * l;
    }
    if (suml2 > 0 && sumlx * sumlx > best * suml2) {
      for (int i = 0; i < n; ++i) {
        L[i] = static_cast<int8_t>(nmax +
                                   std::max(-nmax, std::min(nmax - 1, NearestInt(iscale * x[i]))));
      }
      scale = sumlx / suml2;
      best = scale * sumlx;
    }
  }
  return scale;
}

}  // namespace

void QuantizeQ6_K(const float* x, int64_t k, uint8_t* out) {
  // Block layout (ggml-common.h block_q6_K): u8 ql[128], u8 qh[64], i8 scales[16], f16 d.
  int8_t L[256];
  float scales[16];
  for (int64_t b = 0; b < k / 256; ++b, x += 256, out += 210) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < 16; ++ib) {
      scales[ib] = MakeQxQuants(16, 32, x + 16 * ib, L + 16 * ib);
      if (std::fabs(scales[ib]) > max_abs_scale) {
        max_abs_scale = std::fabs(scales[ib]);
        max_scale = scales[ib];
      }
    }
    std::memset(out, 0, 210);
    if (max_abs_scale < kGroupMaxEps) continue;  // d = 0: an all-zero block
    const float iscale = -128.0f / max_scale;
    const float d = HalfRoundTrip(out + 208, 1 / iscale);
    auto* sc = reinterpret_cast<int8_t*>(out + 192);
    for (int ib = 0; ib < 16; ++ib) {
      sc[ib] = static_cast<int8_t>(std::min(127, NearestInt(iscale * scales[ib])));
    }
    for (int j = 0; j < 16; ++j) {
      const float dj = d * sc[j];
      if (!dj) continue;
      for (int ii = 0; ii < 16; ++ii) {
        const int l = std::max(-32, std::min(31, NearestInt(x[16 * j + ii] / dj)));
        L[16 * j + ii] = static_cast<int8_t>(l + 32);
      }
    }
    uint8_t* ql = out;
    uint8_t* qh = out + 128;
    for (int j = 0; j < 256; j += 128, ql += 64, qh += 32) {
      for (int l = 0; l < 32; ++l) {
        const int q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
        const int q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
        ql[l] = static_cast<uint8_t>(q1 | (q3 << 4));
        ql[l + 32] = static_cast<uint8_t>(q2 | (q4 << 4));
        qh[l] = static_cast<uint8_t>((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                     ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
      }
    }
  }
}

}  // namespace tessera::model
