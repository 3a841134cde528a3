// TESSERA_CPU_ISA=avx2 (isa_limit.h) takes effect: tools/test.sh runs the suite a second time with
// it, and this test fails that run if the switch did not reach every kind of kernel (a misspelt
// variable or an unlinked start-up check would otherwise pass silently as a plain second run).
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

}  // namespace
}  // namespace tessera::kernels::cpu::fast
