// RenamedTensorStore over a safetensors file laid out as transformers 5 saves a multimodal
// Gemma 3 (model.language_model.* beside model.vision_tower.*): the decoder's tensors read as
// model.*, the lm_head keeps its name, vision tensors are hidden, and two tensors that would
// share a name are refused by name.
#include "engine/io/renamed_tensor_store.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/io/safetensors_writer.h"
#include "gtest/gtest.h"

namespace tessera::io {
namespace {

std::string WriteStore(const std::vector<std::string>& names, const std::string& file) {
  SafetensorsWriter w;
  float value = 1.0f;
  for (const std::string& name : names) {
    const float v = value++;
    w.AddTensor(name, "F32", {1}, 4, [v](std::vector<uint8_t>* out) {
      out->resize(4);
      std::memcpy(out->data(), &v, 4);
      return absl::OkStatus();
    });
  }
  const std::string path = (std::filesystem::temp_directory_path() / file).string();
  EXPECT_TRUE(w.Write(path).ok());
  return path;
}

const std::vector<PrefixRule> kRules = {{"language_model.model.", "model."},
                                        {"model.language_model.", "model."},
                                        {"language_model.lm_head.", "lm_head."},
                                        {"lm_head.", "lm_head."}};

TEST(RenamedTensorStoreTest, ShowsTheDecoderUnderCausalLmNames) {
  const std::string path =
      WriteStore({"model.language_model.embed_tokens.weight",
                  "model.language_model.layers.0.self_attn.q_proj.weight",
                  "model.vision_tower.vision_model.post_layernorm.weight", "lm_head.weight",
                  "model.multi_modal_projector.mm_input_projection_weight"},
                 "renamed_store_test.safetensors");
  auto inner = OpenTensorStore(path);
  ASSERT_TRUE(inner.ok()) << inner.status();
  auto store = RenamedTensorStore::Create(std::move(*inner), kRules);
  ASSERT_TRUE(store.ok()) << store.status();
  std::vector<std::string> names = (*store)->names();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"lm_head.weight", "model.embed_tokens.weight",
                                             "model.layers.0.self_attn.q_proj.weight"}));
  auto q = (*store)->Get("model.layers.0.self_attn.q_proj.weight");
  ASSERT_TRUE(q.ok()) << q.status();
  float v;
  std::memcpy(&v, q->bytes.data(), 4);
  EXPECT_EQ(v, 2.0f);  // the second tensor written
  EXPECT_TRUE((*store)->Contains("lm_head.weight"));
  EXPECT_FALSE((*store)->Contains("model.vision_tower.vision_model.post_layernorm.weight"));
  auto missing = (*store)->Get("model.language_model.embed_tokens.weight");  // old names hidden
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("model.language_model.embed_tokens.weight"),
            std::string::npos);
  std::filesystem::remove(path);
}

TEST(RenamedTensorStoreTest, RefusesTwoTensorsWithOneName) {
  const std::string path =
      WriteStore({"language_model.model.norm.weight", "model.language_model.norm.weight"},
                 "renamed_store_clash.safetensors");
  auto inner = OpenTensorStore(path);
  ASSERT_TRUE(inner.ok());
  auto store = RenamedTensorStore::Create(std::move(*inner), kRules);
  ASSERT_FALSE(store.ok());
  EXPECT_NE(store.status().message().find("model.norm.weight"), std::string::npos);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tessera::io
