#include "engine/runtime/scheduler.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "engine/common/logging.h"
#include "engine/tokenizer/incremental_detokenizer.h"

namespace tessera::runtime {

struct Scheduler::Sequence {
  GenerationRequest request;
  std::shared_ptr<RequestHandle> handle;
  SequenceKv kv;
  std::unique_ptr<Sampler> sampler;
  std::unique_ptr<StopChecker> stop;
  std::unique_ptr<tokenizer::IncrementalDetokenizer> detok;
  std::vector<int32_t> generated;
  int64_t prefilled = 0;       // prompt tokens whose K/V are in the cache
  int32_t pending_token = -1;  // sampled but not yet fed to the model
  absl::Time submitted;
  absl::Time scheduled = absl::InfinitePast();
  absl::Time first_token = absl::InfinitePast();

  bool prefill_done() const { return prefilled == static_cast<int64_t>(request.prompt_tokens.size()); }
};

// ---------------------------------------------------------------------------------------------
// RequestHandle

bool RequestHandle::Next(TokenEvent* event, absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto deadline = std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  if (!cv_.wait_until(lock, deadline, [this] { return !events_.empty() || done_; })) return false;
  if (events_.empty()) return false;
  *event = std::move(events_.front());
  events_.pop_front();
  return true;
}

void RequestHandle::Cancel() { cancelled_.store(true); }

void RequestHandle::Push(TokenEvent event) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (done_) return;
    const bool finished = event.finished;
    events_.push_back(std::move(event));
    if (finished) {
      done_ = true;
      finished_.store(true);
    }
  }
  cv_.notify_all();
}

// ---------------------------------------------------------------------------------------------
// Scheduler

Scheduler::Scheduler(model::Decoder& model, const tokenizer::Tokenizer& tokenizer,
                     SchedulerOptions options)
    : model_(model), tokenizer_(tokenizer), options_(options) {
  const auto& c = model_.config();
  if (options_.max_prompt_tokens <= 0 || options_.max_prompt_tokens > c.max_context) {
    options_.max_prompt_tokens = static_cast<int32_t>(c.max_context);
  }
  if (options_.kv_blocks <= 0) {
    const int64_t per_seq = (c.max_context + options_.kv_block_tokens - 1) / options_.kv_block_tokens;
    options_.kv_blocks = per_seq * std::max(1, options_.max_running);
  }
  cache_ = std::make_unique<KvCache>(c.num_layers, c.num_kv_heads, c.head_dim,
                                     options_.kv_block_tokens, options_.kv_blocks,
                                     model_.uses_host_kv_storage(), model_.kv_cache_format());
  if (model_.uses_host_kv_storage()) {
    // What --kv_cache_dtype buys an operator: positions held and the memory they take.
    const double mib = 2.0 * c.num_layers * c.num_kv_heads * c.head_dim *
                       KvCacheElementBytes(model_.kv_cache_format()) *
                       static_cast<double>(cache_->capacity_tokens()) / (1 << 20);
    TLOG_INFO("KV cache: %d blocks of %d positions (%d positions), %.1f MiB on the host",
              cache_->num_blocks(), cache_->block_tokens(), cache_->capacity_tokens(), mib);
  }
}

Scheduler::~Scheduler() { Stop(); }

void Scheduler::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stats_.last_progress = absl::Now();
  thread_ = std::thread([this] { Loop(); });
}

absl::StatusOr<std::shared_ptr<RequestHandle>> Scheduler::Submit(GenerationRequest request) {
  const auto& c = model_.config();
  const int32_t vocab = static_cast<int32_t>(c.vocab_size);
  const int64_t prompt = static_cast<int64_t>(request.prompt_tokens.size());
  if (prompt == 0) return absl::InvalidArgumentError("prompt: must not be empty");
  if (prompt > options_.max_prompt_tokens) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "prompt: %d tokens exceed the limit of %d", prompt, options_.max_prompt_tokens));
  }
  for (size_t i = 0; i < request.prompt_tokens.size(); ++i) {
    const int32_t t = request.prompt_tokens[i];
    if (t < 0 || t >= vocab) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "prompt: token id %d at position %d is outside the vocabulary [0, %d)", t, i, vocab));
    }
  }
  if (absl::Status s = ValidateSamplingParams(request.sampling, vocab); !s.ok()) return s;
  if (absl::Status s = ValidateStoppingParams(request.stopping, vocab, options_.max_new_tokens); !s.ok()) {
    return s;
  }
  const int64_t budget = prompt + request.stopping.max_new_tokens;
  if (budget > c.max_context) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "max_new_tokens: prompt (%d tokens) + max_new_tokens (%d) exceeds the context length %d",
        prompt, request.stopping.max_new_tokens, c.max_context));
  }
  if (cache_->BlocksFor(budget) > cache_->num_blocks()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "max_new_tokens: prompt + max_new_tokens (%d tokens) can never fit the KV cache of %d tokens",
        budget, cache_->capacity_tokens()));
  }

  auto seq = std::make_unique<Sequence>();
  seq->request = std::move(request);
  seq->handle = std::make_shared<RequestHandle>(seq->request.request_id);
  seq->sampler = std::make_unique<Sampler>(seq->request.sampling);
  std::vector<int32_t> eos = tokenizer_.eos_ids();
  for (int32_t id : c.eos_token_ids) {
    if (std::find(eos.begin(), eos.end(), id) == eos.end()) eos.push_back(id);
  }
  seq->stop = std::make_unique<StopChecker>(seq->request.stopping, eos);
  seq->detok = std::make_unique<tokenizer::IncrementalDetokenizer>(tokenizer_, /*first_piece_of_sequence=*/false);
  seq->submitted = absl::Now();
  auto handle = seq->handle;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || draining_) return absl::UnavailableError("the server is shutting down");
    if (static_cast<int32_t>(waiting_.size()) >= options_.max_queued) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the request queue is full (%d waiting); retry later", waiting_.size()));
    }
    waiting_.push_back(std::move(seq));
    stats_.waiting = static_cast<int32_t>(waiting_.size());
  }
  cv_.notify_all();
  return handle;
}

void Scheduler::StopAdmitting() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    draining_ = true;
  }
  cv_.notify_all();
}

bool Scheduler::Drain(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  StopAdmitting();
  while (absl::Now() < deadline) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (waiting_.empty() && running_.empty()) return true;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  Stop();
  return false;
}

void Scheduler::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  // Whatever is left (the thread is gone) ends as cancelled.
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& s : running_) Finish(*s, FinishReason::kCancelled, absl::OkStatus());
  for (auto& s : waiting_) Finish(*s, FinishReason::kCancelled, absl::OkStatus());
  running_.clear();
  waiting_.clear();
  stats_.running = stats_.waiting = 0;
}

SchedulerStats Scheduler::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SchedulerStats s = stats_;
  s.kv_usage_ratio = cache_->usage_ratio();
  s.kv_used_blocks = cache_->used_blocks();
  const bool busy = !running_.empty() || !waiting_.empty();
  s.engine_healthy = thread_.joinable() && !stopping_ &&
                     (!busy || absl::Now() - s.last_progress < options_.watchdog_timeout);
  return s;
}

void Scheduler::Finish(Sequence& seq, FinishReason reason, absl::Status status) {
  TokenEvent ev;
  ev.finished = true;
  ev.finish_reason = reason;
  ev.status = std::move(status);
  if (reason == FinishReason::kCancelled || !ev.status.ok()) ev.text = seq.stop->Finish().text_to_emit;
  ev.prompt_tokens = static_cast<int32_t>(seq.request.prompt_tokens.size());
  ev.completion_tokens = static_cast<int32_t>(seq.generated.size());
  const absl::Time now = absl::Now();
  ev.timings.queue_seconds =
      absl::ToDoubleSeconds((seq.scheduled == absl::InfinitePast() ? now : seq.scheduled) - seq.submitted);
  ev.timings.first_token_seconds =
      seq.first_token == absl::InfinitePast() ? 0 : absl::ToDoubleSeconds(seq.first_token - seq.submitted);
  ev.timings.total_seconds = absl::ToDoubleSeconds(now - seq.submitted);
  cache_->Release(seq.kv);
  seq.handle->Push(std::move(ev));
}

void Scheduler::Loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !waiting_.empty() || !running_.empty(); });
      if (stopping_) return;
    }
    Step();
  }
}

void Scheduler::Step() {
  const absl::Time now = absl::Now();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Drop cancelled or expired requests first: their blocks return before admission.
    auto dead = [&](const std::unique_ptr<Sequence>& s) {
      return s->handle->cancelled() || now >= s->request.deadline;
    };
    for (auto& s : running_) {
      if (dead(s)) Finish(*s, FinishReason::kCancelled, absl::OkStatus());
    }
    std::erase_if(running_, [&](const std::unique_ptr<Sequence>& s) { return s->handle->finished(); });
    for (auto& s : waiting_) {
      if (dead(s)) Finish(*s, FinishReason::kCancelled, absl::OkStatus());
    }
    std::erase_if(waiting_, [&](const std::unique_ptr<Sequence>& s) { return s->handle->finished(); });
    // Admit in arrival order while a slot and the whole KV budget are free (no preemption).
    while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < options_.max_running) {
      Sequence& s = *waiting_.front();
      const int64_t budget =
          static_cast<int64_t>(s.request.prompt_tokens.size()) + s.request.stopping.max_new_tokens;
      if (!cache_->Reserve(s.kv, budget).ok()) break;
      s.kv.max_length = budget;
      s.scheduled = now;
      running_.push_back(std::move(waiting_.front()));
      waiting_.pop_front();
    }
    stats_.running = static_cast<int32_t>(running_.size());
    stats_.waiting = static_cast<int32_t>(waiting_.size());
  }
  if (running_.empty()) return;

  // One chunk per running sequence: the pending token of a decoding sequence, or the next piece
  // of a prompt within this step's prefill budget.
  std::vector<model::SequenceChunk> chunks;
  std::vector<Sequence*> owners;
  int64_t prefill_budget = options_.prefill_chunk_tokens;
  bool any_decode = false;
  std::vector<int32_t> decode_tokens(running_.size());
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& s = *running_[i];
    if (s.prefill_done()) {
      decode_tokens[i] = s.pending_token;
      chunks.push_back({&s.kv, absl::Span<const int32_t>(&decode_tokens[i], 1), false, true});
      owners.push_back(&s);
      any_decode = true;
      continue;
    }
    if (prefill_budget <= 0) continue;
    const int64_t remaining = static_cast<int64_t>(s.request.prompt_tokens.size()) - s.prefilled;
    const int64_t n = std::min(remaining, prefill_budget);
    prefill_budget -= n;
    chunks.push_back({&s.kv,
                      absl::Span<const int32_t>(s.request.prompt_tokens.data() + s.prefilled, n),
                      false, n == remaining});
    owners.push_back(&s);
  }
  // Positions in the cache advance inside Forward; prefill progress is tracked here.
  std::vector<int64_t> fed(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) fed[i] = static_cast<int64_t>(chunks[i].tokens.size());

  std::vector<float> logits;
  absl::Status status = model_.Forward(chunks, *cache_, &logits);
  std::lock_guard<std::mutex> lock(mu_);
  stats_.steps++;
  if (any_decode) stats_.decode_steps++;
  stats_.last_progress = absl::Now();
  if (!status.ok()) {
    TLOG_ERROR("engine step failed: %s", status.ToString());
    for (Sequence* s : owners) Finish(*s, FinishReason::kCancelled, status);
    std::erase_if(running_, [&](const std::unique_ptr<Sequence>& s) { return s->handle->finished(); });
    stats_.running = static_cast<int32_t>(running_.size());
    return;
  }
  const int64_t vocab = model_.config().vocab_size;
  int64_t row = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    Sequence& s = *owners[i];
    if (!s.prefill_done()) {
      s.prefilled += fed[i];
      stats_.prompt_tokens_total += fed[i];
    }
    if (!chunks[i].last_logits) continue;
    absl::Span<const float> row_logits(logits.data() + row * vocab, vocab);
    ++row;
    auto sampled = s.sampler->Sample(row_logits, s.request.prompt_tokens, s.generated);
    if (!sampled.ok()) {
      Finish(s, FinishReason::kCancelled, sampled.status());
      continue;
    }
    const absl::Time t = absl::Now();
    if (s.first_token == absl::InfinitePast()) s.first_token = t;
    s.generated.push_back(sampled->id);
    stats_.generation_tokens_total++;
    const std::string piece = s.detok->Push(sampled->id);
    StopChecker::Result r = s.stop->OnToken(sampled->id, piece, static_cast<int32_t>(s.generated.size()));
    TokenEvent ev;
    ev.token_ids = {sampled->id};
    ev.text = std::move(r.text_to_emit);
    if (s.request.return_logprobs || s.request.sampling.logprobs > 0) ev.logprobs.push_back(*sampled);
    if (!r.finish && s.kv.length + 1 >= model_.config().max_context) r.finish = FinishReason::kLength;
    if (r.finish) {
      // The final event carries the last token as well as the finish data.
      TokenEvent fin;
      fin.token_ids = std::move(ev.token_ids);
      fin.text = std::move(ev.text);
      fin.logprobs = std::move(ev.logprobs);
      fin.finished = true;
      fin.finish_reason = *r.finish;
      fin.prompt_tokens = static_cast<int32_t>(s.request.prompt_tokens.size());
      fin.completion_tokens = static_cast<int32_t>(s.generated.size());
      fin.timings.queue_seconds = absl::ToDoubleSeconds(s.scheduled - s.submitted);
      fin.timings.first_token_seconds = absl::ToDoubleSeconds(s.first_token - s.submitted);
      fin.timings.total_seconds = absl::ToDoubleSeconds(t - s.submitted);
      cache_->Release(s.kv);
      s.handle->Push(std::move(fin));
      continue;
    }
    s.pending_token = sampled->id;
    s.handle->Push(std::move(ev));
  }
  std::erase_if(running_, [&](const std::unique_ptr<Sequence>& s) { return s->handle->finished(); });
  stats_.running = static_cast<int32_t>(running_.size());
}

}  // namespace tessera::runtime
