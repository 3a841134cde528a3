// LoadHfTokenizer: a Hugging Face tokenizer.json with a BPE model (byte-level GPT-2/Llama 3/Qwen2
// style, or SentencePiece-style with byte_fallback and Metaspace/legacy Llama 2 normalizers),
// plus tokenizer_config.json for the BOS/EOS tokens and, when tokenizer.json has no
// post_processor, add_bos_token/add_eos_token. Parts we do not implement (WordPiece and Unigram
// models, Precompiled normalizers, ...) fail at load with the part's name.
#include <algorithm>
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"
#include "engine/tokenizer/bpe_model.h"
#include "engine/tokenizer/hf_decoder.h"
#include "engine/tokenizer/json_util.h"
#include "engine/tokenizer/pipeline_tokenizer.h"
#include "engine/tokenizer/tokenizer.h"
#include "nlohmann/json.hpp"

namespace tessera::tokenizer {
namespace {

absl::StatusOr<std::optional<nlohmann::json>> ReadJsonFile(const std::string& path, bool required) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (!required) return std::optional<nlohmann::json>();
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  std::ostringstream buffer;
  buffer << in.rdbuf();
  TESSERA_ASSIGN_OR_RETURN(nlohmann::json j, ParseJson(buffer.str(), path));
  return std::optional<nlohmann::json>(std::move(j));
}

// A token named in tokenizer_config.json: "bos_token": "<s>" or {"content": "<s>", ...}.
std::optional<std::string> ConfigToken(const nlohmann::json& config, const char* key) {
  if (!config.is_object()) return std::nullopt;
  auto it = config.find(key);
  if (it == config.end()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  return GetOptionalString(*it, "content");
}

absl::Status ReadVocabAndMerges(const nlohmann::json& model, Vocab* vocab,
                                std::vector<std::pair<std::string, std::string>>* merges) {
  const nlohmann::json* v = FindObject(model, "vocab");
  if (v == nullptr) return absl::InvalidArgumentError("tokenizer.json model has no 'vocab' object");
  for (auto it = v->begin(); it != v->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 ||
        it.value().get<int64_t>() > (1 << 30)) {
      return absl::InvalidArgumentError(
          absl::StrCat("tokenizer.json vocab entry '", it.key(), "' has no valid id"));
    }
    const auto id = static_cast<int32_t>(it.value().get<int64_t>());
    const uint8_t attrs = ParseByteToken(it.key()) ? (kAttrNormal | kAttrByte) : kAttrNormal;
    vocab->Set(id, it.key(), attrs);
  }
  const nlohmann::json* m = FindArray(model, "merges");
  if (m == nullptr) return absl::InvalidArgumentError("tokenizer.json model has no 'merges' array");
  merges->reserve(m->size());
  for (size_t i = 0; i < m->size(); ++i) {
    const nlohmann::json& item = (*m)[i];
    if (item.is_string()) {  // "a b" (tokenizers < 0.20)
      const std::string s = item.get<std::string>();
      const size_t sep = s.find(' ', 1);
      if (sep != std::string::npos) {
        merges->emplace_back(s.substr(0, sep), s.substr(sep + 1));
        continue;
      }
    } else if (item.is_array() && item.size() == 2 && item[0].is_string() &&
               item[1].is_string()) {  // ["a", "b"]
      merges->emplace_back(item[0].get<std::string>(), item[1].get<std::string>());
      continue;
    }
    return absl::InvalidArgumentError(absl::StrCat("tokenizer.json merge ", i, " is malformed"));
  }
  return absl::OkStatus();
}

absl::Status ReadAddedTokens(const nlohmann::json& root, PipelineParts* parts) {
  const nlohmann::json* added = FindArray(root, "added_tokens");
  if (added == nullptr) return absl::OkStatus();
  for (const auto& item : *added) {
    auto id = GetOptionalInt(item, "id");
    auto content = GetOptionalString(item, "content");
    if (!id || !content || *id < 0 || *id > (1 << 30)) {
      return absl::InvalidArgumentError("tokenizer.json added_tokens entry lacks id or content");
    }
    AddedToken t;
    t.id = static_cast<int32_t>(*id);
    t.content = *content;
    t.special = GetBoolOr(item, "special", false);
    t.lstrip = GetBoolOr(item, "lstrip", false);
    t.rstrip = GetBoolOr(item, "rstrip", false);
    t.single_word = GetBoolOr(item, "single_word", false);
    t.normalized = GetBoolOr(item, "normalized", !t.special);
    const uint8_t attrs = t.special ? kAttrControl : kAttrUserDefined;
    if (parts->vocab.Contains(t.id) && parts->vocab.Text(t.id) == t.content) {
      parts->vocab.AddAttr(t.id, attrs);
    } else {
      parts->vocab.Set(t.id, t.content, attrs);
    }
    parts->added_tokens.push_back(std::move(t));
  }
  return absl::OkStatus();
}

// The special tokens around sequence A in a post_processor, for a single sequence.
absl::Status ParsePostProcessor(const nlohmann::json& config, const Vocab& vocab,
                                std::vector<int32_t>* prefix, std::vector<int32_t>* suffix) {
  if (config.is_null()) return absl::OkStatus();
  TESSERA_ASSIGN_OR_RETURN(std::string type, GetString(config, "type", "post_processor"));
  if (type == "ByteLevel") return absl::OkStatus();  // offsets only
  if (type == "Sequence") {
    const nlohmann::json* items = FindArray(config, "processors");
    if (items == nullptr) return absl::InvalidArgumentError("Sequence post_processor: no list");
    for (const auto& item : *items) {
      TESSERA_RETURN_IF_ERROR(ParsePostProcessor(item, vocab, prefix, suffix));
    }
    return absl::OkStatus();
  }
  if (type == "RobertaProcessing" || type == "BertProcessing") {
    // "cls": ["<s>", 0], "sep": ["</s>", 2]
    for (const char* key : {"cls", "sep"}) {
      const nlohmann::json* pair = FindArray(config, key);
      if (pair == nullptr || pair->size() != 2 || !(*pair)[1].is_number_integer()) {
        return absl::InvalidArgumentError(absl::StrCat(type, ": '", key, "' is malformed"));
      }
      (key[0] == 'c' ? prefix : suffix)->push_back((*pair)[1].get<int32_t>());
    }
    return absl::OkStatus();
  }
  if (type == "TemplateProcessing") {
    const nlohmann::json* single = FindArray(config, "single");
    const nlohmann::json* specials = FindObject(config, "special_tokens");
    if (single == nullptr) return absl::InvalidArgumentError("TemplateProcessing has no 'single'");
    bool seen_sequence = false;
    for (const auto& piece : *single) {
      if (FindObject(piece, "Sequence") != nullptr) {
        seen_sequence = true;
        continue;
      }
      const nlohmann::json* special = FindObject(piece, "SpecialToken");
      auto name = special != nullptr ? GetOptionalString(*special, "id") : std::nullopt;
      if (!name) return absl::InvalidArgumentError("TemplateProcessing: malformed 'single' item");
      std::vector<int32_t> ids;
      const nlohmann::json* entry =
          specials != nullptr ? FindObject(*specials, name->c_str()) : nullptr;
      const nlohmann::json* listed = entry != nullptr ? FindArray(*entry, "ids") : nullptr;
      if (listed != nullptr) {
        for (const auto& id : *listed) {
          if (!id.is_number_integer()) {
            return absl::InvalidArgumentError("TemplateProcessing: non-integer special id");
          }
          ids.push_back(id.get<int32_t>());
        }
      } else if (auto id = vocab.Find(*name)) {
        ids.push_back(*id);
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat("TemplateProcessing: unknown special token '", *name, "'"));
      }
      auto* target = seen_sequence ? suffix : prefix;
      target->insert(target->end(), ids.begin(), ids.end());
    }
    return absl::OkStatus();
  }
  return absl::UnimplementedError(
      absl::StrCat("unsupported tokenizer.json post_processor '", type, "'"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> LoadHfTokenizer(const std::string& directory) {
  const std::string json_path = absl::StrCat(directory, "/tokenizer.json");
  TESSERA_ASSIGN_OR_RETURN(std::optional<nlohmann::json> root_or, ReadJsonFile(json_path, true));
  TESSERA_ASSIGN_OR_RETURN(std::optional<nlohmann::json> config_or,
                           ReadJsonFile(absl::StrCat(directory, "/tokenizer_config.json"), false));
  const nlohmann::json& root = *root_or;
  const nlohmann::json config = config_or.value_or(nlohmann::json::object());

  const nlohmann::json* model = FindObject(root, "model");
  if (model == nullptr) return absl::InvalidArgumentError(json_path + " has no 'model'");
  const std::string model_type = GetOptionalString(*model, "type").value_or("BPE");
  if (model_type != "BPE") {
    return absl::UnimplementedError(
        absl::StrCat(json_path, ": model type '", model_type, "' is not supported (only BPE)"));
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (auto s = GetOptionalString(*model, key); s && !s->empty()) {
      return absl::UnimplementedError(absl::StrCat(json_path, ": BPE ", key, " is not supported"));
    }
  }

  PipelineParts parts;
  std::vector<std::pair<std::string, std::string>> merges;
  TESSERA_RETURN_IF_ERROR(ReadVocabAndMerges(*model, &parts.vocab, &merges));
  TESSERA_RETURN_IF_ERROR(ReadAddedTokens(root, &parts));

  BpeOptions options;
  options.byte_fallback = GetBoolOr(*model, "byte_fallback", false);
  options.ignore_merges = GetBoolOr(*model, "ignore_merges", false);
  options.fuse_unk = GetBoolOr(*model, "fuse_unk", false);
  if (auto unk = GetOptionalString(*model, "unk_token")) options.unk_id = parts.vocab.Find(*unk);
  TESSERA_ASSIGN_OR_RETURN(parts.model,
                           BpeModel::Create(parts.vocab, merges, options, /*strict=*/true));

  static const nlohmann::json kNull;
  auto member = [&](const char* key) -> const nlohmann::json& {
    auto it = root.find(key);
    return it == root.end() ? kNull : *it;
  };
  TESSERA_ASSIGN_OR_RETURN(parts.normalizer, ParseHfNormalizer(member("normalizer")));
  TESSERA_ASSIGN_OR_RETURN(parts.pre_tokenizer, ParseHfPreTokenizer(member("pre_tokenizer")));
  TESSERA_RETURN_IF_ERROR(ParseHfDecoder(member("decoder"), &parts.decoding));
  const nlohmann::json& post = member("post_processor");
  TESSERA_RETURN_IF_ERROR(
      ParsePostProcessor(post, parts.vocab, &parts.prefix_ids, &parts.suffix_ids));

  auto find_config_token = [&](const char* key) -> std::optional<int32_t> {
    auto text = ConfigToken(config, key);
    return text ? parts.vocab.Find(*text) : std::nullopt;
  };
  parts.bos_id = find_config_token("bos_token");
  const std::optional<int32_t> eos = find_config_token("eos_token");
  if (post.is_null()) {
    // No post_processor: transformers' Llama/Gemma-style classes add BOS/EOS from the config.
    if (GetBoolOr(config, "add_bos_token", false) && parts.bos_id) {
      parts.prefix_ids.push_back(*parts.bos_id);
    }
    if (GetBoolOr(config, "add_eos_token", false) && eos) parts.suffix_ids.push_back(*eos);
  }
  if (!parts.bos_id && !parts.prefix_ids.empty()) parts.bos_id = parts.prefix_ids.front();
  if (eos) parts.eos_ids.push_back(*eos);
  for (absl::string_view text : {"<|eot_id|>", "<|eom_id|>", "<|im_end|>", "<|end|>",
                                 "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "</s>"}) {
    auto id = parts.vocab.Find(text);
    if (id && parts.vocab.Has(*id, kAttrControl) &&
        std::find(parts.eos_ids.begin(), parts.eos_ids.end(), *id) == parts.eos_ids.end()) {
      parts.eos_ids.push_back(*id);
    }
  }

  std::vector<std::string> traits;
  if (parts.decoding.byte_level) traits.push_back("byte-level");
  if (options.byte_fallback) traits.push_back("byte fallback");
  if (!parts.decoding.replacements.empty()) traits.push_back("metaspace");
  parts.description = absl::StrCat("hf tokenizer.json BPE",
                                   traits.empty() ? "" : " (" + absl::StrJoin(traits, ", ") + ")");
  return std::unique_ptr<Tokenizer>(std::make_unique<PipelineTokenizer>(std::move(parts)));
}

}  // namespace tessera::tokenizer
