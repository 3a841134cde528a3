// Shared pieces of the CUDA kernel tests: skipping without a device, status assertions,
// host<->device copies that fail the test on error, random data, and the normalized mean squared error used as the
// per-format accuracy bound against the CPU reference kernels.
#ifndef TESSERA_TESTS_KERNELS_CUDA_CUDA_TEST_UTIL_H_
#define TESSERA_TESTS_KERNELS_CUDA_CUDA_TEST_UTIL_H_

#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "absl/status/status.h"
#include "kernels/cuda/device.h"
#include "kernels/cuda/device_memory.h"

namespace tessera::kernels::cuda::testing {

// GTEST_SKIP()s the calling test when no device is usable.
#define TESSERA_REQUIRE_CUDA_DEVICE()                                              \
  do {                                                                             \
    auto tessera_dev_ = ::tessera::kernels::cuda::QueryDevice(0);                  \
    if (!tessera_dev_.ok()) GTEST_SKIP() << tessera_dev_.status().ToString();      \
  } while (0)

// Status-returning calls, with the status printed when they fail.
#define ASSERT_OK(expr)              \
  do {                               \
    const absl::Status st_ = (expr); \
    ASSERT_TRUE(st_.ok()) << st_;    \
  } while (0)
#define EXPECT_OK(expr)              \
  do {                               \
    const absl::Status st_ = (expr); \
    EXPECT_TRUE(st_.ok()) << st_;    \
  } while (0)

template <typename T>
DeviceBuffer Upload(const std::vector<T>& v) {
  auto buf = DeviceBuffer::FromVector(v);
  EXPECT_TRUE(buf.ok()) << buf.status();
  return buf.ok() ? std::move(*buf) : DeviceBuffer();
}

inline DeviceBuffer Alloc(size_t bytes) {
  auto buf = DeviceBuffer::Allocate(bytes);
  EXPECT_TRUE(buf.ok()) << buf.status();
  return buf.ok() ? std::move(*buf) : DeviceBuffer();
}

template <typename T>
std::vector<T> Download(const DeviceBuffer& buf, size_t count) {
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  auto v = buf.ToVector<T>(count);
  EXPECT_TRUE(v.ok()) << v.status();
  return v.ok() ? *v : std::vector<T>(count);
}

inline std::vector<float> RandomFloats(size_t n, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

inline std::vector<uint8_t> RandomBytes(size_t n, uint32_t seed, int lo = 0, int hi = 255) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<uint8_t> v(n);
  for (uint8_t& x : v) x = static_cast<uint8_t>(dist(rng));
  return v;
}

// Σ (got − want)² / Σ want².
inline double Nmse(const std::vector<float>& got, const std::vector<float>& want) {
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    err += d * d;
    ref += static_cast<double>(want[i]) * want[i];
  }
  return ref == 0 ? err : err / ref;
}

}  // namespace tessera::kernels::cuda::testing

#endif  // TESSERA_TESTS_KERNELS_CUDA_CUDA_TEST_UTIL_H_
