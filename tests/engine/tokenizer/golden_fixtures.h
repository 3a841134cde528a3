// Reads the tokenizer goldens that tools/reference/make_tokenizer_goldens.py wrote with Hugging
// Face tokenizers (tests/data/tokenizers/<name>/goldens.json).
#ifndef TESSERA_TESTS_ENGINE_TOKENIZER_GOLDEN_FIXTURES_H_
#define TESSERA_TESTS_ENGINE_TOKENIZER_GOLDEN_FIXTURES_H_

#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace tessera::tokenizer::testing {

inline const std::vector<std::string>& GoldenFixtureNames() {
  static const std::vector<std::string> names = {"bytelevel_gpt2",    "bytelevel_llama3",
                                                 "bytelevel_qwen2",   "spm_llama2",
                                                 "spm_metaspace_nfc", "bytelevel_o200k"};
  return names;
}

inline std::string GoldenDir(const std::string& name) {
  return std::string(TESSERA_SOURCE_DIR) + "/tests/data/tokenizers/" + name;
}

struct GoldenCase {
  std::string text;
  std::vector<int32_t> ids;
  std::vector<int32_t> ids_with_special;
  std::string decoded;
  std::string decoded_skip_special;
};

struct Goldens {
  int32_t vocab_size = 0;
  std::optional<int32_t> bos_id;
  int32_t eos_id = -1;
  std::vector<GoldenCase> cases;
};

// Empty cases on a missing or malformed file (the tests then fail on the count).
inline Goldens ReadGoldens(const std::string& name) {
  Goldens g;
  std::ifstream in(GoldenDir(name) + "/goldens.json");
  std::ostringstream s;
  s << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(s.str(), nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j["cases"].is_array() || !j["vocab_size"].is_number_integer() ||
      !j["eos_id"].is_number_integer()) {
    return g;
  }
  g.vocab_size = j["vocab_size"].get<int32_t>();
  if (j["bos_id"].is_number_integer()) g.bos_id = j["bos_id"].get<int32_t>();
  g.eos_id = j["eos_id"].get<int32_t>();
  for (const auto& c : j["cases"]) {
    if (!c["text"].is_string() || !c["ids"].is_array() || !c["ids_with_special"].is_array() ||
        !c["decoded"].is_string() || !c["decoded_skip_special"].is_string()) {
      return Goldens{};
    }
    GoldenCase gc;
    gc.text = c["text"].get<std::string>();
    for (const auto& id : c["ids"]) gc.ids.push_back(id.get<int32_t>());
    for (const auto& id : c["ids_with_special"]) gc.ids_with_special.push_back(id.get<int32_t>());
    gc.decoded = c["decoded"].get<std::string>();
    gc.decoded_skip_special = c["decoded_skip_special"].get<std::string>();
    g.cases.push_back(std::move(gc));
  }
  return g;
}

}  // namespace tessera::tokenizer::testing

#endif  // TESSERA_TESTS_ENGINE_TOKENIZER_GOLDEN_FIXTURES_H_
