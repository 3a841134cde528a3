// The W8A8 / W4A4 epilogue shared by the FastQuantMatmul kernels (fast_quant_matmul.cc and
// fp8_bf16_matmul.cc): y = row_scale · (col_scale · acc) (+ bias), the reference kernels' operand
// order, for a block of `rows` activation rows and `nc` columns starting at `col`.
#ifndef TESSERA_KERNELS_CPU_FAST_QUANT_EPILOGUE_H_
#define TESSERA_KERNELS_CPU_FAST_QUANT_EPILOGUE_H_

#include <cstdint>

#include "kernels/cpu/fast/fast_quant_matmul.h"

namespace tessera::kernels::cpu::fast {

// out is [rows][nc] accumulators; rows m0 .. m0 + rows - 1 of y are written.
inline void StoreQuantEpilogue(const FastQuantWeights& w, const float* out, int nc, int64_t m0,
                               int64_t rows, int64_t col, const float* bias, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < nc; ++j) {
      float v = out[r * nc + j];
      if (w.row_scale != nullptr) {
        const float cs = w.col_scale != nullptr ? w.col_scale[(col + j) * w.col_scale_stride] * v : v;
        v = w.row_scale[(m0 + r) * w.row_scale_stride] * cs;
      }
      if (bias != nullptr) v += bias[col + j];
      y[(m0 + r) * w.n + col + j] = v;
    }
  }
}

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_QUANT_EPILOGUE_H_
