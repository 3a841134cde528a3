// EngineOptions::cpu_bf16_activations end to end on a synthesized Hugging Face bf16 checkpoint:
// the plan says so (a: bf16, cpu/dense-bf16-act) for every bf16 layer and nothing else, the
// logits stay close to the exact default (hi + lo split) without being equal to them, and a
// sequence's logits are bit-identical whether its steps run alone or batched with another
// sequence's prefill (the server's concurrent-equals-sequential property at the decoder level).
// The same for bitsandbytes NF4 layers (the producer-made bnb_nf4_double fixture), whose codebook
// is rounded to bf16 with the activations, and whose exact default is batch-invariant too.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/quant/linear_spec.h"
#include "engine/runtime/engine_loader.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "tests/engine/runtime/small_model_test_util.h"

namespace tessera::runtime {
namespace {

std::string SynthDir() { return SmallSynthHfDir("bf16-act-test", 11); }

std::unique_ptr<LoadedEngine> Load(bool bf16_activations, const std::string& dir = SynthDir()) {
  EngineOptions options;
  options.threads = 2;
  options.cpu_bf16_activations = bf16_activations;
  auto e = LoadEngine(dir, options);
  EXPECT_TRUE(e.ok()) << e.status();
  return e.ok() ? std::move(*e) : nullptr;
}

TEST(Bf16ActivationsTest, PlanNamesTheChoice) {
  auto exact = Load(false);
  auto bf16 = Load(true);
  ASSERT_TRUE(exact && bf16);
  ASSERT_EQ(exact->plan->layers().size(), bf16->plan->layers().size());
  for (size_t i = 0; i < bf16->plan->layers().size(); ++i) {
    const quant::LinearSpec& a = exact->plan->layers()[i];
    const quant::LinearSpec& b = bf16->plan->layers()[i];
    ASSERT_EQ(b.weight_format, quant::WeightFormat::kBF16) << b.module;
    EXPECT_EQ(a.activation, quant::ActivationFormat::kFloat) << a.module;
    EXPECT_EQ(a.kernel, "cpu/dense-fast") << a.module;
    EXPECT_EQ(b.activation, quant::ActivationFormat::kBf16) << b.module;
    EXPECT_EQ(b.kernel, "cpu/dense-bf16-act") << b.module;
    EXPECT_NE(b.Describe().find("a: bf16"), std::string::npos) << b.Describe();
  }
}

TEST(Bf16ActivationsTest, CloseToExactAndBatchInvariant) {
  auto exact = Load(false);
  auto bf16 = Load(true);
  ASSERT_TRUE(exact && bf16);
  const std::vector<int32_t> a = SmallTokens(11, 3);
  const double diff = MaxRelativeDiff(PrefillLogits(*exact, a), PrefillLogits(*bf16, a));
  EXPECT_GT(diff, 0.0) << "bf16 activations changed nothing: were they rounded at all?";
  EXPECT_LE(diff, 2e-2);
  ExpectAloneEqualsBatched(*bf16);
}

std::unique_ptr<LoadedEngine> LoadBnb(bool bf16_activations) {
  return Load(bf16_activations,
              std::string(TESSERA_SOURCE_DIR) + "/tests/data/quant/bnb_nf4_double");
}

TEST(Bf16ActivationsTest, BitsandbytesNf4LayersTakeThemAndStayBatchInvariant) {
  auto exact = LoadBnb(false);
  auto bf16 = LoadBnb(true);
  ASSERT_TRUE(exact && bf16);
  const quant::LinearSpec* q = bf16->plan->Find("model.layers.0.self_attn.q_proj");
  ASSERT_NE(q, nullptr);
  ASSERT_EQ(q->weight_format, quant::WeightFormat::kBnb4bit);
  EXPECT_EQ(exact->plan->Find(q->module)->activation, quant::ActivationFormat::kFloat);
  if (kernels::cpu::fast::QuantPanelAvailable()) {
    EXPECT_EQ(q->activation, quant::ActivationFormat::kBf16);
    EXPECT_EQ(q->kernel, "cpu/bnb4-bf16-act");
  }
  const std::vector<int32_t> a = SmallTokens(11, 3);
  const double diff = MaxRelativeDiff(PrefillLogits(*exact, a), PrefillLogits(*bf16, a));
  EXPECT_GT(diff, 0.0);
  EXPECT_LE(diff, 2e-2);
  ExpectAloneEqualsBatched(*exact);
  ExpectAloneEqualsBatched(*bf16);
}

}  // namespace
}  // namespace tessera::runtime
