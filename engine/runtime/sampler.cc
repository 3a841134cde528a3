#include "engine/runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"

namespace tessera::runtime {
namespace {

// Tokens are ranked by logit, then by lower id, everywhere a ranking is needed (top-k, top-p,
// top-n logprobs). A strict total order makes the kept sets independent of the std::
// algorithms' internal orderings, and makes top_k = 1 agree with greedy on ties.
struct Better {
  const float* logits;
  bool operator()(int32_t a, int32_t b) const {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  }
};

// Top-p sorts small candidate sets outright; larger ones go through a histogram of this many
// logit buckets so that only the bucket where the nucleus closes is sorted. 4096 buckets keep
// that bucket to a few dozen tokens for a 150k vocabulary.
constexpr size_t kTopPSortDirectly = 512;

// Top-k up to this size runs as a bounded heap in one pass; beyond it nth_element wins.
constexpr size_t kTopKHeapLimit = 2048;
constexpr size_t kTopPBuckets = 4096;

// top_p is compared against a cumulative sum of doubles; without slack, a nucleus that reaches
// top_p exactly in real arithmetic (0.5 + 0.3 for top_p = 0.8) could take one more token from
// rounding. 1e-6 is far below any probability difference a client can mean.
constexpr double kTopPSlack = 1e-6;

uint64_t SeedFor(const SamplingParams& params) {
  if (params.seed.has_value()) return *params.seed;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ static_cast<uint64_t>(rd());
}

}  // namespace

Sampler::Sampler(const SamplingParams& params) : params_(params), rng_(SeedFor(params)) {}

absl::Status Sampler::ApplyPenalties(absl::Span<const int32_t> prompt_tokens,
                                     absl::Span<const int32_t> generated_tokens) {
  const bool repetition = params_.repetition_penalty != 1.0f;
  const bool additive = params_.presence_penalty != 0.0f || params_.frequency_penalty != 0.0f;
  if (!repetition && !additive) return absl::OkStatus();

  const int32_t vocab = static_cast<int32_t>(logits_.size());
  auto check_ids = [vocab](absl::Span<const int32_t> ids, const char* what) -> absl::Status {
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] < 0 || ids[i] >= vocab) {
        return absl::InvalidArgumentError(
            absl::StrFormat("%s[%d] = %d is outside [0, %d)", what, i, ids[i], vocab));
      }
    }
    return absl::OkStatus();
  };
  TESSERA_RETURN_IF_ERROR(check_ids(prompt_tokens, "prompt_tokens"));
  TESSERA_RETURN_IF_ERROR(check_ids(generated_tokens, "generated_tokens"));

  // The marks are sized once per vocabulary and cleared through touched_, so a step costs
  // O(context), not O(vocab).
  if (seen_.size() != logits_.size()) {
    seen_.assign(logits_.size(), 0);
    counts_.assign(logits_.size(), 0);
  }

  if (repetition) {
    // HF RepetitionPenaltyLogitsProcessor: each distinct context token once, by the sign of its
    // logit, so a penalty > 1 always makes the token less likely.
    const float p = params_.repetition_penalty;
    for (absl::Span<const int32_t> ids : {prompt_tokens, generated_tokens}) {
      for (int32_t t : ids) {
        if (seen_[t] == 0) {
          seen_[t] = 1;
          touched_.push_back(t);
        }
      }
    }
    for (int32_t t : touched_) {
      float& l = logits_[t];
      l = l > 0.0f ? l / p : l * p;
      seen_[t] = 0;
    }
    touched_.clear();
  }

  if (additive) {
    // OpenAI / vLLM: over generated tokens only; the prompt is the user's text, not a
    // repetition by the model.
    for (int32_t t : generated_tokens) {
      if (counts_[t]++ == 0) touched_.push_back(t);
    }
    for (int32_t t : touched_) {
      logits_[t] -=
          params_.presence_penalty + params_.frequency_penalty * static_cast<float>(counts_[t]);
      counts_[t] = 0;
    }
    touched_.clear();
  }
  return absl::OkStatus();
}

absl::StatusOr<SampledToken> Sampler::Sample(absl::Span<const float> logits,
                                             absl::Span<const int32_t> prompt_tokens,
                                             absl::Span<const int32_t> generated_tokens) {
  if (logits.empty() || logits.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("logits must hold 1..2^31-1 values, got %d", logits.size()));
  }
  const int32_t vocab = static_cast<int32_t>(logits.size());
  TESSERA_RETURN_IF_ERROR(ValidateSamplingParams(params_, vocab));

  // -inf is a legitimate mask; NaN or +inf means the forward pass broke, and sampling from it
  // would silently produce garbage.
  logits_.assign(logits.begin(), logits.end());
  bool any_finite = false;
  for (int32_t i = 0; i < vocab; ++i) {
    const float l = logits_[i];
    if (std::isnan(l) || l == std::numeric_limits<float>::infinity()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("logits[%d] is %g; the model produced a non-finite value", i, l));
    }
    any_finite |= std::isfinite(l);
  }
  if (!any_finite) return absl::InvalidArgumentError("every logit is -inf; nothing to sample");

  TESSERA_RETURN_IF_ERROR(ApplyPenalties(prompt_tokens, generated_tokens));

  // One pass: the argmax (lowest id on ties: strict >) and the maximum for a stable
  // log-sum-exp. The running maximum lives in a register; comparing against logits_[best]
  // instead chains a load into every iteration and runs several times slower. -inf never wins,
  // and at least one logit is finite (penalties keep finite logits finite).
  int32_t best = 0;
  float max_logit = -std::numeric_limits<float>::infinity();
  for (int32_t i = 0; i < vocab; ++i) {
    if (logits_[i] > max_logit) {
      max_logit = logits_[i];
      best = i;
    }
  }
  double sum = 0.0;
  // float exp (with a double sum) is several times faster than double exp and accurate to
  // ~1e-7 relative, far below what a logprob is read to.
  // At temperature 1 these are also the sampling weights, so they are kept for Draw.
  const bool greedy = params_.temperature == 0.0f;
  const bool keep_weights = params_.temperature == 1.0f;
  if (weights_.size() != logits_.size()) weights_.assign(logits_.size(), 0.0);
  if (keep_weights) {
    for (int32_t i = 0; i < vocab; ++i) sum += weights_[i] = std::exp(logits_[i] - max_logit);
  } else {
    for (float l : logits_) sum += std::exp(l - max_logit);
  }
  const double log_z = max_logit + std::log(sum);

  SampledToken out;
  out.id = greedy ? best : Draw(max_logit, keep_weights);
  out.logprob = static_cast<float>(logits_[out.id] - log_z);

  const size_t n = static_cast<size_t>(std::min(params_.logprobs, vocab));
  if (n > 0) {
    // Insertion into a sorted list of n <= 20: O(V) when most tokens lose the first compare,
    // which they do after the first few hundred.
    Better better{logits_.data()};
    std::vector<int32_t> top;
    top.reserve(n + 1);
    for (int32_t i = 0; i < vocab; ++i) {
      if (!std::isfinite(logits_[i])) continue;
      if (top.size() == n && !better(i, top.back())) continue;
      top.insert(std::upper_bound(top.begin(), top.end(), i, better), i);
      if (top.size() > n) top.pop_back();
    }
    out.top.reserve(top.size());
    for (int32_t id : top) {
      out.top.push_back({id, static_cast<float>(logits_[id] - log_z)});
    }
  }
  return out;
}

int32_t Sampler::TopPCutoff(double total) {
  const double threshold = (static_cast<double>(params_.top_p) - kTopPSlack) * total;
  const Better better{logits_.data()};
  // Sorts scratch_ best first and returns the token at which the running mass (starting from
  // `cumulative`) reaches the threshold, or the last one when rounding keeps it just short.
  auto cutoff_in_sorted_scratch = [&](double cumulative) {
    std::sort(scratch_.begin(), scratch_.end(), better);
    for (int32_t id : scratch_) {
      cumulative += weights_[id];
      if (cumulative >= threshold) return id;
    }
    return scratch_.back();
  };

  float lo = logits_[candidates_.front()];
  float hi = lo;
  for (int32_t id : candidates_) {
    lo = std::min(lo, logits_[id]);
    hi = std::max(hi, logits_[id]);
  }
  if (candidates_.size() <= kTopPSortDirectly || lo == hi) {
    scratch_.assign(candidates_.begin(), candidates_.end());
    return cutoff_in_sorted_scratch(0.0);
  }

  // Bucket by logit (linear in the scaled logit too, so temperature does not matter) and find
  // the bucket in which the cumulative mass crosses the threshold: only that bucket needs
  // sorting. The bucket index is a non-increasing function of the logit, so this agrees with a
  // full sort under Better.
  const double scale = static_cast<double>(kTopPBuckets) / (static_cast<double>(hi) - lo);
  auto bucket_of = [&](int32_t id) {
    const double offset = (static_cast<double>(hi) - logits_[id]) * scale;
    return std::min(kTopPBuckets - 1, static_cast<size_t>(offset));
  };
  bucket_mass_.assign(kTopPBuckets, 0.0);
  for (int32_t id : candidates_) bucket_mass_[bucket_of(id)] += weights_[id];
  size_t boundary = 0;
  double above = 0.0;
  // Stops at the first bucket whose mass reaches the threshold; that bucket has positive mass,
  // or is the last one, which holds the lowest logit, so it is never empty.
  for (; boundary + 1 < kTopPBuckets; ++boundary) {
    if (above + bucket_mass_[boundary] >= threshold) break;
    above += bucket_mass_[boundary];
  }
  scratch_.clear();
  for (int32_t id : candidates_) {
    if (bucket_of(id) == boundary) scratch_.push_back(id);
  }
  return cutoff_in_sorted_scratch(above);
}

int32_t Sampler::Draw(float max_logit, bool weights_ready) {
  const int32_t vocab = static_cast<int32_t>(logits_.size());
  const float* l = logits_.data();

  // Once reordered by a selection, candidates_ is sorted back to id order for the draw.
  bool reordered = false;
  candidates_.clear();
  const size_t top_k = static_cast<size_t>(params_.top_k);
  if (top_k > 0 && top_k <= kTopKHeapLimit) {
    // A bounded heap with the worst kept token in front: after the first few thousand tokens
    // almost every token fails the single comparison with the front, so this is one cheap pass
    // (nth_element over 150k ids costs several times more).
    const Better better{l};
    for (int32_t i = 0; i < vocab; ++i) {
      if (!std::isfinite(l[i])) continue;
      if (candidates_.size() < top_k) {
        candidates_.push_back(i);
        std::push_heap(candidates_.begin(), candidates_.end(), better);
      } else if (better(i, candidates_.front())) {
        std::pop_heap(candidates_.begin(), candidates_.end(), better);
        candidates_.back() = i;
        std::push_heap(candidates_.begin(), candidates_.end(), better);
      }
    }
    reordered = true;
  } else {
    for (int32_t i = 0; i < vocab; ++i) {
      if (std::isfinite(l[i])) candidates_.push_back(i);
    }
    if (top_k > 0 && top_k < candidates_.size()) {
      std::nth_element(candidates_.begin(), candidates_.begin() + (top_k - 1), candidates_.end(),
                       Better{l});
      candidates_.resize(top_k);
      reordered = true;
    }
  }

  // Probabilities up to a common factor. Subtracting the max before dividing by the
  // temperature keeps a tiny temperature from overflowing (l / T = inf, inf - inf = NaN); the
  // most likely token (always a candidate) gets weight exactly 1. At temperature 1 the
  // log-sum-exp pass already stored them.
  double total = 0.0;
  if (weights_ready) {
    for (int32_t id : candidates_) total += weights_[id];
  } else {
    const float inv_t = 1.0f / params_.temperature;
    for (int32_t id : candidates_) {
      weights_[id] = std::exp((l[id] - max_logit) * inv_t);
      total += weights_[id];
    }
  }

  if (params_.top_p < 1.0f) {
    // The nucleus is every candidate ranked at or above the cutoff. Filtering in place keeps
    // candidates_ in id order: sorting a nucleus of 100k+ tokens back into id order would cost
    // more than everything else in this function.
    const int32_t cutoff = TopPCutoff(total);
    const Better better{l};
    std::erase_if(candidates_, [&](int32_t id) { return better(cutoff, id); });
  }

  if (params_.min_p > 0.0f) {
    // Relative to the most likely token, whose weight is 1 and which always survives
    // (min_p <= 1); renormalisation by top-p does not change ratios. erase_if keeps the order.
    const double floor = params_.min_p;
    std::erase_if(candidates_, [&](int32_t id) { return weights_[id] < floor; });
  }

  if (reordered) std::sort(candidates_.begin(), candidates_.end());
  total = 0.0;
  for (int32_t id : candidates_) total += weights_[id];

  // 53 random bits -> a double in [0, 1), then the inverse CDF in id order.
  const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53;
  const double target = u * total;
  double cumulative = 0.0;
  int32_t last_positive = candidates_.front();
  for (int32_t id : candidates_) {
    if (weights_[id] <= 0.0) continue;
    cumulative += weights_[id];
    last_positive = id;
    if (target < cumulative) return id;
  }
  // Only reachable through rounding in the running sum.
  return last_positive;
}

}  // namespace tessera::runtime
