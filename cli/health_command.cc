// `tessera health --server ADDR [--service NAME]`: asks a server's grpc.health.v1 service and
// exits 0 when the answer is SERVING, 1 otherwise (NOT_SERVING, unknown service, unreachable).
// Meant for container HEALTHCHECKs and scripts: the default service "" is liveness;
// "tessera.v1.Generation" is readiness (model loaded, engine making progress, not draining).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "server/client_channel.h"

namespace tessera::cli {
namespace {

std::vector<FlagSpec> Flags() {
  return {
      {"server", false, "host:port of the server (default 127.0.0.1:50051)"},
      {"service", false,
       "service to check: '' = liveness (default), tessera.v1.Generation = "
       "readiness"},
      {"timeout", false, "seconds to wait for the answer (default 5)"},
      {"tls_ca", false, "PEM CA certificate: connect with TLS"},
      {"tls_server_name", false, "name to verify in the server certificate"},
      {"quiet", true, "print nothing, only set the exit code"},
      {"help", true, "show this help"},
  };
}

const char* StatusName(grpc::health::v1::HealthCheckResponse::ServingStatus s) {
  switch (s) {
    case grpc::health::v1::HealthCheckResponse::SERVING:
      return "SERVING";
    case grpc::health::v1::HealthCheckResponse::NOT_SERVING:
      return "NOT_SERVING";
    case grpc::health::v1::HealthCheckResponse::SERVICE_UNKNOWN:
      return "SERVICE_UNKNOWN";
    default:
      return "UNKNOWN";
  }
}

}  // namespace

int RunHealth(const std::vector<std::string>& argv) {
  const auto flags = Flags();
  auto args = Args::Parse(argv, flags);
  if (!args.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(args.status().message()).c_str());
    return 2;
  }
  if (args->GetBool("help")) {
    std::fprintf(stderr, "usage: tessera health [--server ADDR] [--service NAME]\n%s",
                 FlagsHelp(flags).c_str());
    return 0;
  }
  const bool quiet = args->GetBool("quiet");
  auto timeout = args->GetDouble("timeout", 5);
  if (!timeout.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(timeout.status().message()).c_str());
    return 2;
  }
  server::ClientChannelOptions options;
  options.address = args->GetString("server", "127.0.0.1:50051");
  options.tls_ca_file = args->GetString("tls_ca");
  options.tls_server_name = args->GetString("tls_server_name");
  auto channel = server::MakeClientChannel(options);
  if (!channel.ok()) {
    std::fprintf(stderr, "error: %s\n", std::string(channel.status().message()).c_str());
    return 1;
  }
  auto stub = grpc::health::v1::Health::NewStub(*channel);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(*timeout)));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(args->GetString("service"));
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    if (!quiet) {
      std::printf(
          "%s: %s (%d: %s)\n", options.address.c_str(),
          status.error_code() == grpc::StatusCode::NOT_FOUND ? "SERVICE_UNKNOWN" : "UNREACHABLE",
          static_cast<int>(status.error_code()), status.error_message().c_str());
    }
    return 1;
  }
  if (!quiet) {
    std::printf("%s service '%s': %s\n", options.address.c_str(), request.service().c_str(),
                StatusName(response.status()));
  }
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

}  // namespace tessera::cli
