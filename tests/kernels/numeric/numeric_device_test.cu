// Device-side checks of kernels/numeric/. Compiling this file with nvcc for every arch in
// CMAKE_CUDA_ARCHITECTURES proves that the headers are device-clean (TESSERA_HD, constexpr
// std::bit_cast under --expt-relaxed-constexpr, no host-only calls), and the static_asserts inside
// a kernel body prove they are constant-evaluable in the device compilation pass. With a GPU, a
// kernel runs every decoder over all codes and every encoder over a sweep of inputs and the
// results must equal the host's bit for bit. Without one, the device test skips, but the host
// tests here still compare our encoders with the CUDA toolkit's own conversion routines
// (cuda_fp8.h, cuda_fp4.h, cuda_bf16.h, cuda_fp16.h), an independent external oracle that runs
// on the CPU.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/numeric/e8m0.h"
#include "kernels/numeric/fp4.h"
#include "kernels/numeric/fp8.h"
#include "kernels/numeric/half.h"
#include "kernels/numeric/hd.h"

namespace tessera::numeric {
namespace {

// The results the codec kernel writes for each input, one row of `n` values per entry.
enum Result : int {
  kEncE4m3,
  kEncUe4m3,
  kEncE5m2,
  kEncE5m2Sat,
  kEncE2m1,
  kEncBf16,
  kEncHalf,
  kEncE8m0Floor,
  kDecE4m3,  // decoders take the input's low bits as the code
  kDecUe4m3Gguf,
  kDecE5m2,
  kDecE2m1,
  kDecE8m0,
  kDecBf16,
  kDecHalf,
  kNumResults,
};

// One result for input `x` (also read as the code `code` for decoders); same on host and device.
TESSERA_HD uint32_t Compute(int what, float x, uint32_t code) {
  switch (what) {
    case kEncE4m3:
      return EncodeE4m3(x);
    case kEncUe4m3:
      return EncodeUe4m3(x);
    case kEncE5m2:
      return EncodeE5m2(x);
    case kEncE5m2Sat:
      return EncodeE5m2Sat(x);
    case kEncE2m1:
      return EncodeE2m1(x);
    case kEncBf16:
      return FloatToBf16(x);
    case kEncHalf:
      return FloatToHalf(x);
    case kEncE8m0Floor:
      return EncodeE8m0Floor(x, kE2m1EmaxPow2);
    case kDecE4m3:
      return FloatToBits(DecodeE4m3(static_cast<uint8_t>(code)));
    case kDecUe4m3Gguf:
      return FloatToBits(DecodeUe4m3GgufNvfp4(static_cast<uint8_t>(code)));
    case kDecE5m2:
      return FloatToBits(DecodeE5m2(static_cast<uint8_t>(code)));
    case kDecE2m1:
      return FloatToBits(DecodeE2m1(static_cast<uint8_t>(code)));
    case kDecE8m0:
      return FloatToBits(DecodeE8m0(static_cast<uint8_t>(code)));
    case kDecBf16:
      return FloatToBits(Bf16ToFloat(static_cast<uint16_t>(code)));
    case kDecHalf:
      return FloatToBits(HalfToFloat(static_cast<uint16_t>(code)));
    default:
      return 0xDEADBEEFu;
  }
}

// Constant evaluation in device code: these are checked by the device compilation pass of every
// arch, not only by the host compiler.
__global__ void ConstexprKernel(uint32_t* out) {
  static_assert(DecodeE4m3(0x7E) == 448.0f);
  static_assert(EncodeE4m3(464.0f) == 0x7E);
  static_assert(EncodeE4m3(-1e30f) == 0xFE);
  static_assert(DecodeE2m1(0x7) == 6.0f && EncodeE2m1(5.0f) == 0x6 && EncodeE2m1(5.5f) == 0x7);
  static_assert(DecodeE5m2(0x7B) == 57344.0f && EncodeE5m2(61440.0f) == 0x7C);
  static_assert(FloatToBf16(1.00390625f) == 0x3F80 && Bf16ToFloat(0x4000) == 2.0f);
  static_assert(FloatToHalf(65520.0f) == 0x7C00 && HalfToFloat(0x0001) == 0x1p-24f);
  static_assert(DecodeE8m0(127) == 1.0f && EncodeE8m0Floor(6.0f, kE2m1EmaxPow2) == 127);
  static_assert(DecodeUe4m3GgufNvfp4(0x7F) == 0.0f);
  constexpr uint32_t kPacked = PackE2m1Pair(EncodeE2m1(1.0f), EncodeE2m1(-6.0f));
  static_assert(kPacked == 0xF2);
  out[0] = kPacked;
}

__global__ void CodecKernel(const float* inputs, int n, uint32_t* out) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const float x = inputs[i];
    const uint32_t code = static_cast<uint32_t>(i) & 0xFFFFu;
    for (int what = 0; what < kNumResults; ++what) {
      out[static_cast<size_t>(what) * n + i] = Compute(what, x, code);
    }
  }
}

// Inputs: every BF16 and FP16 value, points just around every BF16/FP16 midpoint, every fp8
// value, and random binary32 patterns. Index i also serves as the code for the decoders.
std::vector<float> MakeInputs() {
  std::vector<float> in;
  for (uint32_t c = 0; c < 65536; ++c) in.push_back(HalfToFloat(static_cast<uint16_t>(c)));
  for (uint32_t c = 0; c < 65536; ++c) {
    in.push_back(Bf16ToFloat(static_cast<uint16_t>(c)));
    in.push_back(BitsToFloat((c << 16) | 0x8000u));
    in.push_back(BitsToFloat((c << 16) | 0x7FFFu));
    in.push_back(BitsToFloat((c << 16) | 0x8001u));
    const uint32_t h = FloatToBits(HalfToFloat(static_cast<uint16_t>(c)));
    in.push_back(BitsToFloat(h + 0x1000u));
    in.push_back(BitsToFloat(h + 0x0FFFu));
  }
  for (uint32_t c = 0; c < 256; ++c) {
    in.push_back(DecodeE4m3(static_cast<uint8_t>(c)));
    in.push_back(DecodeE5m2(static_cast<uint8_t>(c)));
  }
  std::mt19937 rng(0xC0DA);
  for (int i = 0; i < 200000; ++i) in.push_back(BitsToFloat(static_cast<uint32_t>(rng())));
  return in;
}

bool HaveDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(NumericDeviceTest, DeviceMatchesHostBitForBit) {
  if (!HaveDevice()) GTEST_SKIP() << "no CUDA device";
  const std::vector<float> inputs = MakeInputs();
  const int n = static_cast<int>(inputs.size());
  const size_t out_count = static_cast<size_t>(kNumResults) * n;
  float* d_in = nullptr;
  uint32_t* d_out = nullptr;
  ASSERT_EQ(cudaMalloc(&d_in, n * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&d_out, out_count * sizeof(uint32_t)), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(d_in, inputs.data(), n * sizeof(float), cudaMemcpyHostToDevice),
            cudaSuccess);
  CodecKernel<<<256, 256>>>(d_in, n, d_out);
  ConstexprKernel<<<1, 1>>>(d_out);  // overwrites out[0]; compared separately below
  ASSERT_EQ(cudaGetLastError(), cudaSuccess);
  std::vector<uint32_t> got(out_count);
  ASSERT_EQ(cudaMemcpy(got.data(), d_out, out_count * sizeof(uint32_t), cudaMemcpyDeviceToHost),
            cudaSuccess);
  cudaFree(d_in);
  cudaFree(d_out);
  EXPECT_EQ(got[0], 0xF2u);
  int failures = 0;
  for (int what = 0; what < kNumResults && failures < 20; ++what) {
    for (int i = (what == 0 ? 1 : 0); i < n && failures < 20; ++i) {
      const uint32_t want = Compute(what, inputs[i], static_cast<uint32_t>(i) & 0xFFFFu);
      const uint32_t dev = got[static_cast<size_t>(what) * n + i];
      if (dev != want) {
        ++failures;
        ADD_FAILURE() << "result " << what << " input " << i << " (bits 0x" << std::hex
                      << FloatToBits(inputs[i]) << "): device 0x" << dev << ", host 0x" << want;
      }
    }
  }
}

// ---- Host-only comparisons with the CUDA toolkit's software conversions (no GPU needed). ----

TEST(NumericCudaOracleTest, EncodersMatchCudaConversions) {
  const std::vector<float> inputs = MakeInputs();
  int failures = 0;
  for (const float x : inputs) {
    if (failures >= 20) break;
    const uint32_t bits = FloatToBits(x);
    const bool nan = IsNanBits(bits);
    const auto check = [&](const char* what, uint32_t ours, uint32_t theirs) {
      if (ours != theirs) {
        ++failures;
        ADD_FAILURE() << what << "(bits 0x" << std::hex << bits << "): ours 0x" << ours
                      << ", CUDA 0x" << theirs;
      }
    };
    // E2M1 has no NaN; both map NaN to +6.
    check("e2m1", EncodeE2m1(x), __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest));
    if (nan) continue;  // NaN payload/sign conventions differ by design; tested elsewhere.
    check("e4m3", EncodeE4m3(x), __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
    check("e5m2", EncodeE5m2(x), __nv_cvt_float_to_fp8(x, __NV_NOSAT, __NV_E5M2));
    check("e5m2sat", EncodeE5m2Sat(x), __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2));
    const __nv_bfloat16_raw bf = __float2bfloat16_rn(x);
    check("bf16", FloatToBf16(x), bf.x);
    const __half_raw h = __float2half_rn(x);
    check("half", FloatToHalf(x), h.x);
  }
}

TEST(NumericCudaOracleTest, DecodersMatchCudaConversions) {
  for (uint32_t c = 0; c < 256; ++c) {
    const uint8_t code = static_cast<uint8_t>(c);
    const __half_raw e4 = __nv_cvt_fp8_to_halfraw(code, __NV_E4M3);
    const __half_raw e5 = __nv_cvt_fp8_to_halfraw(code, __NV_E5M2);
    const float ours_e4 = DecodeE4m3(code);
    const float ours_e5 = DecodeE5m2(code);
    if (std::isnan(ours_e4)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(e4.x))) << c;
    } else {
      EXPECT_EQ(FloatToBits(ours_e4), FloatToBits(HalfToFloat(e4.x))) << c;
    }
    if (std::isnan(ours_e5)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(e5.x))) << c;
    } else {
      EXPECT_EQ(FloatToBits(ours_e5), FloatToBits(HalfToFloat(e5.x))) << c;
    }
    if (c < 16) {
      const __half_raw f4 = __nv_cvt_fp4_to_halfraw(code, __NV_E2M1);
      EXPECT_EQ(FloatToBits(DecodeE2m1(code)), FloatToBits(HalfToFloat(f4.x))) << c;
    }
    if (c != 0xFF) {
      const __nv_bfloat16_raw e8 = __nv_cvt_e8m0_to_bf16raw(code);
      EXPECT_EQ(FloatToBits(DecodeE8m0(code)), FloatToBits(Bf16ToFloat(e8.x))) << c;
    }
  }
  for (uint32_t c = 0; c < 65536; ++c) {
    __half_raw hr;
    hr.x = static_cast<unsigned short>(c);
    const float theirs = __half2float(__half(hr));
    const float ours = HalfToFloat(static_cast<uint16_t>(c));
    if (std::isnan(ours)) {
      EXPECT_TRUE(std::isnan(theirs)) << c;
    } else {
      EXPECT_EQ(FloatToBits(ours), FloatToBits(theirs)) << c;
    }
  }
}

}  // namespace
}  // namespace tessera::numeric
