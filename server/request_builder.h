// Turns a tessera.v1.GenerateRequest into the engine's GenerationRequest, validating every field
// on the way. This is where client input is judged: each rejection is INVALID_ARGUMENT whose
// message starts with the proto field's path ("sampling.top_p must be ...",
// "token_ids.ids[3]: ...") so a client can tell what to fix. The range checks themselves are
// runtime::ValidateSamplingParams / ValidateStoppingParams (one source of truth with the
// engine); this file adds the prompt, the server's limits and the proto's defaults.
#ifndef TESSERA_SERVER_REQUEST_BUILDER_H_
#define TESSERA_SERVER_REQUEST_BUILDER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "engine/runtime/scheduler.h"
#include "engine/tokenizer/tokenizer.h"
#include "tessera/v1/generation.pb.h"

namespace tessera::server {

// The limits a request is checked against (the server's flags and the model's shape).
struct RequestLimits {
  int32_t vocab_size = 0;
  int64_t context_length = 0;
  int32_t max_prompt_tokens = 0;  // already resolved: never 0
  int32_t max_new_tokens = 0;     // the --max_new_tokens cap
};

inline constexpr size_t kMaxRequestIdBytes = 128;

// `request_id` is used when the proto leaves it empty. The deadline is left for the caller.
absl::StatusOr<runtime::GenerationRequest> BuildGenerationRequest(
    const tessera::v1::GenerateRequest& proto, const tokenizer::Tokenizer& tokenizer,
    const RequestLimits& limits, const std::string& request_id);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_REQUEST_BUILDER_H_
