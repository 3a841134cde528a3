#include "server/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace tessera::server {
namespace {

void WriteAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    const ssize_t n = ::send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      if (n < 0 && errno == EINTR) continue;
      return;
    }
    sent += static_cast<size_t>(n);
  }
}

void Respond(int fd, int code, const char* status, const char* content_type, const std::string& body,
             bool head_only) {
  std::string out = absl::StrCat("HTTP/1.1 ", code, " ", status, "\r\nContent-Type: ", content_type,
                                 "\r\nContent-Length: ", body.size(),
                                 "\r\nConnection: close\r\n\r\n");
  if (!head_only) out += body;
  WriteAll(fd, out);
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& address,
                                                              Handlers handlers) {
  const size_t colon = address.rfind(':');
  int port = -1;
  if (colon == std::string::npos || !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("http address '", address, "' is not host:port"));
  }
  std::string host = address.substr(0, colon);
  if (!host.empty() && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string port_text = std::to_string(port);
  if (int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port_text.c_str(), &hints, &res);
      rc != 0) {
    return absl::InvalidArgumentError(absl::StrCat("http address '", address, "': ", gai_strerror(rc)));
  }
  auto server = std::make_unique<HttpServer>(std::move(handlers));
  int fd = -1;
  std::string last_error = "no address";
  for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
    fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 64) == 0) break;
    last_error = std::strerror(errno);
    ::close(fd);
    fd = -1;
  }
  ::freeaddrinfo(res);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("http: cannot listen on ", address, ": ", last_error));
  sockaddr_storage bound{};
  socklen_t len = sizeof(bound);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  server->port_ = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                              : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  server->listen_fd_ = fd;
  server->thread_ = std::thread([s = server.get()] { s->AcceptLoop(); });
  return server;
}

HttpServer::~HttpServer() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void HttpServer::AcceptLoop() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    // A short poll so that shutdown is prompt without a wake-up pipe.
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    timeval tv{5, 0};  // a client that never sends its request does not hold the port
    ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    Serve(fd);
    ::close(fd);
  }
}

void HttpServer::Serve(int fd) {
  std::string request;
  char buf[2048];
  while (request.find("\r\n\r\n") == std::string::npos && request.size() < 16384) {
    const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    request.append(buf, static_cast<size_t>(n));
  }
  const std::string line = request.substr(0, request.find("\r\n"));
  std::vector<std::string> parts = absl::StrSplit(line, ' ');
  if (parts.size() < 2) {
    Respond(fd, 400, "Bad Request", "text/plain", "bad request\n", false);
    return;
  }
  const bool head = parts[0] == "HEAD";
  if (parts[0] != "GET" && !head) {
    Respond(fd, 405, "Method Not Allowed", "text/plain", "only GET\n", false);
    return;
  }
  std::string path = parts[1].substr(0, parts[1].find('?'));
  if (path == "/metrics") {
    Respond(fd, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", handlers_.metrics(), head);
  } else if (path == "/healthz") {
    Respond(fd, 200, "OK", "text/plain", "ok\n", head);
  } else if (path == "/readyz") {
    std::string reason;
    if (handlers_.ready(&reason)) {
      Respond(fd, 200, "OK", "text/plain", "ready\n", head);
    } else {
      Respond(fd, 503, "Service Unavailable", "text/plain", reason + "\n", head);
    }
  } else {
    Respond(fd, 404, "Not Found", "text/plain", "not found\n", head);
  }
}

}  // namespace tessera::server
