#include "engine/tokenizer/hf_decoder.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/json_util.h"
#include "nlohmann/json.hpp"

namespace tessera::tokenizer {

absl::Status ParseHfDecoder(const nlohmann::json& config, TokenDecoding* decoding) {
  if (config.is_null()) return absl::OkStatus();
  TESSERA_ASSIGN_OR_RETURN(std::string type, GetString(config, "type", "decoder"));
  if (type == "ByteLevel") {
    decoding->byte_level = true;
    return absl::OkStatus();
  }
  if (type == "ByteFallback") {
    decoding->byte_fallback = true;
    return absl::OkStatus();
  }
  if (type == "Fuse") return absl::OkStatus();  // concatenation is what we do anyway
  if (type == "Replace") {
    TESSERA_ASSIGN_OR_RETURN(Pattern pattern, GetPattern(config, "Replace decoder"));
    if (pattern.is_regex) {
      return absl::UnimplementedError("Replace decoder with a regex pattern is not supported");
    }
    TESSERA_ASSIGN_OR_RETURN(std::string content, GetString(config, "content", "Replace decoder"));
    decoding->replacements.emplace_back(std::move(pattern.text), std::move(content));
    return absl::OkStatus();
  }
  if (type == "Metaspace") {
    std::string replacement = GetOptionalString(config, "replacement").value_or("\xE2\x96\x81");
    bool prepend = GetBoolOr(config, "add_prefix_space", true);
    if (auto scheme = GetOptionalString(config, "prepend_scheme")) prepend = *scheme != "never";
    decoding->replacements.emplace_back(std::move(replacement), " ");
    if (prepend) decoding->strip_leading_space = true;
    return absl::OkStatus();
  }
  if (type == "Strip") {
    const std::string content = GetOptionalString(config, "content").value_or(" ");
    const int64_t start = GetOptionalInt(config, "start").value_or(0);
    const int64_t stop = GetOptionalInt(config, "stop").value_or(0);
    if (stop != 0 || start > 1 || (start == 1 && content != " ")) {
      return absl::UnimplementedError(absl::StrCat("Strip decoder (content '", content, "', start ",
                                                   start, ", stop ", stop,
                                                   ") is not supported; only Strip(' ', 1, 0)"));
    }
    if (start == 1) decoding->strip_leading_space = true;
    return absl::OkStatus();
  }
  if (type == "Sequence") {
    const nlohmann::json* items = FindArray(config, "decoders");
    if (items == nullptr) return absl::InvalidArgumentError("Sequence decoder has no 'decoders'");
    for (const auto& item : *items) TESSERA_RETURN_IF_ERROR(ParseHfDecoder(item, decoding));
    return absl::OkStatus();
  }
  return absl::UnimplementedError(absl::StrCat("unsupported tokenizer.json decoder '", type, "'"));
}

}  // namespace tessera::tokenizer
