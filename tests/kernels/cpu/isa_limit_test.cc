// TESSERA_CPU_ISA=avx2 and =avx512-vnni (isa_limit.h) take effect: tools/test.sh runs the suite
// again with each, and these tests fail that run if the switch did not reach every kind of kernel
// (a misspelt variable or an unlinked start-up check would otherwise pass silently as a plain
// rerun).
#include "kernels/cpu/fast/isa_limit.h"

#include <cstdlib>
#include <cstring>
#include <string>

#include "gtest/gtest.h"
#include "kernels/cpu/fast/amx.h"
#include "kernels/cpu/fast/bf16_dot_matmul.h"
#include "kernels/cpu/fast/fast_matmul.h"
#include "kernels/cpu/fast/float_panel_matmul.h"
#include "kernels/cpu/fast/fp8_bf16_matmul.h"
#include "kernels/cpu/fast/fp8_panel_matmul.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/int8_dot_matmul.h"
#include "kernels/cpu/fast/q8_act_matmul.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"

namespace tessera::kernels::cpu::fast {
namespace {

TEST(IsaLimitTest, Avx2LimitReachesEveryKernel) {
  const char* isa = std::getenv("TESSERA_CPU_ISA");
  if (isa == nullptr || std::strcmp(isa, "avx2") != 0) {
    EXPECT_TRUE(Avx512Allowed());
    GTEST_SKIP() << "TESSERA_CPU_ISA is not avx2";
  }
  EXPECT_FALSE(Avx512Allowed());
  EXPECT_EQ(std::string(FastTargetName()).rfind("AVX3", 0), std::string::npos) << FastTargetName();
  EXPECT_NE(Int4x16KernelInUse(), Int4x16Kernel::kAvx512Vnni);
  EXPECT_NE(std::string(Q8ActKernelName()), "avx512-vnni");
  EXPECT_FALSE(Fp8Bf16Available());
  EXPECT_FALSE(Int8DotAvailable());
  EXPECT_FALSE(Bf16DotAvailable());
  // The AVX2 panel kernels instead of the zmm ones (and not the row kernels or the reference).
  EXPECT_EQ(std::string(FloatPanelTargetName()), "avx2");
  EXPECT_TRUE(Bf16PairsFmaAvailable());
  EXPECT_TRUE(Fp8PanelFmaAvailable());
  EXPECT_TRUE(Int8DotUsable());
  EXPECT_EQ(std::string(Int8DotKernelName()), "avx2");
  EXPECT_TRUE(QuantPanelAvailable());  // the f32 form alone, on its AVX2 kernel
  EXPECT_EQ(std::string(QuantPanelTargetName()), "avx2");
  EXPECT_FALSE(QuantPanelPairsAvailable());
  EXPECT_FALSE(QuantPanelInt16Available());
  EXPECT_FALSE(AmxBf16Usable());
  EXPECT_FALSE(AmxInt8Usable());
}

// As a Cascade Lake / Ice Lake server: the AVX-512 kernels stay, those needing AVX-512 BF16 or AMX
// go (their AVX-512 F / VNNI fallbacks instead).
TEST(IsaLimitTest, Avx512VnniLimitTakesBf16AndAmxAway) {
  const char* isa = std::getenv("TESSERA_CPU_ISA");
  if (isa == nullptr || std::strcmp(isa, "avx512-vnni") != 0) {
    GTEST_SKIP() << "TESSERA_CPU_ISA is not avx512-vnni";
  }
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "no AVX-512 on this CPU";
  EXPECT_TRUE(Avx512Allowed());
  EXPECT_FALSE(Avx512ExtensionAllowed("avx512bf16"));
  EXPECT_TRUE(Avx512ExtensionAllowed("avx512vnni"));
  EXPECT_FALSE(AmxAllowed());
  const std::string target = FastTargetName();  // no BF16 / FP16 Highway target (AVX3_ZEN4, _SPR)
  EXPECT_TRUE(target == "AVX3" || target == "AVX3_DL") << target;
  EXPECT_FALSE(Fp8Bf16Available());
  EXPECT_FALSE(Bf16DotAvailable());
  EXPECT_FALSE(QuantPanelPairsAvailable());
  EXPECT_FALSE(AmxBf16Usable());
  EXPECT_FALSE(AmxInt8Usable());
  EXPECT_EQ(std::string(FloatPanelTargetName()), "avx512");
  EXPECT_TRUE(QuantPanelAvailable());
  EXPECT_EQ(std::string(QuantPanelTargetName()), "avx512");
  // bf16 and FP8 weights on the FMA pair panels, in zmm.
  EXPECT_TRUE(Bf16PairsFmaAvailable());
  EXPECT_TRUE(Fp8PanelFmaAvailable());
  if (__builtin_cpu_supports("avx512vnni")) {
    EXPECT_EQ(std::string(Int8DotKernelName()), "avx512-vnni");
    EXPECT_TRUE(QuantPanelInt16Available());
    EXPECT_EQ(Int4x16KernelInUse(), Int4x16Kernel::kAvx512Vnni);
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
