// The per-producer quantization config parsers behind ParseQuantConfig, and the tensor checks
// they share. Each parser lives in its own file (float8_config.cc, compressed_tensors_config.cc,
// modelopt_config.cc, gptq_config.cc, awq_config.cc, quark_config.cc, mxfp4_config.cc,
// bnb_config.cc) and
// returns a QuantConfig whose Resolve() validates the module's tensors and names the layer in
// every error. Configs are parsed as ordered JSON: GPTQ `dynamic`, compressed-tensors groups and
// Quark layer configs are first-match-wins in file order.
#ifndef TESSERA_ENGINE_QUANT_CONFIG_PARSERS_H_
#define TESSERA_ENGINE_QUANT_CONFIG_PARSERS_H_

#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/io/tensor_store.h"
#include "engine/quant/quant_config.h"
#include "nlohmann/json.hpp"

namespace tessera::quant {

using OrderedJson = nlohmann::ordered_json;

absl::StatusOr<std::unique_ptr<QuantConfig>> ParseFloat8Method(const std::string& method,
                                                               const OrderedJson& qc,
                                                               const io::TensorStore& store);
absl::StatusOr<std::unique_ptr<QuantConfig>> ParseCompressedTensors(const OrderedJson& qc,
                                                                    const io::TensorStore& store);
absl::StatusOr<std::unique_ptr<QuantConfig>> ParseModelOpt(const OrderedJson& qc,
                                                           const io::TensorStore& store);
absl::StatusOr<std::unique_ptr<QuantConfig>> ParseGptq(const OrderedJson& qc,
                                                       const io::TensorStore& store);
absl::StatusOr<std::unique_ptr<QuantConfig>> ParseAwq(const OrderedJson& qc,
                                                      const io::TensorStore& store);
absl::StatusOr<std::unique_ptr<QuantConfig>> ParseQuark(const OrderedJson& qc,
                                                        const io::TensorStore& store);
absl::StatusOr<std::unique_ptr<QuantConfig>> ParseMxfp4(const OrderedJson& qc,
                                                        const io::TensorStore& store);
absl::StatusOr<std::unique_ptr<QuantConfig>> ParseBitsandbytes(const OrderedJson& qc,
                                                               const io::TensorStore& store);

// Shared helpers for the parsers.
namespace parse {

// `<name>` must exist with one of `dtypes` (empty = any float type) and, when `shape` is given,
// that shape (a scalar may also be [1] / [] interchangeably when `numel_one` is set).
absl::StatusOr<io::TensorView> RequireTensor(const io::TensorStore& store, const std::string& module,
                                             const std::string& name,
                                             std::initializer_list<io::DType> dtypes,
                                             std::vector<int64_t> shape = {}, bool scalar = false);
// Whether an NVFP4 block-scale tensor (F8_E4M3 bytes) holds a byte with the sign bit set or a NaN
// (0x7F / 0xFF): E4M3 reads them as negative or NaN, cuBLASLt's unsigned UE4M3 otherwise.
bool HasSignedOrNanUe4m3(const io::TensorView& scales);

// A per-tensor scale: numel 1 in any float dtype.
absl::Status RequireScalar(const io::TensorStore& store, const std::string& module,
                           const std::string& name);
std::vector<std::string> StringList(const OrderedJson& j, const char* key);
int64_t IntOr(const OrderedJson& j, const char* key, int64_t def);
std::string StringOr(const OrderedJson& j, const char* key, const std::string& def);
bool BoolOr(const OrderedJson& j, const char* key, bool def);
int64_t CeilDiv(int64_t a, int64_t b);
// An MXFP4 weight-only layer (E2M1 codes, an E8M0 scale per 32 inputs) read as `source` says
// (gpt-oss blocks / scales, ggml blocks).
LinearSpec Mxfp4Spec(const std::string& module, int64_t n, int64_t k, std::string source,
                     std::string reason);

}  // namespace parse
}  // namespace tessera::quant

#endif  // TESSERA_ENGINE_QUANT_CONFIG_PARSERS_H_
