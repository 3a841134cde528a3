// Highway implementation of fast_elementwise.h; compiled once per x86 target by foreach_target.h.
#include "kernels/cpu/fast/fast_elementwise.h"

#include <cmath>
#include <cstring>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kernels/cpu/fast/fast_elementwise.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
// After highway.h, which it needs (re-included per target).
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace tessera::kernels::cpu::fast {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;
// Internal linkage: other fast kernels define same-named helpers in the same target namespaces.
namespace {

using DF = hn::ScalableTag<float>;
using VF = hn::Vec<DF>;
constexpr int64_t kN = static_cast<int64_t>(hn::MaxLanes(DF()));

// silu(g) · up for one vector. Highway's Exp is defined up to +104 only (its 2^q wraps past the
// exponent range above ~178, giving 0 or NaN); exp(88.75) already overflows to inf as std::exp
// does, so clamping there keeps g / (1 + inf) = −0 for very negative g. A NaN g stays NaN through
// the division.
HWY_INLINE VF SiluTimes(DF d, VF g, VF up) {
  const VF e = hn::Exp(d, hn::Min(hn::Neg(g), hn::Set(d, 88.75f)));
  return hn::Mul(hn::Div(g, hn::Add(hn::Set(d, 1.0f), e)), up);
}

}  // namespace

void FastRmsNormImpl(const float* x, const float* weight, int64_t rows, int64_t n, float eps,
                     float* out) {
  const DF df;
  const hn::ScalableTag<double> dd;
  const hn::Rebind<float, decltype(dd)> dh;  // half as many f32 lanes as a double vector
  const int64_t nd = static_cast<int64_t>(hn::Lanes(dd));
  const int64_t full_d = n / nd * nd, full_f = n / kN * kN;
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* o = out + r * n;
    auto acc = hn::Zero(dd);
    for (int64_t i = 0; i < full_d; i += nd) {
      const auto v = hn::PromoteTo(dd, hn::LoadU(dh, xr + i));
      acc = hn::MulAdd(v, v, acc);  // v·v is exact in double: fused or not, one rounding
    }
    double ss = hn::GetLane(hn::SumOfLanes(dd, acc));
    for (int64_t i = full_d; i < n; ++i) ss += static_cast<double>(xr[i]) * xr[i];
    const float mean = static_cast<float>(ss / static_cast<double>(n));
    const float inv = 1.0f / std::sqrt(mean + eps);
    const VF vinv = hn::Set(df, inv);
    for (int64_t i = 0; i < full_f; i += kN) {
      hn::StoreU(hn::Mul(hn::LoadU(df, weight + i), hn::Mul(hn::LoadU(df, xr + i), vinv)), df,
                 o + i);
    }
    for (int64_t i = full_f; i < n; ++i) o[i] = weight[i] * (xr[i] * inv);
  }
}

void FastSwiGluImpl(const float* gate, const float* up, int64_t n, float* out) {
  const DF d;
  const int64_t full = n / kN * kN, rem = n - full;
  for (int64_t i = 0; i < full; i += kN) {
    hn::StoreU(SiluTimes(d, hn::LoadU(d, gate + i), hn::LoadU(d, up + i)), d, out + i);
  }
  if (rem > 0) {
    // The same vector arithmetic for the tail, so an element's bits never depend on whether n
    // (rows × width) puts it in the tail.
    HWY_ALIGN float g[kN] = {}, u[kN] = {}, o[kN];
    std::memcpy(g, gate + full, static_cast<size_t>(rem) * sizeof(float));
    std::memcpy(u, up + full, static_cast<size_t>(rem) * sizeof(float));
    hn::Store(SiluTimes(d, hn::Load(d, g), hn::Load(d, u)), d, o);
    std::memcpy(out + full, o, static_cast<size_t>(rem) * sizeof(float));
  }
}

// (clamp(up) + 1) · g · sigmoid(alpha · g), g = min(gate, limit), for one vector (the scalar
// kernel's order; exp's argument clamped as SiluTimes does).
// A NaN gate or up stays NaN, as torch.clamp and std::min / std::clamp keep it (Highway's Min /
// Max do not say which operand a NaN yields).
HWY_INLINE VF SwiGluClampedVec(DF d, VF gate, VF up, VF alpha, VF limit) {
  const VF g = hn::IfThenElse(hn::IsNaN(gate), gate, hn::Min(gate, limit));
  const VF u = hn::IfThenElse(hn::IsNaN(up), up, hn::Min(hn::Max(up, hn::Neg(limit)), limit));
  const VF e = hn::Exp(d, hn::Min(hn::Neg(hn::Mul(g, alpha)), hn::Set(d, 88.75f)));
  const VF sigmoid = hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), e));
  return hn::Mul(hn::Add(u, hn::Set(d, 1.0f)), hn::Mul(g, sigmoid));
}

void FastSwiGluClampedImpl(const float* gate, const float* up, int64_t n, float alpha, float limit,
                           float* out) {
  const DF d;
  const VF va = hn::Set(d, alpha), vl = hn::Set(d, limit);
  const int64_t full = n / kN * kN, rem = n - full;
  for (int64_t i = 0; i < full; i += kN) {
    hn::StoreU(SwiGluClampedVec(d, hn::LoadU(d, gate + i), hn::LoadU(d, up + i), va, vl), d,
               out + i);
  }
  if (rem > 0) {  // the same vector arithmetic for the tail, as FastSwiGlu
    HWY_ALIGN float g[kN] = {}, u[kN] = {}, o[kN];
    std::memcpy(g, gate + full, static_cast<size_t>(rem) * sizeof(float));
    std::memcpy(u, up + full, static_cast<size_t>(rem) * sizeof(float));
    hn::Store(SwiGluClampedVec(d, hn::Load(d, g), hn::Load(d, u), va, vl), d, o);
    std::memcpy(out + full, o, static_cast<size_t>(rem) * sizeof(float));
  }
}

// gelu_tanh(g) · up for one vector, in PyTorch's order: inner = β·(g + κ·g³),
// 0.5·g·(1 + tanh(inner)). Highway's Tanh saturates to ±1 for large |inner| as std::tanh does.
HWY_INLINE VF GeluTanhTimes(DF d, VF g, VF up) {
  const VF beta = hn::Set(d, static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5));
  const VF cube = hn::Mul(hn::Mul(g, g), g);
  const VF inner = hn::Mul(beta, hn::Add(g, hn::Mul(hn::Set(d, 0.044715f), cube)));
  const VF act =
      hn::Mul(hn::Mul(hn::Set(d, 0.5f), g), hn::Add(hn::Set(d, 1.0f), hn::Tanh(d, inner)));
  return hn::Mul(act, up);
}

void FastGeluTanhGluImpl(const float* gate, const float* up, int64_t n, float* out) {
  const DF d;
  const int64_t full = n / kN * kN, rem = n - full;
  for (int64_t i = 0; i < full; i += kN) {
    hn::StoreU(GeluTanhTimes(d, hn::LoadU(d, gate + i), hn::LoadU(d, up + i)), d, out + i);
  }
  if (rem > 0) {  // the same vector arithmetic for the tail, as FastSwiGlu
    HWY_ALIGN float g[kN] = {}, u[kN] = {}, o[kN];
    std::memcpy(g, gate + full, static_cast<size_t>(rem) * sizeof(float));
    std::memcpy(u, up + full, static_cast<size_t>(rem) * sizeof(float));
    hn::Store(GeluTanhTimes(d, hn::Load(d, g), hn::Load(d, u)), d, o);
    std::memcpy(out + full, o, static_cast<size_t>(rem) * sizeof(float));
  }
}

void FastAddInPlaceImpl(float* y, const float* x, int64_t n) {
  const DF d;
  const int64_t full = n / kN * kN;
  for (int64_t i = 0; i < full; i += kN) {
    hn::StoreU(hn::Add(hn::LoadU(d, y + i), hn::LoadU(d, x + i)), d, y + i);
  }
  for (int64_t i = full; i < n; ++i) y[i] += x[i];
}

// Rotate-half pairs dims i and i + half (two contiguous runs), interleaved pairs 2i and 2i + 1
// (adjacent lanes: the partner comes from a lane swap, and per-lane cos / ±sin tables make one
// expression serve both dims of a pair).
void FastApplyRopeImpl(float* x, int64_t heads, int64_t head_dim, int64_t rope_dim,
                       const float* cos, const float* sin, RopePairing pairing) {
  const DF d;
  const int64_t half = rope_dim / 2;
  const bool interleaved = pairing == RopePairing::kInterleaved;
  // Rotate-half reads the tables as given. Interleaved wants them per lane: lane 2i holds
  // (cos_i, −sin_i), lane 2i + 1 (cos_i, +sin_i); on the stack for every real head size.
  const float* cs = cos;
  const float* sn = sin;
  float cs_stack[1024], sn_stack[1024];
  std::vector<float> cs_heap, sn_heap;
  if (interleaved) {
    float* c = cs_stack;
    float* s = sn_stack;
    if (rope_dim > 1024) {
      cs_heap.resize(rope_dim);
      sn_heap.resize(rope_dim);
      c = cs_heap.data();
      s = sn_heap.data();
    }
    for (int64_t i = 0; i < half; ++i) {
      c[2 * i] = c[2 * i + 1] = cos[i];
      s[2 * i] = -sin[i];
      s[2 * i + 1] = sin[i];
    }
    cs = c;
    sn = s;
  }
  for (int64_t h = 0; h < heads; ++h) {
    float* v = x + h * head_dim;
    if (interleaved) {
#if HWY_TARGET == HWY_SCALAR
      const int64_t full = 0;  // one lane: no partner to swap in; the scalar loop does it all
#else
      const int64_t full = rope_dim / kN * kN;
      for (int64_t i = 0; i < full; i += kN) {
        const VF a = hn::LoadU(d, v + i);
        // a·cos + partner·(∓sin): x0·c − x1·s and x1·c + x0·s, each one product rounding and
        // one addition rounding, as the scalar kernel.
        const VF r = hn::Add(hn::Mul(a, hn::LoadU(d, cs + i)),
                             hn::Mul(hn::Shuffle2301(a), hn::LoadU(d, sn + i)));
        hn::StoreU(r, d, v + i);
      }
#endif
      for (int64_t i = full / 2; i < half; ++i) {
        const float x0 = v[2 * i], x1 = v[2 * i + 1];
        v[2 * i] = x0 * cs[2 * i] - x1 * sn[2 * i + 1];
        v[2 * i + 1] = x1 * cs[2 * i] + x0 * sn[2 * i + 1];
      }
      continue;
    }
    const int64_t full = half / kN * kN;
    for (int64_t i = 0; i < full; i += kN) {
      const VF x0 = hn::LoadU(d, v + i), x1 = hn::LoadU(d, v + half + i);
      const VF c = hn::LoadU(d, cs + i), s = hn::LoadU(d, sn + i);
      hn::StoreU(hn::Sub(hn::Mul(x0, c), hn::Mul(x1, s)), d, v + i);
      hn::StoreU(hn::Add(hn::Mul(x1, c), hn::Mul(x0, s)), d, v + half + i);
    }
    for (int64_t i = full; i < half; ++i) {
      const float x0 = v[i], x1 = v[i + half];
      v[i] = x0 * cs[i] - x1 * sn[i];
      v[i + half] = x1 * cs[i] + x0 * sn[i];
    }
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace tessera::kernels::cpu::fast
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace tessera::kernels::cpu::fast {

HWY_EXPORT(FastRmsNormImpl);
HWY_EXPORT(FastSwiGluImpl);
HWY_EXPORT(FastGeluTanhGluImpl);
HWY_EXPORT(FastSwiGluClampedImpl);
HWY_EXPORT(FastAddInPlaceImpl);
HWY_EXPORT(FastApplyRopeImpl);

void FastRmsNorm(const float* x, const float* weight, int64_t rows, int64_t n, float eps,
                 float* out) {
  HWY_DYNAMIC_DISPATCH(FastRmsNormImpl)(x, weight, rows, n, eps, out);
}

void FastSwiGlu(const float* gate, const float* up, int64_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(FastSwiGluImpl)(gate, up, n, out);
}

void FastSwiGluClamped(const float* gate, const float* up, int64_t n, float alpha, float limit,
                       float* out) {
  HWY_DYNAMIC_DISPATCH(FastSwiGluClampedImpl)(gate, up, n, alpha, limit, out);
}

void FastGeluGlu(const float* gate, const float* up, int64_t n, GeluApprox approx, float* out) {
  if (approx == GeluApprox::kErf) {
    GeluGlu(gate, up, n, approx, out);
    return;
  }
  HWY_DYNAMIC_DISPATCH(FastGeluTanhGluImpl)(gate, up, n, out);
}

void FastAddInPlace(float* y, const float* x, int64_t n) {
  HWY_DYNAMIC_DISPATCH(FastAddInPlaceImpl)(y, x, n);
}

void FastApplyRope(float* x, int64_t heads, int64_t head_dim, int64_t rope_dim, const float* cos,
                   const float* sin, RopePairing pairing) {
  HWY_DYNAMIC_DISPATCH(FastApplyRopeImpl)(x, heads, head_dim, rope_dim, cos, sin, pairing);
}

}  // namespace tessera::kernels::cpu::fast
#endif  // HWY_ONCE
