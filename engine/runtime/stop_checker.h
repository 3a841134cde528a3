// StopChecker decides, token by token, when a request's generation ends and which text may be
// streamed to the client so far. It sits after the incremental detokenizer: the scheduler feeds
// it each new token id with the text that token added, and sends the client only `text_to_emit`.
//
// Why text is held back: a stop string can arrive split over several tokens ("<|e" "nd" "|>").
// Text that could still become the start of a stop string is withheld until it either completes
// the stop string (then it is dropped, or kept with include_stop_string_in_output) or can no
// longer match (then it is released). So a client never sees part of a stop string, and the
// concatenation of everything emitted equals what a non-streaming request returns.
//
// Order of checks for one token, as in vLLM: stop_token_ids, then EOS (unless ignore_eos), then
// stop strings, then max_new_tokens. A stop or EOS token's own text is dropped unless
// include_stop_string_in_output. When a stop string and the length limit coincide, the reason
// is "stop". Among several stop strings the one that completes first in the text wins (the
// earliest end; on a tie the longest), which is what a character-by-character stream would see,
// so the result does not depend on how the text was split into tokens.
#ifndef TESSERA_ENGINE_RUNTIME_STOP_CHECKER_H_
#define TESSERA_ENGINE_RUNTIME_STOP_CHECKER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "engine/runtime/sampling_params.h"

namespace tessera::runtime {

enum class FinishReason {
  kLength,     // max_new_tokens reached (or the context window filled)
  kStop,       // a stop string or a stop_token_ids token
  kEos,        // the model's end-of-sequence token
  kCancelled,  // the client went away or the deadline passed
};

// "length", "stop", "eos", "cancelled": the spelling used in the API and in metrics labels.
absl::string_view FinishReasonName(FinishReason reason);

class StopChecker {
 public:
  struct Result {
    // Text that is now safe to send to the client (may be empty).
    std::string text_to_emit;
    // Set on the token that ends generation; no further tokens should be fed.
    std::optional<FinishReason> finish;
  };

  // `params` should have passed ValidateStoppingParams. `eos_ids`: the model's EOS token ids
  // (a model may have several, e.g. Llama 3's <|eot_id|> and <|end_of_text|>).
  StopChecker(const StoppingParams& params, std::vector<int32_t> eos_ids);

  // `id`: the token just generated; `new_text`: the text it added to the output;
  // `num_generated`: tokens generated so far, this one included.
  // After a finishing result, further calls return an empty text and the same reason.
  Result OnToken(int32_t id, absl::string_view new_text, int32_t num_generated);

  // The stream ended for a reason decided elsewhere (cancellation, context window full): returns
  // the withheld text with no reason (the caller knows it). After a stop it returns an empty
  // text and that stop's reason.
  Result Finish();

  bool finished() const { return done_; }

 private:
  Result Stop(FinishReason reason, std::string text);
  // Length of the longest suffix of pending_ that is a proper prefix of some stop string.
  size_t HeldSuffixLength() const;

  StoppingParams params_;
  std::vector<int32_t> eos_ids_;
  size_t max_stop_length_ = 0;
  // Output text received but not yet emitted; shorter than the longest stop string.
  std::string pending_;
  bool done_ = false;
  std::optional<FinishReason> finish_;
};

}  // namespace tessera::runtime

#endif  // TESSERA_ENGINE_RUNTIME_STOP_CHECKER_H_
