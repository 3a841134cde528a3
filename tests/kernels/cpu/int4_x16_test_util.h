// Test helper shared by the 16-column tile tests (int4_x16_test.cc, q8_0_x16_test.cc): int8
// activation blocks from QuantizeActsInt4x16, owned together with the Int4x16Acts view of them.
#ifndef TESSERA_TESTS_KERNELS_CPU_INT4_X16_TEST_UTIL_H_
#define TESSERA_TESTS_KERNELS_CPU_INT4_X16_TEST_UTIL_H_

#include <cstdint>
#include <vector>

#include "kernels/cpu/fast/int4_x16.h"

namespace tessera::kernels::cpu::fast::testing {

struct Acts {
  std::vector<int8_t> q;
  std::vector<float> d, s;
  Int4x16Acts view;
};

inline Acts Quantize(const float* x, int64_t rows, int64_t k) {
  Acts a;
  a.q.resize(rows * k);
  a.d.resize(rows * k / 32);
  a.s.resize(rows * k / 32);
  QuantizeActsInt4x16(x, k, 0, rows, a.q.data(), a.d.data(), a.s.data());
  a.view = {rows, a.q.data(), a.d.data(), a.s.data()};
  return a;
}

}  // namespace tessera::kernels::cpu::fast::testing

#endif  // TESSERA_TESTS_KERNELS_CPU_INT4_X16_TEST_UTIL_H_
