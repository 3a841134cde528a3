#include "engine/model/perplexity.h"

#include <cmath>

#include "absl/strings/str_format.h"
#include "engine/common/status_macros.h"

namespace tessera::model {

absl::StatusOr<PerplexityResult> ComputePerplexity(
    Decoder& model, absl::Span<const int32_t> tokens, int64_t n_ctx, int32_t bos_id,
    const std::function<void(int64_t, double)>& progress) {
  const int64_t vocab = model.config().vocab_size;
  if (n_ctx < 4) return absl::InvalidArgumentError("ctx must be at least 4");
  if (n_ctx > model.config().max_context) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ctx %d exceeds the model's context length %d", n_ctx, model.config().max_context));
  }
  const int64_t n_windows = static_cast<int64_t>(tokens.size()) / n_ctx;
  if (n_windows < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the text has %d tokens, fewer than one window of ctx %d", tokens.size(), n_ctx));
  }
  const auto& c = model.config();
  runtime::KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, 16, (n_ctx + 15) / 16,
                         model.uses_host_kv_storage(), model.kv_cache_format());
  PerplexityResult result;
  result.n_ctx = n_ctx;
  double nll_sum = 0, nll2_sum = 0;
  const int64_t first = n_ctx / 2;
  std::vector<float> logits;
  for (int64_t w = 0; w < n_windows; ++w) {
    std::vector<int32_t> window(tokens.begin() + w * n_ctx, tokens.begin() + (w + 1) * n_ctx);
    window[0] = bos_id;
    runtime::SequenceKv seq;
    seq.max_length = n_ctx;  // llama.cpp's per-sequence context
    SequenceChunk chunk{&seq, window, /*all_logits=*/true, false};
    absl::Status s = model.Forward({&chunk, 1}, cache, &logits);
    cache.Release(seq);
    TESSERA_RETURN_IF_ERROR(s);
    double window_nll = 0;
    int64_t window_count = 0;
    for (int64_t j = first; j < n_ctx - 1; ++j) {
      const float* row = logits.data() + j * vocab;
      double max = row[0];
      for (int64_t i = 1; i < vocab; ++i) max = std::max<double>(max, row[i]);
      double sum = 0;
      for (int64_t i = 0; i < vocab; ++i) sum += std::exp(static_cast<double>(row[i]) - max);
      const double nll = -(static_cast<double>(row[window[j + 1]]) - max - std::log(sum));
      window_nll += nll;
      nll_sum += nll;
      nll2_sum += nll * nll;
      ++window_count;
    }
    result.window_perplexity.push_back(std::exp(window_nll / window_count));
    result.scored_tokens += window_count;
    if (progress) progress(w, result.window_perplexity.back());
  }
  const double n = static_cast<double>(result.scored_tokens);
  result.mean_nll = nll_sum / n;
  result.perplexity = std::exp(result.mean_nll);
  const double var = nll2_sum / n - result.mean_nll * result.mean_nll;
  result.perplexity_stderr = n > 1 ? result.perplexity * std::sqrt(std::max(0.0, var) / (n - 1)) : 0;
  return result;
}

}  // namespace tessera::model
