// The int8-activation tile kernels (AVX-512 VNNI, AVX2) at the edges of their integer ranges: the
// AVX2 kernel sums up to 8 vpmaddubsw products in int16 lanes (int4_x16_avx2.cc), which is exact
// only while 2·127·u_max times that count stays below 2^15. Random weights never come near that
// bound, so here every code is the format's largest (0xFF bytes: nibble 15, byte 255, Q5_K 31,
// Q6_K 63, Q3_K 7, Q2_K 3, IQ4 113, and nibble 0: IQ4's −127; E2M1 nibble 7: table value 24) and
// every activation code is ±127, the largest sums the quantizer can produce. Byte codes (Q8_0, U8)
// also run with every code at its minimum (byte 0: q = −128), the largest magnitude of the AVX2
// kernel's signed-byte products (|q| = 128). Each kernel must give the portable loop's bits.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hwy/aligned_allocator.h"
#include "kernels/cpu/fast/int4_x16.h"
#include "kernels/cpu/fast/int4_x16_layout.h"
#include "tests/kernels/cpu/int4_x16_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

struct Case {
  FastFormat format;
  const char* name;
  int64_t group_size;  // kU4x16 / kU8x16
  int fill = -1;       // the code bytes, or -1: the format's largest codes
};

// Tiles of `format` with every code at its maximum and every scale byte 0x3C (finite, nonzero
// in each scale encoding: f16 ~1.06, f32 ~0.0115, UE4M3 1.5, E8M0 2^-67, int8 60, 6-bit 60).
hwy::AlignedFreeUniquePtr<uint8_t[]> MaxCodeTiles(const Case& c, int64_t n, int64_t k,
                                                  FastWeights* fw) {
  const int64_t bytes = internal::X16Bytes(c.format, n, k, c.group_size);
  auto buf = hwy::AllocateAligned<uint8_t>(bytes);
  *fw = internal::X16Weights(c.format, buf.get(), n, k, c.group_size);
  const bool e2m1 = c.format == FastFormat::kMxfp4x16 || c.format == FastFormat::kNvfp4x16;
  std::memset(buf.get(), 0x3C, bytes);
  const internal::X16Layout layout = internal::X16Layout::Of(c.format, c.group_size);
  for (int64_t g = 0; g < (n + 15) / 16; ++g) {
    for (int64_t b = 0; b < k / 32; ++b) {
      std::memset(buf.get() + g * fw->row_stride + layout.Codes(b),
                  c.fill >= 0 ? c.fill : e2m1 ? 0x77 : 0xFF, layout.code_bytes);
    }
  }
  return buf;
}

TEST(Int4x16KernelsTest, LargestCodesAndActivationsMatchPortable) {
  if (testing::FastKernels().empty()) GTEST_SKIP() << "only the portable loop runs here";
  const int64_t n = 19, k = 512, rows = 9;
  for (const Case& c : {Case{FastFormat::kQ4_0x16, "Q4_0", 0},
                        Case{FastFormat::kQ8_0x16, "Q8_0", 0},
                        Case{FastFormat::kQ8_0x16, "Q8_0 smallest", 0, 0x00},
                        Case{FastFormat::kU4x16, "U4 g128", 128},
                        Case{FastFormat::kU8x16, "U8 g128", 128},
                        Case{FastFormat::kU8x16, "U8 g128 smallest", 128, 0x00},
                        Case{FastFormat::kQ4_Kx16, "Q4_K", 0},
                        Case{FastFormat::kQ5_Kx16, "Q5_K", 0},
                        Case{FastFormat::kQ6_Kx16, "Q6_K", 0},
                        Case{FastFormat::kQ3_Kx16, "Q3_K (codes 7)", 0},
                        Case{FastFormat::kQ2_Kx16, "Q2_K (codes 3)", 0},
                        Case{FastFormat::kIq4Nlx16, "IQ4_NL (kv 113)", 0},
                        Case{FastFormat::kIq4Nlx16, "IQ4_NL (kv -127)", 0, 0x00},
                        Case{FastFormat::kIq4Xsx16, "IQ4_XS (kv 113)", 0},
                        Case{FastFormat::kIq4Xsx16, "IQ4_XS (kv -127)", 0, 0x00},
                        Case{FastFormat::kMxfp4x16, "MXFP4", 0},
                        Case{FastFormat::kNvfp4x16, "NVFP4", 0}}) {
    FastWeights fw;
    const auto tiles = MaxCodeTiles(c, n, k, &fw);
    // Rows: all +1, all −1 (codes ±127 under one scale), and blocks of alternating sign.
    std::vector<float> x(rows * k);
    for (int64_t m = 0; m < rows; ++m) {
      for (int64_t i = 0; i < k; ++i) {
        const bool negative = m % 3 == 1 || (m % 3 == 2 && (i / 32) % 2 == 1);
        x[m * k + i] = negative ? -1.0f : 1.0f;
      }
    }
    const testing::Acts a = testing::Quantize(x.data(), rows, k, testing::NeedsHalves(fw));
    ASSERT_EQ(a.q[0], 127);
    ASSERT_EQ(a.q[k], -127);
    Int4x16Acts view = a.view;
    view.d2 = a.d.data();  // NVFP4 W4A16: both halves of a block share its activation scale
    std::vector<float> bias(n, 0.5f);
    testing::ExpectKernelsMatchPortable(fw, view, bias.data(), c.name);
    ASSERT_FALSE(HasFatalFailure()) << c.name;
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
