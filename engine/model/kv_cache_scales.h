// Per-layer FP8 KV-cache scales from a checkpoint (quant-formats.md §10). Every producer stores
// one F32 scalar per layer for K and one for V, under its own names; the FP8 cache stores
// sat_e4m3(k / k_scale) and reads fp32(kv8) * k_scale. A layer without scales uses 1.0 (what vLLM
// does), so an unquantized checkpoint still runs with an FP8 cache.
#ifndef TESSERA_ENGINE_MODEL_KV_CACHE_SCALES_H_
#define TESSERA_ENGINE_MODEL_KV_CACHE_SCALES_H_

#include <string>

#include "absl/status/statusor.h"
#include "engine/io/tensor_store.h"

namespace tessera::model {

struct KvCacheScales {
  float k_scale = 1.0f;
  float v_scale = 1.0f;
  std::string source;  // the tensor names used, or "default 1.0"
};

// Looks, in this order, for compressed-tensors `<attn>.k_scale`/`v_scale`, older compressed-
// tensors / Quark `<attn>.k_proj.output_scale`/`v_proj.output_scale`, ModelOpt
// `<attn>.k_proj.k_scale`/`v_proj.v_scale`, legacy `<attn>.kv_scale` (both), with
// attn = "model.layers.<layer>.self_attn". A scale that is not one positive finite value
// (e.g. compressed-tensors strategy "attn_head", [H_kv, 1, 1]) is an error.
absl::StatusOr<KvCacheScales> ReadKvCacheScales(const io::TensorStore& store, int layer);

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_KV_CACHE_SCALES_H_
