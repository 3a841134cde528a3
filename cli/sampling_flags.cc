#include "cli/sampling_flags.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "engine/common/status_macros.h"

namespace tessera::cli {

std::vector<FlagSpec> SamplingFlagSpecs() {
  return {
      {"max_new_tokens", false, "tokens to generate (default 128)"},
      {"temperature", false, "0 = greedy (default 0.8)"},
      {"top_k", false, "keep the k most likely tokens (0 = off)"},
      {"top_p", false, "nucleus probability in (0, 1]"},
      {"min_p", false, "drop tokens below min_p * p_max"},
      {"repetition_penalty", false, "HF-style repetition penalty (1 = off)"},
      {"presence_penalty", false, "OpenAI-style presence penalty"},
      {"frequency_penalty", false, "OpenAI-style frequency penalty"},
      {"seed", false, "RNG seed (same seed, same tokens)"},
      {"stop", false, "stop strings, comma-separated"},
      {"stop_token_ids", false, "stop token ids, comma-separated"},
      {"ignore_eos", true, "keep going past EOS"},
      {"logprobs", false, "top alternatives to report per token"},
  };
}

absl::Status ParseSamplingFlags(const Args& args, runtime::GenerationRequest* r) {
  auto f = [&](const char* name, double def) { return args.GetDouble(name, def); };
  TESSERA_ASSIGN_OR_RETURN(double temperature, f("temperature", 0.8));
  TESSERA_ASSIGN_OR_RETURN(double top_p, f("top_p", 1.0));
  TESSERA_ASSIGN_OR_RETURN(double min_p, f("min_p", 0.0));
  TESSERA_ASSIGN_OR_RETURN(double rep, f("repetition_penalty", 1.0));
  TESSERA_ASSIGN_OR_RETURN(double presence, f("presence_penalty", 0.0));
  TESSERA_ASSIGN_OR_RETURN(double frequency, f("frequency_penalty", 0.0));
  TESSERA_ASSIGN_OR_RETURN(int64_t top_k, args.GetInt("top_k", 0));
  TESSERA_ASSIGN_OR_RETURN(int64_t max_new, args.GetInt("max_new_tokens", 128));
  TESSERA_ASSIGN_OR_RETURN(int64_t logprobs, args.GetInt("logprobs", 0));
  r->sampling.temperature = static_cast<float>(temperature);
  r->sampling.top_p = static_cast<float>(top_p);
  r->sampling.min_p = static_cast<float>(min_p);
  r->sampling.repetition_penalty = static_cast<float>(rep);
  r->sampling.presence_penalty = static_cast<float>(presence);
  r->sampling.frequency_penalty = static_cast<float>(frequency);
  r->sampling.top_k = static_cast<int32_t>(top_k);
  r->sampling.logprobs = static_cast<int32_t>(logprobs);
  r->return_logprobs = logprobs > 0;
  r->stopping.max_new_tokens = static_cast<int32_t>(max_new);
  r->stopping.ignore_eos = args.GetBool("ignore_eos");
  if (args.Has("seed")) {
    uint64_t seed;
    if (!absl::SimpleAtoi(args.GetString("seed"), &seed)) {
      return absl::InvalidArgumentError("flag --seed: not an unsigned integer");
    }
    r->sampling.seed = seed;
  }
  if (args.Has("stop")) {
    for (absl::string_view s : absl::StrSplit(args.GetString("stop"), ',', absl::SkipEmpty())) {
      r->stopping.stop_strings.emplace_back(s);
    }
  }
  if (args.Has("stop_token_ids")) {
    for (absl::string_view s : absl::StrSplit(args.GetString("stop_token_ids"), ',', absl::SkipEmpty())) {
      int32_t id;
      if (!absl::SimpleAtoi(s, &id)) {
        return absl::InvalidArgumentError(absl::StrCat("flag --stop_token_ids: '", s, "' is not an id"));
      }
      r->stopping.stop_token_ids.push_back(id);
    }
  }
  return absl::OkStatus();
}

}  // namespace tessera::cli
