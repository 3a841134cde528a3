// The HTTP side port: /metrics (Prometheus text format), /healthz (the process answers) and
// /readyz (the model is loaded and the engine is making progress; 503 while loading, draining or
// stalled). It exists beside gRPC because Prometheus scrapes HTTP and plain HTTP probes are what
// load balancers and humans with curl have.
//
// A deliberately small HTTP/1.1 server on POSIX sockets with one accept thread: three GET routes,
// one response per connection. Not civetweb: its worker threads get a compiled-in ~100 KB stack,
// and once cuBLASLt (94 KB of static TLS) is linked into the binary glibc refuses to create them
// (EINVAL); not prometheus-cpp's Exposer either, which cannot serve the health routes.
#ifndef TESSERA_SERVER_HTTP_SERVER_H_
#define TESSERA_SERVER_HTTP_SERVER_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"

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
  ~HttpServer();  // stops serving and joins the accept thread
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // The bound port (the OS's pick when the address said 0).
  int port() const { return port_; }

 private:
  void AcceptLoop();
  void Serve(int fd);

  Handlers handlers_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tessera::server

#endif  // TESSERA_SERVER_HTTP_SERVER_H_
