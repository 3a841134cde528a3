// The tessera.v1.Generation service (sync gRPC API). Generate validates the request
// (request_builder.h), submits it to the Scheduler, and streams the scheduler's TokenEvents back,
// one handler thread per stream: the thread polls its RequestHandle every 100 ms so that a client
// cancel (ServerContext::IsCancelled) reaches the scheduler promptly; the gRPC deadline travels
// inside the GenerationRequest, so the scheduler itself ends an expired request and frees its KV
// blocks. Every RPC's outcome is counted in the metrics and logged with its request id.
//
// The service exists before the model does (health must answer while loading): until
// AttachEngine() every RPC answers UNAVAILABLE "the model is loading".
#ifndef TESSERA_SERVER_GENERATION_SERVICE_H_
#define TESSERA_SERVER_GENERATION_SERVICE_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "engine/runtime/scheduler.h"
#include "server/api_key_auth.h"
#include "server/loaded_model.h"
#include "server/metrics.h"
#include "server/request_builder.h"
#include "tessera/v1/generation.grpc.pb.h"

namespace tessera::server {

class GenerationService final : public tessera::v1::Generation::Service {
 public:
  // `metrics` must outlive the service; `keys` is null when auth is off, else must outlive it.
  GenerationService(ServerMetrics* metrics, const ApiKeys* keys);

  // Starts serving `model` through `scheduler` (both must outlive the service). Once only.
  void AttachEngine(const LoadedModel* model, runtime::Scheduler* scheduler);

  grpc::Status Generate(grpc::ServerContext* context, const tessera::v1::GenerateRequest* request,
                        grpc::ServerWriter<tessera::v1::GenerateResponse>* writer) override;
  grpc::Status Tokenize(grpc::ServerContext* context, const tessera::v1::TokenizeRequest* request,
                        tessera::v1::TokenizeResponse* response) override;
  grpc::Status Detokenize(grpc::ServerContext* context,
                          const tessera::v1::DetokenizeRequest* request,
                          tessera::v1::DetokenizeResponse* response) override;
  grpc::Status GetModelInfo(grpc::ServerContext* context,
                            const tessera::v1::GetModelInfoRequest* request,
                            tessera::v1::ModelInfo* response) override;

 private:
  struct Engine {
    const LoadedModel* model;
    runtime::Scheduler* scheduler;
    RequestLimits limits;
    tessera::v1::ModelInfo info;
  };

  // The attached engine, or UNAVAILABLE; also checks the API key.
  absl::StatusOr<const Engine*> Admit(const grpc::ServerContext& context) const;
  // Streams the events of one submitted request; returns the RPC's final status.
  grpc::Status Stream(grpc::ServerContext* context, const Engine& engine,
                      runtime::RequestHandle& handle,
                      grpc::ServerWriter<tessera::v1::GenerateResponse>* writer);
  tessera::v1::GenerateResponse ToResponse(const Engine& engine, const runtime::TokenEvent& event,
                                           const std::string& request_id) const;
  std::string NextRequestId();

  ServerMetrics* metrics_;
  const ApiKeys* keys_;
  std::mutex attach_mu_;
  std::unique_ptr<Engine> engine_storage_;
  std::atomic<const Engine*> engine_{nullptr};
  std::atomic<uint64_t> request_counter_{0};
  const std::string id_prefix_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_GENERATION_SERVICE_H_
