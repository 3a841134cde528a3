// TesseraServer: one serving process's network side, wired together. It owns the gRPC server
// (the Generation service, grpc.health.v1, server reflection, optional TLS and API key), the
// HTTP side port (/metrics, /healthz, /readyz) and the metrics catalog, and it keeps the health
// status true to the engine's state:
//   ""                        (liveness)  SERVING from Start() until Shutdown();
//   "tessera.v1.Generation"   (readiness) SERVING only while an engine is attached, the server is
//                                         not draining, and Scheduler::Stats().engine_healthy;
//                                         a thread re-evaluates it every second.
// The life cycle is Start (ports bound, NOT_SERVING) -> AttachEngine (model loaded: SERVING) ->
// Drain (NOT_SERVING, no new requests, in-flight ones finish) -> Shutdown. gRPC headers stay in
// the .cc so the CLI's serve command compiles without them.
#ifndef TESSERA_SERVER_SERVER_H_
#define TESSERA_SERVER_SERVER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "engine/runtime/scheduler.h"
#include "server/loaded_model.h"
#include "server/metrics.h"

namespace tessera::server {

// The readiness service name in grpc.health.v1.
inline constexpr char kGenerationServiceName[] = "tessera.v1.Generation";

struct ServerOptions {
  // "host:port"; port 0 lets the OS pick (read it back from grpc_port()).
  std::string grpc_address = "0.0.0.0:50051";
  // Empty disables the HTTP side port.
  std::string http_address = "0.0.0.0:9090";
  // Both or neither: PEM files for TLS on the gRPC port.
  std::string tls_cert_file;
  std::string tls_key_file;
  // Empty disables auth; else see api_key_auth.h.
  std::string api_key_file;
};

class TesseraServer {
 public:
  // Binds both ports and starts serving health (liveness SERVING, readiness NOT_SERVING).
  static absl::StatusOr<std::unique_ptr<TesseraServer>> Start(const ServerOptions& options);
  ~TesseraServer();  // Shutdown()
  TesseraServer(const TesseraServer&) = delete;
  TesseraServer& operator=(const TesseraServer&) = delete;

  int grpc_port() const;
  int http_port() const;  // 0 without the HTTP side port

  // Starts serving generation with `model` and `scheduler` (both must outlive the server, or at
  // least its Shutdown()). Readiness turns SERVING once the scheduler reports healthy.
  void AttachEngine(const LoadedModel* model, runtime::Scheduler* scheduler);

  // Readiness NOT_SERVING at once, then Scheduler::Drain(timeout): no new requests (they get
  // UNAVAILABLE), in-flight ones run to completion or are cancelled at the timeout. Returns
  // true when everything finished in time.
  bool Drain(absl::Duration timeout);

  // Stops the gRPC server (waiting up to `grace` for handlers to send their last message), the
  // health thread and the HTTP port. Idempotent.
  void Shutdown(absl::Duration grace = absl::Seconds(5));

  // Whether the readiness check passes now; `reason` says why not ("loading", "draining",
  // "engine stalled") or "ready".
  bool Ready(std::string* reason) const;

  ServerMetrics& metrics();

  // Use Start(). (Impl is defined in server.cc, so nothing else can make one.)
  struct Impl;
  explicit TesseraServer(std::unique_ptr<Impl> impl);

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_SERVER_H_
