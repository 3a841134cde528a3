// The Sampler turns one row of logits into the next token of one request. It owns the request's
// random generator, so the scheduler keeps one Sampler per sequence for the sequence's lifetime
// and calls Sample() once per decode step; it is not thread-safe (a sequence is only stepped by
// the scheduler thread).
//
// Pipeline, in the order of vLLM / Hugging Face:
//   1. penalties on the raw logits: repetition (HF/llama.cpp: l > 0 ? l / p : l * p, once per
//      distinct token of prompt + generated), then presence / frequency (OpenAI, generated only);
//   2. logprobs: the chosen token's logprob and the top-n alternatives are taken from
//      log_softmax of the PENALIZED logits, BEFORE temperature, top-k, top-p and min-p. This is
//      the model's (penalized) belief, independent of how the token was then drawn, and it does
//      not degenerate to 0 / -inf under greedy or a small top-k. (vLLM's default "raw" mode
//      differs only in skipping the penalties; with no penalties the two agree.)
//   3. temperature == 0: greedy argmax, ties broken by the lowest id; stop here;
//   4. temperature, then top-k, then top-p (the smallest set, by descending probability and
//      then ascending id, whose probability reaches top_p; at least one token), then min-p
//      (drop p < min_p * p_max);
//   5. draw: one uniform double in [0, 1) from std::mt19937_64 (53 high bits) and an inverse CDF
//      over the kept tokens in ascending id order. Both are fully specified, so a seed gives the
//      same tokens with any standard library (std:: distributions are implementation-defined).
//
// Logits equal to -inf are masked tokens and are never chosen; NaN or +inf logits, all -inf
// logits, and out-of-range context token ids are INVALID_ARGUMENT. Cost: O(V) passes for the
// penalties and logprobs; top-k is one bounded-heap pass (nth_element for k > 2048); top-p
// buckets the candidates by logit and sorts only the bucket where the nucleus closes, so it
// stays O(V) even when the nucleus holds most of a 150k vocabulary.
#ifndef TESSERA_ENGINE_RUNTIME_SAMPLER_H_
#define TESSERA_ENGINE_RUNTIME_SAMPLER_H_

#include <cstdint>
#include <random>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/runtime/sampling_params.h"

namespace tessera::runtime {

struct TokenLogprob {
  int32_t id;
  float logprob;
};

struct SampledToken {
  int32_t id;
  // log_softmax(penalized logits)[id]; see the header comment for the convention.
  float logprob;
  // min(params.logprobs, number of tokens with a finite logit) alternatives, sorted by
  // descending logprob then ascending id. May include the chosen token.
  std::vector<TokenLogprob> top;
};

class Sampler {
 public:
  // `params` should have passed ValidateSamplingParams; Sample re-checks them (cheaply) and fails
  // rather than misbehave if they did not.
  explicit Sampler(const SamplingParams& params);

  // logits: [vocab]. prompt_tokens / generated_tokens: the sequence so far, for the penalties.
  // Advances the random generator by exactly one draw per call unless greedy.
  absl::StatusOr<SampledToken> Sample(absl::Span<const float> logits,
                                      absl::Span<const int32_t> prompt_tokens,
                                      absl::Span<const int32_t> generated_tokens);

  const SamplingParams& params() const { return params_; }

 private:
  absl::Status ApplyPenalties(absl::Span<const int32_t> prompt_tokens,
                              absl::Span<const int32_t> generated_tokens);
  // Steps 4 and 5 of the pipeline; `max_logit` is the largest penalized logit. With
  // `weights_ready`, weights_ already holds exp(logit - max_logit) for every token (temperature 1).
  int32_t Draw(float max_logit, bool weights_ready);
  // The last token (under the sampler's ranking) of the top-p nucleus of candidates_, whose
  // weights sum to `total`. Leaves candidates_ untouched.
  int32_t TopPCutoff(double total);

  SamplingParams params_;
  std::mt19937_64 rng_;
  // Scratch reused across calls: after the first step, Sample allocates only the logprob lists.
  std::vector<float> logits_;        // [vocab] penalized logits
  std::vector<uint32_t> counts_;     // [vocab] occurrences in generated tokens (zeroed after use)
  std::vector<uint8_t> seen_;        // [vocab] token in prompt + generated (zeroed after use)
  std::vector<int32_t> touched_;     // ids whose counts_/seen_ entries are non-zero
  std::vector<int32_t> candidates_;  // ids still eligible during step 4
  std::vector<double> weights_;      // [vocab] unnormalised probabilities, valid for candidates_
  std::vector<double> bucket_mass_;  // top-p histogram
  std::vector<int32_t> scratch_;     // top-p tokens being sorted
};

}  // namespace tessera::runtime

#endif  // TESSERA_ENGINE_RUNTIME_SAMPLER_H_
