#include "kernels/cpu/ggml_kquants_as_q6k.h"

#include <cstring>

#include "kernels/cpu/ggml_dequant.h"
#include "kernels/numeric/half.h"

namespace tessera::kernels::cpu {
namespace {

// One Q6_K block from codes u in [0, 63] (element order), int8 scales per 16 and the f16 d bytes.
// Q6_K (quant-formats.md §11.3): per half h of 128, element 32c + l (c = 0..3) has its low nibble
// in ql[64h + l + 32·(c % 2)] (low nibble for c < 2, high for c ≥ 2) and its top two bits in bits
// 2c..2c+1 of qh[32h + l].
void PutQ6K(const uint8_t* u, const int8_t* scales, const uint8_t* d, uint8_t* dst) {
  uint8_t* ql = dst;
  uint8_t* qh = dst + 128;
  std::memset(dst, 0, 192);
  for (int e = 0; e < 256; ++e) {
    const int h = e / 128, c = (e / 32) % 4, l = e % 32;
    uint8_t& low = ql[64 * h + l + 32 * (c % 2)];
    low = static_cast<uint8_t>(low | ((u[e] & 0xF) << (c < 2 ? 0 : 4)));
    qh[32 * h + l] = static_cast<uint8_t>(qh[32 * h + l] | ((u[e] >> 4) << (2 * c)));
  }
  std::memcpy(dst + 192, scales, 16);
  std::memcpy(dst + 208, d, 2);
}

}  // namespace

void Q3KBlocksAsQ6K(const uint8_t* q3k, int64_t blocks, uint8_t* q6k) {
  for (int64_t i = 0; i < blocks; ++i) {
    const uint8_t* src = q3k + i * kQ3KBlockBytes;
    int8_t codes[256], scales[16];
    Q3KCodes(src, codes, scales);
    uint8_t u[256];
    for (int e = 0; e < 256; ++e) u[e] = static_cast<uint8_t>(codes[e] + 32);  // 28..35
    PutQ6K(u, scales, src + 108, q6k + i * kQ6KBlockBytes);
  }
}

void Q2KBlocksAsQ6K(const uint8_t* q2k, int64_t blocks, uint8_t* q6k, float* offsets) {
  for (int64_t i = 0; i < blocks; ++i) {
    const uint8_t* src = q2k + i * kQ2KBlockBytes;
    // Q2_K: scales[16] (scale in the low nibble, min in the high), then qs[64]: element
    // 128n + 32j + l (l < 32) is bits 2j..2j+1 of qs[32n + l]; sub-block e / 16 owns element e.
    uint8_t u[256];
    for (int e = 0; e < 256; ++e) {
      const int n = e / 128, j = (e / 32) % 4, l = e % 32;
      u[e] = static_cast<uint8_t>(((src[16 + 32 * n + l] >> (2 * j)) & 3) + 32);
    }
    int8_t scales[16];
    uint16_t dmin_bits;
    std::memcpy(&dmin_bits, src + 82, 2);
    const float dmin = numeric::HalfToFloat(dmin_bits);
    for (int s = 0; s < 16; ++s) {
      scales[s] = static_cast<int8_t>(src[s] & 0xF);
      offsets[i * 16 + s] = -(dmin * static_cast<float>(src[s] >> 4));
    }
    PutQ6K(u, scales, src + 80, q6k + i * kQ6KBlockBytes);
  }
}

}  // namespace tessera::kernels::cpu
