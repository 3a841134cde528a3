#include "kernels/cpu/fast/isa_limit.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "hwy/targets.h"

namespace tessera::kernels::cpu::fast {

bool Avx512Allowed() {
  // A function-local static: right whenever it is first asked, even from another static
  // initializer.
  static const bool allowed = [] {
    const char* isa = std::getenv("TESSERA_CPU_ISA");
    if (isa == nullptr || isa[0] == '\0') return true;
    if (std::strcmp(isa, "avx2") != 0) {
      std::fprintf(stderr, "TESSERA_CPU_ISA=%s ignored: the only value is avx2\n", isa);
      return true;
    }
    // Highway orders x86 targets best first in increasing bits: every bit below HWY_AVX2 is an
    // AVX-512 target. Dispatch reads the chosen target on every call, so this holds from here on.
    hwy::DisableTargets(HWY_AVX2 - 1);
    return false;
  }();
  return allowed;
}

namespace {
// Asked before main(), so that no Highway kernel dispatches to an AVX-512 target first.
const bool kAskedAtStart = Avx512Allowed();
}  // namespace

}  // namespace tessera::kernels::cpu::fast
