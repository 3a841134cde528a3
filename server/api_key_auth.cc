#include "server/api_key_auth.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/server_interceptor.h"

namespace tessera::server {
namespace {

constexpr absl::string_view kBearer = "bearer ";

// Compares every byte of the longer input, so the time taken depends on the lengths only.
bool ConstantTimeEquals(absl::string_view a, absl::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

absl::string_view Metadata(const grpc::ServerContext& context, absl::string_view key) {
  const auto& md = context.client_metadata();
  auto it = md.find(grpc::string_ref(key.data(), key.size()));
  if (it == md.end()) return {};
  return absl::string_view(it->second.data(), it->second.size());
}

class ApiKeyInterceptor : public grpc::experimental::Interceptor {
 public:
  ApiKeyInterceptor(grpc::experimental::ServerRpcInfo* info, const ApiKeys* keys)
      : info_(info), keys_(keys) {}

  void Intercept(grpc::experimental::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(
            grpc::experimental::InterceptionHookPoints::POST_RECV_INITIAL_METADATA)) {
      const auto* md = methods->GetRecvInitialMetadata();
      bool ok = false;
      if (md != nullptr) {
        auto it = md->find("authorization");
        if (it != md->end()) {
          ok = keys_->Accepts(absl::string_view(it->second.data(), it->second.size()));
        }
      }
      if (!ok) info_->server_context()->TryCancel();
    }
    methods->Proceed();
  }

 private:
  grpc::experimental::ServerRpcInfo* info_;
  const ApiKeys* keys_;
};

class ApiKeyInterceptorFactory : public grpc::experimental::ServerInterceptorFactoryInterface {
 public:
  explicit ApiKeyInterceptorFactory(const ApiKeys* keys) : keys_(keys) {}

  grpc::experimental::Interceptor* CreateServerInterceptor(
      grpc::experimental::ServerRpcInfo* info) override {
    const absl::string_view method = info->method() == nullptr ? "" : info->method();
    // Health must work without credentials; Generation answers UNAUTHENTICATED itself.
    if (absl::StartsWith(method, "/grpc.health.v1.Health/") ||
        absl::StartsWith(method, "/tessera.v1.Generation/")) {
      return nullptr;
    }
    // gRPC takes ownership of the interceptor (its API is a raw pointer).
    return std::make_unique<ApiKeyInterceptor>(info, keys_).release();
  }

 private:
  const ApiKeys* keys_;
};

}  // namespace

absl::StatusOr<ApiKeys> ApiKeys::LoadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::FailedPreconditionError(absl::StrCat("api_key_file: cannot read ", path));
  }
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<std::string> keys;
  for (absl::string_view line : absl::StrSplit(ss.str(), '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    keys.emplace_back(line);
  }
  if (keys.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("api_key_file: ", path, " holds no key"));
  }
  return ApiKeys(std::move(keys));
}

bool ApiKeys::Accepts(absl::string_view authorization) const {
  if (authorization.size() < kBearer.size() ||
      !absl::EqualsIgnoreCase(authorization.substr(0, kBearer.size()), kBearer)) {
    return false;
  }
  const absl::string_view token = absl::StripAsciiWhitespace(authorization.substr(kBearer.size()));
  // Check every key (no early exit), so timing does not say which key matched.
  bool ok = false;
  for (const std::string& key : keys_) ok |= ConstantTimeEquals(token, key);
  return ok;
}

absl::Status ApiKeys::Check(const grpc::ServerContext& context) const {
  const absl::string_view auth = Metadata(context, "authorization");
  if (auth.empty()) {
    return absl::UnauthenticatedError(
        "missing 'authorization: Bearer <key>' metadata (the server requires an API key)");
  }
  if (!Accepts(auth)) return absl::UnauthenticatedError("invalid API key");
  return absl::OkStatus();
}

std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface> MakeApiKeyInterceptorFactory(
    const ApiKeys* keys) {
  return std::make_unique<ApiKeyInterceptorFactory>(keys);
}

}  // namespace tessera::server
