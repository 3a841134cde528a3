// Linear: a prepared linear layer y = x · Wᵀ (+ b) as the decoder sees it, whatever the weight
// format. A backend builds one per layer from the checkpoint once (packing or validating it) and
// the decoder only calls Forward on batches of activation rows. Activations are f32 rows.
#ifndef TESSERA_ENGINE_BACKEND_LINEAR_H_
#define TESSERA_ENGINE_BACKEND_LINEAR_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"

namespace tessera::backend {

class Linear {
 public:
  virtual ~Linear() = default;
  virtual int64_t out_features() const = 0;  // N
  virtual int64_t in_features() const = 0;   // K
  // x: [rows, K] -> y: [rows, N]. A row's result does not depend on the other rows.
  virtual void Forward(const float* x, int64_t rows, float* y) const = 0;

  // Forward with the column split left to the caller, so that layers sharing an input (q, k and
  // v; gate and up) can run their columns in one parallel pass (ForwardSharedInput). The layer
  // does its per-call work that does not depend on the columns (activation quantization, the
  // act-order gather), then calls `split` once with N and `run`, where run(b, e) computes output
  // columns [b, e) of every row; split must have run over disjoint ranges covering [0, N)
  // before it returns, and `run` is valid only until then. A layer may instead compute all of y
  // itself and never call split (this default, and paths without a column split).
  using ColumnRun = std::function<void(int64_t, int64_t)>;
  using ColumnSplit = absl::FunctionRef<void(int64_t n, const ColumnRun& run)>;
  virtual void ForwardColumns(const float* x, int64_t rows, float* y, ColumnSplit split) const {
    (void)split;
    Forward(x, rows, y);
  }
  // The weight format and kernel, e.g. "Q4_0 / reference".
  virtual std::string Describe() const = 0;
  // Bytes of weight data read per Forward call, counted as the checkpoint stores them: a layer
  // whose kernel streams a larger repacked form (GGUF Q5_0 / Q5_1 as byte codes, Q3_K and Q2_K in
  // the Q6_K form, 1.35x and 2.5x) counts the file's bytes, so that decode GB/s compares formats by
  // what the model weighs; weight_spans below are the bytes actually read.
  virtual int64_t weight_bytes() const = 0;
  // The host memory those bytes live in, as the kernels read it (after any repacking), so that a
  // benchmark can time a plain read of exactly these pages as the decode roofline. Empty when
  // the weights are not in host memory (device backends).
  struct ByteSpan {
    const uint8_t* data = nullptr;
    int64_t size = 0;
  };
  virtual std::vector<ByteSpan> weight_spans() const { return {}; }
};

}  // namespace tessera::backend

#endif  // TESSERA_ENGINE_BACKEND_LINEAR_H_
