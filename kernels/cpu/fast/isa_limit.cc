#include "kernels/cpu/fast/isa_limit.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hwy/targets.h"

namespace tessera::kernels::cpu::fast {
namespace {

enum class CpuIsa { kNative, kAvx2, kAvx512Vnni };

CpuIsa Limit() {
  // A function-local static: right whenever it is first asked, even from another static
  // initializer.
  static const CpuIsa limit = [] {
    const char* isa = std::getenv("TESSERA_CPU_ISA");
    if (isa == nullptr || isa[0] == '\0') return CpuIsa::kNative;
    if (std::strcmp(isa, "avx512-vnni") == 0) {
      // Debian 12's Highway stops at AVX3 / AVX3_DL (Ice Lake's set), which need no BF16; later
      // versions add targets that do, which this switch must take away too.
#if defined(HWY_AVX3_ZEN4)
      hwy::DisableTargets(HWY_AVX3_ZEN4);
#endif
#if defined(HWY_AVX3_SPR)
      hwy::DisableTargets(HWY_AVX3_SPR);
#endif
      return CpuIsa::kAvx512Vnni;
    }
    if (std::strcmp(isa, "avx2") != 0) {
      std::fprintf(stderr, "TESSERA_CPU_ISA=%s ignored: the values are avx2 and avx512-vnni\n",
                   isa);
      return CpuIsa::kNative;
    }
    // Highway orders x86 targets best first in increasing bits: every bit below HWY_AVX2 is an
    // AVX-512 target. Dispatch reads the chosen target on every call, so this holds from here on.
    hwy::DisableTargets(HWY_AVX2 - 1);
    return CpuIsa::kAvx2;
  }();
  return limit;
}

// Asked before main(), so that no Highway kernel dispatches to an AVX-512 target first.
const CpuIsa kAskedAtStart = Limit();

}  // namespace

bool Avx512Allowed() { return Limit() != CpuIsa::kAvx2; }

bool Avx512ExtensionAllowed(const char* extension) {
  switch (Limit()) {
    case CpuIsa::kNative:
      return true;
    case CpuIsa::kAvx2:
      return false;
    case CpuIsa::kAvx512Vnni:
      return std::strcmp(extension, "avx512bf16") != 0 &&
             std::strcmp(extension, "avx512fp16") != 0 && std::strcmp(extension, "avxvnni") != 0;
  }
  return true;
}

bool AmxAllowed() { return Limit() == CpuIsa::kNative; }

}  // namespace tessera::kernels::cpu::fast
