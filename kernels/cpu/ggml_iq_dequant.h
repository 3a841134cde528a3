// GGUF's grid types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M: 256 values per
// super-block, each 4 or 8 of them one index into a codebook of ggml_iq_grids.h, with sign bits,
// 4-bit (IQ1: 3-bit) scales per 16 or 32 values and, for IQ1, a ±1/8 shift per 32 or 8 values),
// and its ternary types (TQ1_0: five values −1 / 0 / 1 per byte in base 3, TQ2_0: two bits per
// value, q − 1 in −1..2; one f16 d per 256 values).
// Two views of one block: the reference dequantizer, a port of ggml-quants.c's
// dequantize_row_iq* / _tq* (DequantizeGgmlBlocks calls it), and IqGridCodes, the same numbers as
// one 4-bit code per value into a 16-entry int8 table of the type, an integer multiplier per 16
// values and one f32 scale: w = (d·mult)·table[code], with every product exact in f32, so the two
// views agree bit for bit. The fast kernels' repacks read the second (int4_x16.h tiles, the
// quantized panels of ggml_quant_panels.h); the tests hold the first to gguf-py's dequantize.
#ifndef TESSERA_KERNELS_CPU_GGML_IQ_DEQUANT_H_
#define TESSERA_KERNELS_CPU_GGML_IQ_DEQUANT_H_

#include <cstdint>

#include "kernels/cpu/ggml_dequant.h"

namespace tessera::kernels::cpu {

// Whether `type` is one of the grid types above; whether it is a grid or a ternary type (the
// types every function below takes).
bool IsIqGridType(GgmlBlockType type);
bool IsTableCodeType(GgmlBlockType type);

// Dequantizes one super-block of a grid type into 256 floats (dequantize_row_iq*).
void DequantizeIqGridBlock(GgmlBlockType type, const uint8_t* block, float* y);

// The type's 16 code values (IQ2: ±8, ±25, ±43; IQ3_XXS: ±4 .. ±52, ±62; IQ3_S: ±1 .. ±15 odd;
// IQ1: 8g ± 1 for g in −1, 0, 1; TQ: q − 1 for code q), unused entries 0. Code c < 8 is a
// magnitude, c + 8 its negation (IQ1: c < 3 the +1/8 shift, c ≥ 3 the −1/8 shift). `type` must be
// a grid or a ternary type (IsTableCodeType).
const int8_t* IqGridTable(GgmlBlockType type);

// One super-block as codes[256] (0..15) into IqGridTable(type), mults[16] (one per 16 values:
// 2·ls + 1, at most 31; TQ: 1) and *d (the block's f16 d times 1/8, 1/4 or 1): value e equals
// (*d · mults[e / 16]) · IqGridTable(type)[codes[e]] bit for bit with DequantizeIqGridBlock.
void IqGridCodes(GgmlBlockType type, const uint8_t* block, float* d, uint8_t* mults,
                 uint8_t* codes);

}  // namespace tessera::kernels::cpu

#endif  // TESSERA_KERNELS_CPU_GGML_IQ_DEQUANT_H_
