// Scalar dequantization of GGUF/ggml blocks to f32, written from ggml-quants.c
// `dequantize_row_*` (quant-formats.md §11.3). It is the reference every fast CPU and CUDA kernel
// for these formats is tested against, and it must equal gguf-py's dequantize bit for bit.
#ifndef TESSERA_ENGINE_IO_GGUF_DEQUANT_H_
#define TESSERA_ENGINE_IO_GGUF_DEQUANT_H_

#include <cstdint>

#include "absl/status/status.h"
#include "engine/io/dtype.h"

namespace tessera::io {

// Dequantizes `n` elements (a whole number of blocks) starting at `src` into `dst`.
absl::Status DequantizeGgufRow(DType dtype, const uint8_t* src, int64_t n, float* dst);

}  // namespace tessera::io

#endif  // TESSERA_ENGINE_IO_GGUF_DEQUANT_H_
