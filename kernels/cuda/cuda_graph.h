// A captured CUDA graph: the kernels one callable enqueues on a stream, recorded once and
// replayed with a single launch. A decode step of a 1B model is ~400 small launches (norms,
// GEMMs, attention per layer); launched one by one from the host they cost more than the weight
// stream itself, replayed as a graph they cost one launch. Capture succeeds only for work whose
// pointers and shapes are the same on every replay (the caller keys graphs by shape and keeps
// its per-step inputs in fixed device buffers); anything else makes Capture fail with the
// reason, and the caller runs the work eagerly instead.
#ifndef TESSERA_KERNELS_CUDA_CUDA_GRAPH_H_
#define TESSERA_KERNELS_CUDA_CUDA_GRAPH_H_

#include <cuda_runtime_api.h>

#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tessera::kernels::cuda {

class CapturedGraph {
 public:
  CapturedGraph() = default;
  // Records what `enqueue` puts on `stream` (nothing runs during capture). The stream must be a
  // non-default stream that is idle of other captures. On any failure the stream is left out of
  // capture mode and the status says why (enqueue's own error first).
  static absl::StatusOr<CapturedGraph> Capture(cudaStream_t stream,
                                               const std::function<absl::Status()>& enqueue);

  CapturedGraph(CapturedGraph&& other) noexcept
      : graph_(std::exchange(other.graph_, nullptr)), exec_(std::exchange(other.exec_, nullptr)) {}
  CapturedGraph& operator=(CapturedGraph&& other) noexcept;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph();

  bool valid() const { return exec_ != nullptr; }
  // Enqueues one replay on `stream`.
  absl::Status Launch(cudaStream_t stream) const;

 private:
  void Reset();
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace tessera::kernels::cuda

#endif  // TESSERA_KERNELS_CUDA_CUDA_GRAPH_H_
