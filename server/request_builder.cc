#include "server/request_builder.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/runtime/sampling_params.h"

namespace tessera::server {
namespace {

// Re-labels an engine validation error with the proto message it came from ("sampling." +
// "temperature must be >= 0, got -1").
absl::Status Prefixed(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

runtime::SamplingParams ToSampling(const tessera::v1::SamplingParams& p) {
  runtime::SamplingParams s;
  if (p.has_temperature()) s.temperature = p.temperature();
  if (p.has_top_k()) s.top_k = p.top_k();
  if (p.has_top_p()) s.top_p = p.top_p();
  if (p.has_min_p()) s.min_p = p.min_p();
  if (p.has_repetition_penalty()) s.repetition_penalty = p.repetition_penalty();
  if (p.has_presence_penalty()) s.presence_penalty = p.presence_penalty();
  if (p.has_frequency_penalty()) s.frequency_penalty = p.frequency_penalty();
  if (p.has_seed()) s.seed = p.seed();
  return s;
}

}  // namespace

absl::StatusOr<runtime::GenerationRequest> BuildGenerationRequest(
    const tessera::v1::GenerateRequest& proto, const tokenizer::Tokenizer& tokenizer,
    const RequestLimits& limits, const std::string& request_id) {
  runtime::GenerationRequest req;
  if (proto.request_id().size() > kMaxRequestIdBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("request_id must be at most %d bytes, got %d",
                                                      kMaxRequestIdBytes,
                                                      proto.request_id().size()));
  }
  req.request_id = proto.request_id().empty() ? request_id : proto.request_id();

  // The prompt.
  std::string field;
  switch (proto.prompt_case()) {
    case tessera::v1::GenerateRequest::kText: {
      field = "text";
      if (proto.text().empty()) return absl::InvalidArgumentError("text: the prompt is empty");
      const bool add_special = !proto.has_add_special_tokens() || proto.add_special_tokens();
      auto ids = tokenizer.Encode(proto.text(), add_special);
      if (!ids.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("text: ", ids.status().message()));
      }
      req.prompt_tokens = *std::move(ids);
      if (req.prompt_tokens.empty()) {
        return absl::InvalidArgumentError("text: the prompt encodes to no tokens");
      }
      break;
    }
    case tessera::v1::GenerateRequest::kTokenIds: {
      field = "token_ids.ids";
      const auto& ids = proto.token_ids().ids();
      if (ids.empty()) return absl::InvalidArgumentError("token_ids.ids: the prompt is empty");
      for (int i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= limits.vocab_size) {
          return absl::InvalidArgumentError(
              absl::StrFormat("token_ids.ids[%d]: token id %d is outside the vocabulary [0, %d)", i,
                              ids[i], limits.vocab_size));
        }
      }
      req.prompt_tokens.assign(ids.begin(), ids.end());
      break;
    }
    case tessera::v1::GenerateRequest::PROMPT_NOT_SET:
      return absl::InvalidArgumentError("prompt: set one of text or token_ids");
  }
  const int64_t prompt = static_cast<int64_t>(req.prompt_tokens.size());
  if (prompt > limits.max_prompt_tokens) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: the prompt is %d tokens, over the server's limit of %d "
                        "(--max_prompt_tokens)",
                        field, prompt, limits.max_prompt_tokens));
  }
  if (prompt >= limits.context_length) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: the prompt is %d tokens and leaves no room for a new token in the context length %d",
        field, prompt, limits.context_length));
  }

  // Sampling and logprobs.
  req.sampling = ToSampling(proto.sampling());
  const auto& lp = proto.logprobs();
  if (lp.top_logprobs() < 0 || lp.top_logprobs() > runtime::kMaxLogprobs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("logprobs.top_logprobs must be in [0, %d], got %d", runtime::kMaxLogprobs,
                        lp.top_logprobs()));
  }
  if (!lp.enabled() && lp.top_logprobs() != 0) {
    return absl::InvalidArgumentError("logprobs.top_logprobs needs logprobs.enabled = true");
  }
  req.return_logprobs = lp.enabled();
  req.sampling.logprobs = lp.top_logprobs();
  if (absl::Status s = runtime::ValidateSamplingParams(req.sampling, limits.vocab_size); !s.ok()) {
    return Prefixed(s, "sampling.");
  }

  // Stopping. Without max_new_tokens, generate until the context is full (capped by the limit).
  const auto& st = proto.stopping();
  if (st.has_max_new_tokens()) {
    req.stopping.max_new_tokens = st.max_new_tokens();
  } else {
    req.stopping.max_new_tokens = static_cast<int32_t>(
        std::min<int64_t>(limits.max_new_tokens, limits.context_length - prompt));
  }
  req.stopping.stop_strings.assign(st.stop_strings().begin(), st.stop_strings().end());
  req.stopping.stop_token_ids.assign(st.stop_token_ids().begin(), st.stop_token_ids().end());
  req.stopping.ignore_eos = st.ignore_eos();
  req.stopping.include_stop_string_in_output = st.include_stop_str_in_output();
  if (absl::Status s =
          runtime::ValidateStoppingParams(req.stopping, limits.vocab_size, limits.max_new_tokens);
      !s.ok()) {
    return Prefixed(s, "stopping.");
  }
  if (prompt + req.stopping.max_new_tokens > limits.context_length) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "stopping.max_new_tokens: the prompt (%d tokens) + max_new_tokens (%d) exceeds the "
        "context length %d",
        prompt, req.stopping.max_new_tokens, limits.context_length));
  }
  return req;
}

}  // namespace tessera::server
