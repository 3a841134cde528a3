#include "engine/quant/precision_plan.h"

#include <fstream>
#include <map>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"
#include "engine/quant/name_match.h"
#include "nlohmann/json.hpp"

namespace tessera::quant {
namespace {

constexpr const char* kSchemes[] = {"bf16",     "fp8",       "ptpc_fp8",  "fp8_wo",    "int8",
                                    "int4_wo_32", "int4_wo_64", "int4_wo_128",
                                    "int4_wo_per_channel", "nvfp4", "nvfp4_w4a16", "mxfp4",
                                    "bnb_nf4"};

std::string Shape(const LinearSpec& s) { return absl::StrFormat("%dx%d", s.n, s.k); }

}  // namespace

bool IsKnownScheme(const std::string& scheme) {
  for (const char* s : kSchemes) {
    if (scheme == s) return true;
  }
  return false;
}

absl::StatusOr<PlanOverrides> PlanOverrides::FromJson(const std::string& text) {
  auto j = nlohmann::ordered_json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return absl::InvalidArgumentError("precision plan: not a JSON object");
  auto rules = j.find("rules");
  if (rules == j.end() || !rules->is_array()) {
    return absl::InvalidArgumentError("precision plan: missing \"rules\" array");
  }
  PlanOverrides out;
  for (size_t i = 0; i < rules->size(); ++i) {
    const auto& r = (*rules)[i];
    const std::string where = absl::StrCat("precision plan rule ", i + 1);
    if (!r.is_object() || !r.contains("match") || !r["match"].is_string() || !r.contains("scheme") ||
        !r["scheme"].is_string()) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": needs string \"match\" and \"scheme\""));
    }
    PlanRule rule{r["match"].get<std::string>(), r["scheme"].get<std::string>(), std::nullopt};
    if (!IsKnownScheme(rule.scheme)) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": unknown scheme '", rule.scheme, "' (known: ",
                                                     absl::StrJoin(kSchemes, ", "), ")"));
    }
    if (auto f = r.find("fallback"); f != r.end() && !f->is_null()) {
      if (!f->is_string() || !IsKnownScheme(f->get<std::string>())) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": unknown fallback scheme ", f->dump()));
      }
      rule.fallback = f->get<std::string>();
    }
    out.rules.push_back(std::move(rule));
  }
  return out;
}

absl::StatusOr<PlanOverrides> PlanOverrides::FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read precision plan ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  auto p = FromJson(ss.str());
  if (!p.ok()) return absl::Status(p.status().code(), absl::StrCat(path, ": ", p.status().message()));
  return p;
}

absl::StatusOr<LinearSpec> OnlineSchemeSpec(const std::string& scheme, const std::string& module,
                                            int64_t n, int64_t k) {
  LinearSpec s;
  s.module = module;
  s.n = n;
  s.k = k;
  s.source = "online RTN";
  auto need = [&](int64_t multiple, const char* what) -> absl::Status {
    if (k % multiple == 0) return absl::OkStatus();
    return absl::FailedPreconditionError(
        absl::StrFormat("K = %d is not a multiple of %d for %s", k, multiple, what));
  };
  if (scheme == "bf16") {
    s.weight_format = WeightFormat::kBF16;
  } else if (scheme == "fp8" || scheme == "ptpc_fp8") {
    s.weight_format = WeightFormat::kFp8E4m3;
    s.weight_scale = scheme == "fp8" ? ScaleGranularity::kTensor : ScaleGranularity::kRowwise;
    s.weight_scale_dtype = "F32";
    s.activation = ActivationFormat::kFp8;
    s.activation_scale = ScaleGranularity::kColwise;  // no calibration data: dynamic per token
    s.activation_origin = ScaleOrigin::kDynamic;
  } else if (scheme == "fp8_wo") {
    // FP8 weight-only (W8A16, per-channel scales): vLLM's FP8 Marlin form, for hardware without
    // FP8 GEMMs; here the AVX-512 BF16 kernel with exact (hi + lo) activations.
    s.weight_format = WeightFormat::kFp8E4m3;
    s.weight_scale = ScaleGranularity::kRowwise;
    s.weight_scale_dtype = "F32";
  } else if (scheme == "int8") {
    s.weight_format = WeightFormat::kInt8;
    s.weight_scale = ScaleGranularity::kRowwise;
    s.weight_scale_dtype = "F32";
    s.activation = ActivationFormat::kInt8;
    s.activation_scale = ScaleGranularity::kColwise;
    s.activation_origin = ScaleOrigin::kDynamic;
  } else if (scheme.rfind("int4_wo_", 0) == 0) {
    s.weight_format = WeightFormat::kInt4;
    s.weight_scale_dtype = "F32";
    if (scheme == "int4_wo_per_channel") {
      s.weight_scale = ScaleGranularity::kRowwise;
      s.group_size = -1;
    } else {
      s.weight_scale = ScaleGranularity::kGroup;
      s.group_size = std::stoi(scheme.substr(8));
      TESSERA_RETURN_IF_ERROR(need(s.group_size, scheme.c_str()));
    }
  } else if (scheme == "nvfp4" || scheme == "nvfp4_w4a16") {
    TESSERA_RETURN_IF_ERROR(need(16, scheme.c_str()));
    s.weight_format = WeightFormat::kNvfp4;
    s.weight_scale = ScaleGranularity::kGroup;
    s.group_size = 16;
    s.weight_scale_dtype = "F8_E4M3";
    s.global_scale = GlobalScaleConvention::kMultiplier;
    // nvfp4_w4a16: NVFP4 weights with 16-bit activations (compressed-tensors' NVFP4A16, vLLM's
    // FP4 Marlin form for GPUs without FP4 GEMMs); on the CPU the bf16-pair panels.
    if (scheme == "nvfp4_w4a16") return s;
    s.activation = ActivationFormat::kNvfp4;
    s.activation_scale = ScaleGranularity::kGroup;
    s.activation_group = 16;
    s.activation_origin = ScaleOrigin::kDynamic;  // global scale from each row's amax (torchao)
  } else if (scheme == "bnb_nf4") {
    // bitsandbytes' load_in_4bit on the fly (its quantize_4bit: NF4, absmax blocks of 64, no
    // double quant), as transformers and vLLM quantize an unquantized model with it.
    TESSERA_RETURN_IF_ERROR(need(64, "bnb_nf4"));
    s.weight_format = WeightFormat::kBnb4bit;
    s.weight_scale = ScaleGranularity::kGroup;
    s.group_size = 64;
    s.weight_scale_dtype = "F32 absmax";
  } else if (scheme == "mxfp4") {
    TESSERA_RETURN_IF_ERROR(need(32, "mxfp4"));
    s.weight_format = WeightFormat::kMxfp4;
    s.weight_scale = ScaleGranularity::kGroup;
    s.group_size = 32;
    s.weight_scale_dtype = "E8M0";
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown scheme '", scheme, "'"));
  }
  return s;
}

const LinearSpec* PrecisionPlan::Find(const std::string& module) const {
  auto it = index_.find(module);
  return it == index_.end() ? nullptr : &layers_[it->second];
}

absl::StatusOr<PrecisionPlan> PrecisionPlan::Resolve(const std::vector<LinearModule>& modules,
                                                     const QuantConfig& quant_config,
                                                     const io::TensorStore& store,
                                                     const PlanOverrides& overrides,
                                                     const KernelSelector& backend) {
  PrecisionPlan plan;
  plan.quant_method_ = quant_config.Summary();
  plan.backend_ = backend.name();
  std::vector<int> rule_hits(overrides.rules.size(), 0);
  for (const LinearModule& m : modules) {
    TESSERA_ASSIGN_OR_RETURN(LinearSpec stored, quant_config.Resolve(m.module, m.prefix, m.n, m.k, store));
    LinearSpec spec = stored;
    int rule_index = -1;
    for (size_t i = 0; i < overrides.rules.size(); ++i) {
      if (GlobMatch(overrides.rules[i].match, m.module)) {
        rule_index = static_cast<int>(i);
        break;
      }
    }
    if (rule_index >= 0) {
      const PlanRule& rule = overrides.rules[rule_index];
      ++rule_hits[rule_index];
      const std::string rule_name = absl::StrFormat("override rule %d: %s -> %s", rule_index + 1, rule.match, rule.scheme);
      auto apply = [&](const std::string& scheme, const std::string& why) -> absl::StatusOr<LinearSpec> {
        if (scheme == "bf16") {
          if (IsHighPrecision(stored.weight_format)) {
            LinearSpec s = stored;
            s.reason = absl::StrCat(why, " (already ", WeightFormatName(stored.weight_format), ")");
            return s;
          }
          LinearSpec s = stored;  // keep the stored layout; the backend dequantizes it at load
          s.weight_format = WeightFormat::kBF16;
          s.weight_scale = ScaleGranularity::kNone;
          s.activation = ActivationFormat::kFloat;
          s.activation_scale = ScaleGranularity::kNone;
          s.source = absl::StrCat("dequantized from ", stored.SchemeName(), " (", stored.source, ")");
          s.reason = absl::StrCat(why, " (dequantize ", stored.SchemeName(), ")");
          s.global_scale = GlobalScaleConvention::kNone;
          s.zero_point = ZeroPointKind::kNone;
          s.act_order = false;
          return s;
        }
        if (!IsHighPrecision(stored.weight_format)) {
          if (stored.SchemeName() == scheme) {
            LinearSpec s = stored;
            s.reason = absl::StrCat(why, " (checkpoint already ", scheme, ")");
            return s;
          }
          return absl::InvalidArgumentError(absl::StrFormat(
              "layer %s: %s asks for %s but the checkpoint stores %s; re-quantizing a quantized "
              "layer to another lossy format is not allowed (use bf16 to dequantize)",
              m.module, why, scheme, stored.SchemeName()));
        }
        TESSERA_ASSIGN_OR_RETURN(LinearSpec s, OnlineSchemeSpec(scheme, m.module, m.n, m.k));
        s.reason = absl::StrCat(why, " (online RTN from ", WeightFormatName(stored.weight_format), ")");
        return s;
      };
      auto primary = apply(rule.scheme, rule_name);
      if (primary.ok()) {
        spec = *primary;
      } else if (rule.fallback && primary.status().code() == absl::StatusCode::kFailedPrecondition) {
        auto fb = apply(*rule.fallback, absl::StrFormat("fallback of rule %d: %s", rule_index + 1,
                                                        std::string(primary.status().message())));
        if (!fb.ok()) return fb.status();
        spec = *fb;
      } else if (primary.status().code() == absl::StatusCode::kFailedPrecondition) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "layer %s: %s cannot apply: %s, and the rule names no fallback", m.module, rule_name,
            primary.status().message()));
      } else {
        return primary.status();
      }
    }
    spec.module = m.module;
    absl::Status sel = backend.Select(&spec);
    if (!sel.ok()) {
      return absl::Status(sel.code(), absl::StrFormat("layer %s (%s): %s", m.module, spec.SchemeName(), sel.message()));
    }
    plan.index_.emplace(spec.module, plan.layers_.size());
    plan.layers_.push_back(std::move(spec));
  }
  for (size_t i = 0; i < overrides.rules.size(); ++i) {
    if (rule_hits[i] == 0) {
      plan.warnings_.push_back(absl::StrFormat("precision plan rule %d (%s -> %s) matches no layer", i + 1,
                                               overrides.rules[i].match, overrides.rules[i].scheme));
    }
  }
  // Fused groups (q/k/v, gate/up) run as one GEMM in vLLM, which therefore refuses an HF
  // checkpoint whose group members differ; we hold HF checkpoints (and plans over them) to the
  // same rule. GGUF files are exempt, plans over them included: llama.cpp's K-quant mixes give
  // members different types on purpose (Q4_K_M keeps attn_v in Q6_K in some layers, as vLLM's GGUF
  // loader accepts per shard), and every backend here runs each member as its own Linear.
  std::map<std::string, std::vector<const LinearSpec*>> groups;
  if (store.kind() != io::ContainerKind::kGguf) {
    for (size_t i = 0; i < modules.size(); ++i) {
      if (modules[i].fused_group.empty()) continue;
      groups[modules[i].fused_group].push_back(&plan.layers_[i]);
    }
  }
  for (const auto& [group, specs] : groups) {
    for (const LinearSpec* s : specs) {
      if (s->SchemeName() != specs[0]->SchemeName() || s->Describe() != specs[0]->Describe()) {
        std::vector<std::string> parts;
        for (const LinearSpec* t : specs) parts.push_back(absl::StrCat(t->module, " = ", t->SchemeName()));
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: fused projections resolve to different precisions (%s); they must agree",
            group, absl::StrJoin(parts, ", ")));
      }
    }
  }
  return plan;
}

namespace {

struct TableRow {
  std::string module, shape, scheme, format, kernel, reason;
};

// "<prefix>.experts.<id>.<suffix>" split at the expert id; false for other modules.
bool SplitExpertModule(const std::string& module, std::string* prefix, int64_t* id,
                       std::string* suffix) {
  const size_t at = module.find(".experts.");
  if (at == std::string::npos) return false;
  const size_t begin = at + 9, dot = module.find('.', begin);
  if (dot == std::string::npos || dot == begin) return false;
  if (!absl::SimpleAtoi(module.substr(begin, dot - begin), id)) return false;
  *prefix = module.substr(0, begin);
  *suffix = module.substr(dot);
  return true;
}

// A MoE layer's expert rows that agree on everything but the expert id print as one line per
// projection ("model.layers.3.mlp.experts.{0..127}.up_proj"): a 128-expert model's table would
// otherwise be 18k lines of the same few. A layer whose experts differ prints every row.
std::vector<TableRow> CollapseExperts(const std::vector<TableRow>& rows) {
  std::vector<TableRow> out;
  for (size_t i = 0; i < rows.size();) {
    std::string prefix, suffix;
    int64_t id = 0;
    if (!SplitExpertModule(rows[i].module, &prefix, &id, &suffix)) {
      out.push_back(rows[i++]);
      continue;
    }
    // The layer's block of expert rows, grouped by projection in first-seen order.
    std::vector<std::string> order;
    std::map<std::string, std::vector<std::pair<int64_t, const TableRow*>>> by_suffix;
    size_t j = i;
    for (; j < rows.size(); ++j) {
      std::string p, sfx;
      int64_t e = 0;
      if (!SplitExpertModule(rows[j].module, &p, &e, &sfx) || p != prefix) break;
      if (!by_suffix.contains(sfx)) order.push_back(sfx);
      by_suffix[sfx].push_back({e, &rows[j]});
    }
    bool uniform = true;
    for (const auto& [sfx, members] : by_suffix) {
      for (size_t m = 0; m < members.size(); ++m) {
        const TableRow& a = *members[m].second;
        const TableRow& b = *members[0].second;
        uniform = uniform && members[m].first == members[0].first + static_cast<int64_t>(m) &&
                  a.shape == b.shape && a.scheme == b.scheme && a.format == b.format &&
                  a.kernel == b.kernel && a.reason == b.reason;
      }
    }
    if (!uniform) {
      out.insert(out.end(), rows.begin() + i, rows.begin() + j);
    } else {
      for (const std::string& sfx : order) {
        const auto& members = by_suffix[sfx];
        TableRow row = *members[0].second;
        row.module = absl::StrCat(prefix, "{", members.front().first, "..", members.back().first,
                                  "}", sfx);
        out.push_back(std::move(row));
      }
    }
    i = j;
  }
  return out;
}

}  // namespace

std::string PrecisionPlan::ToTable() const {
  std::vector<TableRow> rows;
  for (const LinearSpec& s : layers_) {
    rows.push_back({s.module, Shape(s), s.SchemeName(), s.Describe(), s.kernel, s.reason});
  }
  rows = CollapseExperts(rows);
  size_t wm = 6, ws = 6, wd = 5, wk = 6;
  for (const TableRow& r : rows) {
    wm = std::max(wm, r.module.size());
    ws = std::max(ws, r.scheme.size());
    wd = std::max(wd, r.format.size());
    wk = std::max(wk, r.kernel.size());
  }
  std::string out = absl::StrFormat("precision plan (%s; backend %s)\n", quant_method_, backend_);
  absl::StrAppendFormat(&out, "%-*s  %-10s  %-*s  %-*s  %-*s  %s\n", wm, "module", "n x k", ws,
                        "scheme", wd, "format", wk, "kernel", "reason");
  for (const TableRow& r : rows) {
    absl::StrAppendFormat(&out, "%-*s  %-10s  %-*s  %-*s  %-*s  %s\n", wm, r.module, r.shape, ws,
                          r.scheme, wd, r.format, wk, r.kernel, r.reason);
  }
  for (const std::string& w : warnings_) absl::StrAppend(&out, "warning: ", w, "\n");
  return out;
}

}  // namespace tessera::quant
