// The subcommands of the one `tessera` binary. Each takes the arguments after its name and
// returns the process exit code; errors are printed as their absl::Status message.
#ifndef TESSERA_CLI_COMMANDS_H_
#define TESSERA_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace tessera::cli {

int RunInspect(const std::vector<std::string>& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_COMMANDS_H_
