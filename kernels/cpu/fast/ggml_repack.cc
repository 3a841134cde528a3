#include "kernels/cpu/fast/ggml_repack.h"

#include <cstring>

namespace tessera::kernels::cpu::fast {
namespace {

int64_t Align64(int64_t v) { return (v + 63) / 64 * 64; }

int64_t QuantBytes(GgmlBlockType type) { return type == GgmlBlockType::kQ8_0 ? 32 : 16; }

}  // namespace

bool HasRepackedLayout(GgmlBlockType type) {
  return type == GgmlBlockType::kQ8_0 || type == GgmlBlockType::kQ4_0;
}

int64_t RepackedRowStride(GgmlBlockType type, int64_t k) {
  const int64_t blocks = k / 32;
  return Align64(blocks * 2) + Align64(blocks * QuantBytes(type));
}

FastWeights RepackGgmlRows(GgmlBlockType type, const uint8_t* src, int64_t n, int64_t k,
                           uint8_t* dst) {
  const int64_t blocks = k / 32, qbytes = QuantBytes(type), block_bytes = 2 + qbytes;
  const int64_t stride = RepackedRowStride(type, k), quant_offset = Align64(blocks * 2);
  std::memset(dst, 0, n * stride);
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* s = src + r * blocks * block_bytes;
    uint8_t* d = dst + r * stride;
    for (int64_t b = 0; b < blocks; ++b) {
      std::memcpy(d + 2 * b, s + b * block_bytes, 2);
      std::memcpy(d + quant_offset + b * qbytes, s + b * block_bytes + 2, qbytes);
    }
  }
  FastWeights w;
  w.format = type == GgmlBlockType::kQ8_0 ? FastFormat::kQ8_0 : FastFormat::kQ4_0;
  w.data = dst;
  w.n = n;
  w.k = k;
  w.row_stride = stride;
  w.quant_offset = quant_offset;
  w.ggml = type;
  return w;
}

}  // namespace tessera::kernels::cpu::fast
