// The f32 form's AVX2 kernel (kernels/cpu/fast/quant_panel_avx2.cc) against the AVX-512 f32
// form, bit for bit, on every format and header the f32 form holds (INT4 and 8-bit byte codes
// with f32 or f16 headers, with zero points or symmetric, INT3 / INT2 centres; MXFP4; NVFP4;
// codebook layers with f32 or f16 scales),
// per-group and per-channel, with K past the decoded path's block: every row count from 1 to 8 and
// 13 (each register tile shape and the decoded blocks), columns in odd ranges, in whole panels and
// over two whole column tiles, the group sums computed by the kernel or given by the caller. Where
// the CPU has no AVX-512 the comparison is skipped; the whole quant panel suite then runs this
// kernel against the exact sums (TESSERA_CPU_ISA=avx2 in tools/test.sh's second pass).
#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/fast/avx2_panels.h"
#include "kernels/cpu/fast/quant_panel_matmul.h"
#include "kernels/numeric/half.h"
#include "tests/kernels/cpu/quant_panel_test_util.h"

namespace tessera::kernels::cpu::fast {
namespace {

using panel_test::Activations;
using panel_test::Layer;
using panel_test::Make;
using panel_test::Repack;

// Which integer header the layer's panels get.
enum class Header { kF32, kF16, kSymmetric, kSymmetricF16 };

// Integer layers with the scales and zero points `h` asks for (f16 values, integer zero points,
// or every zero point at the centre), repacked again.
void Shape(Layer& l, Header h) {
  if (l.format == QuantDecode::kCodebook4 && h == Header::kF16) {  // scales alone, as f16
    for (float& s : l.scales) s = numeric::HalfToFloat(numeric::FloatToHalf(s));
    Repack(l);
    return;
  }
  if (!l.Integer() || h == Header::kF32) return;
  const float centre = l.format == QuantDecode::kInt4 ? 8.0f : 128.0f;
  for (size_t i = 0; i < l.scales.size(); ++i) {
    if (h != Header::kSymmetric) {
      l.scales[i] = numeric::HalfToFloat(numeric::FloatToHalf(l.scales[i]));
    }
    l.zeros[i] = h == Header::kF16 ? std::round(l.zeros[i]) : centre;
  }
  Repack(l);
}

// Byte codes of `bits` bits (INT3 / INT2: a centre of 4 / 2), zero points in their range.
void Narrow(Layer& l, int bits) {
  if (l.format != QuantDecode::kInt8 || bits == 8) return;
  const int levels = 1 << bits;
  for (auto& c : l.codes) c = static_cast<uint8_t>(c % levels);
  l.codes[0] = static_cast<uint8_t>(levels - 1);
  l.q = l.codes;
  for (auto& z : l.zeros) z = std::fmod(z, static_cast<float>(levels - 1));
  Repack(l);
}

// y for rows [0, rows), columns [b, e): the AVX-512 f32 form, or the AVX2 kernel computing the
// group sums itself (`given` false) or taking QuantPanelGroupSums's, as the engine passes them.
std::vector<float> Multiply(const Layer& l, const float* x, int64_t rows, int64_t b, int64_t e,
                            bool avx2, bool given = false) {
  std::vector<float> y(rows * l.n, -7.0f);
  std::vector<float> sums(QuantPanelGroupSumsCount(l.w, rows));
  if (given) QuantPanelGroupSums(l.w, x, 0, rows, sums.data());
  if (avx2) {
    internal::QuantPanelMatmulAvx2(l.w, x, rows, l.bias.data(), y.data(), b, e,
                                   given && !sums.empty() ? sums.data() : nullptr);
  } else {
    QuantPanelMatmul(l.w, x, rows, l.bias.data(), y.data(), b, e);
  }
  return y;
}

TEST(QuantPanelAvx2Test, BitIdenticalToTheAvx512F32Form) {
  if (!internal::Avx2PanelsAvailable() || internal::Avx2PanelsInUse() || !QuantPanelAvailable()) {
    GTEST_SKIP() << "no AVX-512 on this CPU (or TESSERA_CPU_ISA=avx2) to compare with";
  }
  struct Case {
    QuantDecode format;
    int64_t k, group;  // group: the integer formats' (k: per channel)
    Header header;
    int bits = 8;  // byte codes
  };
  const std::vector<Case> cases = {
      {QuantDecode::kInt4, 1088, 32, Header::kF32},
      {QuantDecode::kInt4, 1088, 32, Header::kF16},
      {QuantDecode::kInt4, 1024, 128, Header::kSymmetric},
      {QuantDecode::kInt4, 384, 128, Header::kSymmetricF16},
      {QuantDecode::kInt4, 256, 256, Header::kF32},  // per channel
      {QuantDecode::kInt8, 1088, 32, Header::kF32},
      {QuantDecode::kInt8, 640, 64, Header::kF16},
      {QuantDecode::kInt8, 1024, 128, Header::kSymmetric},
      {QuantDecode::kInt8, 200, 200, Header::kF32},  // per channel, not a multiple of 16
      {QuantDecode::kInt8, 512, 64, Header::kSymmetricF16},
      {QuantDecode::kInt8, 768, 128, Header::kF32, 3},  // INT3: centre 4
      {QuantDecode::kInt8, 256, 32, Header::kF16, 2},   // INT2: centre 2
      {QuantDecode::kMxfp4, 1088, 0, Header::kF32},
      {QuantDecode::kNvfp4, 1040, 0, Header::kF32},
      {QuantDecode::kCodebook4, 1088, 64, Header::kF32},  // bitsandbytes NF4 / FP4
      {QuantDecode::kCodebook4, 1024, 128, Header::kF16},
      {QuantDecode::kCodebook4, 256, 256, Header::kF32},  // one block per row
  };
  for (const Case& c : cases) {
    // 133 columns: two whole column tiles of four panels (eight halves) and one panel more.
    Layer l = Make(c.format, 133, c.k, c.group, static_cast<uint32_t>(c.k + c.group));
    Narrow(l, c.bits);
    Shape(l, c.header);
    SCOPED_TRACE(panel_test::Name(c.format) + " k " + std::to_string(c.k) + " group " +
                 std::to_string(c.group) + " header " + std::to_string(static_cast<int>(c.header)) +
                 " bits " + std::to_string(c.bits));
    ASSERT_TRUE(QuantPanelSupported(l.w));
    ASSERT_FALSE(l.w.pair_panels);
    if (c.format == QuantDecode::kInt8) {
      ASSERT_EQ(l.w.panel_centre, 1 << (c.bits - 1));
    }
    if (c.header == Header::kF16 || c.header == Header::kSymmetricF16) {
      ASSERT_TRUE(l.w.half_panel_headers);
    }
    if (c.header == Header::kSymmetric || c.header == Header::kSymmetricF16) {
      ASSERT_TRUE(l.w.symmetric_panels);
    }
    const std::vector<float> x = Activations(13, c.k, static_cast<uint32_t>(c.k));
    for (const int64_t rows : {1, 2, 3, 4, 5, 6, 7, 8, 13}) {
      for (const auto& [b, e] :
           std::vector<std::pair<int64_t, int64_t>>{{0, 133}, {5, 30}, {16, 37}, {70, 133}}) {
        const std::vector<float> want = Multiply(l, x.data(), rows, b, e, false);
        for (const bool given : {false, true}) {
          const std::vector<float> got = Multiply(l, x.data(), rows, b, e, true, given);
          ASSERT_EQ(std::memcmp(want.data(), got.data(), want.size() * 4), 0)
              << rows << " rows, columns [" << b << ", " << e << ")"
              << (given ? ", sums given" : "");
        }
      }
    }
  }
}

// The shared group sums: every row's sums in one call equal each row's alone, and follow the
// exact sum to the rounding of a 16-lane tree.
TEST(QuantPanelAvx2Test, GroupSumsRowsAreFixedPerRow) {
  if (!internal::Avx2PanelsAvailable()) GTEST_SKIP() << "no AVX2 on this CPU";
  const int64_t rows = 5, k = 384;
  const std::vector<float> x = Activations(rows, k, 11);
  for (const int64_t group : {16, 128, 384, 12}) {
    const int64_t groups = k / group;
    std::vector<float> all(rows * groups), one(groups);
    internal::GroupSumsRows(x.data(), rows, k, group, all.data());
    for (int64_t m = 0; m < rows; ++m) {
      internal::GroupSumsRows(x.data() + m * k, 1, k, group, one.data());
      ASSERT_EQ(std::memcmp(one.data(), all.data() + m * groups, groups * 4), 0) << group;
      for (int64_t g = 0; g < groups; ++g) {
        double exact = 0.0, mag = 0.0;
        for (int64_t i = 0; i < group; ++i) {
          exact += x[m * k + g * group + i];
          mag += std::fabs(x[m * k + g * group + i]);
        }
        EXPECT_NEAR(one[g], exact, static_cast<double>(group) * std::ldexp(mag, -24)) << group;
      }
    }
  }
}

}  // namespace
}  // namespace tessera::kernels::cpu::fast
