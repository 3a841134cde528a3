// The per-request knobs that decide how a token is picked from the logits (SamplingParams) and
// when generation ends (StoppingParams), with their validation. The server converts the proto
// request into these structs and calls the Validate* functions before Scheduler::Submit, so every
// bad field becomes an INVALID_ARGUMENT that names it; the Sampler and StopChecker then rely on
// the ranges documented here. Semantics follow vLLM / Hugging Face / OpenAI so that clients
// written against those servers get the same behaviour.
#ifndef TESSERA_ENGINE_RUNTIME_SAMPLING_PARAMS_H_
#define TESSERA_ENGINE_RUNTIME_SAMPLING_PARAMS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace tessera::runtime {

// Upper bound on SamplingParams::logprobs (the OpenAI API limit).
inline constexpr int32_t kMaxLogprobs = 20;
// Bounds on stop strings: they are searched on every token, so their number and size are capped.
inline constexpr int32_t kMaxStopStrings = 16;
inline constexpr int32_t kMaxStopStringBytes = 256;

struct SamplingParams {
  // Divides the logits before sampling; 0 selects greedy decoding (argmax, lowest id on ties).
  float temperature = 1.0f;
  // Keep only the k most likely tokens; 0 disables. Values above the vocabulary size act as
  // "all tokens" (vLLM clamps the same way) so a client need not know the vocabulary.
  int32_t top_k = 0;
  // Nucleus sampling: keep the smallest set of tokens whose probability sums to >= top_p.
  // In (0, 1]; 1 disables.
  float top_p = 1.0f;
  // Drop tokens whose probability is below min_p * (probability of the most likely token).
  // In [0, 1]; 0 disables.
  float min_p = 0.0f;
  // > 0. HF / llama.cpp semantics over every token present in prompt + generated tokens
  // (each distinct token once): logit > 0 ? logit / p : logit * p. 1 disables.
  float repetition_penalty = 1.0f;
  // In [-2, 2]. OpenAI semantics over generated tokens only (as vLLM):
  // logit -= presence_penalty * [count > 0] + frequency_penalty * count.
  float presence_penalty = 0.0f;
  float frequency_penalty = 0.0f;
  // Same seed + same request (prompt, params, model, backend) => same tokens. Without a seed the
  // sampler seeds itself from std::random_device.
  std::optional<uint64_t> seed;
  // Number of top alternatives to report per token, 0..kMaxLogprobs. The chosen token's logprob
  // is always computed.
  int32_t logprobs = 0;
};

struct StoppingParams {
  // >= 1 and <= the server's --max_new_tokens limit.
  int32_t max_new_tokens = 256;
  // At most kMaxStopStrings, each non-empty and at most kMaxStopStringBytes bytes. Generation
  // stops when the output text contains one; the output is cut before it.
  std::vector<std::string> stop_strings;
  // Token ids that stop generation (finish reason "stop"); each in [0, vocab_size).
  std::vector<int32_t> stop_token_ids;
  // Keep generating past the model's EOS token(s).
  bool ignore_eos = false;
  // Keep the matched stop string (or the stop / EOS token's text) at the end of the output.
  bool include_stop_string_in_output = false;
};

// INVALID_ARGUMENT naming the first bad field, e.g. "temperature must be >= 0, got -1".
// NaN and infinities are rejected for every float field. `vocab_size` is the model's.
absl::Status ValidateSamplingParams(const SamplingParams& params, int32_t vocab_size);

// INVALID_ARGUMENT naming the first bad field. `max_new_tokens_limit` is the server's cap.
absl::Status ValidateStoppingParams(const StoppingParams& params, int32_t vocab_size,
                                    int32_t max_new_tokens_limit);

}  // namespace tessera::runtime

#endif  // TESSERA_ENGINE_RUNTIME_SAMPLING_PARAMS_H_
