#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"
#include "engine/quant/config_parsers.h"

namespace tessera::quant::parse {

absl::StatusOr<io::TensorView> RequireTensor(const io::TensorStore& store, const std::string& module,
                                             const std::string& name,
                                             std::initializer_list<io::DType> dtypes,
                                             std::vector<int64_t> shape, bool scalar) {
  auto view = store.Get(name);
  if (!view.ok()) {
    return absl::NotFoundError(absl::StrFormat("layer %s: tensor '%s' is missing", module, name));
  }
  bool dtype_ok = dtypes.size() == 0 ? io::GetDTypeInfo(view->dtype).is_float : false;
  for (io::DType d : dtypes) dtype_ok |= view->dtype == d;
  if (!dtype_ok) {
    std::vector<std::string> names;
    for (io::DType d : dtypes) names.emplace_back(io::DTypeName(d));
    return absl::InvalidArgumentError(absl::StrFormat(
        "layer %s: tensor '%s' has dtype %s, expected %s", module, name, io::DTypeName(view->dtype),
        names.empty() ? "a float type" : absl::StrJoin(names, " or ")));
  }
  if (scalar && view->numel() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "layer %s: tensor '%s' has shape %s, expected a single value", module, name, view->ShapeString()));
  }
  if (!shape.empty() && view->shape != shape) {
    return absl::InvalidArgumentError(absl::StrFormat("layer %s: tensor '%s' has shape %s, expected %s",
                                                      module, name, view->ShapeString(),
                                                      io::ShapeToString(shape)));
  }
  return view;
}

bool HasSignedOrNanUe4m3(const io::TensorView& scales) {
  for (const uint8_t b : scales.bytes) {
    if ((b & 0x80) != 0 || b == 0x7F) return true;
  }
  return false;
}

absl::Status RequireScalar(const io::TensorStore& store, const std::string& module,
                           const std::string& name) {
  return RequireTensor(store, module, name, {}, {}, /*scalar=*/true).status();
}

std::vector<std::string> StringList(const OrderedJson& j, const char* key) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return out;
  for (const auto& v : *it) {
    if (v.is_string()) out.push_back(v.get<std::string>());
  }
  return out;
}

int64_t IntOr(const OrderedJson& j, const char* key, int64_t def) {
  auto it = j.find(key);
  return (it != j.end() && it->is_number_integer()) ? it->get<int64_t>() : def;
}

std::string StringOr(const OrderedJson& j, const char* key, const std::string& def) {
  auto it = j.find(key);
  return (it != j.end() && it->is_string()) ? it->get<std::string>() : def;
}

bool BoolOr(const OrderedJson& j, const char* key, bool def) {
  auto it = j.find(key);
  return (it != j.end() && it->is_boolean()) ? it->get<bool>() : def;
}

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

LinearSpec Mxfp4Spec(const std::string& module, int64_t n, int64_t k, std::string source,
                     std::string reason) {
  LinearSpec s;
  s.module = module;
  s.n = n;
  s.k = k;
  s.weight_format = WeightFormat::kMxfp4;
  s.weight_scale = ScaleGranularity::kGroup;
  s.group_size = 32;
  s.weight_scale_dtype = "E8M0";
  s.source = std::move(source);
  s.reason = std::move(reason);
  return s;
}

}  // namespace tessera::quant::parse
