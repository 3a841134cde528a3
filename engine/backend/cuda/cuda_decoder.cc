// CudaDecoder::Forward: validation and KV reservation exactly as model::DecoderModel::Forward
// does them (so a bad request changes nothing), then one device pass per max_step_tokens rows,
// each running every layer on the stream, and one synchronization at the end.
#include "engine/backend/cuda/cuda_decoder.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engine/common/logging.h"
#include "engine/common/status_macros.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/decoder_ops.h"
#include "kernels/cuda/elementwise.h"

namespace tessera::backend::cuda {

namespace kc = ::tessera::kernels::cuda;

std::string CudaDecoder::device() const {
  return absl::StrCat("cuda:", info_.ordinal, " (sm_", info_.sm, ")");
}

absl::Status CudaDecoder::Forward(absl::Span<const model::SequenceChunk> chunks,
                                  runtime::KvCache& cache, std::vector<float>* logits) {
  const model::ModelConfig& c = config_;
  if (cache.block_tokens() != kv_block_tokens_ || cache.num_blocks() > kv_blocks_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "KV cache of %d blocks x %d tokens does not fit the %s pool of %d blocks x %d tokens",
        cache.num_blocks(), cache.block_tokens(), device(), kv_blocks_, kv_block_tokens_));
  }
  TESSERA_ASSIGN_OR_RETURN(const int64_t total, model::ValidateChunksAndReserve(chunks, c, cache));

  // Row bookkeeping (chunk, position) and the rows whose logits were asked for, in chunk order.
  std::vector<int> row_chunk(total);
  std::vector<int64_t> row_pos(total);
  std::vector<int64_t> selected;
  {
    int64_t r = 0;
    for (size_t i = 0; i < chunks.size(); ++i) {
      const int64_t n = static_cast<int64_t>(chunks[i].tokens.size());
      for (int64_t j = 0; j < n; ++j, ++r) {
        row_chunk[r] = static_cast<int>(i);
        row_pos[r] = chunks[i].kv->length + j;
        if (chunks[i].all_logits || (chunks[i].last_logits && j == n - 1)) selected.push_back(r);
      }
    }
  }
  logits->assign(selected.size() * c.vocab_size, 0.0f);
  // The current device is per host thread; the scheduler's thread is not the loader's.
  RETURN_IF_CUDA_ERROR(cudaSetDevice(info_.ordinal));
  size_t sel_begin = 0;
  for (int64_t begin = 0; begin < total; begin += limits_.max_step_tokens) {
    const int64_t end = std::min(total, begin + limits_.max_step_tokens);
    size_t sel_end = sel_begin;
    while (sel_end < selected.size() && selected[sel_end] < end) ++sel_end;
    TESSERA_RETURN_IF_ERROR(RunPass(chunks, row_chunk, row_pos, begin, end,
                                    absl::MakeConstSpan(selected).subspan(sel_begin,
                                                                          sel_end - sel_begin),
                                    logits->data() + sel_begin * c.vocab_size));
    sel_begin = sel_end;
  }
  TESSERA_RETURN_IF_ERROR(stream_.Synchronize());
  for (const model::SequenceChunk& ch : chunks) ch.kv->length += static_cast<int64_t>(ch.tokens.size());
  return absl::OkStatus();
}

absl::Status CudaDecoder::RunPass(absl::Span<const model::SequenceChunk> chunks,
                                  absl::Span<const int> row_chunk,
                                  absl::Span<const int64_t> row_pos, int64_t begin, int64_t end,
                                  absl::Span<const int64_t> selected, float* logits_out) {
  const model::ModelConfig& c = config_;
  const int64_t T = limits_.max_step_tokens, rows = end - begin;
  const cudaStream_t stream = stream_.get();
  // Step metadata, laid out as CarveScratch sized it: tokens, positions, token_seq,
  // context_lens, selected rows (each T), then the block tables of this pass's sequences.
  std::vector<int32_t> ints(5 * T, 0);
  std::vector<int> chunk_seq(chunks.size(), -1);
  int32_t num_seqs = 0;
  for (int64_t r = begin; r < end; ++r) {
    const int ci = row_chunk[r];
    if (chunk_seq[ci] < 0) {
      chunk_seq[ci] = num_seqs++;
      const std::vector<int32_t>& blocks = chunks[ci].kv->blocks;
      if (static_cast<int64_t>(blocks.size()) > max_blocks_per_seq_) {
        return absl::InternalError("a sequence holds more blocks than its context needs");
      }
      ints.resize(5 * T + num_seqs * max_blocks_per_seq_, 0);
      std::copy(blocks.begin(), blocks.end(),
                ints.begin() + 5 * T + chunk_seq[ci] * max_blocks_per_seq_);
    }
    const int64_t i = r - begin;
    const model::SequenceChunk& ch = chunks[ci];
    ints[i] = ch.tokens[row_pos[r] - ch.kv->length];
    ints[T + i] = static_cast<int32_t>(row_pos[r]);
    ints[2 * T + i] = chunk_seq[ci];
    ints[3 * T + i] = static_cast<int32_t>(row_pos[r] + 1);
  }
  for (size_t i = 0; i < selected.size(); ++i) {
    ints[4 * T + i] = static_cast<int32_t>(selected[i] - begin);
  }
  RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(s_.ints, ints.data(), ints.size() * sizeof(int32_t),
                                       cudaMemcpyHostToDevice, stream));
  kc::AttentionBatch batch;
  batch.block_tables = s_.ints + 5 * T;
  batch.max_blocks_per_seq = max_blocks_per_seq_;
  batch.token_seq = s_.ints + 2 * T;
  batch.positions = s_.ints + T;
  batch.context_lens = s_.ints + 3 * T;

  const int64_t R = limits_.max_logit_rows, count = static_cast<int64_t>(selected.size());
  TESSERA_RETURN_IF_ERROR(RunPassKernels(rows, count, batch));
  if (count <= R) {
    if (count > 0) {
      RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(logits_out, s_.logits,
                                           count * c.vocab_size * sizeof(float),
                                           cudaMemcpyDeviceToHost, stream));
    }
    return absl::OkStatus();
  }
  // More logit rows than the logit scratch holds: final norm and lm_head R rows at a time.
  const float eps = static_cast<float>(c.rms_norm_eps);
  for (int64_t off = 0; off < count; off += R) {
    const int64_t n = std::min(R, count - off);
    TESSERA_RETURN_IF_ERROR(
        kc::GatherRows(s_.h, s_.ints + 4 * T + off, n, c.hidden_size, s_.sel, stream));
    TESSERA_RETURN_IF_ERROR(
        kc::RmsNorm(s_.sel, final_norm_, n, c.hidden_size, eps, s_.sel, s_.sel_bf16, stream));
    TESSERA_RETURN_IF_ERROR(
        RunLinear(lm_head_, s_.sel, s_.sel_bf16, n, s_.logits, s_.linear, *lt_, stream));
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(logits_out + off * c.vocab_size, s_.logits,
                                         n * c.vocab_size * sizeof(float),
                                         cudaMemcpyDeviceToHost, stream));
  }
  return absl::OkStatus();
}

absl::Status CudaDecoder::EnqueuePass(int64_t rows, int64_t count, const kc::AttentionBatch& batch) {
  const model::ModelConfig& c = config_;
  const cudaStream_t stream = stream_.get();
  TESSERA_RETURN_IF_ERROR(kc::Embedding(
      embedding_, embedding_bf16_ ? kc::TableDtype::kBf16 : kc::TableDtype::kF32, c.vocab_size,
      c.hidden_size, s_.ints, rows, s_.h, stream));
  TESSERA_RETURN_IF_ERROR(RunLayers(rows, batch));
  if (count <= 0 || count > limits_.max_logit_rows) return absl::OkStatus();
  const float eps = static_cast<float>(c.rms_norm_eps);
  TESSERA_RETURN_IF_ERROR(kc::GatherRows(s_.h, s_.ints + 4 * limits_.max_step_tokens, count,
                                         c.hidden_size, s_.sel, stream));
  TESSERA_RETURN_IF_ERROR(
      kc::RmsNorm(s_.sel, final_norm_, count, c.hidden_size, eps, s_.sel, s_.sel_bf16, stream));
  return RunLinear(lm_head_, s_.sel, s_.sel_bf16, count, s_.logits, s_.linear, *lt_, stream);
}

absl::Status CudaDecoder::RunPassKernels(int64_t rows, int64_t count,
                                         const kc::AttentionBatch& batch) {
  const cudaStream_t stream = stream_.get();
  if (rows > limits_.graph_max_rows) return EnqueuePass(rows, count, batch);
  auto it = graphs_.find({rows, count});
  if (it == graphs_.end()) {
    // Shapes without a graph (seen once, or seen after max_graphs were captured) are forgotten
    // when many pile up (prefill lengths vary); captured graphs and failed captures stay.
    if (static_cast<int64_t>(graphs_.size()) >= 4 * limits_.max_graphs) {
      absl::erase_if(graphs_, [](const auto& kv) {
        return !kv.second.graph.valid() && !kv.second.failed;
      });
    }
    it = graphs_.try_emplace({rows, count}).first;
  }
  GraphSlot& slot = it->second;
  if (slot.uses < 2) ++slot.uses;
  // The first pass of a shape runs eagerly: it also makes cuBLASLt's heuristic queries and
  // plan cache entries, which must not happen inside a capture. Graphs hold device memory
  // and a host copy of the whole pass, so only max_graphs of them are kept.
  if (slot.failed || slot.uses == 1) return EnqueuePass(rows, count, batch);
  if (!slot.graph.valid()) {
    if (captured_graphs_ >= limits_.max_graphs) return EnqueuePass(rows, count, batch);
    absl::StatusOr<kc::CapturedGraph> g =
        kc::CapturedGraph::Capture(stream, [&] { return EnqueuePass(rows, count, batch); });
    if (!g.ok()) {
      slot.failed = true;
      TLOG_WARNING("%s: CUDA graph capture of a %d-row pass failed (%s); it runs eagerly",
                   device(), rows, std::string(g.status().message()));
      return EnqueuePass(rows, count, batch);
    }
    slot.graph = std::move(*g);
    ++captured_graphs_;
  }
  return slot.graph.Launch(stream);
}

absl::Status CudaDecoder::RunLayers(int64_t rows, const kc::AttentionBatch& batch) {
  const model::ModelConfig& c = config_;
  const cudaStream_t stream = stream_.get();
  const int64_t H = c.hidden_size, F = c.intermediate_size;
  const float eps = static_cast<float>(c.rms_norm_eps);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
  const kc::RopePairing pairing = c.rope_style == model::RopeStyle::kRotateHalf
                                      ? kc::RopePairing::kRotateHalf
                                      : kc::RopePairing::kInterleaved;
  const int64_t block_floats = kv_block_tokens_ * c.num_kv_heads * c.head_dim;
  kc::CublasLtGemm& lt = *lt_;
  for (size_t li = 0; li < layers_.size(); ++li) {
    const Layer& L = layers_[li];
    // The previous layer's down projection (in s_.tmp) is added to the residual stream by this
    // layer's first norm, the attention output by the second: one launch for add and norm.
    if (li == 0) {
      TESSERA_RETURN_IF_ERROR(
          kc::RmsNorm(s_.h, L.attn_norm, rows, H, eps, s_.xn, s_.act_bf16, stream));
    } else {
      TESSERA_RETURN_IF_ERROR(
          kc::AddRmsNorm(s_.h, s_.tmp, L.attn_norm, rows, H, eps, s_.xn, s_.act_bf16, stream));
    }
    TESSERA_RETURN_IF_ERROR(RunLinears({&L.q, &L.k, &L.v}, s_.xn, s_.act_bf16, rows,
                                       {s_.q, s_.k, s_.v}, s_.linear, lt, stream));
    if (c.qk_norm) {
      TESSERA_RETURN_IF_ERROR(kc::RmsNorm(s_.q, L.q_norm, rows * c.num_heads, c.head_dim, eps,
                                          s_.q, nullptr, stream));
      TESSERA_RETURN_IF_ERROR(kc::RmsNorm(s_.k, L.k_norm, rows * c.num_kv_heads, c.head_dim, eps,
                                          s_.k, nullptr, stream));
    }
    TESSERA_RETURN_IF_ERROR(kc::RopeQk(s_.q, c.num_heads, s_.k, c.num_kv_heads, rows, c.head_dim,
                                       c.rope_dim, batch.positions, inv_freq_, pairing, stream));
    kc::DevicePagedKv kv;
    kv.base = kv_pool_;
    kv.block_stride = c.num_layers * 2 * block_floats;
    kv.layer_offset = static_cast<int64_t>(li) * 2 * block_floats;
    kv.v_offset = block_floats;
    kv.block_tokens = kv_block_tokens_;
    kv.kv_heads = c.num_kv_heads;
    kv.head_dim = c.head_dim;
    TESSERA_RETURN_IF_ERROR(kc::AppendKv(s_.k, s_.v, rows, kv, batch, stream));
    // The bf16 copy only for an output projection that reads one (FP8 and NVFP4 W4A4 quantize
    // the f32 output themselves).
    const bool o_reads_bf16 =
        L.o.kind == DeviceLinearKind::kBf16 || L.o.kind == DeviceLinearKind::kW4A16;
    uint16_t* attn_bf16 = o_reads_bf16 ? s_.act_bf16 : nullptr;
    TESSERA_RETURN_IF_ERROR(kc::PagedAttention(s_.q, rows, c.num_heads, kv, batch, scale, s_.attn,
                                               attn_bf16, stream));
    TESSERA_RETURN_IF_ERROR(
        RunLinear(L.o, s_.attn, attn_bf16, rows, s_.tmp, s_.linear, lt, stream));
    TESSERA_RETURN_IF_ERROR(
        kc::AddRmsNorm(s_.h, s_.tmp, L.ffn_norm, rows, H, eps, s_.xn, s_.act_bf16, stream));
    TESSERA_RETURN_IF_ERROR(RunLinears({&L.gate, &L.up}, s_.xn, s_.act_bf16, rows,
                                       {s_.gate, s_.up}, s_.linear, lt, stream));
    TESSERA_RETURN_IF_ERROR(kc::SwiGlu(s_.gate, s_.up, rows * F, s_.gate, s_.act_bf16, stream));
    TESSERA_RETURN_IF_ERROR(
        RunLinear(L.down, s_.gate, s_.act_bf16, rows, s_.tmp, s_.linear, lt, stream));
  }
  if (!layers_.empty()) {
    TESSERA_RETURN_IF_ERROR(kc::AddInPlace(s_.h, s_.tmp, rows * H, stream));
  }
  return absl::OkStatus();
}

}  // namespace tessera::backend::cuda
