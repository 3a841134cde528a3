#include "engine/tokenizer/pre_tokenizer.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/byte_level.h"
#include "engine/tokenizer/json_util.h"
#include "engine/tokenizer/pretokenizer_patterns.h"
#include "nlohmann/json.hpp"

namespace tessera::tokenizer {
namespace {

struct Segment {
  size_t begin;
  size_t end;
  bool is_match;
};

// Splits one piece at `matches` the way tokenizers' NormalizedString::split does.
void SplitPiece(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                SplitBehavior behavior, bool invert, std::vector<Piece>* out) {
  const absl::string_view text = piece.text;
  std::vector<Segment> segments;
  size_t prev = 0;
  for (const auto& [b, e] : matches) {
    if (b > prev) segments.push_back({prev, b, invert});
    segments.push_back({b, e, !invert});
    prev = e;
  }
  if (prev < text.size()) segments.push_back({prev, text.size(), invert});

  std::vector<std::pair<size_t, size_t>> spans;
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Segment& s : segments) spans.emplace_back(s.begin, s.end);
      break;
    case SplitBehavior::kRemoved:
      for (const Segment& s : segments) {
        if (!s.is_match) spans.emplace_back(s.begin, s.end);
      }
      break;
    case SplitBehavior::kMergedWithPrevious: {
      bool prev_was_match = false;
      for (const Segment& s : segments) {
        if (s.is_match && !spans.empty() && !prev_was_match) {
          spans.back().second = s.end;
        } else {
          spans.emplace_back(s.begin, s.end);
        }
        prev_was_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool prev_was_match = false;
      for (const Segment& s : segments) {
        if (!s.is_match && !spans.empty() && prev_was_match) {
          spans.back().second = s.end;
        } else {
          spans.emplace_back(s.begin, s.end);
        }
        prev_was_match = s.is_match;
      }
      break;
    }
    case SplitBehavior::kContiguous: {
      bool prev_was_match = false;
      for (const Segment& s : segments) {
        if (s.is_match && prev_was_match && !spans.empty()) {
          spans.back().second = s.end;
        } else {
          spans.emplace_back(s.begin, s.end);
        }
        prev_was_match = s.is_match;
      }
      break;
    }
  }
  for (const auto& [b, e] : spans) {
    if (e > b) out->push_back({std::string(text.substr(b, e - b)), piece.at_start && b == 0});
  }
}

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(std::unique_ptr<Regex> regex, SplitBehavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  void PreTokenize(std::vector<Piece>* pieces) const override {
    std::vector<Piece> out;
    out.reserve(pieces->size());
    for (const Piece& p : *pieces) SplitPiece(p, regex_->FindAll(p.text), behavior_, invert_, &out);
    *pieces = std::move(out);
  }

 private:
  std::unique_ptr<Regex> regex_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::unique_ptr<Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}
  void PreTokenize(std::vector<Piece>* pieces) const override {
    std::vector<Piece> split;
    split.reserve(pieces->size());
    for (Piece& p : *pieces) {
      if (add_prefix_space_ && (p.text.empty() || p.text[0] != ' '))
        p.text = absl::StrCat(" ", p.text);
      if (regex_ != nullptr) {
        SplitPiece(p, regex_->FindAll(p.text), SplitBehavior::kIsolated, false, &split);
      } else if (!p.text.empty()) {
        split.push_back(std::move(p));
      }
    }
    for (Piece& p : split) p.text = ByteLevelEncode(p.text);
    *pieces = std::move(split);
  }

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;  // null: use_regex = false
};

enum class PrependScheme { kFirst, kAlways, kNever };

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void PreTokenize(std::vector<Piece>* pieces) const override {
    std::vector<Piece> out;
    for (Piece& p : *pieces) {
      std::string s = absl::StrReplaceAll(p.text, {{" ", replacement_}});
      const bool starts = absl::string_view(s).substr(0, replacement_.size()) == replacement_;
      if (!starts &&
          (scheme_ == PrependScheme::kAlways || (scheme_ == PrependScheme::kFirst && p.at_start))) {
        s = absl::StrCat(replacement_, s);
      }
      if (!split_) {
        if (!s.empty()) out.push_back({std::move(s), p.at_start});
        continue;
      }
      // MergedWithNext on the replacement: every piece starts with ▁ except maybe the first.
      size_t begin = 0;
      size_t pos = s.find(replacement_, 1);
      while (pos != std::string::npos) {
        out.push_back({s.substr(begin, pos - begin), p.at_start && begin == 0});
        begin = pos;
        pos = s.find(replacement_, pos + replacement_.size());
      }
      if (begin < s.size()) out.push_back({s.substr(begin), p.at_start && begin == 0});
    }
    *pieces = std::move(out);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void PreTokenize(std::vector<Piece>* pieces) const override {
    for (const auto& step : steps_) step->PreTokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

absl::StatusOr<SplitBehavior> ParseBehavior(const nlohmann::json& config, const char* fallback) {
  std::string name = GetOptionalString(config, "behavior").value_or(fallback);
  if (name == "Removed") return SplitBehavior::kRemoved;
  if (name == "Isolated") return SplitBehavior::kIsolated;
  if (name == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (name == "Contiguous") return SplitBehavior::kContiguous;
  return absl::InvalidArgumentError(absl::StrCat("unknown split behavior '", name, "'"));
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> RegexSplit(absl::string_view pattern,
                                                         SplitBehavior behavior) {
  TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Regex> regex, Regex::Compile(pattern));
  return MakeSplitPreTokenizer(std::move(regex), behavior, false);
}

}  // namespace

std::unique_ptr<PreTokenizer> MakeSplitPreTokenizer(std::unique_ptr<Regex> regex,
                                                    SplitBehavior behavior, bool invert) {
  return std::make_unique<SplitPreTokenizer>(std::move(regex), behavior, invert);
}

std::unique_ptr<PreTokenizer> MakeByteLevelMappingPreTokenizer() {
  return std::make_unique<ByteLevelPreTokenizer>(false, nullptr);
}

std::unique_ptr<PreTokenizer> MakeSequencePreTokenizer(
    std::vector<std::unique_ptr<PreTokenizer>> steps) {
  return std::make_unique<SequencePreTokenizer>(std::move(steps));
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseHfPreTokenizer(const nlohmann::json& config) {
  if (config.is_null()) return std::unique_ptr<PreTokenizer>();
  TESSERA_ASSIGN_OR_RETURN(std::string type, GetString(config, "type", "pre_tokenizer"));
  if (type == "Split") {
    TESSERA_ASSIGN_OR_RETURN(Pattern pattern, GetPattern(config, "Split pre_tokenizer"));
    TESSERA_ASSIGN_OR_RETURN(SplitBehavior behavior, ParseBehavior(config, "Isolated"));
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Regex> regex,
                             Regex::Compile(pattern.text, /*literal=*/!pattern.is_regex));
    return MakeSplitPreTokenizer(std::move(regex), behavior, GetBoolOr(config, "invert", false));
  }
  if (type == "ByteLevel") {
    std::unique_ptr<Regex> regex;
    if (GetBoolOr(config, "use_regex", true)) {
      TESSERA_ASSIGN_OR_RETURN(regex, Regex::Compile(kByteLevelPattern));
    }
    return std::unique_ptr<PreTokenizer>(std::make_unique<ByteLevelPreTokenizer>(
        GetBoolOr(config, "add_prefix_space", true), std::move(regex)));
  }
  if (type == "Metaspace") {
    std::string replacement = GetOptionalString(config, "replacement").value_or("\xE2\x96\x81");
    PrependScheme scheme = GetBoolOr(config, "add_prefix_space", true) ? PrependScheme::kAlways
                                                                       : PrependScheme::kNever;
    if (auto s = GetOptionalString(config, "prepend_scheme")) {
      if (*s == "first") {
        scheme = PrependScheme::kFirst;
      } else if (*s == "always") {
        scheme = PrependScheme::kAlways;
      } else if (*s == "never") {
        scheme = PrependScheme::kNever;
      } else {
        return absl::InvalidArgumentError(absl::StrCat("unknown prepend_scheme '", *s, "'"));
      }
    }
    return std::unique_ptr<PreTokenizer>(std::make_unique<MetaspacePreTokenizer>(
        std::move(replacement), scheme, GetBoolOr(config, "split", true)));
  }
  if (type == "Digits") {
    return RegexSplit("\\p{N}", GetBoolOr(config, "individual_digits", false)
                                    ? SplitBehavior::kIsolated
                                    : SplitBehavior::kContiguous);
  }
  if (type == "Punctuation") {
    TESSERA_ASSIGN_OR_RETURN(SplitBehavior behavior, ParseBehavior(config, "Isolated"));
    return RegexSplit("[\\p{P}!-/:-@\\[-`{-~]", behavior);
  }
  if (type == "Whitespace") {
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Regex> regex, Regex::Compile("\\w+|[^\\w\\s]+"));
    return MakeSplitPreTokenizer(std::move(regex), SplitBehavior::kRemoved, /*invert=*/true);
  }
  if (type == "WhitespaceSplit") return RegexSplit("\\s+", SplitBehavior::kRemoved);
  if (type == "Sequence") {
    const nlohmann::json* items = FindArray(config, "pretokenizers");
    if (items == nullptr) {
      return absl::InvalidArgumentError("Sequence pre_tokenizer has no 'pretokenizers' array");
    }
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const auto& item : *items) {
      TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> step, ParseHfPreTokenizer(item));
      if (step != nullptr) steps.push_back(std::move(step));
    }
    return MakeSequencePreTokenizer(std::move(steps));
  }
  return absl::UnimplementedError(
      absl::StrCat("unsupported tokenizer.json pre_tokenizer '", type, "'"));
}

}  // namespace tessera::tokenizer
