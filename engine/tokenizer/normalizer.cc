#include "engine/tokenizer/normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/json_util.h"
#include "engine/tokenizer/regex.h"
#include "nlohmann/json.hpp"

namespace tessera::tokenizer {
namespace {

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string Normalize(absl::string_view text) const override {
    return text.empty() ? std::string() : absl::StrCat(prefix_, text);
  }

 private:
  std::string prefix_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(std::string from, std::string to, std::unique_ptr<Regex> regex)
      : from_(std::move(from)), to_(std::move(to)), regex_(std::move(regex)) {}
  std::string Normalize(absl::string_view text) const override {
    if (regex_ == nullptr) return absl::StrReplaceAll(text, {{from_, to_}});
    std::string out;
    size_t prev = 0;
    for (const auto& [b, e] : regex_->FindAll(text)) {
      absl::StrAppend(&out, text.substr(prev, b - prev), to_);
      prev = e;
    }
    absl::StrAppend(&out, text.substr(prev));
    return out;
  }

 private:
  std::string from_;
  std::string to_;
  std::unique_ptr<Regex> regex_;  // null: literal replacement of from_
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  std::string Normalize(absl::string_view text) const override {
    std::string s(text);
    for (const auto& step : steps_) s = step->Normalize(s);
    return s;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

enum class UnicodeForm { kNfc, kNfd, kNfkc, kNfkd };

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(const icu::Normalizer2* impl) : impl_(impl) {}
  std::string Normalize(absl::string_view text) const override {
    std::string out;
    icu::StringByteSink<std::string> sink(&out);
    UErrorCode status = U_ZERO_ERROR;
    impl_->normalizeUTF8(0, icu::StringPiece(text.data(), static_cast<int32_t>(text.size())), sink,
                         nullptr, status);
    // ICU only fails on allocation failure or absurd lengths; keep the text unnormalized then.
    return U_SUCCESS(status) ? out : std::string(text);
  }

 private:
  const icu::Normalizer2* impl_;  // owned by ICU, lives for the process
};

absl::StatusOr<std::unique_ptr<Normalizer>> MakeUnicodeNormalizer(UnicodeForm form) {
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* impl = nullptr;
  switch (form) {
    case UnicodeForm::kNfc:
      impl = icu::Normalizer2::getNFCInstance(status);
      break;
    case UnicodeForm::kNfd:
      impl = icu::Normalizer2::getNFDInstance(status);
      break;
    case UnicodeForm::kNfkc:
      impl = icu::Normalizer2::getNFKCInstance(status);
      break;
    case UnicodeForm::kNfkd:
      impl = icu::Normalizer2::getNFKDInstance(status);
      break;
  }
  if (U_FAILURE(status) || impl == nullptr) {
    return absl::InternalError(absl::StrCat("ICU normalizer unavailable: ", u_errorName(status)));
  }
  return std::make_unique<UnicodeNormalizer>(impl);
}

class LowercaseNormalizer : public Normalizer {
 public:
  std::string Normalize(absl::string_view text) const override {
    icu::UnicodeString s = icu::UnicodeString::fromUTF8(
        icu::StringPiece(text.data(), static_cast<int32_t>(text.size())));
    s.toLower(icu::Locale::getRoot());
    std::string out;
    s.toUTF8String(out);
    return out;
  }
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(std::unique_ptr<Regex> left, std::unique_ptr<Regex> right)
      : left_(std::move(left)), right_(std::move(right)) {}
  std::string Normalize(absl::string_view text) const override {
    if (left_ != nullptr) {
      auto m = left_->FindAll(text);
      if (!m.empty()) text.remove_prefix(m[0].second);
    }
    if (right_ != nullptr) {
      auto m = right_->FindAll(text);
      if (!m.empty()) text = text.substr(0, m[0].first);
    }
    return std::string(text);
  }

 private:
  std::unique_ptr<Regex> left_;
  std::unique_ptr<Regex> right_;
};

}  // namespace

std::unique_ptr<Normalizer> MakePrependNormalizer(std::string prefix) {
  return std::make_unique<PrependNormalizer>(std::move(prefix));
}

std::unique_ptr<Normalizer> MakeReplaceNormalizer(std::string from, std::string to) {
  return std::make_unique<ReplaceNormalizer>(std::move(from), std::move(to), nullptr);
}

std::unique_ptr<Normalizer> MakeSequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps) {
  return std::make_unique<SequenceNormalizer>(std::move(steps));
}

absl::StatusOr<std::unique_ptr<Normalizer>> ParseHfNormalizer(const nlohmann::json& config) {
  if (config.is_null()) return std::unique_ptr<Normalizer>();
  TESSERA_ASSIGN_OR_RETURN(std::string type, GetString(config, "type", "normalizer"));
  if (type == "NFC") return MakeUnicodeNormalizer(UnicodeForm::kNfc);
  if (type == "NFD") return MakeUnicodeNormalizer(UnicodeForm::kNfd);
  if (type == "NFKC") return MakeUnicodeNormalizer(UnicodeForm::kNfkc);
  if (type == "NFKD") return MakeUnicodeNormalizer(UnicodeForm::kNfkd);
  if (type == "Lowercase")
    return std::unique_ptr<Normalizer>(std::make_unique<LowercaseNormalizer>());
  if (type == "Prepend") {
    TESSERA_ASSIGN_OR_RETURN(std::string prefix, GetString(config, "prepend", "Prepend"));
    return MakePrependNormalizer(std::move(prefix));
  }
  if (type == "Replace") {
    TESSERA_ASSIGN_OR_RETURN(Pattern pattern, GetPattern(config, "Replace"));
    TESSERA_ASSIGN_OR_RETURN(std::string content, GetString(config, "content", "Replace"));
    if (!pattern.is_regex) return MakeReplaceNormalizer(std::move(pattern.text), content);
    TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Regex> regex, Regex::Compile(pattern.text));
    return std::unique_ptr<Normalizer>(
        std::make_unique<ReplaceNormalizer>(pattern.text, std::move(content), std::move(regex)));
  }
  if (type == "Strip") {
    const bool left = GetBoolOr(config, "strip_left", true);
    const bool right = GetBoolOr(config, "strip_right", true);
    std::unique_ptr<Regex> l, r;
    if (left) {
      TESSERA_ASSIGN_OR_RETURN(l, Regex::Compile("^\\s+"));
    }
    if (right) {
      TESSERA_ASSIGN_OR_RETURN(r, Regex::Compile("\\s+$"));
    }
    return std::unique_ptr<Normalizer>(
        std::make_unique<StripNormalizer>(std::move(l), std::move(r)));
  }
  if (type == "Sequence") {
    const nlohmann::json* items = FindArray(config, "normalizers");
    if (items == nullptr) {
      return absl::InvalidArgumentError("Sequence normalizer has no 'normalizers' array");
    }
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const auto& item : *items) {
      TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Normalizer> step, ParseHfNormalizer(item));
      if (step != nullptr) steps.push_back(std::move(step));
    }
    return MakeSequenceNormalizer(std::move(steps));
  }
  return absl::UnimplementedError(
      absl::StrCat("unsupported tokenizer.json normalizer '", type, "'"));
}

}  // namespace tessera::tokenizer
