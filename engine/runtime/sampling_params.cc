#include "engine/runtime/sampling_params.h"

#include <cmath>
#include <string>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"

namespace tessera::runtime {
namespace {

// Checks lo <= value <= hi (or lo < value when lo_open) and finiteness. The message always starts
// with the field name so that clients can tell which knob they got wrong.
absl::Status CheckFloat(absl::string_view field, float value, float lo, float hi, bool lo_open) {
  if (!std::isfinite(value)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be a finite number, got %g", field, value));
  }
  if (lo_open ? !(value > lo) : !(value >= lo)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be %s %g, got %g", field, lo_open ? ">" : ">=", lo, value));
  }
  if (value > hi) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be <= %g, got %g", field, hi, value));
  }
  return absl::OkStatus();
}

absl::Status CheckVocab(int32_t vocab_size) {
  // A programmer error rather than a client one, but a status keeps the server alive.
  if (vocab_size <= 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("vocab_size must be > 0, got %d", vocab_size));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateSamplingParams(const SamplingParams& params, int32_t vocab_size) {
  if (absl::Status s = CheckVocab(vocab_size); !s.ok()) return s;
  constexpr float kInf = INFINITY;
  if (absl::Status s = CheckFloat("temperature", params.temperature, 0.0f, kInf, false); !s.ok()) {
    return s;
  }
  if (params.top_k < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("top_k must be >= 0 (0 disables), got %d", params.top_k));
  }
  if (absl::Status s = CheckFloat("top_p", params.top_p, 0.0f, 1.0f, true); !s.ok()) return s;
  if (absl::Status s = CheckFloat("min_p", params.min_p, 0.0f, 1.0f, false); !s.ok()) return s;
  if (absl::Status s =
          CheckFloat("repetition_penalty", params.repetition_penalty, 0.0f, kInf, true);
      !s.ok()) {
    return s;
  }
  if (absl::Status s = CheckFloat("presence_penalty", params.presence_penalty, -2.0f, 2.0f, false);
      !s.ok()) {
    return s;
  }
  if (absl::Status s =
          CheckFloat("frequency_penalty", params.frequency_penalty, -2.0f, 2.0f, false);
      !s.ok()) {
    return s;
  }
  if (params.logprobs < 0 || params.logprobs > kMaxLogprobs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("logprobs must be in [0, %d], got %d", kMaxLogprobs, params.logprobs));
  }
  return absl::OkStatus();
}

absl::Status ValidateStoppingParams(const StoppingParams& params, int32_t vocab_size,
                                    int32_t max_new_tokens_limit) {
  if (absl::Status s = CheckVocab(vocab_size); !s.ok()) return s;
  if (max_new_tokens_limit < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("max_new_tokens_limit must be >= 1, got %d", max_new_tokens_limit));
  }
  if (params.max_new_tokens < 1 || params.max_new_tokens > max_new_tokens_limit) {
    return absl::InvalidArgumentError(absl::StrFormat("max_new_tokens must be in [1, %d], got %d",
                                                      max_new_tokens_limit, params.max_new_tokens));
  }
  if (params.stop_strings.size() > static_cast<size_t>(kMaxStopStrings)) {
    return absl::InvalidArgumentError(absl::StrFormat("stop_strings may hold at most %d, got %d",
                                                      kMaxStopStrings, params.stop_strings.size()));
  }
  for (size_t i = 0; i < params.stop_strings.size(); ++i) {
    const std::string& s = params.stop_strings[i];
    if (s.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat("stop_strings[%d] must be non-empty", i));
    }
    if (s.size() > static_cast<size_t>(kMaxStopStringBytes)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "stop_strings[%d] must be at most %d bytes, got %d", i, kMaxStopStringBytes, s.size()));
    }
  }
  for (size_t i = 0; i < params.stop_token_ids.size(); ++i) {
    const int32_t id = params.stop_token_ids[i];
    if (id < 0 || id >= vocab_size) {
      return absl::InvalidArgumentError(
          absl::StrFormat("stop_token_ids[%d] must be in [0, %d), got %d", i, vocab_size, id));
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::runtime
