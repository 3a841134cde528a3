#include "cli/args.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tessera::cli {

absl::StatusOr<Args> Args::Parse(const std::vector<std::string>& argv,
                                 const std::vector<FlagSpec>& specs) {
  Args args;
  auto find = [&](const std::string& n) -> const FlagSpec* {
    for (const auto& s : specs) {
      if (s.name == n) return &s;
    }
    return nullptr;
  };
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() < 3 || a.rfind("--", 0) != 0) {
      args.positionals_.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::optional<std::string> value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const FlagSpec* spec = find(name);
    if (spec == nullptr) return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    if (spec->is_bool) {
      if (value && *value != "true" && *value != "false") {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " takes true or false"));
      }
      args.values_[name] = value.value_or("true");
      continue;
    }
    if (!value) {
      if (i + 1 >= argv.size()) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
      value = argv[++i];
    }
    args.values_[name] = *value;
  }
  return args;
}

std::string Args::GetString(const std::string& name, const std::string& def) const {
  auto it = values_.find(name);
  return it == values_.end() ? def : it->second;
}

absl::StatusOr<int64_t> Args::GetInt(const std::string& name, int64_t def) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  int64_t v;
  if (!absl::SimpleAtoi(it->second, &v)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flag --%s: '%s' is not an integer", name, it->second));
  }
  return v;
}

absl::StatusOr<double> Args::GetDouble(const std::string& name, double def) const {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  double v;
  if (!absl::SimpleAtod(it->second, &v)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flag --%s: '%s' is not a number", name, it->second));
  }
  return v;
}

bool Args::GetBool(const std::string& name) const {
  auto it = values_.find(name);
  return it != values_.end() && it->second == "true";
}

std::string FlagsHelp(const std::vector<FlagSpec>& specs) {
  std::string out;
  for (const auto& s : specs) {
    absl::StrAppendFormat(&out, "  --%-22s %s\n", s.is_bool ? s.name : s.name + "=V", s.help);
  }
  return out;
}

}  // namespace tessera::cli
