// The subcommands of the one `tessera` binary. Each takes the arguments after its name and
// returns the process exit code; errors are printed as their absl::Status message.
#ifndef TESSERA_CLI_COMMANDS_H_
#define TESSERA_CLI_COMMANDS_H_

#include <string>
#include <vector>

namespace tessera::cli {

int RunInspect(const std::vector<std::string>& args);
int RunGenerate(const std::vector<std::string>& args);
int RunRemoteGenerate(const std::vector<std::string>& args);
int RunPerplexity(const std::vector<std::string>& args);
int RunServe(const std::vector<std::string>& args);
int RunHealth(const std::vector<std::string>& args);
int RunSynth(const std::vector<std::string>& args);
int RunBench(const std::vector<std::string>& args);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_COMMANDS_H_
