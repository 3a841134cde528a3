#include "server/http_server.h"

#include <cstring>
#include <mutex>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "civetweb.h"

namespace tessera::server {
namespace {

// Writes a whole response and returns the status code (civetweb's "handled" value).
int Reply(mg_connection* conn, int code, const char* reason, const char* content_type,
          const std::string& body) {
  const mg_request_info* info = mg_get_request_info(conn);
  const bool head = info != nullptr && info->request_method != nullptr &&
                    std::strcmp(info->request_method, "HEAD") == 0;
  const std::string header = absl::StrFormat(
      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\nCache-Control: no-store\r\n"
      "Connection: close\r\n\r\n",
      code, reason, content_type, body.size());
  mg_write(conn, header.data(), header.size());
  if (!head) mg_write(conn, body.data(), body.size());
  return code;
}

bool IsGetOrHead(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (info == nullptr || info->request_method == nullptr) return false;
  return std::strcmp(info->request_method, "GET") == 0 ||
         std::strcmp(info->request_method, "HEAD") == 0;
}

constexpr char kText[] = "text/plain; charset=utf-8";

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& address,
                                                              Handlers handlers) {
  static std::once_flag init_once;
  std::call_once(init_once, [] { mg_init_library(0); });

  auto server = std::make_unique<HttpServer>(std::move(handlers));
  const char* options[] = {"listening_ports",    address.c_str(), "num_threads", "4",
                           "request_timeout_ms", "10000",         nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  mg_init_data init;
  init.callbacks = &callbacks;
  init.user_data = nullptr;
  init.configuration_options = options;
  unsigned error_code = 0;
  char error_text[256] = {0};
  mg_error_data error;
  error.code = &error_code;
  error.text = error_text;
  error.text_buffer_size = sizeof(error_text);
  server->ctx_ = mg_start2(&init, &error);
  if (server->ctx_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("http: cannot listen on ", address, ": ", error_text));
  }
  mg_set_request_handler(server->ctx_, "/metrics$", &HttpServer::HandleMetrics, server.get());
  mg_set_request_handler(server->ctx_, "/healthz$", &HttpServer::HandleHealthz, server.get());
  mg_set_request_handler(server->ctx_, "/readyz$", &HttpServer::HandleReadyz, server.get());
  std::vector<mg_server_port> ports(4);
  const int n = mg_get_server_ports(server->ctx_, static_cast<int>(ports.size()), ports.data());
  if (n <= 0) return absl::InternalError("http: civetweb reports no listening port");
  server->port_ = ports[0].port;
  return server;
}

HttpServer::~HttpServer() {
  if (ctx_ != nullptr) mg_stop(ctx_);
}

int HttpServer::HandleMetrics(mg_connection* conn, void* self) {
  if (!IsGetOrHead(conn)) return Reply(conn, 405, "Method Not Allowed", kText, "GET only\n");
  const auto* s = static_cast<HttpServer*>(self);
  return Reply(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", s->handlers_.metrics());
}

int HttpServer::HandleHealthz(mg_connection* conn, void* /*self*/) {
  if (!IsGetOrHead(conn)) return Reply(conn, 405, "Method Not Allowed", kText, "GET only\n");
  return Reply(conn, 200, "OK", kText, "ok\n");
}

int HttpServer::HandleReadyz(mg_connection* conn, void* self) {
  if (!IsGetOrHead(conn)) return Reply(conn, 405, "Method Not Allowed", kText, "GET only\n");
  const auto* s = static_cast<HttpServer*>(self);
  std::string reason;
  if (s->handlers_.ready(&reason)) return Reply(conn, 200, "OK", kText, reason + "\n");
  return Reply(conn, 503, "Service Unavailable", kText, reason + "\n");
}

}  // namespace tessera::server
