// The one mapping between absl::Status (what every engine module returns) and grpc::Status (what
// the wire carries). absl's codes were modelled on gRPC's, so the map is 1:1 by number; keeping it
// in one place means a new error path cannot invent its own translation.
#ifndef TESSERA_SERVER_GRPC_STATUS_H_
#define TESSERA_SERVER_GRPC_STATUS_H_

#include <string>

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace tessera::server {

grpc::Status ToGrpcStatus(const absl::Status& status);
absl::Status FromGrpcStatus(const grpc::Status& status);

// "OK", "INVALID_ARGUMENT", ...: the spelling of the code in metrics labels and logs.
std::string GrpcCodeName(grpc::StatusCode code);

}  // namespace tessera::server

#endif  // TESSERA_SERVER_GRPC_STATUS_H_
