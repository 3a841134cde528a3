// `tessera synth --shape NAME --type T --out FILE [--vocab-from VOCAB.gguf] [--seed N]`: writes a
// random-weight GGUF of a real model's shape (engine/model/synth_model.h) for benchmarks;
// `--format hf --out DIR` writes the same shape as a Hugging Face bf16 directory instead.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "engine/model/synth_model.h"

namespace tessera::cli {
namespace {

const std::vector<FlagSpec> kFlags = {
    {"shape", false,
     "tinyllama-1.1b, llama-3.2-1b, qwen3-0.6b, qwen3-30b-a3b (MoE, GGUF only) or gemma-3-1b (GGUF "
     "only)"},
    {"layers", false,
     "write only the first N layers of the shape (a smaller file; K-quant mixes "
     "pick their Q6_K layers from the N)"},
    {"type", false,
     "F32, F16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K, or llama.cpp's mixes Q4_K_M / Q5_K_M (Q6_K output, "
     "some attn_v / ffn_down) (default Q4_0); --format hf is always BF16"},
    {"format", false,
     "gguf (default) or hf (a directory: config.json, bf16 safetensors, tokenizer)"},
    {"out", false, "output .gguf path (a directory for --format hf)"},
    {"vocab-from", false, "GGUF whose tokenizer is copied (its vocab size must match the shape)"},
    {"seed", false, "random seed (default 0)"},
    {"threads", false, "accepted for symmetry with other commands; synth is single-threaded"},
    {"help", true, "show this help"},
};

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
  return 1;
}

}  // namespace

int RunSynth(const std::vector<std::string>& argv) {
  auto args = Args::Parse(argv, kFlags);
  if (!args.ok()) return Fail(args.status());
  if (args->GetBool("help") || !args->Has("shape") || !args->Has("out")) {
    std::fprintf(stderr, "usage: tessera synth --shape NAME --type T --out FILE [--vocab-from F]\n"
                 "shapes: %s\n%s", absl::StrJoin(model::SynthShapeNames(), ", ").c_str(),
                 FlagsHelp(kFlags).c_str());
    return args->GetBool("help") ? 0 : 2;
  }
  auto seed = args->GetInt("seed", 0);
  if (!seed.ok()) return Fail(seed.status());
  auto layers = args->GetInt("layers", 0);
  if (!layers.ok()) return Fail(layers.status());
  model::SynthOptions o;
  o.shape = args->GetString("shape");
  o.type = args->GetString("type", "Q4_0");
  o.seed = static_cast<uint64_t>(*seed);
  o.vocab_from = args->GetString("vocab-from");
  o.layers = *layers;
  const std::string out = args->GetString("out");
  const std::string format = args->GetString("format", "gguf");
  if (format == "hf") {
    if (args->Has("type") && o.type != "BF16") {
      return Fail(absl::InvalidArgumentError("--format hf writes BF16; drop --type or say BF16"));
    }
    if (!o.vocab_from.empty()) {
      return Fail(absl::InvalidArgumentError(
          "--vocab-from copies a GGUF tokenizer and applies to --format gguf only"));
    }
    o.type = "BF16";
    if (auto st = model::WriteSynthHfDir(o, out); !st.ok()) return Fail(st);
  } else if (format == "gguf") {
    if (auto st = model::WriteSynthGguf(o, out); !st.ok()) return Fail(st);
  } else {
    return Fail(absl::InvalidArgumentError(
        absl::StrCat("--format must be gguf or hf, not '", format, "'")));
  }
  std::printf("wrote %s (%s, %s, seed %lld)\n", out.c_str(), o.shape.c_str(), o.type.c_str(),
              static_cast<long long>(*seed));
  return 0;
}

}  // namespace tessera::cli
