// bitsandbytes layers built in memory (bnb_4bit.h, bnb_config.cc): the per-row layout of flat
// blocks (high nibble first, blocks that tile rows or span whole rows, double quant resolved in
// bnb's order) against a direct decode of the flat tensors, and every malformed state refused
// with the layer and the tensor named. The producer-made checkpoints are quant_fixtures_test's
// bnb_* cases.
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/quant/bnb_4bit.h"
#include "engine/quant/packed_weights.h"
#include "engine/quant/precision_plan.h"
#include "kernels/numeric/half.h"
#include "engine/quant/quant_config.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tessera::quant {
namespace {

using ::testing::HasSubstr;

// Named tensors of raw bytes.
class BytesStore : public io::TensorStore {
 public:
  io::ContainerKind kind() const override { return io::ContainerKind::kSafetensors; }
  const std::vector<std::string>& names() const override { return names_; }
  bool Contains(absl::string_view name) const override {
    return tensors_.count(std::string(name)) != 0;
  }
  absl::StatusOr<io::TensorView> Get(absl::string_view name) const override {
    auto it = tensors_.find(std::string(name));
    if (it == tensors_.end()) return absl::NotFoundError(absl::StrCat("no tensor '", name, "'"));
    io::TensorView v;
    v.name = it->first;
    v.dtype = it->second.dtype;
    v.shape = it->second.shape;
    v.bytes = it->second.bytes;
    return v;
  }
  std::vector<std::pair<std::string, std::string>> DescribeMetadata() const override { return {}; }

  template <typename T>
  void Add(const std::string& name, io::DType dtype, std::vector<int64_t> shape,
           const std::vector<T>& values) {
    Tensor& t = tensors_[name];
    if (t.bytes.empty()) names_.push_back(name);
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.bytes.resize(values.size() * sizeof(T));
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
  }
  void AddJson(const std::string& name, const std::string& json) {
    Add(name, io::DType::kU8, {static_cast<int64_t>(json.size())},
        std::vector<uint8_t>(json.begin(), json.end()));
  }
  void Remove(const std::string& name) { tensors_.erase(name); }

 private:
  struct Tensor {
    io::DType dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
  };
  std::vector<std::string> names_;
  std::map<std::string, Tensor> tensors_;
};

constexpr char kLayer[] = "model.layers.0.mlp.down_proj";

// A random n x k layer as bitsandbytes writes it, with its flat codes and f32 absmax kept for the
// direct decode.
struct FlatLayer {
  int64_t n, k, blocksize;
  bool nested;
  std::vector<uint8_t> codes;   // flat, one per element
  std::vector<float> absmax;    // per flat block, as bnb resolves it
  std::vector<float> codebook;
  BytesStore store;

  double Weight(int64_t r, int64_t c) const {
    const int64_t e = r * k + c;
    return codebook[codes[e]] * absmax[e / blocksize];
  }
};

std::string StateJson(const FlatLayer& l, const std::string& type = "nf4") {
  std::string j = absl::StrCat(R"({"quant_type": ")", type, R"(", "blocksize": )", l.blocksize,
                               R"(, "dtype": "bfloat16", "shape": [)", l.n, ", ", l.k, "]");
  if (l.nested) {
    absl::StrAppend(&j, R"(, "nested_blocksize": 4, "nested_dtype": "float32", )",
                    R"("nested_offset": 0.0625)");
  }
  return j + "}";
}

FlatLayer MakeFlat(int64_t n, int64_t k, int64_t blocksize, bool nested, uint32_t seed) {
  FlatLayer l{n, k, blocksize, nested, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  const int64_t count = n * k, blocks = (count + blocksize - 1) / blocksize;
  for (int i = 0; i < 16; ++i) l.codebook.push_back(-1.0f + 2.0f * i / 15.0f + 0.01f * (i % 3));
  l.codes.resize(count);
  for (auto& c : l.codes) c = static_cast<uint8_t>(rng() % 16);
  std::vector<uint8_t> packed((count + 1) / 2, 0);
  for (int64_t e = 0; e < count; ++e) {
    packed[e / 2] |= static_cast<uint8_t>(e % 2 == 0 ? l.codes[e] << 4 : l.codes[e]);
  }
  const std::string w = absl::StrCat(kLayer, ".weight");
  l.store.Add(w, io::DType::kU8, {static_cast<int64_t>(packed.size()), 1}, packed);
  l.store.Add(w + ".quant_map", io::DType::kF32, {16}, l.codebook);
  if (nested) {
    // U8 codes into a 256-entry map, one f32 absmax per 4 blocks, the JSON's offset 0.0625.
    std::vector<float> map(256), nabs((blocks + 3) / 4);
    for (int i = 0; i < 256; ++i) map[i] = (i - 127.5f) / 128.0f;
    for (auto& a : nabs) a = 0.01f + 0.001f * static_cast<float>(rng() % 50);
    std::vector<uint8_t> q(blocks);
    for (int64_t b = 0; b < blocks; ++b) {
      q[b] = static_cast<uint8_t>(rng());
      l.absmax.push_back(map[q[b]] * nabs[b / 4] + 0.0625f);
    }
    l.store.Add(w + ".absmax", io::DType::kU8, {blocks}, q);
    l.store.Add(w + ".nested_quant_map", io::DType::kF32, {256}, map);
    l.store.Add(w + ".nested_absmax", io::DType::kF32, {static_cast<int64_t>(nabs.size())}, nabs);
  } else {
    for (int64_t b = 0; b < blocks; ++b) l.absmax.push_back(0.5f + 0.01f * (rng() % 100));
    l.store.Add(w + ".absmax", io::DType::kF32, {blocks}, l.absmax);
  }
  l.store.AddJson(w + ".quant_state.bitsandbytes__nf4", StateJson(l));
  return l;
}

absl::StatusOr<LinearSpec> Resolve(const FlatLayer& l) {
  auto config = ParseQuantConfig(
      R"({"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true,
          "bnb_4bit_quant_type": "nf4"}})",
      "", l.store);
  if (!config.ok()) return config.status();
  return (*config)->Resolve(kLayer, kLayer, l.n, l.k, l.store);
}

TEST(Bnb4bitTest, RowsHoldTheFlatBlocksDecodedAsBitsandbytesDoes) {
  struct Shape {
    int64_t n, k, blocksize;
    bool nested;
    int64_t group;  // the per-row group the layout gets
  };
  for (const Shape& s : {Shape{5, 96, 32, false, 32}, Shape{7, 128, 64, true, 64},
                         Shape{6, 64, 128, false, 64}, Shape{9, 32, 256, true, 32}}) {
    SCOPED_TRACE(absl::StrCat(s.n, "x", s.k, " block ", s.blocksize, s.nested ? " nested" : ""));
    const FlatLayer l = MakeFlat(s.n, s.k, s.blocksize, s.nested, static_cast<uint32_t>(s.k));
    auto spec = Resolve(l);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->weight_format, WeightFormat::kBnb4bit);
    EXPECT_EQ(spec->group_size, s.group);
    EXPECT_EQ(spec->SchemeName(), "bnb_nf4");
    auto packed = LoadPackedWeights(*spec, kLayer, l.store);
    ASSERT_TRUE(packed.ok()) << packed.status();
    std::vector<float> row(s.k);
    for (int64_t r = 0; r < s.n; ++r) {
      packed->DequantizeRow(r, row.data());
      for (int64_t c = 0; c < s.k; ++c) {
        // Each value is one f32 product of f32 factors: exactly the double product rounded.
        ASSERT_EQ(row[c], static_cast<float>(l.Weight(r, c))) << r << ", " << c;
      }
    }
  }
}

TEST(Bnb4bitTest, WeightWithoutQuantStateIsUnquantized) {
  BytesStore store;
  store.Add(absl::StrCat(kLayer, ".weight"), io::DType::kF32, {2, 4}, std::vector<float>(8, 1.0f));
  FlatLayer l{2, 4, 64, false, {}, {}, {}, std::move(store)};
  auto spec = Resolve(l);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->weight_format, WeightFormat::kF32);
  EXPECT_THAT(spec->reason, HasSubstr("unquantized"));
}

TEST(Bnb4bitTest, MalformedStatesNameTheLayerAndTensor) {
  const std::string w = absl::StrCat(kLayer, ".weight");
  const std::string qs = w + ".quant_state.bitsandbytes__nf4";
  struct Case {
    const char* what;
    std::function<void(FlatLayer&)> spoil;
    const char* message;  // a substring of the error besides the layer's name
  };
  const std::vector<Case> cases = {
      {"not JSON", [&](FlatLayer& l) { l.store.AddJson(qs, "{quant_type"); }, "is not JSON"},
      {"type", [&](FlatLayer& l) { l.store.AddJson(qs, StateJson(l, "fp4")); },
       "quant_type 'fp4'"},
      {"shape",
       [&](FlatLayer& l) {
         FlatLayer other = l;
         other.k = 64;
         l.store.AddJson(qs, StateJson(other));
       },
       "expected [4, 128]"},
      {"straddling blocks",
       [&](FlatLayer& l) {
         FlatLayer other = l;
         other.blocksize = 96;
         l.store.AddJson(qs, StateJson(other));
       },
       "straddle rows"},
      {"codes", [&](FlatLayer& l) {
         l.store.Add(w, io::DType::kU8, {10, 1}, std::vector<uint8_t>(10));
       }, "expected 512 4-bit codes"},
      {"absmax count",
       [&](FlatLayer& l) {
         l.store.Add(w + ".absmax", io::DType::kF32, {3}, std::vector<float>(3, 1.0f));
       },
       "absmax"},
      {"absmax dtype",
       [&](FlatLayer& l) {
         l.store.Add(w + ".absmax", io::DType::kU8, {8}, std::vector<uint8_t>(8));
       },
       "dtype U8"},
      {"codebook", [&](FlatLayer& l) { l.store.Remove(w + ".quant_map"); }, "quant_map"},
      {"codebook size",
       [&](FlatLayer& l) {
         l.store.Add(w + ".quant_map", io::DType::kF32, {8}, std::vector<float>(8, 0.5f));
       },
       "quant_map"},
      {"codebook dtype",
       [&](FlatLayer& l) {
         l.store.Add(w + ".quant_map", io::DType::kF16, {16}, std::vector<uint16_t>(16, 0));
       },
       "dtype F16"},
      {"two states",
       [&](FlatLayer& l) {
         l.store.AddJson(w + ".quant_state.bitsandbytes__fp4", StateJson(l, "fp4"));
       },
       "both"},
      {"huge block", [&](FlatLayer& l) {
         FlatLayer other = l;
         other.blocksize = int64_t{1} << 40;
         l.store.AddJson(qs, StateJson(other));
       }, "blocksize"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    FlatLayer l = MakeFlat(4, 128, 64, false, 1);
    c.spoil(l);
    auto spec = Resolve(l);
    ASSERT_FALSE(spec.ok());
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(kLayer));
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(c.message));
  }
  // Double quant with a nested tensor missing or misshaped, or a bad nested block size.
  const std::vector<std::pair<std::function<void(FlatLayer&)>, const char*>> nested_cases = {
      {[&](FlatLayer& l) { l.store.Remove(w + ".nested_absmax"); }, "nested_absmax"},
      {[&](FlatLayer& l) {
         l.store.Add(w + ".nested_quant_map", io::DType::kF32, {255}, std::vector<float>(255));
       },
       "nested_quant_map"},
      {[&](FlatLayer& l) {
         std::string json = StateJson(l);
         const std::string from = "\"nested_blocksize\": 4";
         json.replace(json.find(from), from.size(), "\"nested_blocksize\": 0");
         l.store.AddJson(qs, json);
       },
       "nested_blocksize 0"},
  };
  for (const auto& [spoil, message] : nested_cases) {
    SCOPED_TRACE(message);
    FlatLayer nested = MakeFlat(4, 128, 64, true, 2);
    spoil(nested);
    auto spec = Resolve(nested);
    ASSERT_FALSE(spec.ok());
    EXPECT_THAT(std::string(spec.status().message()), HasSubstr(message));
  }
}

// The `bnb_nf4` plan scheme quantizes as bitsandbytes' load_in_4bit: on the weights the
// bnb_nf4_double fixture quantized (the base model's, rounded to bf16 by its bf16 load), every
// code equals the one bitsandbytes wrote, and the codebook is its quant_map. (Its absmax went
// through double quant there, so only the codes compare.)
TEST(Bnb4bitTest, OnlineNf4CodesEqualBitsandbytes) {
  const std::string data = std::string(TESSERA_SOURCE_DIR) + "/tests/data/";
  auto base = io::OpenTensorStore(data + "models/llama");
  auto fixture = io::OpenTensorStore(data + "quant/bnb_nf4_double");
  ASSERT_TRUE(base.ok() && fixture.ok());
  int layers = 0;
  for (const char* m : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.o_proj",
                        "mlp.gate_proj", "mlp.down_proj"}) {
    const std::string module = absl::StrCat("model.layers.0.", m);
    SCOPED_TRACE(module);
    auto weight = (*base)->Get(module + ".weight");
    ASSERT_TRUE(weight.ok());
    const int64_t n = weight->shape[0], k = weight->shape[1];
    auto values = io::ToFloat32(*weight);
    ASSERT_TRUE(values.ok());
    for (float& v : *values) v = numeric::Bf16ToFloat(numeric::FloatToBf16(v));
    auto spec = OnlineSchemeSpec("bnb_nf4", module, n, k);
    ASSERT_TRUE(spec.ok()) << spec.status();
    EXPECT_EQ(spec->SchemeName(), "bnb_nf4");
    auto online = QuantizeOnline(*spec, *values);
    ASSERT_TRUE(online.ok()) << online.status();
    auto state = ReadBnb4bitState(**fixture, module, module, n, k);
    ASSERT_TRUE(state.ok() && state->has_value());
    std::vector<uint8_t> codes;
    std::vector<float> scales, codebook;
    ASSERT_TRUE(UnpackBnb4bit(**fixture, module, n, k, **state, &codes, &scales, &codebook).ok());
    EXPECT_EQ(online->codebook, codebook);
    ASSERT_EQ(online->bytes.size(), codes.size());
    int differ = 0;
    for (size_t i = 0; i < codes.size(); ++i) differ += online->bytes[i] != codes[i];
    EXPECT_EQ(differ, 0) << "of " << codes.size() << " code bytes";
    ++layers;
  }
  EXPECT_EQ(layers, 5);
}

TEST(BnbInt8Test, RowScaleAndFormatAreChecked) {
  const std::string p = kLayer;
  auto make = [&](io::DType weight, int64_t scb, uint8_t format) {
    FlatLayer l{3, 8, 64, false, {}, {}, {}, {}};
    l.store.Add(p + ".weight", weight, {3, 8}, std::vector<int8_t>(24, -5));
    l.store.Add(p + ".SCB", io::DType::kF32, {scb}, std::vector<float>(scb, 2.54f));
    l.store.Add(p + ".weight_format", io::DType::kU8, {}, std::vector<uint8_t>{format});
    return l;
  };
  FlatLayer ok = make(io::DType::kI8, 3, 0);
  auto spec = Resolve(ok);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->SchemeName(), "int8_wo");
  auto packed = LoadPackedWeights(*spec, p, ok.store);
  ASSERT_TRUE(packed.ok()) << packed.status();
  std::vector<float> row(8);
  packed->DequantizeRow(1, row.data());
  EXPECT_FLOAT_EQ(row[0], -5 * 2.54f / 127);
  for (const auto& [l, message] :
       {std::pair{make(io::DType::kU8, 3, 0), "dtype U8"},
        std::pair{make(io::DType::kI8, 2, 0), "SCB"},
        std::pair{make(io::DType::kI8, 3, 1), "weight_format"}}) {
    auto bad = Resolve(l);
    ASSERT_FALSE(bad.ok());
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(kLayer));
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(message));
  }
}

}  // namespace
}  // namespace tessera::quant
