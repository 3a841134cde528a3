// The Scheduler: continuous (iteration-level) batching of generation requests over one model and
// one paged KV cache. Requests are submitted from any thread and stream TokenEvents back through
// a RequestHandle; a single engine thread forms a batch every step: running sequences decode one
// token each while waiting prompts are prefilled in chunks (so a long prompt never stalls the
// decodes), admitted in arrival order when their whole KV budget (prompt + max new tokens) fits.
// Cancellation and deadlines free a sequence's KV blocks at the next step.
#ifndef TESSERA_ENGINE_RUNTIME_SCHEDULER_H_
#define TESSERA_ENGINE_RUNTIME_SCHEDULER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/model/decoder.h"
#include "engine/runtime/kv_cache.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/sampling_params.h"
#include "engine/runtime/stop_checker.h"
#include "engine/tokenizer/tokenizer.h"

namespace tessera::runtime {

struct SchedulerOptions {
  int32_t max_running = 16;         // sequences decoding at once
  int32_t max_queued = 64;          // waiting requests before RESOURCE_EXHAUSTED
  int32_t max_prompt_tokens = 0;    // 0 = the model's context length
  int32_t max_new_tokens = 2048;    // per-request cap
  int32_t prefill_chunk_tokens = 256;  // prompt tokens prefilled per step (all sequences)
  int64_t kv_block_tokens = 16;
  int64_t kv_blocks = 0;            // 0 = enough for max_running full contexts
  absl::Duration watchdog_timeout = absl::Seconds(30);  // no step progress for this long => not ready
};

struct GenerationRequest {
  std::string request_id;             // client-supplied or generated
  std::vector<int32_t> prompt_tokens;  // non-empty; BOS already added by the caller if wanted
  SamplingParams sampling;
  StoppingParams stopping;
  // Report the chosen token's logprob (and sampling.logprobs alternatives) with each token.
  bool return_logprobs = false;
  absl::Time deadline = absl::InfiniteFuture();
};

struct RequestTimings {
  double queue_seconds = 0;        // submit -> first scheduled
  double first_token_seconds = 0;  // submit -> first token produced
  double total_seconds = 0;        // submit -> finished
};

// One streamed update. Every request ends with exactly one event with `finished` set.
struct TokenEvent {
  std::vector<int32_t> token_ids;         // tokens produced since the last event
  std::string text;                       // detokenized text delta (stop strings held back/cut)
  std::vector<SampledToken> logprobs;     // one per token when the request asked for logprobs
  bool finished = false;
  FinishReason finish_reason = FinishReason::kLength;
  absl::Status status;                    // non-OK when the request failed inside the engine
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  RequestTimings timings;
};

// The caller's side of one request. Thread-safe.
class RequestHandle {
 public:
  // Waits up to `timeout` for the next event; false on timeout. After the finished event,
  // returns false immediately.
  bool Next(TokenEvent* event, absl::Duration timeout);
  // Asks the scheduler to stop this request; it frees the KV blocks at the next step and sends a
  // finished event with reason kCancelled.
  void Cancel();
  const std::string& request_id() const { return request_id_; }

  // Internal to the scheduler.
  explicit RequestHandle(std::string request_id) : request_id_(std::move(request_id)) {}
  void Push(TokenEvent event);
  bool cancelled() const { return cancelled_.load(); }
  // True once the finished event has been pushed.
  bool finished() const { return finished_.load(); }

 private:
  std::string request_id_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<TokenEvent> events_;
  bool done_ = false;
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> finished_{false};
};

struct SchedulerStats {
  int32_t running = 0;
  int32_t waiting = 0;
  double kv_usage_ratio = 0;
  int64_t kv_used_blocks = 0;
  int64_t steps = 0;                // model forward steps taken
  int64_t decode_steps = 0;         // steps that decoded at least one running sequence
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  absl::Time last_progress = absl::InfinitePast();
  bool engine_healthy = true;       // the step loop is alive and made progress recently
};

class Scheduler {
 public:
  // The model and tokenizer must outlive the scheduler.
  Scheduler(model::Decoder& model, const tokenizer::Tokenizer& tokenizer,
            SchedulerOptions options);
  ~Scheduler();  // stops the engine thread; pending requests finish with kCancelled

  void Start();
  // Validates and enqueues. INVALID_ARGUMENT naming the field for bad requests or requests that
  // can never fit (prompt + max_new_tokens beyond the context or the whole KV cache);
  // RESOURCE_EXHAUSTED when the queue is full; UNAVAILABLE while draining or stopped.
  absl::StatusOr<std::shared_ptr<RequestHandle>> Submit(GenerationRequest request);
  // New requests get UNAVAILABLE from here on; queued and running ones go on. Idempotent.
  void StopAdmitting();
  // StopAdmitting, then waits up to `timeout` for in-flight requests to finish; then cancels
  // whatever remains. Returns true when everything finished in time.
  bool Drain(absl::Duration timeout);
  void Stop();

  SchedulerStats Stats() const;
  const SchedulerOptions& options() const { return options_; }
  const runtime::KvCache& kv_cache() const { return *cache_; }

 private:
  struct Sequence;
  void Loop();
  void Step();
  void Finish(Sequence& seq, FinishReason reason, absl::Status status);

  model::Decoder& model_;
  const tokenizer::Tokenizer& tokenizer_;
  SchedulerOptions options_;
  std::unique_ptr<KvCache> cache_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::unique_ptr<Sequence>> waiting_;
  std::vector<std::unique_ptr<Sequence>> running_;  // engine thread only (under mu_ for stats)
  bool stopping_ = false;
  bool draining_ = false;
  SchedulerStats stats_;
  std::thread thread_;
};

}  // namespace tessera::runtime

#endif  // TESSERA_ENGINE_RUNTIME_SCHEDULER_H_
