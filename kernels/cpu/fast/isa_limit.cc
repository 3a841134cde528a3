#include "kernels/cpu/fast/isa_limit.h"

#include <cstdlib>
#include <cstring>

#include "hwy/targets.h"

namespace tessera::kernels::cpu::fast {
namespace {

bool ReadLimit() {
  const char* isa = std::getenv("TESSERA_CPU_ISA");
  const bool avx2 = isa != nullptr && std::strcmp(isa, "avx2") == 0;
  // Highway orders x86 targets best first in increasing bits: every bit below HWY_AVX2 is an
  // AVX-512 target. Dispatch reads the chosen target on every call, so this holds from here on.
  if (avx2) hwy::DisableTargets(HWY_AVX2 - 1);
  return !avx2;
}

// Applied before main(), so that no Highway kernel has dispatched to an AVX-512 target yet.
const bool kAvx512Allowed = ReadLimit();

}  // namespace

bool Avx512Allowed() { return kAvx512Allowed; }

}  // namespace tessera::kernels::cpu::fast
