// Perplexity with llama.cpp's methodology, so figures compare across engines: the token stream
// (BOS first) is cut into non-overlapping windows of n_ctx tokens, each window's first token is
// replaced by BOS, and only the second half of each window is scored (positions n_ctx/2 .. n_ctx-2
// predicting the next token). The standard error is llama.cpp's: from the mean and variance of
// the per-token negative log-likelihoods.
#ifndef TESSERA_ENGINE_MODEL_PERPLEXITY_H_
#define TESSERA_ENGINE_MODEL_PERPLEXITY_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/decoder.h"

namespace tessera::model {

struct PerplexityResult {
  int64_t n_ctx = 0;
  int64_t scored_tokens = 0;
  double mean_nll = 0;
  double perplexity = 0;
  double perplexity_stderr = 0;
  std::vector<double> window_perplexity;
};

// `progress` (optional) is called after each window with (window index, its perplexity).
absl::StatusOr<PerplexityResult> ComputePerplexity(
    Decoder& model, absl::Span<const int32_t> tokens, int64_t n_ctx, int32_t bos_id,
    const std::function<void(int64_t, double)>& progress = nullptr);

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_PERPLEXITY_H_
