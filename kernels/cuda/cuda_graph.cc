#include "kernels/cuda/cuda_graph.h"

#include "absl/strings/str_cat.h"
#include "kernels/cuda/cuda_status.h"

namespace tessera::kernels::cuda {

absl::StatusOr<CapturedGraph> CapturedGraph::Capture(
    cudaStream_t stream, const std::function<absl::Status()>& enqueue) {
  if (stream == nullptr) return absl::InvalidArgumentError("graph capture needs a stream");
  RETURN_IF_CUDA_ERROR(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  const absl::Status body = enqueue();
  CapturedGraph g;
  // Always end the capture, so the stream is usable whatever happened inside.
  const cudaError_t end = cudaStreamEndCapture(stream, &g.graph_);
  if (!body.ok()) {
    cudaGetLastError();  // a launch refused during capture leaves a non-sticky error behind
    return body;
  }
  if (end != cudaSuccess) {
    cudaGetLastError();
    return absl::FailedPreconditionError(
        absl::StrCat("graph capture failed: ", cudaGetErrorString(end)));
  }
  RETURN_IF_CUDA_ERROR(cudaGraphInstantiate(&g.exec_, g.graph_, 0));
  return g;
}

CapturedGraph& CapturedGraph::operator=(CapturedGraph&& other) noexcept {
  if (this != &other) {
    Reset();
    graph_ = std::exchange(other.graph_, nullptr);
    exec_ = std::exchange(other.exec_, nullptr);
  }
  return *this;
}

CapturedGraph::~CapturedGraph() { Reset(); }

void CapturedGraph::Reset() {
  if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
  if (graph_ != nullptr) cudaGraphDestroy(graph_);
  exec_ = nullptr;
  graph_ = nullptr;
}

absl::Status CapturedGraph::Launch(cudaStream_t stream) const {
  if (exec_ == nullptr) return absl::FailedPreconditionError("launch of an empty graph");
  RETURN_IF_CUDA_ERROR(cudaGraphLaunch(exec_, stream));
  return absl::OkStatus();
}

}  // namespace tessera::kernels::cuda
