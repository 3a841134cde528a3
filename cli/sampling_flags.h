// The sampling and stopping flags shared by `tessera generate` (local and --server): one list of
// flag specs and one parser into a GenerationRequest, so both paths accept the same flags.
#ifndef TESSERA_CLI_SAMPLING_FLAGS_H_
#define TESSERA_CLI_SAMPLING_FLAGS_H_

#include <vector>

#include "absl/status/status.h"
#include "cli/args.h"
#include "engine/runtime/scheduler.h"

namespace tessera::cli {

std::vector<FlagSpec> SamplingFlagSpecs();
absl::Status ParseSamplingFlags(const Args& args, runtime::GenerationRequest* request);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_SAMPLING_FLAGS_H_
