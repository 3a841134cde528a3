// Runs the column split of CPU linear layers (Linear::ForwardColumns) on the thread pool: one
// layer's columns (RunColumnsOnPool, what Forward does), or the columns of several layers that
// read the same input in one ParallelFor (ForwardSharedInput: the q, k and v projections; gate
// and up), or of several calls with inputs of their own (ForwardMany: a MoE layer's experts). A decode step is ~7 matrix-vector products per layer a few microseconds each apart,
// and every ParallelFor ends with one thread waiting for the other's last chunk; fusing the
// siblings halves those waits and gives the small k and v projections (256 columns on the
// TinyLlama shape) a share of a larger pass instead of a pass of their own. Each column is still
// computed by the same kernel call on the same activations, so outputs are bit-identical to
// separate Forward calls.
#ifndef TESSERA_ENGINE_BACKEND_CPU_COLUMN_SPLIT_H_
#define TESSERA_ENGINE_BACKEND_CPU_COLUMN_SPLIT_H_

#include <cstdint>

#include "absl/types/span.h"
#include "engine/backend/linear.h"
#include "kernels/cpu/thread_pool.h"

namespace tessera::backend::cpu {

// Columns [0, n) of a call with `rows` rows through run, split over `pool` in units of
// kernels::cpu::fast::ColumnSplitUnit(rows) (run(0, n) without a pool).
void RunColumnsOnPool(kernels::cpu::ThreadPool* pool, int64_t n, int64_t rows,
                      const Linear::ColumnRun& run);

// ys[i] = layers[i]->Forward(x) for every i, the layers' columns in one ParallelFor on `pool`
// (the pool the layers were built with: their per-call preparation uses theirs). Layers must
// have the same in_features and ys one output per layer (checked in debug builds); rows and x
// as in Linear::Forward.
void ForwardSharedInput(absl::Span<const Linear* const> layers, const float* x, int64_t rows,
                        absl::Span<float* const> ys, kernels::cpu::ThreadPool* pool);

// One layer call of ForwardMany: y = layer->Forward(x) over `rows` rows.
struct LinearCall {
  const Linear* layer = nullptr;
  const float* x = nullptr;
  int64_t rows = 0;
  float* y = nullptr;
};

// Every call's columns in one ParallelFor, each call with its own input and rows (a MoE layer's
// experts, each on the tokens routed to it): the same outputs as separate Forward calls.
void ForwardMany(absl::Span<const LinearCall> calls, kernels::cpu::ThreadPool* pool);

}  // namespace tessera::backend::cpu

#endif  // TESSERA_ENGINE_BACKEND_CPU_COLUMN_SPLIT_H_
