// The HTTP side port: /metrics (Prometheus text format), /healthz (the process answers) and
// /readyz (the model is loaded and the engine is making progress; 503 while loading, draining or
// stalled). It exists beside gRPC because Prometheus scrapes HTTP and plain HTTP probes are what
// load balancers and humans with curl have.
//
// Built on civetweb's C API directly rather than prometheus-cpp's Exposer: the Exposer (1.0.1)
// can only serve registries, with no way to add the two health handlers, and a second HTTP port
// just for them would be one more thing to configure and expose. civetweb is what the Exposer
// runs on anyway (libcivetweb-dev comes with prometheus-cpp-dev), and its C API reports errors
// as return values instead of C++ exceptions.
#ifndef TESSERA_SERVER_HTTP_SERVER_H_
#define TESSERA_SERVER_HTTP_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

struct mg_context;
struct mg_connection;

namespace tessera::server {

class HttpServer {
 public:
  struct Handlers {
    // The /metrics body.
    std::function<std::string()> metrics;
    // True when ready; `reason` says why not (or "ready").
    std::function<bool(std::string* reason)> ready;
  };

  // `address` is "host:port" ("0.0.0.0:9090", "127.0.0.1:0" for an OS-picked port).
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const std::string& address,
                                                           Handlers handlers);
  // Use Start(); public only so that Start can use std::make_unique.
  explicit HttpServer(Handlers handlers) : handlers_(std::move(handlers)) {}
  ~HttpServer();  // stops serving and joins civetweb's threads
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the OS's pick when the address said 0).
  int port() const { return port_; }

 private:
  static int HandleMetrics(mg_connection* conn, void* self);
  static int HandleHealthz(mg_connection* conn, void* self);
  static int HandleReadyz(mg_connection* conn, void* self);

  Handlers handlers_;
  mg_context* ctx_ = nullptr;
  int port_ = 0;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_SERVER_H_
