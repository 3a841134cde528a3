// Where NVFP4 block scales go in memory for cuBLASLt's block-scaled FP4 GEMM
// (CUBLASLT_MATMUL_MATRIX_SCALE_VEC16_UE4M3; the same layout the tcgen05 block-scaled MMA, vLLM's
// cutlass_scaled_fp4_mm and TensorRT-LLM read). A scale matrix of `rows` (the operand's outer
// dimension: N for the weights, M for the activations) by `scale_cols` = K / 16 is cut into tiles
// of 128 rows x 4 scale columns; tiles are stored one after the other, row tiles outermost, each
// as 512 contiguous bytes in [32][4][4] order (row % 32, row / 32 within the tile, column % 4).
// Rows are padded to a multiple of 128 and scale columns to a multiple of 4; the padding bytes
// must be written (we write zero) because the GEMM reads whole tiles.
//
// The offset function is TESSERA_HD so the activation quantizer writes this layout directly on
// the device; the host helpers swizzle weight scales once at upload and undo the layout in tests.
#ifndef TESSERA_KERNELS_CUDA_NVFP4_SCALE_LAYOUT_H_
#define TESSERA_KERNELS_CUDA_NVFP4_SCALE_LAYOUT_H_

#include <cstdint>
#include <cstring>

#include "kernels/numeric/hd.h"

namespace tessera::kernels::cuda {

// Rows and scale columns of one swizzle tile.
inline constexpr int64_t kScaleTileRows = 128;
inline constexpr int64_t kScaleTileCols = 4;

// Offset of scale (row, col) in the swizzled layout (vLLM cvt_quant_to_fp4_get_sf_out_offset).
// Defined for the whole padded domain: row < SwizzledScaleRows(rows), col <
// SwizzledScaleCols(scale_cols), where it is a bijection onto [0, SwizzledScaleBytes).
constexpr TESSERA_HD int64_t SwizzledScaleOffset(int64_t row, int64_t col, int64_t scale_cols) {
  const int64_t col_tiles = (scale_cols + 3) / 4;
  return (row / 128) * col_tiles * 512 + (col / 4) * 512 + (row % 32) * 16 +
         ((row % 128) / 32) * 4 + (col % 4);
}
constexpr TESSERA_HD int64_t SwizzledScaleRows(int64_t rows) {
  return (rows + kScaleTileRows - 1) / kScaleTileRows * kScaleTileRows;
}
constexpr TESSERA_HD int64_t SwizzledScaleCols(int64_t scale_cols) {
  return (scale_cols + kScaleTileCols - 1) / kScaleTileCols * kScaleTileCols;
}
// Bytes of a swizzled scale tensor for `rows` x `scale_cols`, padding included.
constexpr TESSERA_HD int64_t SwizzledScaleBytes(int64_t rows, int64_t scale_cols) {
  return SwizzledScaleRows(rows) * SwizzledScaleCols(scale_cols);
}

// Row-major [rows, scale_cols] scales -> the swizzled layout in `out`
// (SwizzledScaleBytes(rows, scale_cols) bytes, padding zeroed). Host only.
inline void SwizzleScales(const uint8_t* scales, int64_t rows, int64_t scale_cols, uint8_t* out) {
  std::memset(out, 0, static_cast<size_t>(SwizzledScaleBytes(rows, scale_cols)));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < scale_cols; ++c) {
      out[SwizzledScaleOffset(r, c, scale_cols)] = scales[r * scale_cols + c];
    }
  }
}

// The inverse on the unpadded part: swizzled -> row-major [rows, scale_cols]. Host only.
inline void UnswizzleScales(const uint8_t* swizzled, int64_t rows, int64_t scale_cols,
                            uint8_t* out) {
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < scale_cols; ++c) {
      out[r * scale_cols + c] = swizzled[SwizzledScaleOffset(r, c, scale_cols)];
    }
  }
}

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_NVFP4_SCALE_LAYOUT_H_
