#include "engine/runtime/stop_checker.h"

#include <algorithm>
#include <utility>

namespace tessera::runtime {

absl::string_view FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kLength:
      return "length";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kEos:
      return "eos";
    case FinishReason::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

StopChecker::StopChecker(const StoppingParams& params, std::vector<int32_t> eos_ids)
    : params_(params), eos_ids_(std::move(eos_ids)) {
  // Empty stop strings would match everywhere; validation rejects them, and dropping them here
  // keeps an unvalidated caller from stopping on the first token.
  std::erase_if(params_.stop_strings, [](const std::string& s) { return s.empty(); });
  for (const std::string& s : params_.stop_strings) {
    max_stop_length_ = std::max(max_stop_length_, s.size());
  }
}

StopChecker::Result StopChecker::Stop(FinishReason reason, std::string text) {
  done_ = true;
  finish_ = reason;
  pending_.clear();
  return Result{std::move(text), reason};
}

size_t StopChecker::HeldSuffixLength() const {
  const absl::string_view pending = pending_;
  size_t held = 0;
  for (const std::string& stop : params_.stop_strings) {
    // Only proper prefixes: a full occurrence was already handled as a match.
    for (size_t k = std::min(stop.size() - 1, pending.size()); k > held; --k) {
      if (pending.substr(pending.size() - k) == absl::string_view(stop).substr(0, k)) {
        held = k;
        break;
      }
    }
  }
  return held;
}

StopChecker::Result StopChecker::OnToken(int32_t id, absl::string_view new_text,
                                         int32_t num_generated) {
  if (done_) return Result{"", finish_};
  const bool keep_stop_text = params_.include_stop_string_in_output;

  // A stop or EOS token ends the stream now: the withheld text was not part of a stop string
  // (or it would have matched), so it is released with the token's own text appended only when
  // the client asked to see what stopped it.
  auto contains = [id](const std::vector<int32_t>& ids) {
    return std::find(ids.begin(), ids.end(), id) != ids.end();
  };
  const bool is_stop_token = contains(params_.stop_token_ids);
  if (is_stop_token || (!params_.ignore_eos && contains(eos_ids_))) {
    std::string text = std::move(pending_);
    if (keep_stop_text) text.append(new_text.data(), new_text.size());
    return Stop(is_stop_token ? FinishReason::kStop : FinishReason::kEos, std::move(text));
  }

  pending_.append(new_text.data(), new_text.size());

  if (max_stop_length_ > 0) {
    // pending_ held no complete stop string before this token, so any match ends in new_text;
    // pending_ is short (held text < longest stop string, plus one token's text), so a plain
    // search per stop string is cheap.
    size_t match_pos = absl::string_view::npos;
    size_t match_end = absl::string_view::npos;
    for (const std::string& stop : params_.stop_strings) {
      const size_t pos = absl::string_view(pending_).find(stop);
      if (pos == absl::string_view::npos) continue;
      const size_t end = pos + stop.size();
      if (end < match_end || (end == match_end && pos < match_pos)) {
        match_pos = pos;
        match_end = end;
      }
    }
    if (match_pos != absl::string_view::npos) {
      std::string text = pending_.substr(0, keep_stop_text ? match_end : match_pos);
      return Stop(FinishReason::kStop, std::move(text));
    }
  }

  if (num_generated >= params_.max_new_tokens) {
    return Stop(FinishReason::kLength, std::move(pending_));
  }

  const size_t held = HeldSuffixLength();
  Result result;
  result.text_to_emit = pending_.substr(0, pending_.size() - held);
  pending_.erase(0, pending_.size() - held);
  return result;
}

StopChecker::Result StopChecker::Finish() {
  if (done_) return Result{"", finish_};
  done_ = true;
  Result result{std::move(pending_), std::nullopt};
  pending_.clear();
  return result;
}

}  // namespace tessera::runtime
