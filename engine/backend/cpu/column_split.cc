#include "engine/backend/cpu/column_split.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <vector>

#include "kernels/cpu/fast/fast_matmul.h"

namespace tessera::backend::cpu {
namespace {

// Column units: kernels::cpu::fast::ColumnSplitUnit, 16 columns, or 64 for calls of more than 6
// rows (FP8 W8A16 panels at M = 128, medians of 4 interleaved runs, 16 -> 64: 1.1b_down
// 205 -> 212, gate_up 205 -> 210, 4096x4096 211 -> 215 GFLOP/s).

struct Part {
  int64_t n = 0;
  const Linear::ColumnRun* run = nullptr;
};

// One ParallelFor over every part's columns: part i owns units [first[i], first[i + 1]).
void RunParts(const std::vector<Part>& parts, int64_t rows, kernels::cpu::ThreadPool* pool) {
  const int64_t unit = kernels::cpu::fast::ColumnSplitUnit(rows);
  std::vector<int64_t> first(parts.size() + 1, 0);
  for (size_t i = 0; i < parts.size(); ++i) {
    first[i + 1] = first[i] + (parts[i].n + unit - 1) / unit;
  }
  auto run = [&](int64_t ub, int64_t ue) {
    for (size_t i = 0; i < parts.size(); ++i) {
      const int64_t b = std::max(ub, first[i]), e = std::min(ue, first[i + 1]);
      if (b >= e) continue;
      (*parts[i].run)((b - first[i]) * unit, std::min(parts[i].n, (e - first[i]) * unit));
    }
  };
  kernels::cpu::ParallelForOrInline(pool, first.back(), 1, run);
}

}  // namespace

void RunColumnsOnPool(kernels::cpu::ThreadPool* pool, int64_t n, int64_t rows,
                      const Linear::ColumnRun& run) {
  RunParts({Part{n, &run}}, rows, pool);
}

void ForwardMany(absl::Span<const LinearCall> calls, kernels::cpu::ThreadPool* pool) {
  // Each call nests a stack frame (its prepared state must live until the pass runs): passes of
  // at most 32 calls keep the depth bounded whatever the expert count (Qwen3-Next has 512).
  constexpr size_t kMaxCallsPerPass = 32;
  if (calls.size() > kMaxCallsPerPass) {
    for (size_t b = 0; b < calls.size(); b += kMaxCallsPerPass) {
      ForwardMany(calls.subspan(b, std::min(kMaxCallsPerPass, calls.size() - b)), pool);
    }
    return;
  }
  int64_t max_rows = 0;
  for (const LinearCall& c : calls) max_rows = std::max(max_rows, c.rows);
  std::vector<Part> parts;
  parts.reserve(calls.size());
  // Call i prepares inside call i - 1's split callback, so every prepared state (the layers'
  // scratch frames and run closures) is alive when the innermost level runs all the parts.
  std::function<void(size_t)> nest = [&](size_t i) {
    if (i == calls.size()) {
      RunParts(parts, max_rows, pool);
      return;
    }
    bool split_called = false;
    const LinearCall& c = calls[i];
    c.layer->ForwardColumns(c.x, c.rows, c.y, [&](int64_t n, const Linear::ColumnRun& run) {
      split_called = true;
      parts.push_back({n, &run});
      nest(i + 1);
    });
    if (!split_called) nest(i + 1);  // layer i computed its output itself
  };
  nest(0);
}

void ForwardSharedInput(absl::Span<const Linear* const> layers, const float* x, int64_t rows,
                        absl::Span<float* const> ys, kernels::cpu::ThreadPool* pool) {
  assert(ys.size() == layers.size());
  assert(std::all_of(layers.begin(), layers.end(), [&](const Linear* l) {
    return l->in_features() == layers[0]->in_features();
  }));
  std::vector<LinearCall> calls;
  calls.reserve(layers.size());
  for (size_t i = 0; i < layers.size(); ++i) calls.push_back({layers[i], x, rows, ys[i]});
  ForwardMany(calls, pool);
}

}  // namespace tessera::backend::cpu
