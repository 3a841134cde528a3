// bitsandbytes 4-bit linear layers as transformers / bitsandbytes serialize them (Linear4bit's
// _save_to_state_dict, QuantState.as_dict(packed=True); bitsandbytes 0.50): `<m>.weight` holds the
// flattened [N, K] weight's 4-bit codes, element 2j in the high nibble of byte j (any storage
// dtype: bnb_4bit_quant_storage only reinterprets the bytes); `<m>.weight.absmax` one f32 absmax
// per block of `blocksize` over the flattened weight, or with double quant its U8 codes into
// `nested_quant_map` (256 f32) times `nested_absmax` (one f32 per 256 blocks) plus
// `nested_offset`; `<m>.weight.quant_map` the 16 code values (NF4, or bnb's FP4 table); and
// `<m>.weight.quant_state.bitsandbytes__<nf4|fp4>`, a U8 tensor of JSON with quant_type,
// blocksize, dtype, shape and the nested fields. This file reads and checks that state
// (ReadBnb4bitState: every tensor's presence, dtype and size, naming the tensor) and lays a layer
// out per row for codebook4_matmul.h (UnpackBnb4bit), exactly as bnb's dequantize_4bit computes
// the values before its cast to the compute dtype.
#ifndef TESSERA_ENGINE_QUANT_BNB_4BIT_H_
#define TESSERA_ENGINE_QUANT_BNB_4BIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/io/tensor_store.h"

namespace tessera::quant {

struct Bnb4bitState {
  std::string quant_type;  // "nf4" or "fp4"
  int64_t blocksize = 0;
  std::string dtype;       // the compute dtype bnb casts its products to ("bfloat16", ...)
  bool nested = false;     // double quant
  int64_t nested_blocksize = 0;
  float nested_offset = 0.0f;
  // The per-row group of the unpacked layer: blocksize where blocks tile each row (K a multiple
  // of it), K where each row lies inside one block (blocksize a multiple of K).
  int64_t group = 0;
};

// The 4-bit state of module `module` stored under `prefix` (`<prefix>.weight...`), or nullopt
// when its weight carries no bitsandbytes quant state (an unquantized layer). Errors name the
// layer and tensor: malformed JSON, a shape other than [n, k], a code or absmax tensor of the
// wrong size, blocks that straddle rows unevenly (neither K nor the block size a multiple of the
// other), a quant type other than nf4 / fp4.
absl::StatusOr<std::optional<Bnb4bitState>> ReadBnb4bitState(const io::TensorStore& store,
                                                             const std::string& module,
                                                             const std::string& prefix,
                                                             int64_t n, int64_t k);

// bitsandbytes' NF4 codebook (functional.get_4bit_type("nf4") as the f32 quant_map its
// quantize_4bit writes).
inline constexpr float kBnbNf4Codebook[16] = {
    -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
    -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
    0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
    0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};

// bitsandbytes' quantize_4bit (nf4) of one row of whole blocks (k % block == 0), its pure-torch
// backend's arithmetic in f32: per block absmax = max |x|, scaled = clamp(x · (1 / max(absmax,
// 1e-38)), −1, 1), code = how many of the codebook's 15 midpoints (code[i] + code[i + 1]) / 2 lie
// strictly below scaled (torch.bucketize: a value on a midpoint takes the lower code). Codes
// [k / 2] low nibble first (codebook4_matmul.h), absmax [k / block].
void QuantizeBnbNf4Row(const float* x, int64_t k, int64_t block, uint8_t* codes, float* absmax);

// The layer per row: codes [n, k / 2] with element 2j in the low nibble of byte j, scales
// [n, k / group] (the blocks' f32 absmax, double quant resolved as bnb does: nested_quant_map[c]
// · nested_absmax[i / nested_blocksize] + nested_offset, each step rounded to f32), codebook
// [16]. Requires ReadBnb4bitState's success.
absl::Status UnpackBnb4bit(const io::TensorStore& store, const std::string& prefix, int64_t n,
                           int64_t k, const Bnb4bitState& state, std::vector<uint8_t>* codes,
                           std::vector<float>* scales, std::vector<float>* codebook);

}  // namespace tessera::quant

#endif  // TESSERA_ENGINE_QUANT_BNB_4BIT_H_
