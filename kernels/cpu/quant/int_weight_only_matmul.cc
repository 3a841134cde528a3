#include "kernels/cpu/quant/int_weight_only_matmul.h"

#include <cstdint>

#include "kernels/cpu/matmul_reference.h"

namespace tessera::kernels::cpu {
namespace {

// Every group index is in [0, num_groups): checked once per call so that the inner loops can
// index without bounds checks.
bool ValidGroups(const IntWeights& w, int64_t k) {
  if (w.num_groups <= 0) return false;
  if (w.g_idx == nullptr) {
    return w.group_size > 0 && (k == 0 || (k - 1) / w.group_size < w.num_groups);
  }
  for (int64_t i = 0; i < k; ++i) {
    if (w.g_idx[i] < 0 || w.g_idx[i] >= w.num_groups) return false;
  }
  return true;
}

uint8_t CodeAt(const IntWeights& w, const uint8_t* row, int64_t i) {
  if (w.packing == IntWeightPacking::kU8) return row[i];
  return static_cast<uint8_t>((row[i >> 1] >> ((i & 1) * 4)) & 0xF);
}

}  // namespace

int64_t IntWeightRowBytes(IntWeightPacking packing, int64_t k) {
  return packing == IntWeightPacking::kU8 ? k : (k + 1) / 2;
}

void PackU4Pairs(const uint8_t* codes, int64_t k, uint8_t* packed) {
  for (int64_t j = 0; 2 * j < k; ++j) {
    const uint8_t lo = codes[2 * j] & 0xF;
    const uint8_t hi = 2 * j + 1 < k ? (codes[2 * j + 1] & 0xF) : 0;
    packed[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

void DequantizeIntWeightRow(const IntWeights& w, int64_t k, int64_t n, float* out) {
  const uint8_t* row = w.q + n * IntWeightRowBytes(w.packing, k);
  const float* scales = w.scales + n * w.num_groups;
  const float* zeros = w.zeros + n * w.num_groups;
  for (int64_t i = 0; i < k; ++i) {
    const int64_t g = w.g_idx != nullptr ? w.g_idx[i] : i / w.group_size;
    out[i] = (static_cast<float>(CodeAt(w, row, i)) - zeros[g]) * scales[g];
  }
}

bool MatmulIntWeightOnly(const IntWeights& w, int64_t n_total, int64_t k, const float* x,
                         int64_t rows, const float* bias, float* y, int64_t n_begin,
                         int64_t n_end) {
  if (k < 0 || rows < 0 || n_begin < 0 || n_begin > n_end || n_end > n_total) return false;
  if (w.q == nullptr || w.scales == nullptr || w.zeros == nullptr || !ValidGroups(w, k)) {
    return false;
  }
  MatmulDequantizedRows([&](int64_t n, float* out) { DequantizeIntWeightRow(w, k, n, out); },
                        n_total, k, x, rows, bias, y, n_begin, n_end);
  return true;
}

}  // namespace tessera::kernels::cpu
