// Runs a check under every Highway target compiled into the binary that this CPU supports
// (AVX-512, AVX2, SSE4, the emulated and scalar ones), not only the best one: the fast kernels'
// lane counts change their tiling, runs and tails, and CI machines may pick any of them.
#ifndef TESSERA_TESTS_KERNELS_CPU_HWY_TARGETS_TEST_UTIL_H_
#define TESSERA_TESTS_KERNELS_CPU_HWY_TARGETS_TEST_UTIL_H_

#include <cstdint>

#include "gtest/gtest.h"
#include "hwy/targets.h"

namespace tessera::kernels::cpu::fast {

template <typename F>
void ForEachHwyTarget(F check) {
  for (const int64_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    SCOPED_TRACE(hwy::TargetName(target));
    check();
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_TESTS_KERNELS_CPU_HWY_TARGETS_TEST_UTIL_H_
