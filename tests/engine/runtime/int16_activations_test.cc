// EngineOptions::cpu_int16_activations end to end on a synthesized Hugging Face bf16 checkpoint
// quantized online to INT4 g128, MXFP4 and NVFP4 W4A16 (configs/plans/bench-*.json): the plan says
// so (a: int16 act group-G, "-i16-act" kernels) for those layers where the CPU runs the int16
// route, and otherwise keeps its CPU's default (exact activations with a note, or the int8 tiles
// on AVX2); the logits differ from the exact
// default's, by far less than bf16 activations move them; and a sequence's logits are
// bit-identical alone or batched with another sequence's prefill, at prefill and decode.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/quant/linear_spec.h"
#include "engine/runtime/engine_loader.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "tests/engine/runtime/small_model_test_util.h"

namespace tessera::runtime {
namespace {

std::string SynthDir() { return SmallSynthHfDir("int16-act-test", 12); }

enum class Acts { kExact, kBf16, kInt16 };

std::unique_ptr<LoadedEngine> Load(const std::string& plan, Acts acts) {
  EngineOptions options;
  options.threads = 2;
  options.precision_plan_path = std::string(TESSERA_SOURCE_DIR) + "/configs/plans/" + plan;
  options.cpu_bf16_activations = acts == Acts::kBf16;
  options.cpu_int16_activations = acts == Acts::kInt16;
  auto e = LoadEngine(SynthDir(), options);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

class Int16ActivationsTest : public ::testing::TestWithParam<const char*> {};

TEST_P(Int16ActivationsTest, PlanNamesTheChoice) {
  auto e = Load(GetParam(), Acts::kInt16);
  ASSERT_TRUE(e);
  const bool route = kernels::cpu::fast::QuantPanelInt16Available();
  int quantized = 0;
  for (const quant::LinearSpec& s : e->plan->layers()) {
    if (s.weight_format == quant::WeightFormat::kBF16) continue;  // lm_head
    ++quantized;
    const int64_t group = s.weight_format == quant::WeightFormat::kNvfp4   ? 16
                          : s.weight_format == quant::WeightFormat::kMxfp4 ? 32
                                                                           : 128;
    if (route) {
      EXPECT_EQ(s.activation, quant::ActivationFormat::kInt16Group) << s.module;
      EXPECT_EQ(s.activation_group, group) << s.module;
      EXPECT_TRUE(s.kernel.ends_with("-i16-act")) << s.module << " " << s.kernel;
      EXPECT_NE(s.Describe().find("a: int16 act group-" + std::to_string(group)), std::string::npos)
          << s.Describe();
    } else {
      // Exact activations with a note (AVX-512 without VNNI), or on AVX2 the int8 tiles
      // the 4-bit layers take there by default.
      EXPECT_NE(s.activation, quant::ActivationFormat::kInt16Group) << s.module;
      if (s.activation == quant::ActivationFormat::kFloat) {
        EXPECT_NE(s.reason.find("int16 activations need"), std::string::npos) << s.reason;
      }
    }
  }
  EXPECT_EQ(quantized, 14);  // 7 projections x 2 layers
}

TEST_P(Int16ActivationsTest, CloseToExactAndBatchInvariant) {
  if (!kernels::cpu::fast::QuantPanelInt16Available()) {
    GTEST_SKIP() << "no AVX-512 VNNI: the layers keep exact activations";
  }
  auto exact = Load(GetParam(), Acts::kExact);
  auto bf16 = Load(GetParam(), Acts::kBf16);
  auto int16 = Load(GetParam(), Acts::kInt16);
  ASSERT_TRUE(exact && bf16 && int16);
  const std::vector<int32_t> a = SmallTokens(11, 3);
  const std::vector<float> le = PrefillLogits(*exact, a);
  const double d16 = MaxRelativeDiff(le, PrefillLogits(*int16, a));
  const double dbf16 = MaxRelativeDiff(le, PrefillLogits(*bf16, a));
  EXPECT_GT(d16, 0.0) << "int16 activations changed nothing: were they quantized at all?";
  EXPECT_LE(d16, 1e-3);
  // Per activation 2^-16 of its group's largest |x| against bf16's 2^-9 of each |x|.
  EXPECT_LT(4 * d16, dbf16) << "int16 " << d16 << " bf16 " << dbf16;
  ExpectAloneEqualsBatched(*int16);
}

INSTANTIATE_TEST_SUITE_P(Plans, Int16ActivationsTest,
                         ::testing::Values("bench-int4-g128.json", "bench-mxfp4.json",
                                           "bench-nvfp4-a16.json"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name = info.param;
                           name = name.substr(6, name.size() - 11);  // "bench-" ... ".json"
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace tessera::runtime
