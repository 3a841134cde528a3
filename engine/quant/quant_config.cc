#include "engine/quant/quant_config.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"
#include "engine/quant/config_parsers.h"
#include "nlohmann/json.hpp"

namespace tessera::quant {
namespace {

using Json = nlohmann::ordered_json;

// Scale / packing tensor suffixes that mark a module as quantized (quant-formats.md §3 item 4).
constexpr const char* kQuantSuffixes[] = {
    ".weight_scale", ".weight_scale_inv", ".weight_packed", ".qweight", ".qzeros", ".scales",
    ".weight_scale_2", ".weight_global_scale", ".input_scale"};

std::optional<WeightFormat> DenseFormatOf(io::DType d) {
  switch (d) {
    case io::DType::kF32: return WeightFormat::kF32;
    case io::DType::kBF16: return WeightFormat::kBF16;
    case io::DType::kF16: return WeightFormat::kF16;
    case io::DType::kQ8_0: return WeightFormat::kGgufQ8_0;
    case io::DType::kQ4_0: return WeightFormat::kGgufQ4_0;
    case io::DType::kQ4_1: return WeightFormat::kGgufQ4_1;
    case io::DType::kQ5_0: return WeightFormat::kGgufQ5_0;
    case io::DType::kQ5_1: return WeightFormat::kGgufQ5_1;
    case io::DType::kQ4_K: return WeightFormat::kGgufQ4_K;
    case io::DType::kQ5_K: return WeightFormat::kGgufQ5_K;
    case io::DType::kQ6_K: return WeightFormat::kGgufQ6_K;
    case io::DType::kQ2_K: return WeightFormat::kGgufQ2_K;
    case io::DType::kQ3_K: return WeightFormat::kGgufQ3_K;
    case io::DType::kIq4Nl: return WeightFormat::kGgufIq4Nl;
    case io::DType::kIq4Xs: return WeightFormat::kGgufIq4Xs;
    case io::DType::kIq2Xxs: return WeightFormat::kGgufIq2Xxs;
    case io::DType::kIq2Xs: return WeightFormat::kGgufIq2Xs;
    case io::DType::kIq2S: return WeightFormat::kGgufIq2S;
    case io::DType::kIq3Xxs: return WeightFormat::kGgufIq3Xxs;
    case io::DType::kIq3S: return WeightFormat::kGgufIq3S;
    case io::DType::kIq1S: return WeightFormat::kGgufIq1S;
    case io::DType::kIq1M: return WeightFormat::kGgufIq1M;
    case io::DType::kTq1_0: return WeightFormat::kGgufTq1_0;
    case io::DType::kTq2_0: return WeightFormat::kGgufTq2_0;
    default: return std::nullopt;
  }
}

class NoQuantConfig : public QuantConfig {
 public:
  explicit NoQuantConfig(std::string method) : method_(std::move(method)) {}
  std::string method() const override { return method_; }
  absl::StatusOr<LinearSpec> Resolve(const std::string& module, const std::string& prefix, int64_t n,
                                     int64_t k, const io::TensorStore& store) const override {
    if (method_ == "gguf") {
      // ggml's MXFP4 blocks (gpt-oss GGUFs: the E8M0 byte, then 16 bytes of E2M1 nibbles) are
      // the same numbers as the gpt-oss checkpoints' MXFP4: one layer format, all its kernels.
      auto w = store.Get(prefix + ".weight");
      if (w.ok() && w->dtype == io::DType::kMxfp4Gguf) {
        TESSERA_RETURN_IF_ERROR(w->ExpectShape({n, k}));
        return parse::Mxfp4Spec(module, n, k, "gguf mxfp4",
                                "checkpoint: gguf mxfp4 (32 per block, 17 bytes)");
      }
    }
    TESSERA_ASSIGN_OR_RETURN(LinearSpec spec, DenseSpec(module, prefix, n, k, store));
    if (method_ == "gguf") {
      const io::BlockParameters bp = io::GetDTypeInfo(store.Get(prefix + ".weight")->dtype).block;
      spec.source = "gguf";
      spec.reason = absl::StrFormat("checkpoint: gguf %s (%d per block, %d bytes)",
                                    WeightFormatName(spec.weight_format), bp.block_elements,
                                    bp.block_bytes);
    }
    return spec;
  }

 private:
  std::string method_;
};

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

bool IsStoredDense(const std::string& prefix, const io::TensorStore& store) {
  auto w = store.Get(prefix + ".weight");
  if (!w.ok() || !DenseFormatOf(w->dtype)) return false;
  for (const char* suffix : kQuantSuffixes) {
    if (store.Contains(prefix + suffix)) return false;
  }
  return true;
}

absl::StatusOr<LinearSpec> DenseSpec(const std::string& module, const std::string& prefix, int64_t n,
                                     int64_t k, const io::TensorStore& store) {
  TESSERA_ASSIGN_OR_RETURN(io::TensorView w, store.Get(prefix + ".weight"));
  auto format = DenseFormatOf(w.dtype);
  if (!format) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "layer %s: weight %s has dtype %s but the checkpoint declares no quantization for it",
        module, w.name, io::DTypeName(w.dtype)));
  }
  TESSERA_RETURN_IF_ERROR(w.ExpectShape({n, k}));
  LinearSpec spec;
  spec.module = module;
  spec.n = n;
  spec.k = k;
  spec.weight_format = *format;
  spec.source = "dense";
  spec.reason = absl::StrCat("checkpoint: unquantized ", io::DTypeName(w.dtype));
  return spec;
}

absl::StatusOr<std::unique_ptr<QuantConfig>> ParseQuantConfig(const std::string& config_json,
                                                              const std::string& directory,
                                                              const io::TensorStore& store) {
  if (store.kind() == io::ContainerKind::kGguf) return std::make_unique<NoQuantConfig>("gguf");
  Json config = config_json.empty() ? Json::object()
                                    : Json::parse(config_json, nullptr, /*allow_exceptions=*/false);
  if (config.is_discarded() || !config.is_object()) {
    return absl::InvalidArgumentError("config.json is not a JSON object");
  }
  Json qc;
  if (auto it = config.find("quantization_config"); it != config.end() && it->is_object()) qc = *it;
  namespace fs = std::filesystem;
  if (qc.is_null() && !directory.empty()) {
    // Side files, in vLLM's order: ModelOpt's hf_quant_config.json, then AutoGPTQ / AutoAWQ files.
    if (auto text = ReadFile((fs::path(directory) / "hf_quant_config.json").string()); text.ok()) {
      Json side = Json::parse(*text, nullptr, false);
      if (side.is_discarded() || !side.is_object()) {
        return absl::InvalidArgumentError("hf_quant_config.json is not a JSON object");
      }
      qc = Json::object();
      qc["quant_method"] = "modelopt";
      if (auto q = side.find("quantization"); q != side.end() && q->is_object()) {
        for (auto it = q->begin(); it != q->end(); ++it) qc[it.key()] = it.value();
      }
    } else {
      for (const char* name : {"quantize_config.json", "quant_config.json"}) {
        auto t = ReadFile((fs::path(directory) / name).string());
        if (!t.ok()) continue;
        Json side = Json::parse(*t, nullptr, false);
        if (side.is_discarded() || !side.is_object()) {
          return absl::InvalidArgumentError(absl::StrCat(name, " is not a JSON object"));
        }
        qc = side;
        if (!qc.contains("quant_method")) {
          qc["quant_method"] = (qc.contains("w_bit") || qc.contains("version")) ? "awq" : "gptq";
        }
        break;
      }
    }
  }
  if (qc.is_null()) return std::make_unique<NoQuantConfig>("none");
  std::string method;
  if (auto m = qc.find("quant_method"); m != qc.end() && m->is_string()) {
    method = absl::AsciiStrToLower(m->get<std::string>());
  } else if (qc.contains("config_groups")) {
    method = "compressed-tensors";  // MAX accepts a bare config_groups config the same way
  }
  if (method == "fp8" || method == "fbgemm_fp8") return ParseFloat8Method(method, qc, store);
  if (method == "compressed-tensors" || method == "compressed_tensors") {
    return ParseCompressedTensors(qc, store);
  }
  if (method == "modelopt" || method == "modelopt_fp4" || method == "modelopt_mixed") {
    return ParseModelOpt(qc, store);
  }
  if (method == "gptq") return ParseGptq(qc, store);
  if (method == "awq") return ParseAwq(qc, store);
  if (method == "quark") return ParseQuark(qc, store);
  if (method == "mxfp4") return ParseMxfp4(qc, store);
  if (method == "bitsandbytes") return ParseBitsandbytes(qc, store);
  return absl::InvalidArgumentError(absl::StrCat(
      "quantization_config.quant_method '", method,
      "' is not supported (fp8, fbgemm_fp8, compressed-tensors, modelopt, gptq, awq, quark, mxfp4, "
      "bitsandbytes)"));
}

}  // namespace tessera::quant
