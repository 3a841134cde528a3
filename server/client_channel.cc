#include "server/client_channel.h"

#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace tessera::server {
namespace {

absl::StatusOr<std::string> ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::FailedPreconditionError(absl::StrCat("cannot read ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeClientChannel(
    const ClientChannelOptions& options) {
  grpc::ChannelArguments args;
  std::shared_ptr<grpc::ChannelCredentials> creds;
  if (options.tls_ca_file.empty()) {
    creds = grpc::InsecureChannelCredentials();
  } else {
    auto ca = ReadWhole(options.tls_ca_file);
    if (!ca.ok()) return ca.status();
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = *ca;
    creds = grpc::SslCredentials(ssl);
    if (!options.tls_server_name.empty()) {
      args.SetSslTargetNameOverride(options.tls_server_name);
    }
  }
  return grpc::CreateCustomChannel(options.address, creds, args);
}

absl::StatusOr<std::string> ReadApiKey(const std::string& path) {
  auto text = ReadWhole(path);
  if (!text.ok()) return text.status();
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (!line.empty() && line[0] != '#') return std::string(line);
  }
  return absl::FailedPreconditionError(absl::StrCat(path, " holds no key"));
}

void AddApiKey(const std::string& api_key, grpc::ClientContext* context) {
  if (!api_key.empty()) context->AddMetadata("authorization", absl::StrCat("Bearer ", api_key));
}

}  // namespace tessera::server
