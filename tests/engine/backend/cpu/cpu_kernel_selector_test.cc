// CpuKernelSelector: the kernel labels the precision plan prints for layouts the fast kernels
// take or refuse, and the FP8 W8A8 layouts no CPU kernel can compute (an error naming the layer
// at plan time, not an unwritten output at run time).
#include "engine/backend/cpu/cpu_kernel_selector.h"

#include <string>
#include <tuple>
#include <utility>

#include "gtest/gtest.h"
#include "kernels/cpu/fast/fast_quant_matmul.h"
#include "kernels/cpu/fast/fp8_bf16_matmul.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"

namespace tessera::backend::cpu {
namespace {

// An int8-tile kernel label as written below ("...-vnni") with the suffix of the kernel that runs
// the tiles on this CPU (Int8TileSuffix); other labels unchanged.
std::string Tiles(std::string label) {
  const std::string vnni = "-vnni";
  if (label.size() > vnni.size() && label.ends_with(vnni) &&
      label.find("w8a8") == std::string::npos) {
    label.replace(label.size() - vnni.size(), vnni.size(), "-" + Int8TileSuffix());
  }
  return label;
}

// Whether the f32-activation 4-bit kernels run here: AVX-512 (FastQuantMatmul and the panels) or
// AVX2 (the panels' f32 form).
bool F32FourBitFast() {
  return kernels::cpu::fast::FastQuant4BitAvailable() || kernels::cpu::fast::QuantPanelAvailable();
}

// An f32-activation 4-bit kernel label ("...-fast"), or "...-ref" where that kernel cannot run.
std::string F32FourBit(std::string label) {
  const std::string fast = "-fast";
  if (!F32FourBitFast() && label.ends_with(fast) && label.find("gguf") == std::string::npos) {
    label.replace(label.size() - fast.size(), fast.size(), "-ref");
  }
  return label;
}

using quant::ActivationFormat;
using quant::LinearSpec;
using quant::ScaleGranularity;
using quant::ScaleOrigin;
using quant::WeightFormat;

LinearSpec Fp8BlockW8A8(int64_t block_k, int64_t act_group) {
  LinearSpec s;
  s.module = "model.layers.3.mlp.down_proj";
  s.n = 256;
  s.k = 512;
  s.weight_format = WeightFormat::kFp8E4m3;
  s.weight_scale = ScaleGranularity::kBlock;
  s.block_n = 128;
  s.block_k = block_k;
  s.activation = ActivationFormat::kFp8;
  s.activation_origin = ScaleOrigin::kDynamic;
  s.activation_scale = ScaleGranularity::kGroup;
  s.activation_group = act_group;
  return s;
}

TEST(CpuKernelSelectorTest, Fp8BlockW8A8) {
  const CpuKernelSelector selector;
  LinearSpec s = Fp8BlockW8A8(128, 128);
  ASSERT_TRUE(selector.Select(&s).ok());
  EXPECT_EQ(s.kernel, "cpu/fp8-w8a8-fast");  // the BF16 kernel, else the Highway one
  LinearSpec bad = Fp8BlockW8A8(128, 64);
  const absl::Status st = selector.Select(&bad);
  EXPECT_EQ(st.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("model.layers.3.mlp.down_proj"), std::string::npos) << st;
  // Per-row weights with per-token-group activations: the reference kernel, and the label says so.
  LinearSpec rows = Fp8BlockW8A8(128, 128);
  rows.weight_scale = ScaleGranularity::kRowwise;
  ASSERT_TRUE(selector.Select(&rows).ok());
  EXPECT_EQ(rows.kernel, "cpu/fp8-w8a8-ref");
}

TEST(CpuKernelSelectorTest, Int4ActOrderRunsTheFastKernels) {
  LinearSpec s;
  s.module = "model.layers.0.self_attn.q_proj";
  s.n = 64;
  s.k = 256;
  s.weight_format = WeightFormat::kInt4;
  s.group_size = 128;
  s.act_order = true;
  LinearSpec plain = s;
  ASSERT_TRUE(CpuKernelSelector().Select(&plain).ok());
  EXPECT_EQ(plain.kernel, F32FourBit("cpu/int-wo-fast"));
  ASSERT_TRUE(CpuKernelSelector(Int8Activations::kAll).Select(&s).ok());
  EXPECT_EQ(s.kernel, Tiles("cpu/int4-wo-vnni"));
  EXPECT_EQ(s.activation, ActivationFormat::kInt8Block32);
  LinearSpec g16 = s;
  g16.group_size = 16;
  g16.activation = ActivationFormat::kFloat;
  ASSERT_TRUE(CpuKernelSelector().Select(&g16).ok());
  EXPECT_EQ(g16.kernel, "cpu/int-wo-ref");
}

// INT8 / INT3 / INT2 weight-only: the byte tiles under --cpu_int8_activations when K and the
// groups are whole activation blocks, else (and without the flag) the f32 byte-code kernel when
// the groups are whole vectors or one per row, else the reference kernel.
TEST(CpuKernelSelectorTest, IntBytesWeightOnly) {
  for (const auto& [fmt, label] : {std::pair{WeightFormat::kInt8, "cpu/int8-wo-vnni"},
                                   std::pair{WeightFormat::kInt3, "cpu/int-wo-vnni"},
                                   std::pair{WeightFormat::kInt2, "cpu/int-wo-vnni"}}) {
    LinearSpec s;
    s.module = "model.layers.0.mlp.up_proj";
    s.n = 64;
    s.k = 256;
    s.weight_format = fmt;
    s.group_size = 128;
    LinearSpec plain = s, odd = s;
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kAll).Select(&s).ok());
    EXPECT_EQ(s.kernel, Tiles(label));
    EXPECT_EQ(s.activation, ActivationFormat::kInt8Block32);
    ASSERT_TRUE(CpuKernelSelector().Select(&plain).ok());
    EXPECT_EQ(plain.kernel, "cpu/int-wo-fast");
    EXPECT_EQ(plain.activation, ActivationFormat::kFloat);
    odd.group_size = 48;  // K a multiple of 32, the groups not (but whole vectors)
    odd.k = 288;
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kAll).Select(&odd).ok());
    EXPECT_EQ(odd.kernel, "cpu/int-wo-fast");
    EXPECT_EQ(odd.activation, ActivationFormat::kFloat);
    LinearSpec odd_k = plain;
    odd_k.group_size = -1;  // per channel, K not a multiple of 32
    odd_k.k = 240;
    odd_k.kernel.clear();
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kAll).Select(&odd_k).ok());
    EXPECT_EQ(odd_k.kernel, "cpu/int-wo-fast");
    LinearSpec g24 = odd_k;
    g24.group_size = 24;  // groups that are not whole vectors
    g24.kernel.clear();
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kAll).Select(&g24).ok());
    EXPECT_EQ(g24.kernel, "cpu/int-wo-ref");
  }
}

}  // namespace
}  // namespace tessera::backend::cpu

namespace tessera::backend::cpu {
namespace {

// GGUF block formats (Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 / Q2_K-Q6_K / IQ4_NL / IQ4_XS / the IQ1-IQ3
// grid types): under
// --cpu_int8_activations each takes its 16-column VNNI tiles and int8 activations; without it, f32
// activations: Q4_0 / Q8_0 on the row kernels that decode in registers ("-fast"), the others on
// the kernel that dequantizes blocks to an f32 tile ("-dequant", which the loader warns about).
TEST(CpuKernelSelectorTest, GgufInt8ActivationTiles) {
  for (const auto& [fmt, label] :
       {std::pair{quant::WeightFormat::kGgufQ4_0, "cpu/gguf-q4_0-vnni"},
        std::pair{quant::WeightFormat::kGgufQ8_0, "cpu/gguf-q8_0-vnni"},
        std::pair{quant::WeightFormat::kGgufQ4_K, "cpu/gguf-q4_k-vnni"},
        std::pair{quant::WeightFormat::kGgufQ5_K, "cpu/gguf-q5_k-vnni"},
        std::pair{quant::WeightFormat::kGgufQ6_K, "cpu/gguf-q6_k-vnni"},
        std::pair{quant::WeightFormat::kGgufQ4_1, "cpu/gguf-q4_1-vnni"},
        std::pair{quant::WeightFormat::kGgufQ5_0, "cpu/gguf-q5_0-vnni"},
        std::pair{quant::WeightFormat::kGgufQ5_1, "cpu/gguf-q5_1-vnni"},
        std::pair{quant::WeightFormat::kGgufQ3_K, "cpu/gguf-q3_k-vnni"},
        std::pair{quant::WeightFormat::kGgufQ2_K, "cpu/gguf-q2_k-vnni"},
        std::pair{quant::WeightFormat::kGgufIq4Nl, "cpu/gguf-iq4_nl-vnni"},
        std::pair{quant::WeightFormat::kGgufIq4Xs, "cpu/gguf-iq4_xs-vnni"},
        std::pair{quant::WeightFormat::kGgufIq2Xxs, "cpu/gguf-iq2_xxs-vnni"},
        std::pair{quant::WeightFormat::kGgufIq2Xs, "cpu/gguf-iq2_xs-vnni"},
        std::pair{quant::WeightFormat::kGgufIq2S, "cpu/gguf-iq2_s-vnni"},
        std::pair{quant::WeightFormat::kGgufIq3Xxs, "cpu/gguf-iq3_xxs-vnni"},
        std::pair{quant::WeightFormat::kGgufIq3S, "cpu/gguf-iq3_s-vnni"},
        std::pair{quant::WeightFormat::kGgufIq1S, "cpu/gguf-iq1_s-vnni"},
        std::pair{quant::WeightFormat::kGgufIq1M, "cpu/gguf-iq1_m-vnni"},
        std::pair{quant::WeightFormat::kGgufTq1_0, "cpu/gguf-tq1_0-vnni"},
        std::pair{quant::WeightFormat::kGgufTq2_0, "cpu/gguf-tq2_0-vnni"}}) {
    quant::LinearSpec s;
    s.module = "model.layers.0.mlp.down_proj";
    s.n = 64;
    s.k = 256;
    s.weight_format = fmt;
    quant::LinearSpec plain = s;
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kAll).Select(&s).ok());
    EXPECT_EQ(s.kernel, Tiles(label));
    const bool tiles = std::string(label).find("vnni") != std::string::npos;
    EXPECT_EQ(s.activation,
              tiles ? quant::ActivationFormat::kInt8Block32 : quant::ActivationFormat::kFloat)
        << label;
    ASSERT_TRUE(CpuKernelSelector().Select(&plain).ok());
    EXPECT_EQ(plain.activation, quant::ActivationFormat::kFloat) << label;
    const bool vector_decoder =
        fmt == quant::WeightFormat::kGgufQ4_0 || fmt == quant::WeightFormat::kGgufQ8_0;
    EXPECT_NE(plain.kernel.find(vector_decoder ? "-fast" : "-dequant"), std::string::npos)
        << plain.kernel;
  }
}

// The default (Int8Activations::kGgufBlocks, `tessera` without --cpu_int8_activations): the GGUF
// block formats take the int8 tiles where a vector kernel runs them and keep f32 activations
// elsewhere; INT4 / MXFP4 / NVFP4 W4A16 keep f32 activations on AVX-512 and take the tiles, with a
// note in the reason, without it (AVX2: the tiles decode about twice as fast as the exact f32
// panels there), while Int8Activations::kNone runs those f32 panels.
TEST(CpuKernelSelectorTest, DefaultInt8ActivationsCoverGgufBlocksOnly) {
  const bool tiles = Int8TileSuffix() != "portable";
  const bool f32_four_bit = kernels::cpu::fast::FastQuant4BitAvailable();  // AVX-512
  for (const auto& [fmt, group, int8_label, f32_label] :
       {std::tuple{WeightFormat::kGgufQ4_0, 0, "cpu/gguf-q4_0-vnni", "cpu/gguf-q4_0-fast"},
        std::tuple{WeightFormat::kGgufQ6_K, 0, "cpu/gguf-q6_k-vnni", "cpu/gguf-q6_k-dequant"},
        std::tuple{WeightFormat::kInt4, 128, "cpu/int4-wo-vnni", "cpu/int-wo-fast"},
        std::tuple{WeightFormat::kMxfp4, 32, "cpu/mxfp4-w4a16-vnni", "cpu/mxfp4-w4a16-fast"},
        std::tuple{WeightFormat::kNvfp4, 16, "cpu/nvfp4-w4a16-vnni", "cpu/nvfp4-w4a16-fast"}}) {
    LinearSpec s;
    s.module = "model.layers.0.mlp.up_proj";
    s.n = 64;
    s.k = 256;
    s.weight_format = fmt;
    s.group_size = group;
    LinearSpec exact = s;
    const bool four_bit = std::string(f32_label).find("gguf") == std::string::npos;
    const bool takes_tiles = tiles && (!four_bit || !f32_four_bit);
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kGgufBlocks).Select(&s).ok());
    EXPECT_EQ(s.kernel, takes_tiles ? Tiles(int8_label) : F32FourBit(f32_label));
    EXPECT_EQ(s.reason.find("without AVX-512 the int8 tiles") != std::string::npos,
              takes_tiles && four_bit)
        << s.reason;
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kNone).Select(&exact).ok());
    EXPECT_EQ(exact.kernel, F32FourBit(f32_label));
    EXPECT_EQ(exact.activation, ActivationFormat::kFloat);
  }
}

// The 4-bit float formats with f32 activations: under --cpu_int8_activations NVFP4 W4A16 and
// MXFP4 take the int8 tiles with int8 blocks of 32 where a vector kernel runs them (else they keep
// their f32 kernels); NVFP4 W4A4 keeps its own activations.
TEST(CpuKernelSelectorTest, Fp4Int8ActivationTiles) {
  const bool vector_tiles = Int8TileSuffix() != "portable";
  for (const auto& [fmt, act, tiles, plain_label] :
       {std::tuple{WeightFormat::kMxfp4, ActivationFormat::kFloat, "cpu/mxfp4-w4a16-vnni",
                   "cpu/mxfp4-w4a16-fast"},
        std::tuple{WeightFormat::kNvfp4, ActivationFormat::kFloat, "cpu/nvfp4-w4a16-vnni",
                   "cpu/nvfp4-w4a16-fast"},
        std::tuple{WeightFormat::kNvfp4, ActivationFormat::kNvfp4, "cpu/nvfp4-w4a4-int",
                   "cpu/nvfp4-w4a4-int"}}) {
    LinearSpec s;
    s.module = "model.layers.0.mlp.gate_proj";
    s.n = 64;
    s.k = 256;
    s.weight_format = fmt;
    s.activation = act;
    s.group_size = fmt == WeightFormat::kMxfp4 ? 32 : 16;
    LinearSpec plain = s;
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kAll).Select(&s).ok());
    const bool takes_tiles = act == ActivationFormat::kFloat && vector_tiles;
    EXPECT_EQ(s.kernel, takes_tiles || act != ActivationFormat::kFloat ? Tiles(tiles)
                                                                       : F32FourBit(plain_label));
    EXPECT_EQ(s.activation, takes_tiles ? ActivationFormat::kInt8Block32 : act) << tiles;
    ASSERT_TRUE(CpuKernelSelector().Select(&plain).ok());
    EXPECT_EQ(plain.kernel, F32FourBit(plain_label));
    EXPECT_EQ(plain.activation, act);
  }
}

// NVFP4 / MXFP4 W4A16 with K not a whole number of 32s: no fast kernel takes them
// (FastQuantSupported, and QuantizedLinear's panels on AVX2), so the label says the reference.
TEST(CpuKernelSelectorTest, Fp4KOutsideWholeThirtyTwosRunsTheReference) {
  for (const auto& [fmt, group, label] :
       {std::tuple{WeightFormat::kNvfp4, 16, "cpu/nvfp4-w4a16"},
        std::tuple{WeightFormat::kMxfp4, 32, "cpu/mxfp4-w4a16"}}) {
    for (const int64_t k : {48, 256}) {
      LinearSpec s;
      s.module = "model.layers.0.mlp.up_proj";
      s.n = 64;
      s.k = k;
      s.weight_format = fmt;
      s.group_size = group;
      ASSERT_TRUE(CpuKernelSelector(Int8Activations::kNone).Select(&s).ok());
      EXPECT_EQ(s.kernel, F32FourBit(std::string(label) + (k % 32 == 0 ? "-fast" : "-ref"))) << k;
    }
  }
}

// --cpu_bf16_activations on 4-bit weight-only layers: bf16 activations on their fast kernel (the
// bf16-pair panels); a layer on the reference kernel (INT4 group 16) or with W4A4 keeps its
// activations.
TEST(CpuKernelSelectorTest, Bf16ActivationsForFourBitWeightOnly) {
  const bool fast = F32FourBitFast();
  for (const auto& [fmt, act, group, label] :
       {std::tuple{WeightFormat::kInt4, ActivationFormat::kFloat, 128, "cpu/int-wo-bf16-act"},
        std::tuple{WeightFormat::kInt4Awq, ActivationFormat::kFloat, 64, "cpu/int-wo-bf16-act"},
        std::tuple{WeightFormat::kInt4, ActivationFormat::kFloat, 16, ""},
        std::tuple{WeightFormat::kMxfp4, ActivationFormat::kFloat, 32, "cpu/mxfp4-w4a16-bf16-act"},
        std::tuple{WeightFormat::kNvfp4, ActivationFormat::kFloat, 16, "cpu/nvfp4-w4a16-bf16-act"},
        std::tuple{WeightFormat::kNvfp4, ActivationFormat::kNvfp4, 16, ""}}) {
    LinearSpec s;
    s.module = "model.layers.0.mlp.up_proj";
    s.n = 64;
    s.k = 256;
    s.weight_format = fmt;
    s.weight_scale = ScaleGranularity::kGroup;
    s.group_size = group;
    s.activation = act;
    LinearSpec exact = s;
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kNone, true).Select(&s).ok());
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kNone, false).Select(&exact).ok());
    const bool takes = fast && std::string(label).size() > 0;
    SCOPED_TRACE(exact.kernel);
    EXPECT_EQ(s.activation, takes ? ActivationFormat::kBf16 : act);
    EXPECT_EQ(s.kernel, takes ? std::string(label) : exact.kernel);
    EXPECT_EQ(exact.activation, act);
  }
}

// --cpu_int16_activations on 4-bit weight-only layers: int16 activations per weight group where
// the pair panels' int16 route runs here and the layer fits it (groups of 16-128, act-order too);
// other W4A16 layers keep their kernel and activations, with a note;
// bf16 activations win where both are asked for and they cover the layer.
TEST(CpuKernelSelectorTest, Int16ActivationsForFourBitWeightOnly) {
  const bool route = kernels::cpu::fast::QuantPanelInt16Available();
  struct Case {
    WeightFormat fmt;
    ActivationFormat act;
    int64_t group;
    bool act_order;
    const char* label;  // "": never int16; otherwise the label where the route runs
  };
  for (const Case& c :
       {Case{WeightFormat::kInt4, ActivationFormat::kFloat, 128, false, "cpu/int-wo-i16-act"},
        Case{WeightFormat::kInt4Awq, ActivationFormat::kFloat, 64, false, "cpu/int-wo-i16-act"},
        Case{WeightFormat::kInt4, ActivationFormat::kFloat, 256, false, ""},
        Case{WeightFormat::kInt4, ActivationFormat::kFloat, 16, false, ""},  // reference kernel
        Case{WeightFormat::kInt4, ActivationFormat::kFloat, 128, true, "cpu/int-wo-i16-act"},
        Case{WeightFormat::kInt8, ActivationFormat::kFloat, 128, false, "cpu/int-wo-i16-act"},
        Case{WeightFormat::kInt3, ActivationFormat::kFloat, 64, false, "cpu/int-wo-i16-act"},
        Case{WeightFormat::kMxfp4, ActivationFormat::kFloat, 32, false, "cpu/mxfp4-w4a16-i16-act"},
        Case{WeightFormat::kNvfp4, ActivationFormat::kFloat, 16, false, "cpu/nvfp4-w4a16-i16-act"},
        Case{WeightFormat::kNvfp4, ActivationFormat::kNvfp4, 16, false, ""}}) {
    LinearSpec s;
    s.module = "model.layers.0.mlp.up_proj";
    s.n = 64;
    s.k = 256;
    s.weight_format = c.fmt;
    s.weight_scale = ScaleGranularity::kGroup;
    s.group_size = c.group;
    s.act_order = c.act_order;
    s.activation = c.act;
    LinearSpec exact = s, both = s;
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kNone, false, true).Select(&s).ok());
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kNone).Select(&exact).ok());
    ASSERT_TRUE(CpuKernelSelector(Int8Activations::kNone, true, true).Select(&both).ok());
    const bool takes = route && std::string(c.label).size() > 0;
    SCOPED_TRACE(exact.kernel + " group " + std::to_string(c.group));
    EXPECT_EQ(s.activation, takes ? ActivationFormat::kInt16Group : c.act);
    EXPECT_EQ(s.kernel, takes ? std::string(c.label) : exact.kernel);
    EXPECT_EQ(s.activation_group, takes ? c.group : exact.activation_group);
    // The note: every W4A16 layer the route does not take.
    const bool noted = s.reason.find("int16 activations need") != std::string::npos;
    EXPECT_EQ(noted, c.act == ActivationFormat::kFloat && !takes) << s.reason;
    // bf16 activations win where they cover the layer (not byte codes).
    const bool bytes = c.fmt == WeightFormat::kInt8 || c.fmt == WeightFormat::kInt3;
    EXPECT_EQ(both.activation == ActivationFormat::kInt16Group, takes && bytes);
  }
}

}  // namespace
}  // namespace tessera::backend::cpu
