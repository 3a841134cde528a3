#include "server/generation_service.h"

#include <chrono>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "engine/common/logging.h"
#include "engine/tokenizer/utf8.h"
#include "grpcpp/server_context.h"
#include "server/grpc_status.h"
#include "server/model_info.h"

namespace tessera::server {
namespace {

// How often a stream's handler thread wakes to look for a client cancel when no token arrives.
constexpr absl::Duration kCancelPollInterval = absl::Milliseconds(100);

tessera::v1::FinishReason ToProto(runtime::FinishReason reason) {
  switch (reason) {
    case runtime::FinishReason::kLength:
      return tessera::v1::FINISH_REASON_LENGTH;
    case runtime::FinishReason::kStop:
      return tessera::v1::FINISH_REASON_STOP;
    case runtime::FinishReason::kEos:
      return tessera::v1::FINISH_REASON_EOS;
    case runtime::FinishReason::kCancelled:
      return tessera::v1::FINISH_REASON_CANCELLED;
  }
  return tessera::v1::FINISH_REASON_UNSPECIFIED;
}

// The gRPC deadline as an absl::Time (InfiniteFuture when the client set none).
absl::Time DeadlineOf(const grpc::ServerContext& context) {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

}  // namespace

GenerationService::GenerationService(ServerMetrics* metrics, const ApiKeys* keys)
    : metrics_(metrics),
      keys_(keys),
      id_prefix_(absl::StrFormat("tsr-%x", absl::ToUnixMicros(absl::Now()) & 0xffffffffff)) {}

void GenerationService::AttachEngine(const LoadedModel* model, runtime::Scheduler* scheduler) {
  std::lock_guard<std::mutex> lock(attach_mu_);
  if (engine_storage_ != nullptr) return;
  auto e = std::make_unique<Engine>();
  e->model = model;
  e->scheduler = scheduler;
  const runtime::SchedulerOptions& o = scheduler->options();
  e->limits.vocab_size = static_cast<int32_t>(model->config().vocab_size);
  e->limits.context_length = model->config().max_context;
  e->limits.max_prompt_tokens = o.max_prompt_tokens > 0
                                    ? o.max_prompt_tokens
                                    : static_cast<int32_t>(model->config().max_context);
  e->limits.max_new_tokens = o.max_new_tokens;
  e->info = BuildModelInfo(*model, *scheduler);
  engine_storage_ = std::move(e);
  engine_.store(engine_storage_.get());
}

absl::StatusOr<const GenerationService::Engine*> GenerationService::Admit(
    const grpc::ServerContext& context) const {
  if (keys_ != nullptr) {
    if (absl::Status s = keys_->Check(context); !s.ok()) return s;
  }
  const Engine* e = engine_.load();
  if (e == nullptr) return absl::UnavailableError("the model is loading; retry shortly");
  return e;
}

std::string GenerationService::NextRequestId() {
  return absl::StrFormat("%s-%d", id_prefix_, request_counter_.fetch_add(1) + 1);
}

grpc::Status GenerationService::Generate(
    grpc::ServerContext* context, const tessera::v1::GenerateRequest* request,
    grpc::ServerWriter<tessera::v1::GenerateResponse>* writer) {
  std::string request_id = request->request_id();
  auto done = [&](const grpc::Status& status) {
    metrics_->RecordRequest(GrpcCodeName(status.error_code()));
    if (!status.ok()) {
      TLOG_INFO("request %s from %s: %s: %s", request_id.empty() ? "-" : request_id,
                context->peer(), GrpcCodeName(status.error_code()), status.error_message());
    }
    return status;
  };
  auto engine = Admit(*context);
  if (!engine.ok()) return done(ToGrpcStatus(engine.status()));
  const Engine& e = **engine;
  auto req = BuildGenerationRequest(*request, e.model->tokenizer(), e.limits, NextRequestId());
  if (!req.ok()) return done(ToGrpcStatus(req.status()));
  request_id = req->request_id;
  req->deadline = DeadlineOf(*context);
  const int64_t prompt_tokens = static_cast<int64_t>(req->prompt_tokens.size());
  auto handle = e.scheduler->Submit(*std::move(req));
  if (!handle.ok()) return done(ToGrpcStatus(handle.status()));
  metrics_->AddPromptTokens(prompt_tokens);
  return done(Stream(context, e, **handle, writer));
}

grpc::Status GenerationService::Stream(grpc::ServerContext* context, const Engine& engine,
                                       runtime::RequestHandle& handle,
                                       grpc::ServerWriter<tessera::v1::GenerateResponse>* writer) {
  runtime::TokenEvent event;
  bool client_gone = false;
  absl::Time last_token = absl::InfinitePast();
  while (true) {
    if (!client_gone && context->IsCancelled()) {
      handle.Cancel();
      client_gone = true;
    }
    // After a cancel we still wait for the finished event: it is what says the scheduler has
    // let go of the sequence (and its KV blocks).
    if (!handle.Next(&event, kCancelPollInterval)) continue;
    const int64_t n = static_cast<int64_t>(event.token_ids.size());
    if (n > 0) {
      const absl::Time now = absl::Now();
      metrics_->AddGenerationTokens(n);
      if (last_token != absl::InfinitePast()) {
        const double per_token = absl::ToDoubleSeconds(now - last_token) / static_cast<double>(n);
        for (int64_t i = 0; i < n; ++i) metrics_->ObserveInterTokenLatency(per_token);
      }
      last_token = now;
    }
    if (!client_gone) {
      if (!writer->Write(ToResponse(engine, event, handle.request_id()))) {
        handle.Cancel();
        client_gone = true;
      }
    }
    if (event.finished) break;
  }
  metrics_->ObserveQueueTime(event.timings.queue_seconds);
  metrics_->ObserveRequestDuration(event.timings.total_seconds);
  if (event.completion_tokens > 0)
    metrics_->ObserveTimeToFirstToken(event.timings.first_token_seconds);
  TLOG_DEBUG("request %s: %s, %d prompt + %d completion tokens, %.3f s", handle.request_id(),
             runtime::FinishReasonName(event.finish_reason), event.prompt_tokens,
             event.completion_tokens, event.timings.total_seconds);
  if (!event.status.ok()) return ToGrpcStatus(event.status);
  if (event.finish_reason == runtime::FinishReason::kCancelled) {
    if (absl::Now() >= DeadlineOf(*context)) {
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "the deadline passed");
    }
    if (client_gone) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled by the client");
    // The server stopped the request (drain timeout): the client has the final message with
    // FINISH_REASON_CANCELLED, and UNAVAILABLE tells it a retry may succeed elsewhere.
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the server shut down before the request finished");
  }
  return grpc::Status::OK;
}

tessera::v1::GenerateResponse GenerationService::ToResponse(const Engine& engine,
                                                            const runtime::TokenEvent& event,
                                                            const std::string& request_id) const {
  const tokenizer::Tokenizer& tok = engine.model->tokenizer();
  tessera::v1::GenerateResponse out;
  out.set_request_id(request_id);
  // The scheduler's detokenizer only releases whole UTF-8 characters; the repair is a guard so a
  // bug there can never put invalid UTF-8 into a proto3 string (clients would fail to parse).
  out.set_text(tokenizer::IsValidUtf8(event.text) ? event.text : tokenizer::RepairUtf8(event.text));
  for (int32_t id : event.token_ids) out.add_token_ids(id);
  for (const runtime::SampledToken& t : event.logprobs) {
    tessera::v1::TokenLogprob* lp = out.add_logprobs();
    lp->set_token_id(t.id);
    lp->set_logprob(t.logprob);
    lp->set_token(tokenizer::RepairUtf8(tok.TokenBytes(t.id)));
    for (const runtime::TokenLogprob& alt : t.top) {
      tessera::v1::TopLogprob* a = lp->add_top_logprobs();
      a->set_token_id(alt.id);
      a->set_logprob(alt.logprob);
      a->set_token(tokenizer::RepairUtf8(tok.TokenBytes(alt.id)));
    }
  }
  if (event.finished) {
    out.set_finish_reason(ToProto(event.finish_reason));
    tessera::v1::Usage* usage = out.mutable_usage();
    usage->set_prompt_tokens(event.prompt_tokens);
    usage->set_completion_tokens(event.completion_tokens);
    usage->set_total_tokens(event.prompt_tokens + event.completion_tokens);
    tessera::v1::Timings* timings = out.mutable_timings();
    timings->set_queue_seconds(event.timings.queue_seconds);
    timings->set_time_to_first_token_seconds(event.timings.first_token_seconds);
    timings->set_total_seconds(event.timings.total_seconds);
  }
  return out;
}

grpc::Status GenerationService::Tokenize(grpc::ServerContext* context,
                                         const tessera::v1::TokenizeRequest* request,
                                         tessera::v1::TokenizeResponse* response) {
  auto engine = Admit(*context);
  if (!engine.ok()) return ToGrpcStatus(engine.status());
  const tokenizer::Tokenizer& tok = (*engine)->model->tokenizer();
  const bool add_special = !request->has_add_special_tokens() || request->add_special_tokens();
  const bool parse_special = !request->has_parse_special() || request->parse_special();
  auto ids = tok.Encode(request->text(), add_special, parse_special);
  if (!ids.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrFormat("text: %s", ids.status().message()));
  }
  for (int32_t id : *ids) {
    response->add_token_ids(id);
    response->add_tokens(tokenizer::RepairUtf8(tok.TokenText(id)));
  }
  return grpc::Status::OK;
}

grpc::Status GenerationService::Detokenize(grpc::ServerContext* context,
                                           const tessera::v1::DetokenizeRequest* request,
                                           tessera::v1::DetokenizeResponse* response) {
  auto engine = Admit(*context);
  if (!engine.ok()) return ToGrpcStatus(engine.status());
  const int32_t vocab = (*engine)->limits.vocab_size;
  for (int i = 0; i < request->token_ids_size(); ++i) {
    const int32_t id = request->token_ids(i);
    if (id < 0 || id >= vocab) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrFormat("token_ids[%d]: token id %d is outside the vocabulary "
                                          "[0, %d)",
                                          i, id, vocab));
    }
  }
  auto text = (*engine)->model->tokenizer().Decode(
      absl::MakeConstSpan(request->token_ids().data(), request->token_ids_size()),
      request->skip_special_tokens());
  if (!text.ok()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrFormat("token_ids: %s", text.status().message()));
  }
  response->set_text(*std::move(text));
  return grpc::Status::OK;
}

grpc::Status GenerationService::GetModelInfo(grpc::ServerContext* context,
                                             const tessera::v1::GetModelInfoRequest* /*request*/,
                                             tessera::v1::ModelInfo* response) {
  auto engine = Admit(*context);
  if (!engine.ok()) return ToGrpcStatus(engine.status());
  *response = (*engine)->info;
  return grpc::Status::OK;
}

}  // namespace tessera::server
