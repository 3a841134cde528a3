// Random-weight models of real architectures' shapes (tessera synth), for benchmarks and load
// tests where only the shape and the weight format matter. Weights are deterministic for a seed
// (each tensor's stream is seeded from the seed and the tensor's name), drawn ~N(0, 0.02²) like an
// initialized transformer, norms are 1. The output is a llama.cpp-style GGUF with complete
// architecture metadata and a tokenizer copied from a vocab GGUF (or a minimal byte-fallback
// SentencePiece vocabulary when none is given), so llama.cpp and gguf-py read it too, or a
// Hugging Face bf16 directory (WriteSynthHfDir) that transformers loads.
#ifndef TESSERA_ENGINE_MODEL_SYNTH_MODEL_H_
#define TESSERA_ENGINE_MODEL_SYNTH_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tessera::model {

struct SynthShape {
  std::string name;
  std::string arch;  // GGUF general.architecture: "llama", "qwen3", "qwen3moe", "gemma3", "gpt-oss"
  int64_t hidden = 0, layers = 0, heads = 0, kv_heads = 0, head_dim = 0, ffn = 0, vocab = 0;
  // Sparse MoE MLPs (qwen3moe): experts of expert_ffn, experts_used per token, stacked into
  // blk.N.ffn_{gate,up,down}_exps as llama.cpp writes them, an F32 router (ffn_gate_inp, which
  // llama-quantize leaves unquantized). experts 0: dense MLPs of ffn.
  int64_t experts = 0, experts_used = 0, expert_ffn = 0;
  int64_t context = 2048;
  // gemma3: five of every six layers attend through this window (llama.cpp's default pattern),
  // with their own RoPE base 10000; 0: none.
  int64_t sliding_window = 0;
  // gpt-oss: YaRN over this many positions by this factor (0: none); the attention sinks and the
  // q/k/v/o, router and expert biases llama.cpp's openai-moe graph reads; windows on even layers.
  double yarn_factor = 0.0;
  int64_t yarn_original_context = 0;
  double rope_theta = 10000.0;
  double rms_eps = 1e-5;
  bool tied_embeddings = false;

  // Linear weights read per decoded token (all layers, the experts one token uses, lm_head).
  double LinearParams() const;
};

// The named shapes: tinyllama-1.1b, llama-3.2-1b, qwen3-0.6b, qwen3-30b-a3b, gemma-3-1b,
// gpt-oss-20b.
std::vector<std::string> SynthShapeNames();
absl::StatusOr<SynthShape> FindSynthShape(const std::string& name);

struct SynthOptions;
// `shape` cut to options.layers layers when that is set (an error naming the bounds when it is
// outside [1, shape.layers]).
absl::Status ApplySynthLayerLimit(const SynthOptions& options, SynthShape& shape);

struct SynthOptions {
  std::string shape;
  // F32, F16, Q8_0, Q4_0, Q4_K, Q4_K_M, Q5_K, Q5_K_M, Q6_K, or MXFP4 (MoE shapes: the experts in
  // MXFP4 and the rest in Q8_0, as gpt-oss's GGUFs ship).
  std::string type = "Q4_0";
  uint64_t seed = 0;
  std::string vocab_from;     // a GGUF whose tokenizer.* keys are copied; empty = generated
  int64_t layers = 0;         // > 0: only the first `layers` layers (a quicker file of the shape)
};

// Matrices whose rows the requested type's blocks do not tile are stored the way llama.cpp's
// quantizer falls back: Q4_K rows that are not a multiple of 256 become Q8_0 (llama.cpp takes
// Q5_0, which synth does not write), and rows that are not a multiple of 32 become F16. The named
// shapes tile everywhere; the fallback matters for small shapes. Norms are always F32.
absl::Status WriteSynthGguf(const SynthOptions& options, const std::string& out_path);
// The same for a shape that is not one of the named ones (tests use tiny ones); options.shape is
// ignored.
absl::Status WriteSynthGguf(const SynthShape& shape, const SynthOptions& options,
                            const std::string& out_path);

// Row `row` of the synthetic matrix named `gguf_name` (llama.cpp naming, e.g.
// "blk.0.attn_q.weight"): the f32 values every output format of the same seed starts from.
void SynthMatrixRow(uint64_t seed, const std::string& gguf_name, int64_t row, int64_t cols,
                    float* out);

// The same model as a Hugging Face directory: config.json (LlamaForCausalLM or
// Qwen3ForCausalLM), model.safetensors in bf16 with the HF tensor names, and a generated
// byte-level BPE tokenizer (tokenizer.json: the 256 byte tokens plus <unk> <s> </s> and
// placeholders up to the vocabulary size; --vocab-from applies to GGUF output only). Matrices hold
// the GGUF file's values rounded to bf16 in HF layout ([out, in], q/k not permuted: the HF file
// runs rotate-half RoPE on them, so it is the same distribution, not the same function).
absl::Status WriteSynthHfDir(const SynthOptions& options, const std::string& dir);
absl::Status WriteSynthHfDir(const SynthShape& shape, const SynthOptions& options,
                             const std::string& dir);

}  // namespace tessera::model

#endif  // TESSERA_ENGINE_MODEL_SYNTH_MODEL_H_
