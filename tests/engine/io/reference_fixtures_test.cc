// Reader correctness against files written by other people's code: the Python safetensors
// library (all dtypes, sharded HF checkpoints via huggingface_hub) and gguf-py (metadata of every
// value type, tensors of every supported ggml type, with gguf-py's own dequantized values).
// tools/reference/make_io_fixtures.py made them; see tools/reference/README.md.
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "engine/io/gguf_file.h"
#include "engine/io/hf_checkpoint.h"
#include "engine/io/safetensors_file.h"
#include "engine/io/tensor_store.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace tessera::io {
namespace {

using Json = nlohmann::json;
const std::string kData = std::string(TESSERA_SOURCE_DIR) + "/tests/data/io/";

Json LoadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return Json::parse(ss.str());
}

double JsonNumber(const Json& v) {
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  if (v.is_boolean()) return v.get<bool>() ? 1.0 : 0.0;
  return v.get<double>();
}

std::string Hex(absl::Span<const uint8_t> bytes) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : bytes) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

template <typename T>
void ExpectIntegers(const TensorView& view, const Json& values) {
  auto got = view.CopyAs<T>();
  ASSERT_TRUE(got.ok()) << got.status();
  ASSERT_EQ(got->size(), values.size());
  for (size_t i = 0; i < got->size(); ++i) EXPECT_EQ((*got)[i], values[i].get<T>()) << view.name << "[" << i << "]";
}

TEST(SafetensorsReferenceTest, AllDtypesMatchTorch) {
  auto st = SafetensorsFile::Open(kData + "safetensors/all_dtypes.safetensors");
  ASSERT_TRUE(st.ok()) << st.status();
  const Json expected = LoadJson(kData + "safetensors/all_dtypes.expected.json");
  EXPECT_EQ((*st)->names().size(), expected["tensors"].size());
  for (const auto& [k, v] : expected["metadata"].items()) {
    EXPECT_EQ((*st)->metadata().at(k), v.get<std::string>());
  }
  for (const auto& [name, e] : expected["tensors"].items()) {
    SCOPED_TRACE(name);
    auto view = (*st)->Get(name);
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(DTypeName(view->dtype), e["dtype"].get<std::string>());
    EXPECT_EQ(view->shape, e["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(Hex(view->bytes), e["raw_hex"].get<std::string>());
    const Json& values = e["values"];
    switch (view->dtype) {
      case DType::kI8: ExpectIntegers<int8_t>(*view, values); continue;
      case DType::kU8: ExpectIntegers<uint8_t>(*view, values); continue;
      case DType::kI16: ExpectIntegers<int16_t>(*view, values); continue;
      case DType::kU16: ExpectIntegers<uint16_t>(*view, values); continue;
      case DType::kI32: ExpectIntegers<int32_t>(*view, values); continue;
      case DType::kU32: ExpectIntegers<uint32_t>(*view, values); continue;
      case DType::kI64: ExpectIntegers<int64_t>(*view, values); continue;
      case DType::kU64: ExpectIntegers<uint64_t>(*view, values); continue;
      case DType::kF64: {
        auto got = view->CopyAs<double>();
        ASSERT_TRUE(got.ok());
        for (size_t i = 0; i < got->size(); ++i) EXPECT_EQ((*got)[i], JsonNumber(values[i]));
        continue;
      }
      default: break;
    }
    auto got = ToFloat32(*view);
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_EQ(got->size(), values.size());
    for (size_t i = 0; i < got->size(); ++i) {
      const double want = JsonNumber(values[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan((*got)[i])) << i;
      } else {
        EXPECT_EQ((*got)[i], static_cast<float>(want)) << i;
        EXPECT_EQ(std::signbit((*got)[i]), std::signbit(want)) << i;
      }
    }
  }
}

TEST(SafetensorsReferenceTest, ShardedCheckpointFollowsIndex) {
  const std::string dir = kData + "safetensors/sharded";
  auto store = OpenTensorStore(dir);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_EQ((*store)->kind(), ContainerKind::kHfDirectory);
  const auto* ckpt = dynamic_cast<const HfCheckpoint*>(store->get());
  const Json expected = LoadJson(kData + "safetensors/sharded.expected.json");
  EXPECT_EQ((*store)->names().size(), expected["tensors"].size());
  for (const auto& [name, e] : expected["tensors"].items()) {
    SCOPED_TRACE(name);
    auto view = (*store)->Get(name);
    ASSERT_TRUE(view.ok()) << view.status();
    EXPECT_EQ(DTypeName(view->dtype), e["dtype"].get<std::string>());
    EXPECT_EQ(view->shape, e["shape"].get<std::vector<int64_t>>());
    EXPECT_EQ(ckpt->ShardOf(name), e["file"].get<std::string>());
    auto values = ToFloat32(*view);
    ASSERT_TRUE(values.ok());
    double sum = 0;
    for (float f : *values) sum += f;
    EXPECT_NEAR(sum, e["sum"].get<double>(), 1e-9 * (1 + std::abs(sum)));
  }
}

class GgufReferenceTest : public ::testing::TestWithParam<std::string> {};

void ExpectValueEq(const GgufValue& got, const Json& want, uint32_t type) {
  ASSERT_EQ(static_cast<uint32_t>(got.type), type);
  switch (got.type) {
    case GgufValueType::kU8: case GgufValueType::kU16: case GgufValueType::kU32:
    case GgufValueType::kU64:
      EXPECT_EQ(std::get<uint64_t>(got.value), want.get<uint64_t>());
      break;
    case GgufValueType::kI8: case GgufValueType::kI16: case GgufValueType::kI32:
    case GgufValueType::kI64:
      EXPECT_EQ(std::get<int64_t>(got.value), want.get<int64_t>());
      break;
    case GgufValueType::kF32: case GgufValueType::kF64:
      EXPECT_EQ(std::get<double>(got.value), want.get<double>());
      break;
    case GgufValueType::kBool: EXPECT_EQ(std::get<bool>(got.value), want.get<bool>()); break;
    case GgufValueType::kString:
      EXPECT_EQ(std::get<std::string>(got.value), want.get<std::string>());
      break;
    case GgufValueType::kArray: {
      const auto& items = std::get<std::vector<GgufValue>>(got.value);
      ASSERT_EQ(items.size(), want.size());
      for (size_t i = 0; i < items.size(); ++i) {
        ExpectValueEq(items[i], want[i], static_cast<uint32_t>(got.element_type));
      }
      break;
    }
  }
}

TEST_P(GgufReferenceTest, HeaderMetadataAndTensorInfos) {
  auto g = GgufFile::Open(kData + "gguf/" + GetParam());
  ASSERT_TRUE(g.ok()) << g.status();
  const Json expected = LoadJson(kData + "gguf/blocks.expected.json");
  EXPECT_EQ((*g)->version(), GetParam() == "blocks_v2.gguf" ? 2u : 3u);
  EXPECT_EQ((*g)->alignment(), expected["alignment"].get<uint32_t>());
  EXPECT_EQ((*g)->data_offset(), expected["data_start"].get<uint64_t>());
  const auto& entries = (*g)->metadata().entries();
  ASSERT_EQ(entries.size(), expected["metadata_keys"].size());
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string key = expected["metadata_keys"][i].get<std::string>();
    SCOPED_TRACE(key);
    EXPECT_EQ(entries[i].key, key);
    const Json& m = expected["metadata"][key];
    ExpectValueEq(entries[i].value, m["value"], m["type"].get<uint32_t>());
    if (m.contains("element_type")) {
      EXPECT_EQ(static_cast<uint32_t>(entries[i].value.element_type), m["element_type"].get<uint32_t>());
    }
  }
  const auto& infos = (*g)->tensor_infos();
  ASSERT_EQ(infos.size(), expected["tensors"].size());
  for (size_t i = 0; i < infos.size(); ++i) {
    const Json& t = expected["tensors"][i];
    SCOPED_TRACE(t["name"].get<std::string>());
    EXPECT_EQ(infos[i].name, t["name"].get<std::string>());
    EXPECT_EQ(infos[i].ggml_type, t["type_id"].get<uint32_t>());
    EXPECT_EQ(DTypeName(infos[i].dtype), t["type_name"].get<std::string>());
    EXPECT_EQ(infos[i].dims, t["dims"].get<std::vector<int64_t>>());
    EXPECT_EQ(infos[i].offset, t["offset"].get<uint64_t>());
    EXPECT_EQ(infos[i].size, t["n_bytes"].get<uint64_t>());
    const BlockParameters bp = GetDTypeInfo(infos[i].dtype).block;
    EXPECT_EQ(bp.block_elements, t["block_size"].get<int64_t>());
    EXPECT_EQ(bp.block_bytes, t["type_size"].get<int64_t>());
  }
}

// Every tensor of the GGUF file `gguf_name` dequantizes (our scalar dequantizers) to the values
// of the same name in `expected_name`, which gguf-py wrote, bit for bit.
void ExpectDequantizedEqualsGgufPy(const std::string& gguf_name, const std::string& expected_name) {
  auto g = GgufFile::Open(kData + "gguf/" + gguf_name);
  ASSERT_TRUE(g.ok()) << g.status();
  auto want_store = SafetensorsFile::Open(kData + "gguf/" + expected_name);
  ASSERT_TRUE(want_store.ok()) << want_store.status();
  ASSERT_FALSE((*g)->names().empty());
  for (const std::string& name : (*g)->names()) {
    SCOPED_TRACE(name);
    auto view = (*g)->Get(name);
    ASSERT_TRUE(view.ok());
    auto want_view = (*want_store)->Get(name);
    ASSERT_TRUE(want_view.ok()) << want_view.status();
    EXPECT_EQ(view->shape, want_view->shape);
    auto got = ToFloat32(*view);
    ASSERT_TRUE(got.ok()) << got.status();
    auto want = want_view->CopyAs<float>();
    ASSERT_TRUE(want.ok());
    ASSERT_EQ(got->size(), want->size());
    int mismatches = 0;
    for (size_t i = 0; i < got->size(); ++i) {
      uint32_t a, b;
      std::memcpy(&a, &(*got)[i], 4);
      std::memcpy(&b, &(*want)[i], 4);
      if (a != b && ++mismatches <= 5) {
        ADD_FAILURE() << "element " << i << ": got " << (*got)[i] << " want " << (*want)[i];
      }
    }
    EXPECT_EQ(mismatches, 0);
  }
}

// Our scalar dequantization equals gguf-py's, bit for bit, for every type in the file.
TEST_P(GgufReferenceTest, DequantizedValuesEqualGgufPyBitForBit) {
  ExpectDequantizedEqualsGgufPy(GetParam(), "blocks.expected.safetensors");
}

// The 2- and 3-bit K-quants (random blocks, and edge blocks: all-zero and all-one bytes, negative
// and subnormal f16 scales), from tools/reference/make_low_kquant_fixtures.py.
TEST(GgufReferenceFixtures, Q2KAndQ3KDequantizeAsGgufPyBitForBit) {
  ExpectDequantizedEqualsGgufPy("low_kquants.gguf", "low_kquants.expected.safetensors");
}

// The non-linear 4-bit types IQ4_NL and IQ4_XS (random blocks and the same edge blocks), from the
// same script: the kvalues_iq4nl table, IQ4_XS's 6-bit scales split over scales_l / scales_h.
TEST(GgufReferenceFixtures, Iq4NlAndIq4XsDequantizeAsGgufPyBitForBit) {
  ExpectDequantizedEqualsGgufPy("iq4_blocks.gguf", "iq4_blocks.expected.safetensors");
}

// The grid types IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S and IQ1_M (random blocks and the
// same edge blocks), from the same script: every codebook (ggml_iq_grids.h), the sign tables, the
// 4- and 3-bit scales, IQ1's ±1/8 shifts and IQ1_M's d spread over its scale words.
TEST(GgufReferenceFixtures, IqGridTypesDequantizeAsGgufPyBitForBit) {
  ExpectDequantizedEqualsGgufPy("iq_grid_blocks.gguf", "iq_grid_blocks.expected.safetensors");
}

// The ternary types TQ1_0 (five base-3 digits per byte, ggml's multiply-by-3^n digit extraction)
// and TQ2_0 (2-bit codes, q − 1 up to 2), from the same script.
TEST(GgufReferenceFixtures, TernaryTypesDequantizeAsGgufPyBitForBit) {
  ExpectDequantizedEqualsGgufPy("ternary_blocks.gguf", "ternary_blocks.expected.safetensors");
}

INSTANTIATE_TEST_SUITE_P(Versions, GgufReferenceTest,
                         ::testing::Values("blocks.gguf", "blocks_v2.gguf"));

}  // namespace
}  // namespace tessera::io
