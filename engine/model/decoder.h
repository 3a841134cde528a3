// Decoder: what the scheduler and the evaluation tools need from a model, whichever backend runs
// it — its config, and one batched step over sequence chunks that appends K/V to the paged cache
// and returns logits on the host. DecoderModel (CPU) and CudaDecoder (GPU) implement it; the
// block allocator in runtime::KvCache is shared, the K/V storage lives where the backend computes.
#ifndef TESSERA_ENGINE_MODEL_DECODER_H_
#define TESSERA_ENGINE_MODEL_DECODER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "engine/model/model_config.h"
#include "engine/runtime/kv_cache.h"

namespace tessera::model {

// New tokens of one sequence for one step. Positions continue from kv->length.
struct SequenceChunk {
  runtime::SequenceKv* kv = nullptr;
  absl::Span<const int32_t> tokens;
  bool all_logits = false;   // logits for every new position (perplexity, tests)
  bool last_logits = true;   // logits for the last new position (generation)
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual const ModelConfig& config() const = 0;
  // "cpu", "cuda:0 (sm_90)".
  virtual std::string device() const = 0;
  // Whether the K/V blocks live in runtime::KvCache's host storage (false: in device memory
  // owned by the decoder, indexed by the same block ids).
  virtual bool uses_host_kv_storage() const = 0;
  // The element format of the K/V blocks the cache must be created with.
  virtual runtime::KvCacheFormat kv_cache_format() const { return runtime::KvCacheFormat::kF32; }
  // Runs one step (see DecoderModel::Forward for the contract).
  virtual absl::Status Forward(absl::Span<const SequenceChunk> chunks, runtime::KvCache& cache,
                               std::vector<float>* logits) = 0;
};

// The step preamble every backend shares: checks each chunk (non-empty, within the context,
// token ids inside the vocabulary) and then reserves the KV blocks of all chunks at once —
// RESOURCE_EXHAUSTED with nothing changed when they do not fit. Returns the number of new tokens.
absl::StatusOr<int64_t> ValidateChunksAndReserve(absl::Span<const SequenceChunk> chunks,
                                                 const ModelConfig& config, runtime::KvCache& cache);

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_DECODER_H_
