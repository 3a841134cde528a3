// PackedWeights::SortActOrder: the load-time half of running act-order checkpoints on the
// group-wise kernels (the other half is the activation gather in the CPU QuantizedLinear).
#include <algorithm>
#include <numeric>

#include "engine/quant/packed_weights.h"

namespace tessera::quant {

void PackedWeights::SortActOrder() {
  namespace kc = kernels::cpu;
  if (g_idx.empty() || !k_perm.empty() || q == nullptr ||
      int_packing != kc::IntWeightPacking::kU8 || static_cast<int64_t>(g_idx.size()) != spec.k) {
    return;  // the loaders check g_idx's length; the last test only guards hand-built weights
  }
  const int64_t n = spec.n, k = spec.k;
  const int64_t group = spec.group_size > 0 ? spec.group_size : k;  // per-channel: one group
  if (std::is_sorted(g_idx.begin(), g_idx.end())) {
    // Already in group order (compressed-tensors' unset -1 entries, per-channel all-zero g_idx):
    // no permutation to pay for per call; contiguous groups drop the g_idx as below.
    bool uniform = k % group == 0;
    for (int64_t j = 0; uniform && j < k; ++j) uniform = g_idx[j] == j / group;
    if (uniform) g_idx.clear();
    return;
  }
  std::vector<int32_t> perm(static_cast<size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(),
                   [&](int32_t a, int32_t b) { return g_idx[a] < g_idx[b]; });
  std::vector<uint8_t> sorted(static_cast<size_t>(n * k));
  for (int64_t r = 0; r < n; ++r) {
    const uint8_t* src = q + r * k;
    uint8_t* dst = sorted.data() + r * k;
    for (int64_t j = 0; j < k; ++j) dst[j] = src[perm[j]];
  }
  std::vector<int32_t> sorted_g(static_cast<size_t>(k));
  for (int64_t j = 0; j < k; ++j) sorted_g[j] = g_idx[perm[j]];
  bytes = std::move(sorted);
  q = bytes.data();
  k_perm = std::move(perm);
  // Contiguous groups of group_size: position j is in group j / group_size, which AsInt() states
  // without a g_idx.
  bool uniform = k % group == 0;
  for (int64_t j = 0; uniform && j < k; ++j) uniform = sorted_g[j] == j / group;
  if (uniform) {
    g_idx.clear();
  } else {
    g_idx = std::move(sorted_g);
  }
}

}  // namespace tessera::quant
