#include "server/server.h"

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "engine/common/logging.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "server/api_key_auth.h"
#include "server/generation_service.h"
#include "server/http_server.h"

namespace tessera::server {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(absl::StrCat(flag, ": cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "0.0.0.0:0" -> "0.0.0.0"; "[::1]:50051" -> "[::1]".
std::string HostOf(const std::string& address) {
  const size_t colon = address.rfind(':');
  return colon == std::string::npos ? address : address.substr(0, colon);
}

}  // namespace

struct TesseraServer::Impl {
  ServerOptions options;
  ServerMetrics metrics;
  std::unique_ptr<ApiKeys> keys;
  std::unique_ptr<GenerationService> service;
  std::unique_ptr<grpc::Server> grpc_server;
  std::unique_ptr<HttpServer> http;
  int grpc_port = 0;

  std::atomic<const LoadedModel*> model{nullptr};
  std::atomic<runtime::Scheduler*> scheduler{nullptr};
  std::atomic<bool> draining{false};

  std::mutex mu;
  std::condition_variable cv;
  bool stop_health = false;
  bool shut_down = false;
  std::thread health_thread;

  bool Ready(std::string* reason) const {
    runtime::Scheduler* s = scheduler.load();
    if (s == nullptr) {
      *reason = "loading";
      return false;
    }
    if (draining.load()) {
      *reason = "draining";
      return false;
    }
    if (!s->Stats().engine_healthy) {
      *reason = "engine stalled";
      return false;
    }
    *reason = "ready";
    return true;
  }

  void RefreshHealth() {
    std::string reason;
    grpc_server->GetHealthCheckService()->SetServingStatus(kGenerationServiceName, Ready(&reason));
  }

  void HealthLoop() {
    std::unique_lock<std::mutex> lock(mu);
    while (!stop_health) {
      lock.unlock();
      RefreshHealth();
      lock.lock();
      cv.wait_for(lock, std::chrono::seconds(1), [this] { return stop_health; });
    }
  }
};

TesseraServer::TesseraServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

TesseraServer::~TesseraServer() { Shutdown(); }

absl::StatusOr<std::unique_ptr<TesseraServer>> TesseraServer::Start(const ServerOptions& options) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  if (!options.api_key_file.empty()) {
    auto keys = ApiKeys::LoadFile(options.api_key_file);
    if (!keys.ok()) return keys.status();
    impl->keys = std::make_unique<ApiKeys>(*std::move(keys));
  }
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError("tls_cert and tls_key must be given together");
  }
  if (!options.tls_cert_file.empty()) {
    auto cert = ReadFile("tls_cert", options.tls_cert_file);
    if (!cert.ok()) return cert.status();
    auto key = ReadFile("tls_key", options.tls_key_file);
    if (!key.ok()) return key.status();
    grpc::SslServerCredentialsOptions ssl;
    ssl.pem_key_cert_pairs.push_back({*key, *cert});
    creds = grpc::SslServerCredentials(ssl);
  } else {
    creds = grpc::InsecureServerCredentials();
  }

  impl->service = std::make_unique<GenerationService>(&impl->metrics, impl->keys.get());
  grpc::EnableDefaultHealthCheckService(true);
  // Called explicitly: otherwise the linker may drop the plugin's static registration.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddListeningPort(options.grpc_address, creds, &impl->grpc_port);
  builder.RegisterService(impl->service.get());
  if (impl->keys != nullptr) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> creators;
    creators.push_back(MakeApiKeyInterceptorFactory(impl->keys.get()));
    builder.experimental().SetInterceptorCreators(std::move(creators));
  }
  impl->grpc_server = builder.BuildAndStart();
  if (impl->grpc_server == nullptr || impl->grpc_port == 0) {
    return absl::UnavailableError(absl::StrCat("grpc: cannot listen on ", options.grpc_address));
  }
  grpc::HealthCheckServiceInterface* health = impl->grpc_server->GetHealthCheckService();
  health->SetServingStatus("", true);
  health->SetServingStatus(kGenerationServiceName, false);

  if (!options.http_address.empty()) {
    Impl* raw = impl.get();
    HttpServer::Handlers handlers;
    handlers.metrics = [raw] { return raw->metrics.Render(); };
    handlers.ready = [raw](std::string* reason) { return raw->Ready(reason); };
    auto http = HttpServer::Start(options.http_address, std::move(handlers));
    if (!http.ok()) {
      impl->grpc_server->Shutdown();
      return http.status();
    }
    impl->http = *std::move(http);
  }
  Impl* raw = impl.get();
  impl->health_thread = std::thread([raw] { raw->HealthLoop(); });
  TLOG_INFO("grpc listening on %s:%d%s%s", HostOf(options.grpc_address), impl->grpc_port,
            options.tls_cert_file.empty() ? "" : " (TLS)",
            impl->keys == nullptr ? "" : " (API key required)");
  if (impl->http != nullptr) {
    TLOG_INFO("http listening on %s:%d (/metrics /healthz /readyz)", HostOf(options.http_address),
              impl->http->port());
  }
  return std::make_unique<TesseraServer>(std::move(impl));
}

int TesseraServer::grpc_port() const { return impl_->grpc_port; }
int TesseraServer::http_port() const { return impl_->http == nullptr ? 0 : impl_->http->port(); }
ServerMetrics& TesseraServer::metrics() { return impl_->metrics; }

bool TesseraServer::Ready(std::string* reason) const { return impl_->Ready(reason); }

void TesseraServer::AttachEngine(const LoadedModel* model, runtime::Scheduler* scheduler) {
  impl_->metrics.SetModel(*model);
  impl_->metrics.SetStatsSource([scheduler] { return scheduler->Stats(); });
  impl_->service->AttachEngine(model, scheduler);
  impl_->model.store(model);
  impl_->scheduler.store(scheduler);
  impl_->RefreshHealth();
}

bool TesseraServer::Drain(absl::Duration timeout) {
  runtime::Scheduler* s = impl_->scheduler.load();
  // Admission stops before readiness goes NOT_SERVING: a client that sees the drain announced
  // must get UNAVAILABLE, never a new stream (the other order left a window between the two).
  if (s != nullptr) s->StopAdmitting();
  impl_->draining.store(true);
  impl_->RefreshHealth();
  if (s == nullptr) return true;
  TLOG_INFO("draining: no new requests; waiting up to %s for in-flight ones",
            absl::FormatDuration(timeout));
  const bool clean = s->Drain(timeout);
  if (!clean) TLOG_WARNING("drain timeout: the remaining requests were cancelled");
  return clean;
}

void TesseraServer::Shutdown(absl::Duration grace) {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->shut_down) return;
    impl_->shut_down = true;
    impl_->stop_health = true;
  }
  impl_->cv.notify_all();
  if (impl_->health_thread.joinable()) impl_->health_thread.join();
  // Every status NOT_SERVING (and frozen) before the port closes, so probes see it go down.
  impl_->grpc_server->GetHealthCheckService()->Shutdown();
  impl_->grpc_server->Shutdown(absl::ToChronoTime(absl::Now() + grace));
  impl_->grpc_server->Wait();
  impl_->http.reset();
  impl_->metrics.SetStatsSource(nullptr);
}

}  // namespace tessera::server
