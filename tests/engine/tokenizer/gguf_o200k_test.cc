// A GGUF vocabulary named tokenizer.ggml.pre "gpt-4o" (what llama.cpp's converter writes for
// gpt-oss and GPT-4o-style tokenizers), built from the bytelevel_o200k fixture's tokens and merges
// as convert_hf_to_gguf.py's _set_vocab_gpt2 lays them out, encodes every hard string as the
// `tokenizers` library does (tests/data/tokenizers/bytelevel_o200k/goldens.json), and decodes
// back; the same file named "llama3" (the Llama 3 regex: no case split inside words) does not.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "engine/io/gguf_metadata.h"
#include "engine/tokenizer/tokenizer.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/engine/tokenizer/golden_fixtures.h"

namespace tessera::tokenizer {
namespace {

using testing::GoldenCase;
using testing::GoldenDir;
using testing::Goldens;
using testing::ReadGoldens;

io::GgufValue Str(std::string s) { return {io::GgufValueType::kString, {}, std::move(s)}; }

io::GgufMetadata O200kGguf(const std::string& pre) {
  std::ifstream in(GoldenDir("bytelevel_o200k") + "/tokenizer.json");
  std::ostringstream s;
  s << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(s.str());
  std::vector<std::string> tokens(j["model"]["vocab"].size());
  for (const auto& [text, id] : j["model"]["vocab"].items()) tokens[id.get<size_t>()] = text;
  std::vector<bool> control(tokens.size(), false);
  for (const auto& t : j["added_tokens"]) {
    const size_t id = t["id"].get<size_t>();
    if (id >= tokens.size()) tokens.resize(id + 1);
    tokens[id] = t["content"].get<std::string>();
    control.resize(tokens.size(), false);
    control[id] = t["special"].get<bool>();
  }
  io::GgufValue token_list{io::GgufValueType::kArray, io::GgufValueType::kString, {}};
  io::GgufValue types{io::GgufValueType::kArray, io::GgufValueType::kI32, {}};
  std::vector<io::GgufValue> tv, ty, mv;
  for (size_t i = 0; i < tokens.size(); ++i) {
    tv.push_back(Str(tokens[i]));
    ty.push_back({io::GgufValueType::kI32, {}, int64_t{control[i] ? 3 : 1}});
  }
  for (const auto& m : j["model"]["merges"]) {
    mv.push_back(Str(m.is_string() ? m.get<std::string>()
                                   : m[0].get<std::string>() + " " + m[1].get<std::string>()));
  }
  token_list.value = std::move(tv);
  types.value = std::move(ty);
  io::GgufValue merges{io::GgufValueType::kArray, io::GgufValueType::kString, std::move(mv)};
  io::GgufMetadata md;
  md.Add("tokenizer.ggml.model", Str("gpt2"));
  md.Add("tokenizer.ggml.pre", Str(pre));
  md.Add("tokenizer.ggml.tokens", std::move(token_list));
  md.Add("tokenizer.ggml.token_type", std::move(types));
  md.Add("tokenizer.ggml.merges", std::move(merges));
  md.Add("tokenizer.ggml.add_bos_token", {io::GgufValueType::kBool, {}, false});
  return md;
}

TEST(GgufO200kTest, Gpt4oPreEncodesAsTokenizers) {
  const Goldens g = ReadGoldens("bytelevel_o200k");
  ASSERT_GT(g.cases.size(), 30u);
  auto tok = LoadGgufTokenizer(O200kGguf("gpt-4o"));
  ASSERT_TRUE(tok.ok()) << tok.status();
  auto llama3 = LoadGgufTokenizer(O200kGguf("llama3"));
  ASSERT_TRUE(llama3.ok()) << llama3.status();
  int differ = 0;
  for (const GoldenCase& c : g.cases) {
    auto ids = (*tok)->Encode(c.text, /*add_special=*/false);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, c.ids) << c.text;
    auto text = (*tok)->Decode(*ids, /*skip_special=*/false);
    ASSERT_TRUE(text.ok());
    EXPECT_EQ(*text, c.decoded) << c.text;
    auto other = (*llama3)->Encode(c.text, false);
    differ += other.ok() && *other != c.ids;
  }
  EXPECT_GE(differ, 3);  // camelCase, "./path", "ǅemal": the pattern is what was tested
}

}  // namespace
}  // namespace tessera::tokenizer
