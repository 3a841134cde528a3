// How tessera's own clients (`tessera generate --server`, `tessera health`, the tests) open a
// channel to a server: plaintext or TLS (trusting a given CA / self-signed certificate, with an
// optional name override for certificates issued to a hostname while dialling an IP), and the
// API key sent as `authorization: Bearer <key>` on every call.
#ifndef TESSERA_SERVER_CLIENT_CHANNEL_H_
#define TESSERA_SERVER_CLIENT_CHANNEL_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"
#include "grpcpp/client_context.h"

namespace tessera::server {

struct ClientChannelOptions {
  std::string address;          // "host:port"
  std::string tls_ca_file;      // empty = plaintext
  std::string tls_server_name;  // overrides the name checked against the certificate
};

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeClientChannel(
    const ClientChannelOptions& options);

// The first key in an API key file (same format as the server's --api_key_file).
absl::StatusOr<std::string> ReadApiKey(const std::string& path);

// Adds the bearer token to a call when `api_key` is non-empty.
void AddApiKey(const std::string& api_key, grpc::ClientContext* context);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_CLIENT_CHANNEL_H_
