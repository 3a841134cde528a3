#include "engine/model/demo_model.h"

#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizer/utf8.h"

namespace tessera::model {
namespace {

// splitmix64: a tiny generator whose output is fully specified, so the demo weights are the
// same bits everywhere (std::uniform_real_distribution is implementation-defined).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [-1, 1).
  float Symmetric() { return static_cast<float>((Next() >> 11) * 0x1.0p-53 * 2.0 - 1.0); }

 private:
  uint64_t state_;
};

// FNV-1a, to give each tensor its own stream that does not depend on creation order.
uint64_t HashName(absl::string_view name, uint64_t seed) {
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (unsigned char c : name) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

// A TensorStore over tensors held in memory. The demo is the only user; a real checkpoint is
// always memory-mapped from files.
class OwnedTensorStore : public io::TensorStore {
 public:
  // Reports kSafetensors: the closest container (named, typed tensors, no GGUF metadata).
  io::ContainerKind kind() const override { return io::ContainerKind::kSafetensors; }
  const std::vector<std::string>& names() const override { return names_; }
  bool Contains(absl::string_view name) const override {
    return tensors_.find(std::string(name)) != tensors_.end();
  }
  absl::StatusOr<io::TensorView> Get(absl::string_view name) const override {
    auto it = tensors_.find(std::string(name));
    if (it == tensors_.end()) {
      return absl::NotFoundError(absl::StrFormat("tensor '%s' not found in the demo model", name));
    }
    io::TensorView view;
    view.name = it->first;
    view.dtype = io::DType::kF32;
    view.shape = it->second.shape;
    view.bytes =
        absl::Span<const uint8_t>(reinterpret_cast<const uint8_t*>(it->second.values.data()),
                                  it->second.values.size() * sizeof(float));
    return view;
  }
  std::vector<std::pair<std::string, std::string>> DescribeMetadata() const override {
    return {{"tessera.demo", "random weights generated in memory"}};
  }

  void Add(std::string name, std::vector<int64_t> shape, std::vector<float> values) {
    names_.push_back(name);
    tensors_[std::move(name)] = Tensor{std::move(shape), std::move(values)};
  }

 private:
  struct Tensor {
    std::vector<int64_t> shape;
    std::vector<float> values;
  };
  std::vector<std::string> names_;
  std::map<std::string, Tensor> tensors_;  // node-based: views stay valid as tensors are added
};

std::vector<float> Random(const std::string& name, int64_t n, float scale, uint64_t seed) {
  SplitMix64 rng(HashName(name, seed));
  std::vector<float> v(n);
  for (float& x : v) x = rng.Symmetric() * scale;
  return v;
}

bool IsReadableByte(int b) { return (b >= 0x20 && b < 0x7f) || b == '\n'; }

constexpr const char* kSpecialText[] = {"<unk>", "<s>", "</s>"};

class DemoByteTokenizer : public tokenizer::Tokenizer {
 public:
  absl::StatusOr<std::vector<int32_t>> Encode(absl::string_view text, bool add_special,
                                              bool parse_special) const override {
    std::vector<int32_t> ids;
    ids.reserve(text.size() + 1);
    if (add_special) ids.push_back(kDemoBosId);
    size_t i = 0;
    while (i < text.size()) {
      bool matched = false;
      if (parse_special && text[i] == '<') {
        for (int32_t id = 0; id < kDemoFirstByteId; ++id) {
          const absl::string_view special = kSpecialText[id];
          if (text.substr(i, special.size()) == special) {
            ids.push_back(id);
            i += special.size();
            matched = true;
            break;
          }
        }
      }
      if (!matched) {
        ids.push_back(kDemoFirstByteId + static_cast<unsigned char>(text[i]));
        ++i;
      }
    }
    return ids;
  }

  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids,
                                     bool skip_special) const override {
    std::string raw;
    for (int32_t id : ids) {
      if (id < 0 || id >= kDemoVocabSize) {
        return absl::InvalidArgumentError(
            absl::StrFormat("token id %d is outside the vocabulary [0, %d)", id, kDemoVocabSize));
      }
      if (id < kDemoFirstByteId) {
        if (!skip_special) raw += kSpecialText[id];
      } else {
        raw.push_back(static_cast<char>(id - kDemoFirstByteId));
      }
    }
    return tokenizer::RepairUtf8(raw);
  }

  int32_t vocab_size() const override { return kDemoVocabSize; }
  std::optional<int32_t> bos_id() const override { return kDemoBosId; }
  std::vector<int32_t> eos_ids() const override { return {kDemoEosId}; }
  bool IsSpecial(int32_t id) const override { return id >= 0 && id < kDemoFirstByteId; }
  std::string TokenText(int32_t id) const override {
    if (id < 0 || id >= kDemoVocabSize) return "";
    if (id < kDemoFirstByteId) return kSpecialText[id];
    const int b = id - kDemoFirstByteId;
    if (b >= 0x20 && b < 0x7f) return std::string(1, static_cast<char>(b));
    return absl::StrFormat("<0x%02X>", b);
  }
  // Control tokens contribute no bytes mid-stream (as llama.cpp's token_to_piece without
  // `special`); a byte token is its byte.
  std::string TokenBytes(int32_t id) const override {
    if (id < kDemoFirstByteId || id >= kDemoVocabSize) return "";
    return std::string(1, static_cast<char>(id - kDemoFirstByteId));
  }
  bool StripsLeadingSpace() const override { return false; }
  std::string Describe() const override {
    return absl::StrFormat("demo byte-level tokenizer, %d tokens (<unk>, <s>, </s>, 256 bytes)",
                           kDemoVocabSize);
  }
};

}  // namespace

ModelConfig DemoModelConfig() {
  ModelConfig c;
  c.architecture = Architecture::kLlama;
  c.architecture_name = "tessera-demo-llama";
  c.hidden_size = 64;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.intermediate_size = 128;
  c.vocab_size = kDemoVocabSize;
  c.max_context = 2048;
  c.rope_theta = 10000.0;
  c.rope_dim = c.head_dim;
  c.rope_style = RopeStyle::kRotateHalf;
  c.rms_norm_eps = 1e-5;
  c.tie_word_embeddings = false;
  c.bos_token_id = kDemoBosId;
  c.eos_token_ids = {kDemoEosId};
  return c;
}

std::unique_ptr<io::TensorStore> MakeDemoTensorStore(const ModelConfig& c, uint64_t seed) {
  auto store = std::make_unique<OwnedTensorStore>();
  const WeightNames names(NamingScheme::kHf);
  const int64_t H = c.hidden_size, Q = c.q_dim(), KV = c.kv_dim(), F = c.intermediate_size;
  const int64_t V = c.vocab_size;
  // Uniform in [-a, a) has standard deviation a / sqrt(3): scale so that every linear keeps
  // activations at unit scale (std 1 / sqrt(fan_in)).
  auto linear = [&](const std::string& name, int64_t n, int64_t k) {
    store->Add(name, {n, k}, Random(name, n * k, std::sqrt(3.0f / static_cast<float>(k)), seed));
  };
  auto ones = [&](const std::string& name, int64_t n) {
    store->Add(name, {n}, std::vector<float>(n, 1.0f));
  };
  store->Add(names.Embedding(), {V, H}, Random(names.Embedding(), V * H, std::sqrt(3.0f), seed));
  for (int i = 0; i < c.num_layers; ++i) {
    ones(names.Layer(i, LayerTensor::kAttnNorm), H);
    ones(names.Layer(i, LayerTensor::kFfnNorm), H);
    linear(names.Layer(i, LayerTensor::kQ), Q, H);
    linear(names.Layer(i, LayerTensor::kK), KV, H);
    linear(names.Layer(i, LayerTensor::kV), KV, H);
    linear(names.Layer(i, LayerTensor::kO), H, Q);
    linear(names.Layer(i, LayerTensor::kGate), F, H);
    linear(names.Layer(i, LayerTensor::kUp), F, H);
    linear(names.Layer(i, LayerTensor::kDown), H, F);
  }
  ones(names.FinalNorm(), H);
  // Output head: logits of std ~2 for readable bytes, exactly 0 for everything else (specials
  // included), so greedy text is printable and EOS is rare but possible when sampling.
  std::vector<float> head = Random(names.LmHead(), V * H, 2.0f * std::sqrt(3.0f / H), seed);
  for (int64_t id = 0; id < V; ++id) {
    const bool readable =
        id >= kDemoFirstByteId && IsReadableByte(static_cast<int>(id - kDemoFirstByteId));
    if (!readable) std::memset(head.data() + id * H, 0, H * sizeof(float));
  }
  store->Add(names.LmHead(), {V, H}, std::move(head));
  return store;
}

std::unique_ptr<tokenizer::Tokenizer> MakeDemoTokenizer() {
  return std::make_unique<DemoByteTokenizer>();
}

}  // namespace tessera::model
