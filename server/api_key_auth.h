// Bearer-token authentication for the gRPC API: with --api_key_file, every RPC except the
// grpc.health.v1 service must carry `authorization: Bearer <key>` metadata. Health stays open
// because orchestrators (Kubernetes gRPC probes, Docker HEALTHCHECK) cannot send credentials.
//
// The key file holds one key per line (so keys can be rotated: add the new one, move clients,
// remove the old one); blank lines and lines starting with '#' are ignored, surrounding
// whitespace is trimmed. Comparison is constant-time in the key contents, so response timing
// does not reveal how much of a guess was right.
//
// Enforcement is in two places, because gRPC 1.51's sync API offers no way for an interceptor
// to fail an RPC with a status of its choosing: the Generation handlers call Check() first and
// answer UNAUTHENTICATED with a message, and MakeApiKeyInterceptorFactory() cancels any other
// non-health RPC (server reflection) that lacks a valid key (the client sees CANCELLED).
// AuthMetadataProcessor would give UNAUTHENTICATED everywhere but only works with TLS, and the
// key must also work on plaintext ports behind a TLS-terminating proxy.
#ifndef TESSERA_SERVER_API_KEY_AUTH_H_
#define TESSERA_SERVER_API_KEY_AUTH_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace grpc {
class ServerContext;
namespace experimental {
class ServerInterceptorFactoryInterface;
}  // namespace experimental
}  // namespace grpc

namespace tessera::server {

class ApiKeys {
 public:
  // FAILED_PRECONDITION when the file cannot be read or holds no key.
  static absl::StatusOr<ApiKeys> LoadFile(const std::string& path);
  explicit ApiKeys(std::vector<std::string> keys) : keys_(std::move(keys)) {}

  // True when `authorization` is "Bearer <one of the keys>" (the scheme is case-insensitive).
  bool Accepts(absl::string_view authorization) const;

  // OK, or UNAUTHENTICATED saying what is missing, from the RPC's client metadata.
  absl::Status Check(const grpc::ServerContext& context) const;

 private:
  std::vector<std::string> keys_;
};

// Cancels non-health, non-Generation RPCs without a valid key. `keys` must outlive the server.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeApiKeyInterceptorFactory(
    const ApiKeys* keys);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_API_KEY_AUTH_H_
