#include "engine/model/kv_cache_scales.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"

namespace tessera::model {
namespace {

absl::StatusOr<float> ReadScale(const io::TensorStore& store, const std::string& name) {
  TESSERA_ASSIGN_OR_RETURN(io::TensorView t, store.Get(name));
  TESSERA_ASSIGN_OR_RETURN(std::vector<float> v, io::ToFloat32(t));
  if (v.size() != 1 || !std::isfinite(v[0]) || v[0] <= 0.0f) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "KV-cache scale '%s' has shape %s; one positive finite value is supported", name,
        t.ShapeString()));
  }
  return v[0];
}

}  // namespace

absl::StatusOr<KvCacheScales> ReadKvCacheScales(const io::TensorStore& store, int layer) {
  const std::string attn = absl::StrCat("model.layers.", layer, ".self_attn.");
  // (K name, V name) per producer, newest convention first.
  const std::pair<std::string, std::string> kNames[] = {
      {"k_scale", "v_scale"},
      {"k_proj.output_scale", "v_proj.output_scale"},
      {"k_proj.k_scale", "v_proj.v_scale"},
      {"kv_scale", "kv_scale"},
  };
  KvCacheScales s;
  s.source = "default 1.0";
  for (const auto& [k, v] : kNames) {
    if (!store.Contains(attn + k) && !store.Contains(attn + v)) continue;
    if (store.Contains(attn + k)) {
      TESSERA_ASSIGN_OR_RETURN(s.k_scale, ReadScale(store, attn + k));
    }
    if (store.Contains(attn + v)) {
      TESSERA_ASSIGN_OR_RETURN(s.v_scale, ReadScale(store, attn + v));
    }
    s.source = absl::StrCat(attn, k, " / ", attn, v);
    break;
  }
  return s;
}

}  // namespace tessera::model
