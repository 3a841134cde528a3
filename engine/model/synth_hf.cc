// WriteSynthHfDir (synth_model.h): the synthetic model as a Hugging Face bf16 directory.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/io/safetensors_writer.h"
#include "engine/model/synth_model.h"
#include "kernels/numeric/half.h"
#include "nlohmann/json.hpp"

namespace tessera::model {
namespace {

using Json = nlohmann::ordered_json;

absl::Status WriteText(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write '", path.string(), "'"));
  return absl::OkStatus();
}

Json ConfigJson(const SynthShape& s) {
  const bool qwen3 = s.arch == "qwen3";
  Json c;
  c["architectures"] = {qwen3 ? "Qwen3ForCausalLM" : "LlamaForCausalLM"};
  c["model_type"] = qwen3 ? "qwen3" : "llama";
  c["hidden_size"] = s.hidden;
  c["intermediate_size"] = s.ffn;
  c["num_hidden_layers"] = s.layers;
  c["num_attention_heads"] = s.heads;
  c["num_key_value_heads"] = s.kv_heads;
  c["head_dim"] = s.head_dim;
  c["hidden_act"] = "silu";
  c["max_position_embeddings"] = s.context;
  c["rms_norm_eps"] = s.rms_eps;
  c["rope_theta"] = s.rope_theta;
  c["vocab_size"] = s.vocab;
  c["tie_word_embeddings"] = s.tied_embeddings;
  c["attention_bias"] = false;
  c["bos_token_id"] = 1;
  c["eos_token_id"] = 2;
  c["torch_dtype"] = "bfloat16";
  return c;
}

// GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 onwards.
std::string ByteToken(int b) {
  int cp = b;
  if (!((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))) {
    int n = 0;
    for (int x = 0; x < b; ++x) {
      if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
    }
    cp = 256 + n;
  }
  std::string utf8;
  if (cp < 0x80) {
    utf8 += static_cast<char>(cp);
  } else {
    utf8 += static_cast<char>(0xC0 | (cp >> 6));
    utf8 += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return utf8;
}

// A byte-level BPE with no merges: every byte is a token, so any text round-trips.
Json TokenizerJson(int64_t vocab) {
  Json v = Json::object();
  const char* specials[] = {"<unk>", "<s>", "</s>"};
  Json added = Json::array();
  for (int i = 0; i < 3; ++i) {
    v[specials[i]] = i;
    added.push_back({{"id", i},
                     {"content", specials[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", true}});
  }
  for (int b = 0; b < 256; ++b) v[ByteToken(b)] = 3 + b;
  for (int64_t i = 3 + 256; i < vocab; ++i) v[absl::StrCat("<unused_", i, ">")] = i;
  const Json byte_level = {{"type", "ByteLevel"},
                           {"add_prefix_space", false},
                           {"trim_offsets", true},
                           {"use_regex", true}};
  Json t;
  t["version"] = "1.0";
  t["truncation"] = nullptr;
  t["padding"] = nullptr;
  t["added_tokens"] = added;
  t["normalizer"] = nullptr;
  t["pre_tokenizer"] = byte_level;
  t["post_processor"] = nullptr;
  t["decoder"] = byte_level;
  t["model"] = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"vocab", v},
                {"merges", Json::array()}};
  return t;
}

}  // namespace

absl::Status WriteSynthHfDir(const SynthOptions& o, const std::string& dir) {
  TESSERA_ASSIGN_OR_RETURN(SynthShape s, FindSynthShape(o.shape));
  return WriteSynthHfDir(s, o, dir);
}

absl::Status WriteSynthHfDir(const SynthShape& shape, const SynthOptions& o, const std::string& dir) {
  SynthShape s = shape;
  TESSERA_RETURN_IF_ERROR(ApplySynthLayerLimit(o, s));
  if (s.experts > 0) {
    return absl::UnimplementedError(absl::StrCat(
        "shape ", s.name, " has mixture-of-experts layers, which synth writes as GGUF only"));
  }
  if (s.arch != "llama" && s.arch != "qwen3") {
    return absl::UnimplementedError(
        absl::StrCat("shape ", s.name, " (", s.arch, ") is written as GGUF only"));
  }
  if (s.vocab < 3 + 256) {
    return absl::InvalidArgumentError(
        absl::StrCat("an HF synth model needs a vocabulary of at least 259 (3 specials + 256 "
                     "bytes), shape ", s.name, " has ", s.vocab));
  }
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create '", dir, "': ", ec.message()));
  const std::filesystem::path root(dir);
  TESSERA_RETURN_IF_ERROR(WriteText(root / "config.json", ConfigJson(s).dump(2) + "\n"));
  TESSERA_RETURN_IF_ERROR(WriteText(root / "tokenizer.json", TokenizerJson(s.vocab).dump() + "\n"));
  const Json tok_config = {{"bos_token", "<s>"},
                           {"eos_token", "</s>"},
                           {"unk_token", "<unk>"},
                           {"add_bos_token", true},
                           {"tokenizer_class", "PreTrainedTokenizerFast"}};
  TESSERA_RETURN_IF_ERROR(WriteText(root / "tokenizer_config.json", tok_config.dump(2) + "\n"));

  io::SafetensorsWriter w;
  w.AddMetadata("format", "pt");
  const uint64_t seed = o.seed;
  auto matrix = [&](const std::string& hf_name, const std::string& gguf_name, int64_t rows,
                    int64_t cols) {
    const uint64_t bytes = static_cast<uint64_t>(rows * cols) * 2;
    w.AddTensor(hf_name, "BF16", {rows, cols}, bytes, [=](std::vector<uint8_t>* out) {
      out->resize(bytes);
      std::vector<float> row(cols);
      for (int64_t r = 0; r < rows; ++r) {
        SynthMatrixRow(seed, gguf_name, r, cols, row.data());
        for (int64_t i = 0; i < cols; ++i) {
          const uint16_t h = numeric::FloatToBf16(row[i]);
          std::memcpy(out->data() + 2 * (r * cols + i), &h, 2);
        }
      }
      return absl::OkStatus();
    });
  };
  auto norm = [&](const std::string& hf_name, int64_t n) {
    w.AddTensor(hf_name, "BF16", {n}, static_cast<uint64_t>(n) * 2, [n](std::vector<uint8_t>* out) {
      out->resize(n * 2);
      const uint16_t one = numeric::FloatToBf16(1.0f);
      for (int64_t i = 0; i < n; ++i) std::memcpy(out->data() + 2 * i, &one, 2);
      return absl::OkStatus();
    });
  };
  const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  matrix("model.embed_tokens.weight", "token_embd.weight", s.vocab, s.hidden);
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = absl::StrCat("model.layers.", i, "."), g = absl::StrCat("blk.", i, ".");
    norm(p + "input_layernorm.weight", s.hidden);
    matrix(p + "self_attn.q_proj.weight", g + "attn_q.weight", q, s.hidden);
    matrix(p + "self_attn.k_proj.weight", g + "attn_k.weight", kv, s.hidden);
    matrix(p + "self_attn.v_proj.weight", g + "attn_v.weight", kv, s.hidden);
    matrix(p + "self_attn.o_proj.weight", g + "attn_output.weight", s.hidden, q);
    if (s.arch == "qwen3") {
      norm(p + "self_attn.q_norm.weight", s.head_dim);
      norm(p + "self_attn.k_norm.weight", s.head_dim);
    }
    norm(p + "post_attention_layernorm.weight", s.hidden);
    matrix(p + "mlp.gate_proj.weight", g + "ffn_gate.weight", s.ffn, s.hidden);
    matrix(p + "mlp.up_proj.weight", g + "ffn_up.weight", s.ffn, s.hidden);
    matrix(p + "mlp.down_proj.weight", g + "ffn_down.weight", s.hidden, s.ffn);
  }
  norm("model.norm.weight", s.hidden);
  if (!s.tied_embeddings) matrix("lm_head.weight", "output.weight", s.vocab, s.hidden);
  return w.Write((root / "model.safetensors").string());
}

}  // namespace tessera::model
