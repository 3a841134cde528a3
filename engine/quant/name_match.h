// The module-name matching dialects that quantization configs use (quant-formats.md §4.1):
// fnmatch globs (ModelOpt, Quark, plan files), Python `re.match` regexes with a `re:` prefix
// (compressed-tensors, vLLM), class-name targets ("Linear"), and transformers' digit-wildcard
// substring rule for modules_to_not_convert. Each config parser picks the dialect its producer
// uses, so "lm_head", "*.mlp.*" and "re:.*q_proj$" all mean what their authors meant.
#ifndef TESSERA_ENGINE_QUANT_NAME_MATCH_H_
#define TESSERA_ENGINE_QUANT_NAME_MATCH_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tessera::quant {

// fnmatch-style glob: '*' any run (including '.'), '?' one char, [...] classes.
bool GlobMatch(absl::string_view pattern, absl::string_view name);
// Python re.match: anchored at the start only.
bool RegexMatchFromStart(const std::string& pattern, const std::string& name);
// compressed-tensors / vLLM target: "re:<regex>" or an exact module name, or a class-name target
// (case-insensitive substring of "Linear" class names) when `is_linear` is true.
bool CompressedTensorsTargetMatch(const std::string& target, const std::string& module);
// transformers FineGrainedFP8 / fbgemm: digits in the module name become '*' and any entry that
// is a substring of the result (or of the name itself) matches.
bool ModulesToNotConvertMatch(const std::vector<std::string>& entries, const std::string& module);
// ModelOpt exclude_modules: fnmatch, also a plain substring, also "foo*" as "foo" and "foo.*".
bool ModelOptExcludeMatch(const std::string& pattern, const std::string& module);

}  // namespace tessera::quant

#endif  // TESSERA_ENGINE_QUANT_NAME_MATCH_H_
