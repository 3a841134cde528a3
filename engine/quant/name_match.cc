#include "engine/quant/name_match.h"

#include <fnmatch.h>

#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace tessera::quant {

bool GlobMatch(absl::string_view pattern, absl::string_view name) {
  return fnmatch(std::string(pattern).c_str(), std::string(name).c_str(), 0) == 0;
}

bool RegexMatchFromStart(const std::string& pattern, const std::string& name) {
  // A malformed regex from a config must not throw out of the module: treat it as no match.
  try {
    std::regex re(pattern, std::regex::ECMAScript);
    return std::regex_search(name, re, std::regex_constants::match_continuous);
  } catch (const std::regex_error&) {
    return false;
  }
}

bool CompressedTensorsTargetMatch(const std::string& target, const std::string& module) {
  if (absl::StartsWith(target, "re:")) return RegexMatchFromStart(target.substr(3), module);
  if (target == module) return true;
  // Class-name targets: every linear layer here is an nn.Linear.
  return absl::StrContains(absl::AsciiStrToLower("Linear"), absl::AsciiStrToLower(target)) &&
         !target.empty() && target.find('.') == std::string::npos;
}

bool ModulesToNotConvertMatch(const std::vector<std::string>& entries, const std::string& module) {
  std::string starred;
  for (size_t i = 0; i < module.size();) {
    if (absl::ascii_isdigit(module[i])) {
      starred.push_back('*');
      while (i < module.size() && absl::ascii_isdigit(module[i])) ++i;
    } else {
      starred.push_back(module[i++]);
    }
  }
  for (const std::string& e : entries) {
    if (e.empty()) continue;
    if (absl::StrContains(starred, e) || absl::StrContains(module, e)) return true;
    if (GlobMatch(e, module)) return true;
  }
  return false;
}

bool ModelOptExcludeMatch(const std::string& pattern, const std::string& module) {
  if (GlobMatch(pattern, module) || absl::StrContains(module, pattern)) return true;
  if (absl::EndsWith(pattern, "*")) {
    const std::string stem = pattern.substr(0, pattern.size() - 1);
    return module == stem || absl::StartsWith(module, stem + ".");
  }
  return false;
}

}  // namespace tessera::quant
