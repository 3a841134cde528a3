#include "engine/model/synth_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "engine/common/status_macros.h"
#include "engine/io/gguf_file.h"
#include "engine/io/gguf_writer.h"
#include "engine/model/ggml_quantize.h"
#include "kernels/numeric/half.h"

namespace tessera::model {
namespace {

// ggml type ids (ggml.h) and llama_ftype values for general.file_type.
constexpr uint32_t kGgmlF32 = 0, kGgmlF16 = 1, kGgmlQ4_0 = 2, kGgmlQ8_0 = 8, kGgmlQ4_K = 12,
                   kGgmlQ5_K = 13, kGgmlQ6_K = 14, kGgmlMxfp4 = 39;

struct TypeInfo {
  uint32_t ggml_type;
  uint32_t file_type;
  int64_t block;  // values per block
  int64_t bytes;  // bytes per block
  bool k_mix = false;  // Q4_K_M / Q5_K_M: some tensors in Q6_K (MixedKType)
  bool mxfp4_experts = false;  // MXFP4: stacked experts in MXFP4, everything else as this type
};

absl::StatusOr<TypeInfo> LookupType(const std::string& t) {
  if (t == "F32") return TypeInfo{kGgmlF32, 0, 1, 4};
  if (t == "F16") return TypeInfo{kGgmlF16, 1, 1, 2};
  if (t == "Q4_0") return TypeInfo{kGgmlQ4_0, 2, 32, 18};
  if (t == "Q8_0") return TypeInfo{kGgmlQ8_0, 7, 32, 34};
  // Q4_K everywhere it fits is what `llama-quantize --pure ... Q4_K_M` writes, and that keeps
  // its file_type (15, MOSTLY_Q4_K_M). Plain Q4_K_M would put output.weight (and a tied
  // token_embd) and half the layers' attn_v/ffn_down in Q6_K, which synth does not write.
  if (t == "Q4_K") return TypeInfo{kGgmlQ4_K, 15, 256, 144};
  // Q4_K_M / Q5_K_M as llama-quantize writes them: Q4_K / Q5_K, with the tensors MixedKType names
  // in Q6_K (file types MOSTLY_Q4_K_M = 15, MOSTLY_Q5_K_M = 17, MOSTLY_Q6_K = 18).
  if (t == "Q4_K_M") return TypeInfo{kGgmlQ4_K, 15, 256, 144, true};
  if (t == "Q5_K") return TypeInfo{kGgmlQ5_K, 17, 256, 176};
  if (t == "Q5_K_M") return TypeInfo{kGgmlQ5_K, 17, 256, 176, true};
  if (t == "Q6_K") return TypeInfo{kGgmlQ6_K, 18, 256, 210};
  // LLAMA_FTYPE_MOSTLY_MXFP4_MOE (38): MXFP4 experts, the other matrices Q8_0.
  if (t == "MXFP4") return TypeInfo{kGgmlQ8_0, 38, 32, 34, false, true};
  return absl::InvalidArgumentError(absl::StrCat("synth type '", t,
                                                 "' is not supported (F32, F16, Q8_0, Q4_0, Q4_K, "
                                                 "Q4_K_M, Q5_K, Q5_K_M, Q6_K, MXFP4)"));
}

// llama.cpp's use_more_bits (llama-quant.cpp): the first and last eighth of the layers and every
// third layer between them.
bool UseMoreBits(int64_t layer, int64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// The Q4_K_M / Q5_K_M mix of llama_tensor_get_type: the output matrix (output.weight, or a tied
// token_embd.weight, which is then the output), and attn_v / ffn_down of the layers UseMoreBits
// picks, in Q6_K; everything else the requested type. layer < 0: not a per-layer tensor.
TypeInfo MixedKType(const TypeInfo& requested, const std::string& name, int64_t layer,
                    int64_t layers, bool tied_embeddings) {
  const TypeInfo q6_k{kGgmlQ6_K, 18, 256, 210};
  if (name == (tied_embeddings ? "token_embd.weight" : "output.weight")) return q6_k;
  const bool more_bits_kind = absl::EndsWith(name, "attn_v.weight") ||
                              absl::EndsWith(name, "ffn_down.weight") ||
                              absl::EndsWith(name, "ffn_down_exps.weight");
  if (layer >= 0 && more_bits_kind && UseMoreBits(layer, layers)) return q6_k;
  TypeInfo t = requested;
  t.k_mix = false;
  return t;
}

// The type a matrix with rows of `cols` values is stored in. Like llama.cpp's quantizer
// (llama-quant.cpp, convert_incompatible_tensor), rows that the requested type's blocks do not
// tile fall back: llama.cpp takes Q5_0 for Q4_K, which synth does not write, so Q4_K falls back
// to Q8_0 (more bits, never worse), as Q6_K does in llama.cpp; anything that 32-value blocks do
// not tile becomes F16.
TypeInfo TensorType(const TypeInfo& requested, int64_t cols) {
  if (cols % requested.block == 0) return requested;
  if (requested.block == 256 && cols % 32 == 0) return TypeInfo{kGgmlQ8_0, 7, 32, 34};
  return TypeInfo{kGgmlF16, 1, 1, 2};
}

uint64_t SplitMix(uint64_t& s) {
  uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t HashName(const std::string& s) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Approximately N(0, std²): the sum of four uniforms (Irwin-Hall), cheap and deterministic.
void FillRandom(uint64_t seed, const std::string& name, float stddev, float* out, int64_t n) {
  uint64_t s = seed ^ HashName(name);
  // Each term is uniform on [0, 65536): the centred sum has variance 4 · 65536² / 12.
  const float scale = stddev * std::sqrt(3.0f) / 65536.0f;
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = SplitMix(s);
    const int32_t a = static_cast<int32_t>(r & 0xFFFF) + static_cast<int32_t>((r >> 16) & 0xFFFF) +
                      static_cast<int32_t>((r >> 32) & 0xFFFF) + static_cast<int32_t>(r >> 48) -
                      2 * 65535;
    out[i] = static_cast<float>(a) * scale;
  }
}

void PutHalf(uint8_t* p, float v) {
  const uint16_t h = numeric::FloatToHalf(v);
  std::memcpy(p, &h, 2);
}

io::GgufValue Value(io::GgufValueType type, decltype(io::GgufValue::value) v) {
  io::GgufValue out;
  out.type = type;
  out.value = std::move(v);
  return out;
}

io::GgufValue ArrayOf(io::GgufValueType element) {
  io::GgufValue out = Value(io::GgufValueType::kArray, std::vector<io::GgufValue>{});
  out.element_type = element;
  return out;
}

// A llama SentencePiece vocabulary: <unk> <s> </s>, the 256 byte tokens, then placeholders.
void AddGeneratedTokenizer(io::GgufWriter& w, int64_t vocab) {
  io::GgufValue tokens = ArrayOf(io::GgufValueType::kString);
  io::GgufValue scores = ArrayOf(io::GgufValueType::kF32);
  io::GgufValue types = ArrayOf(io::GgufValueType::kI32);
  auto& tv = std::get<std::vector<io::GgufValue>>(tokens.value);
  auto& sv = std::get<std::vector<io::GgufValue>>(scores.value);
  auto& yv = std::get<std::vector<io::GgufValue>>(types.value);
  for (int64_t i = 0; i < vocab; ++i) {
    std::string text;
    int64_t type = 1;  // normal
    if (i == 0) { text = "<unk>"; type = 2; }
    else if (i <= 2) { text = i == 1 ? "<s>" : "</s>"; type = 3; }
    else if (i < 3 + 256) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "<0x%02X>", static_cast<int>(i - 3));
      text = buf;
      type = 6;  // byte
    } else {
      text = absl::StrCat("\xE2\x96\x81t", i);  // "▁t<i>"
    }
    tv.push_back(Value(io::GgufValueType::kString, text));
    sv.push_back(Value(io::GgufValueType::kF32, -static_cast<double>(i)));
    yv.push_back(Value(io::GgufValueType::kI32, type));
  }
  w.AddString("tokenizer.ggml.model", "llama");
  w.AddMetadata("tokenizer.ggml.tokens", std::move(tokens));
  w.AddMetadata("tokenizer.ggml.scores", std::move(scores));
  w.AddMetadata("tokenizer.ggml.token_type", std::move(types));
  w.AddUint32("tokenizer.ggml.bos_token_id", 1);
  w.AddUint32("tokenizer.ggml.eos_token_id", 2);
  w.AddUint32("tokenizer.ggml.unknown_token_id", 0);
}

}  // namespace

double SynthShape::LinearParams() const {
  const double mlp = experts > 0 ? static_cast<double>(hidden) * expert_ffn * 3 * experts_used
                                 : static_cast<double>(hidden) * ffn * 3;
  const double per_layer = static_cast<double>(hidden) * (heads * head_dim) * 2 +
                           static_cast<double>(hidden) * (kv_heads * head_dim) * 2 + mlp;
  return per_layer * layers + static_cast<double>(hidden) * vocab;
}

std::vector<std::string> SynthShapeNames() {
  return {"tinyllama-1.1b", "llama-3.2-1b", "qwen3-0.6b",
          "qwen3-30b-a3b",  "gemma-3-1b",   "gpt-oss-20b"};
}

absl::StatusOr<SynthShape> FindSynthShape(const std::string& name) {
  SynthShape s;
  s.name = name;
  if (name == "tinyllama-1.1b") {
    s.arch = "llama";
    s.hidden = 2048, s.layers = 22, s.heads = 32, s.kv_heads = 4, s.head_dim = 64, s.ffn = 5632;
    s.vocab = 32000, s.context = 2048, s.rope_theta = 10000.0, s.rms_eps = 1e-5;
  } else if (name == "llama-3.2-1b") {
    // GGUF carries no llama3 rope scaling here; the shape, not the frequencies, is the point.
    s.arch = "llama";
    s.hidden = 2048, s.layers = 16, s.heads = 32, s.kv_heads = 8, s.head_dim = 64, s.ffn = 8192;
    s.vocab = 128256, s.context = 131072, s.rope_theta = 500000.0, s.rms_eps = 1e-5;
    s.tied_embeddings = true;
  } else if (name == "qwen3-0.6b") {
    s.arch = "qwen3";
    s.hidden = 1024, s.layers = 28, s.heads = 16, s.kv_heads = 8, s.head_dim = 128, s.ffn = 3072;
    s.vocab = 151936, s.context = 40960, s.rope_theta = 1000000.0, s.rms_eps = 1e-6;
    s.tied_embeddings = true;
  } else if (name == "qwen3-30b-a3b") {
    // Qwen3-30B-A3B: 128 experts of 768, 8 per token (3.3B of 30.5B weights active).
    s.arch = "qwen3moe";
    s.hidden = 2048, s.layers = 48, s.heads = 32, s.kv_heads = 4, s.head_dim = 128, s.ffn = 6144;
    s.experts = 128, s.experts_used = 8, s.expert_ffn = 768;
    s.vocab = 151936, s.context = 40960, s.rope_theta = 1000000.0, s.rms_eps = 1e-6;
  } else if (name == "gemma-3-1b") {
    // Gemma 3 1B (google/gemma-3-1b-it): one KV head of 256, GeGLU, sandwich norms, q/k norms,
    // 512-position windows on five of six layers, a 262k vocabulary tied to the embeddings.
    s.arch = "gemma3";
    s.hidden = 1152, s.layers = 26, s.heads = 4, s.kv_heads = 1, s.head_dim = 256, s.ffn = 6912;
    s.vocab = 262144, s.context = 32768, s.rope_theta = 1000000.0, s.rms_eps = 1e-6;
    s.tied_embeddings = true;
    s.sliding_window = 512;
  } else if (name == "gpt-oss-20b") {
    // openai/gpt-oss-20b: 32 experts of 2880, 4 per token (3.6B of 20.9B weights active), 64 query
    // heads of 64 over 8 KV heads, 128-position windows on every other layer, YaRN x32 over 4096.
    s.arch = "gpt-oss";
    s.hidden = 2880, s.layers = 24, s.heads = 64, s.kv_heads = 8, s.head_dim = 64, s.ffn = 2880;
    s.experts = 32, s.experts_used = 4, s.expert_ffn = 2880;
    s.vocab = 201088, s.context = 131072, s.rope_theta = 150000.0, s.rms_eps = 1e-5;
    s.sliding_window = 128;
    s.yarn_factor = 32.0, s.yarn_original_context = 4096;
  } else {
    return absl::NotFoundError(absl::StrCat("unknown synth shape '", name, "' (",
                                            absl::StrJoin(SynthShapeNames(), ", "), ")"));
  }
  return s;
}

void SynthMatrixRow(uint64_t seed, const std::string& gguf_name, int64_t row, int64_t cols,
                    float* out) {
  FillRandom(seed + static_cast<uint64_t>(row) * 0x632BE59BD9B4E019ull, gguf_name, 0.02f, out,
             cols);
}

absl::Status WriteSynthGguf(const SynthOptions& o, const std::string& out_path) {
  TESSERA_ASSIGN_OR_RETURN(SynthShape s, FindSynthShape(o.shape));
  return WriteSynthGguf(s, o, out_path);
}

absl::Status ApplySynthLayerLimit(const SynthOptions& o, SynthShape& s) {
  if (o.layers < 0 || o.layers > s.layers) {
    return absl::InvalidArgumentError(absl::StrCat("--layers ", o.layers, " is outside [1, ",
                                                   s.layers, "] for shape ", s.name));
  }
  if (o.layers > 0) s.layers = o.layers;
  return absl::OkStatus();
}

absl::Status WriteSynthGguf(const SynthShape& shape, const SynthOptions& o,
                            const std::string& out_path) {
  SynthShape s = shape;
  TESSERA_RETURN_IF_ERROR(ApplySynthLayerLimit(o, s));
  TESSERA_ASSIGN_OR_RETURN(TypeInfo ti, LookupType(o.type));
  io::GgufWriter w;
  const std::string a = s.arch;
  w.AddString("general.architecture", a);
  w.AddString("general.name", absl::StrCat("synth-", s.name, "-", o.type, "-seed", o.seed));
  w.AddUint32("general.file_type", ti.file_type);
  if (ti.block > 1) w.AddUint32("general.quantization_version", 2);
  w.AddUint32(a + ".context_length", static_cast<uint32_t>(s.context));
  w.AddUint32(a + ".embedding_length", static_cast<uint32_t>(s.hidden));
  w.AddUint32(a + ".block_count", static_cast<uint32_t>(s.layers));
  w.AddUint32(a + ".feed_forward_length", static_cast<uint32_t>(s.ffn));
  w.AddUint32(a + ".rope.dimension_count", static_cast<uint32_t>(s.head_dim));
  w.AddUint32(a + ".attention.head_count", static_cast<uint32_t>(s.heads));
  w.AddUint32(a + ".attention.head_count_kv", static_cast<uint32_t>(s.kv_heads));
  w.AddUint32(a + ".attention.key_length", static_cast<uint32_t>(s.head_dim));
  w.AddUint32(a + ".attention.value_length", static_cast<uint32_t>(s.head_dim));
  w.AddFloat32(a + ".attention.layer_norm_rms_epsilon", static_cast<float>(s.rms_eps));
  w.AddFloat32(a + ".rope.freq_base", static_cast<float>(s.rope_theta));
  w.AddUint32(a + ".vocab_size", static_cast<uint32_t>(s.vocab));
  if (s.sliding_window > 0) {
    w.AddUint32(a + ".attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
  }
  if (s.yarn_factor > 0) {
    w.AddString(a + ".rope.scaling.type", "yarn");
    w.AddFloat32(a + ".rope.scaling.factor", static_cast<float>(s.yarn_factor));
    w.AddUint32(a + ".rope.scaling.original_context_length",
                static_cast<uint32_t>(s.yarn_original_context));
  }
  if (s.experts > 0) {
    w.AddUint32(a + ".expert_count", static_cast<uint32_t>(s.experts));
    w.AddUint32(a + ".expert_used_count", static_cast<uint32_t>(s.experts_used));
    w.AddUint32(a + ".expert_feed_forward_length", static_cast<uint32_t>(s.expert_ffn));
  }

  std::unique_ptr<io::GgufFile> vocab;
  if (!o.vocab_from.empty()) {
    TESSERA_ASSIGN_OR_RETURN(vocab, io::GgufFile::Open(o.vocab_from));
    TESSERA_ASSIGN_OR_RETURN(auto tokens, vocab->metadata().GetArray("tokenizer.ggml.tokens"));
    if (static_cast<int64_t>(tokens->size()) != s.vocab) {
      return absl::InvalidArgumentError(absl::StrCat("--vocab-from '", o.vocab_from, "' has ",
                                                     tokens->size(), " tokens; shape ", s.name,
                                                     " needs ", s.vocab));
    }
    for (const io::GgufKeyValue& kv : vocab->metadata().entries()) {
      if (kv.key.rfind("tokenizer.", 0) == 0) w.AddMetadata(kv.key, kv.value);
    }
  } else {
    AddGeneratedTokenizer(w, s.vocab);
  }

  // Every tensor in llama.cpp's order and naming; dims in GGUF order [ne0 = in, ne1 = out].
  const uint64_t seed = o.seed;
  auto norm = [&](const std::string& name, int64_t n) {
    w.AddTensor(name, {n}, kGgmlF32, n * 4, [n](std::vector<uint8_t>* out) {
      out->resize(n * 4);
      const float one = 1.0f;
      for (int64_t i = 0; i < n; ++i) std::memcpy(out->data() + 4 * i, &one, 4);
      return absl::OkStatus();
    });
  };
  // A matrix, or with `stack` > 0 that many matrices stacked as one [stack, rows, cols] tensor
  // (a MoE layer's experts; matrix e draws its rows as the per-expert tensor "<base>.<e>.weight"
  // would, so seeds do not depend on the stacking).
  // A vector of small random values (biases, attention sinks), F32 as llama.cpp keeps them;
  // dims in GGUF order.
  auto vec = [&](const std::string& name, std::vector<int64_t> dims) {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    w.AddTensor(name, dims, kGgmlF32, n * 4, [=](std::vector<uint8_t>* out) {
      std::vector<float> v(n);
      FillRandom(seed, name, 0.02f, v.data(), n);
      out->resize(n * 4);
      std::memcpy(out->data(), v.data(), n * 4);
      return absl::OkStatus();
    });
  };
  auto matrix = [&](const std::string& name, int64_t rows, int64_t cols, int64_t layer = -1,
                    int64_t stack = 0) {
    const TypeInfo requested = ti.mxfp4_experts && stack > 0 ? TypeInfo{kGgmlMxfp4, 38, 32, 17}
                               : ti.k_mix ? MixedKType(ti, name, layer, s.layers, s.tied_embeddings)
                                          : ti;
    const TypeInfo t = TensorType(requested, cols);
    const int64_t row_bytes = cols / t.block * t.bytes;
    const int64_t count = std::max<int64_t>(stack, 1);
    const uint64_t bytes = static_cast<uint64_t>(rows) * row_bytes * count;
    std::vector<int64_t> dims = {cols, rows};
    if (stack > 0) dims.push_back(stack);
    w.AddTensor(name, dims, t.ggml_type, bytes,
                [=](std::vector<uint8_t>* out) {
                  out->resize(bytes);
                  std::vector<float> row(cols);
                  for (int64_t r = 0; r < rows * count; ++r) {
                    const std::string seed_name =
                        stack > 0 ? absl::StrCat(absl::StripSuffix(name, "_exps.weight"), ".",
                                                 r / rows, ".weight")
                                  : name;
                    SynthMatrixRow(seed, seed_name, r % rows, cols, row.data());
                    uint8_t* dst = out->data() + r * row_bytes;
                    switch (t.ggml_type) {
                      case kGgmlF32: std::memcpy(dst, row.data(), cols * 4); break;
                      case kGgmlF16:
                        for (int64_t i = 0; i < cols; ++i) PutHalf(dst + 2 * i, row[i]);
                        break;
                      case kGgmlQ8_0: QuantizeQ8_0(row.data(), cols, dst); break;
                      case kGgmlQ4_K: QuantizeQ4_K(row.data(), cols, dst); break;
                      case kGgmlQ5_K: QuantizeQ5_K(row.data(), cols, dst); break;
                      case kGgmlQ6_K: QuantizeQ6_K(row.data(), cols, dst); break;
                      case kGgmlMxfp4:
                        QuantizeMxfp4(row.data(), cols, dst);
                        break;
                      default: QuantizeQ4_0(row.data(), cols, dst); break;
                    }
                  }
                  return absl::OkStatus();
                });
  };
  const int64_t q = s.heads * s.head_dim, kv = s.kv_heads * s.head_dim;
  matrix("token_embd.weight", s.vocab, s.hidden);
  for (int64_t i = 0; i < s.layers; ++i) {
    const std::string p = absl::StrCat("blk.", i, ".");
    norm(p + "attn_norm.weight", s.hidden);
    matrix(p + "attn_q.weight", q, s.hidden);
    matrix(p + "attn_k.weight", kv, s.hidden);
    matrix(p + "attn_v.weight", kv, s.hidden, i);
    matrix(p + "attn_output.weight", s.hidden, q);
    const bool gpt_oss = s.arch == "gpt-oss";
    if (gpt_oss) {
      vec(p + "attn_q.bias", {q});
      vec(p + "attn_k.bias", {kv});
      vec(p + "attn_v.bias", {kv});
      vec(p + "attn_output.bias", {s.hidden});
      vec(p + "attn_sinks.weight", {s.heads});
    }
    const bool gemma3 = s.arch == "gemma3";
    if (s.arch == "qwen3" || s.arch == "qwen3moe" || gemma3) {
      norm(p + "attn_q_norm.weight", s.head_dim);
      norm(p + "attn_k_norm.weight", s.head_dim);
    }
    // Gemma's norms are stored as 1 + w (llama.cpp's converter): all-ones is w = 0.
    if (gemma3) norm(p + "post_attention_norm.weight", s.hidden);
    // gpt-oss names the MLP's input norm post_attention_norm.
    norm(p + (gpt_oss ? "post_attention_norm.weight" : "ffn_norm.weight"), s.hidden);
    if (gemma3) norm(p + "post_ffw_norm.weight", s.hidden);
    if (s.experts > 0) {
      const int64_t e = s.experts, h = s.hidden, f = s.expert_ffn;
      w.AddTensor(p + "ffn_gate_inp.weight", {h, e}, kGgmlF32, e * h * 4,
                  [=, name = p + "ffn_gate_inp.weight"](std::vector<uint8_t>* out) {
                    out->resize(e * h * 4);
                    std::vector<float> row(h);
                    for (int64_t r = 0; r < e; ++r) {
                      SynthMatrixRow(seed, name, r, h, row.data());
                      std::memcpy(out->data() + r * h * 4, row.data(), h * 4);
                    }
                    return absl::OkStatus();
                  });
      matrix(p + "ffn_gate_exps.weight", f, h, -1, e);
      matrix(p + "ffn_up_exps.weight", f, h, -1, e);
      matrix(p + "ffn_down_exps.weight", h, f, i, e);
      if (gpt_oss) {
        vec(p + "ffn_gate_inp.bias", {e});
        vec(p + "ffn_gate_exps.bias", {f, e});
        vec(p + "ffn_up_exps.bias", {f, e});
        vec(p + "ffn_down_exps.bias", {h, e});
      }
    } else {
      matrix(p + "ffn_gate.weight", s.ffn, s.hidden);
      matrix(p + "ffn_up.weight", s.ffn, s.hidden);
      matrix(p + "ffn_down.weight", s.hidden, s.ffn, i);
    }
  }
  norm("output_norm.weight", s.hidden);
  if (!s.tied_embeddings) matrix("output.weight", s.vocab, s.hidden);
  return w.Write(out_path);
}

}  // namespace tessera::model
