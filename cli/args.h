// Command-line parsing for the `tessera` subcommands: `--name=value`, `--name value`, boolean
// `--name`, and positionals. Each subcommand declares its flags, so an unknown or malformed flag is
// an error that names it instead of being silently ignored.
#ifndef TESSERA_CLI_ARGS_H_
#define TESSERA_CLI_ARGS_H_

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::cli {

struct FlagSpec {
  std::string name;
  bool is_bool = false;
  std::string help;
};

class Args {
 public:
  static absl::StatusOr<Args> Parse(const std::vector<std::string>& argv,
                                    const std::vector<FlagSpec>& specs);

  const std::vector<std::string>& positionals() const { return positionals_; }
  bool Has(const std::string& name) const { return values_.contains(name); }
  std::string GetString(const std::string& name, const std::string& def = "") const;
  absl::StatusOr<int64_t> GetInt(const std::string& name, int64_t def) const;
  absl::StatusOr<double> GetDouble(const std::string& name, double def) const;
  bool GetBool(const std::string& name) const;

 private:
  std::map<std::string, std::string> values_;
  std::vector<std::string> positionals_;
};

std::string FlagsHelp(const std::vector<FlagSpec>& specs);

}  // namespace tessera::cli

#endif  // TESSERA_CLI_ARGS_H_
