// LoadGgufTokenizer: the tokenizer.ggml.* keys as llama.cpp's llama-vocab.cpp reads them.
// "llama" vocabularies are SentencePiece BPE over whitespace escaped to ▁ with a dummy-prefix
// space before each raw fragment (add_space_prefix, default on); "gpt2" vocabularies are
// byte-level BPE whose split regexes are named by tokenizer.ggml.pre. Control, unknown and
// user-defined tokens are matched in the text as whole tokens (control and unknown only when
// parse_special), and decode to their text unchanged.
#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/pipeline_tokenizer.h"
#include "engine/tokenizer/pretokenizer_patterns.h"
#include "engine/tokenizer/spm_model.h"
#include "engine/tokenizer/tokenizer.h"

namespace tessera::tokenizer {
namespace {

constexpr absl::string_view kSpace = "\xE2\x96\x81";  // ▁

uint8_t AttrFromTokenType(int64_t type) {
  switch (type) {
    case 2:
      return kAttrUnknown | kAttrControl;  // hidden like control tokens, as llama.cpp does
    case 3:
      return kAttrControl;
    case 4:
      return kAttrUserDefined;
    case 5:
      return kAttrUnused;
    case 6:
      return kAttrByte;
    default:
      return kAttrNormal;  // 0 (undefined) and 1 (normal)
  }
}

// An id key, or nullopt when absent or out of range (files write -1 as u32 4294967295).
std::optional<int32_t> OptionalId(const io::GgufMetadata& md, const char* key, int32_t n) {
  auto v = md.GetInt(key);
  if (!v.ok() || *v < 0 || *v >= n) return std::nullopt;
  return static_cast<int32_t>(*v);
}

bool BoolOr(const io::GgufMetadata& md, const char* key, bool fallback) {
  auto v = md.GetBool(key);
  return v.ok() ? *v : fallback;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ReadMerges(
    const io::GgufMetadata& md) {
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> lines,
                           md.GetStringArray("tokenizer.ggml.merges"));
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    // Split at the first space after the first character: a merge part may itself be " "...
    // but never starts the line with one in byte-level vocabularies (spaces are Ġ there).
    const size_t sep = lines[i].find(' ', 1);
    if (sep == std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.ggml.merges[", i, "] = '", lines[i], "' is not 'a b'"));
    }
    merges.emplace_back(lines[i].substr(0, sep), lines[i].substr(sep + 1));
  }
  return merges;
}

// EOS plus end-of-turn/message ids: the explicit keys, then the texts llama.cpp recognises.
std::vector<int32_t> EndIds(const io::GgufMetadata& md, const Vocab& vocab) {
  std::vector<int32_t> ids;
  auto add = [&](std::optional<int32_t> id) {
    if (id && std::find(ids.begin(), ids.end(), *id) == ids.end()) ids.push_back(*id);
  };
  const int32_t n = vocab.size();
  add(OptionalId(md, "tokenizer.ggml.eos_token_id", n));
  add(OptionalId(md, "tokenizer.ggml.eot_token_id", n));
  add(OptionalId(md, "tokenizer.ggml.eom_token_id", n));
  for (absl::string_view text :
       {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
        "<EOT>", "<|end_of_text|>", "<｜end▁of▁sentence｜>"}) {
    auto id = vocab.Find(text);
    if (id && vocab.Has(*id, kAttrControl | kAttrUserDefined)) add(id);
  }
  return ids;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadGgufTokenizer(const io::GgufMetadata& md) {
  TESSERA_ASSIGN_OR_RETURN(std::string model, md.GetString("tokenizer.ggml.model"));
  if (model != "llama" && model != "gpt2") {
    return absl::UnimplementedError(absl::StrCat("GGUF tokenizer model '", model,
                                                 "' is not supported (only 'llama' and 'gpt2')"));
  }
  TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> tokens,
                           md.GetStringArray("tokenizer.ggml.tokens"));
  if (tokens.empty()) return absl::InvalidArgumentError("tokenizer.ggml.tokens is empty");
  const auto n = static_cast<int32_t>(tokens.size());
  std::vector<int64_t> types;
  if (md.Contains("tokenizer.ggml.token_type")) {
    TESSERA_ASSIGN_OR_RETURN(types, md.GetIntArray("tokenizer.ggml.token_type"));
    if (types.size() != tokens.size()) {
      return absl::InvalidArgumentError(absl::StrCat("tokenizer.ggml.token_type has ", types.size(),
                                                     " entries for ", n, " tokens"));
    }
  }
  std::vector<double> scores;
  if (md.Contains("tokenizer.ggml.scores")) {
    TESSERA_ASSIGN_OR_RETURN(scores, md.GetFloatArray("tokenizer.ggml.scores"));
    if (scores.size() != tokens.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.ggml.scores has ", scores.size(), " entries for ", n, " tokens"));
    }
  }

  PipelineParts parts;
  for (int32_t id = 0; id < n; ++id) {
    const uint8_t attrs = types.empty() ? uint8_t{kAttrNormal} : AttrFromTokenType(types[id]);
    parts.vocab.Set(id, tokens[id], attrs, scores.empty() ? 0.0f : static_cast<float>(scores[id]));
    if ((attrs & (kAttrControl | kAttrUserDefined)) != 0 && !tokens[id].empty()) {
      parts.added_tokens.push_back(
          {.id = id, .content = tokens[id], .special = (attrs & kAttrControl) != 0});
    }
  }

  const bool is_spm = model == "llama";
  std::optional<int32_t> unk_id = OptionalId(md, "tokenizer.ggml.unknown_token_id", n);
  parts.bos_id = OptionalId(md, "tokenizer.ggml.bos_token_id", n);
  if (is_spm) {
    // llama.cpp's defaults for SentencePiece vocabularies.
    if (!md.Contains("tokenizer.ggml.unknown_token_id") && n > 0) unk_id = 0;
    if (!md.Contains("tokenizer.ggml.bos_token_id") && n > 1) parts.bos_id = 1;
  }
  parts.eos_ids = EndIds(md, parts.vocab);
  if (BoolOr(md, "tokenizer.ggml.add_bos_token", is_spm) && parts.bos_id) {
    parts.prefix_ids.push_back(*parts.bos_id);
  }
  if (BoolOr(md, "tokenizer.ggml.add_eos_token", false) && !parts.eos_ids.empty()) {
    parts.suffix_ids.push_back(parts.eos_ids.front());
  }
  parts.decoding.raw_added_tokens = true;

  if (is_spm) {
    const bool add_space_prefix = BoolOr(md, "tokenizer.ggml.add_space_prefix", true);
    std::vector<std::unique_ptr<Normalizer>> steps;
    if (add_space_prefix) steps.push_back(MakePrependNormalizer(" "));
    steps.push_back(MakeReplaceNormalizer(" ", std::string(kSpace)));
    parts.normalizer = MakeSequenceNormalizer(std::move(steps));
    parts.model = std::make_unique<SpmModel>(unk_id);
    parts.decoding.byte_fallback = true;
    parts.decoding.replacements.emplace_back(kSpace, " ");
    parts.decoding.strip_leading_space = add_space_prefix;
    parts.description = "gguf llama (SentencePiece BPE)";
  } else {
    std::string pre = "default";
    if (md.Contains("tokenizer.ggml.pre")) {
      TESSERA_ASSIGN_OR_RETURN(pre, md.GetString("tokenizer.ggml.pre"));
    }
    TESSERA_ASSIGN_OR_RETURN(std::vector<std::string> patterns, GgufPreTokenizerPatterns(pre));
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (const std::string& pattern : patterns) {
      TESSERA_ASSIGN_OR_RETURN(std::unique_ptr<Regex> regex, Regex::Compile(pattern));
      steps.push_back(MakeSplitPreTokenizer(std::move(regex), SplitBehavior::kIsolated, false));
    }
    steps.push_back(MakeByteLevelMappingPreTokenizer());
    parts.pre_tokenizer = MakeSequencePreTokenizer(std::move(steps));
    TESSERA_ASSIGN_OR_RETURN(auto merges, ReadMerges(md));
    BpeOptions options;
    // llama.cpp takes a whole piece that is a token as is for Llama 3 style vocabularies.
    options.ignore_merges = pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3";
    TESSERA_ASSIGN_OR_RETURN(parts.model,
                             BpeModel::Create(parts.vocab, merges, options, /*strict=*/false));
    parts.decoding.byte_level = true;
    parts.description = absl::StrCat("gguf gpt2 (byte-level BPE, pre-tokenizer '", pre, "')");
  }
  return std::unique_ptr<Tokenizer>(std::make_unique<PipelineTokenizer>(std::move(parts)));
}

}  // namespace tessera::tokenizer
