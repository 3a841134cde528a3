// `tessera bench --model M [--precision_plan F] --batch 1,4,16 --prompt 128 --gen 128`: end-to-end
// throughput of the decoder on this machine. For each batch size B it prefills B random prompts
// in one Forward call, then decodes `gen` greedy steps with all B sequences in every step, and
// prints prefill tokens/s, decode tokens/s per sequence and aggregate, the weight bytes streamed
// per second at decode, and the process's peak RSS. A triad and a read-only stream
// (kernels/cpu/memory_bandwidth.h) run on the same thread pool before the first batch and after
// every batch; each row reports the higher of the two readings around it and the weight rate as a
// percentage of that triad, so the ratio comes from one run at one moment. A third roofline is
// a plain read of the CPU model's own weight pages (Linear::weight_spans) after each batch: fresh
// probe arrays land in a fast or a slow half of this VM's memory, the weights stay where they are.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "cli/args.h"
#include "cli/cpu_activation_flags.h"
#include "cli/commands.h"
#include "engine/model/decoder_model.h"
#ifdef TESSERA_HAVE_CUDA
#include "engine/backend/cuda/cuda_decoder.h"
#endif
#include "engine/runtime/engine_loader.h"
#include "engine/runtime/kv_cache.h"
#include "kernels/cpu/memory_bandwidth.h"

namespace tessera::cli {
namespace {

const std::vector<FlagSpec> kFlags = {
    {"model", false, "HF directory or .gguf file"},
    {"precision_plan", false, "precision plan JSON file (per-layer override rules)"},
    {"batch", false, "comma-separated batch sizes (default 1,4,16)"},
    {"prompt", false, "prompt tokens per sequence (default 128)"},
    {"gen", false, "generated tokens per sequence (default 128)"},
    {"threads", false, "CPU threads (default: all)"},
    kCpuInt8ActivationsFlag,
    kCpuBf16ActivationsFlag,
    kCpuInt16ActivationsFlag,
    kKvCacheDtypeFlag,
    {"seed", false, "seed of the random prompts (default 0)"},
    {"device", false, "cpu (default), cuda or cuda:N"},
    {"help", true, "show this help"},
};

int Fail(const absl::Status& s) {
  std::fprintf(stderr, "error: %s\n", std::string(s.message()).c_str());
  return 1;
}

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double PeakRssMiB() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;  // Linux reports KiB
}

// Bytes of weights a decode step streams: every 2-D tensor except the embedding table, which is
// read one row per token, unless it doubles as the (tied) lm_head.
int64_t DecodeWeightBytes(const io::TensorStore& store) {
  int64_t total = 0, embedding = 0;
  bool has_output = false;
  for (const std::string& name : store.names()) {
    auto v = store.Get(name);
    if (!v.ok() || v->rank() != 2) continue;
    const int64_t bytes = static_cast<int64_t>(v->bytes.size());
    if (name == "token_embd.weight" || name == "model.embed_tokens.weight") {
      embedding = bytes;
      continue;
    }
    if (name == "output.weight" || name == "lm_head.weight") has_output = true;
    total += bytes;
  }
  return total + (has_output ? 0 : embedding);
}

}  // namespace

int RunBench(const std::vector<std::string>& argv) {
  auto args = Args::Parse(argv, kFlags);
  if (!args.ok()) return Fail(args.status());
  if (args->GetBool("help") || !args->Has("model")) {
    std::fprintf(stderr, "usage: tessera bench --model PATH [--batch 1,4,16] [--prompt N] [--gen N]\n%s",
                 FlagsHelp(kFlags).c_str());
    return args->GetBool("help") ? 0 : 2;
  }
  std::vector<int64_t> batches;
  for (absl::string_view part : absl::StrSplit(args->GetString("batch", "1,4,16"), ',')) {
    int64_t b = 0;
    if (!absl::SimpleAtoi(part, &b) || b <= 0) {
      return Fail(absl::InvalidArgumentError("--batch wants positive integers, e.g. 1,4,16"));
    }
    batches.push_back(b);
  }
  auto prompt = args->GetInt("prompt", 128);
  auto gen = args->GetInt("gen", 128);
  auto threads = args->GetInt("threads", 0);
  auto seed = args->GetInt("seed", 0);
  for (const auto* v : {&prompt, &gen, &threads, &seed}) {
    if (!v->ok()) return Fail(v->status());
  }
  if (*prompt <= 0 || *gen <= 0) return Fail(absl::InvalidArgumentError("--prompt and --gen must be > 0"));

  const std::string device = args->GetString("device", "cpu");
  const int64_t block_tokens = 16;
  const int64_t max_batch = *std::max_element(batches.begin(), batches.end());
  runtime::EngineOptions options{.threads = static_cast<int>(*threads),
                                 .precision_plan_path = args->GetString("precision_plan"),
                                 .cpu_int8_activations = Int8ActivationsFlag(*args),
                                 .cpu_bf16_activations = args->GetBool("cpu_bf16_activations"),
                                 .cpu_int16_activations = args->GetBool("cpu_int16_activations"),
                                 .device = device,
                                 .kv_cache_dtype = args->GetString("kv_cache_dtype", "auto")};
  // A device KV pool just large enough for the largest batch.
  options.kv_blocks = max_batch * ((*prompt + *gen + block_tokens - 1) / block_tokens);
  options.kv_block_tokens = block_tokens;
  auto engine = runtime::LoadEngine(args->GetString("model"), options);
  if (!engine.ok()) return Fail(engine.status());
  auto& e = **engine;
  const auto& c = e.model->config();
  const bool on_cpu = e.model->uses_host_kv_storage();
  // The CPU model knows what its Linears stream (quantized plans shrink it); otherwise count the
  // file's tensors.
  int64_t weight_bytes = DecodeWeightBytes(*e.source.store);
  std::vector<std::pair<const uint8_t*, int64_t>> spans;
  if (const auto* dm = dynamic_cast<const model::DecoderModel*>(e.model.get()); dm != nullptr) {
    weight_bytes = dm->lm_head().weight_bytes();
    for (const auto& sp : dm->lm_head().weight_spans()) spans.emplace_back(sp.data, sp.size);
    for (const auto& l : dm->layers()) {
      for (const auto* lin : {&l.q, &l.k, &l.v, &l.qkv, &l.o, &l.gate, &l.up, &l.gate_up, &l.down}) {
        if (*lin == nullptr) continue;
        weight_bytes += (*lin)->weight_bytes();
        for (const auto& sp : (*lin)->weight_spans()) spans.emplace_back(sp.data, sp.size);
      }
      if (l.moe != nullptr) {
        // A token reads its top-k experts: the weight rate counts those; the read roofline
        // times every expert's pages (a rate, whatever the size).
        weight_bytes += l.moe->TokenWeightBytes();
        for (const auto& sp : l.moe->router().weight_spans()) spans.emplace_back(sp.data, sp.size);
        std::vector<const model::ExpertMlp*> mlps;
        for (const auto& ex : l.moe->experts()) mlps.push_back(&ex);
        if (l.moe->shared_expert_gate() != nullptr) {
          mlps.push_back(&l.moe->shared_expert());
          for (const auto& sp : l.moe->shared_expert_gate()->weight_spans()) {
            spans.emplace_back(sp.data, sp.size);
          }
        }
        for (const model::ExpertMlp* ex : mlps) {
          for (const auto* lin : {&ex->gate, &ex->up, &ex->down}) {
            for (const auto& sp : (*lin)->weight_spans()) spans.emplace_back(sp.data, sp.size);
          }
        }
      }
    }
  }
#ifdef TESSERA_HAVE_CUDA
  if (const auto* cd = dynamic_cast<const backend::cuda::CudaDecoder*>(e.model.get());
      cd != nullptr) {
    weight_bytes = cd->linear_weight_bytes();
  }
#endif
  std::printf("model %s: %lld layers, hidden %lld, vocab %lld; %s; threads %d; decode weight bytes %.1f MiB; KV cache %s; load %.2f s\n",
              args->GetString("model").c_str(), static_cast<long long>(c.num_layers),
              static_cast<long long>(c.hidden_size), static_cast<long long>(c.vocab_size),
              e.model->device().c_str(), e.pool->size(), weight_bytes / 1048576.0,
              runtime::KvCacheFormatName(e.model->kv_cache_format()), e.load_seconds);
  if (!on_cpu) {
    // The host's memory rooflines say nothing about a device; compare weight GB/s with the
    // device's (tests/gpu/gpu_bench measures cuBLASLt's achieved rate in the same way).
    std::printf("(device run: the host triad and weight-read columns are not measured)\n");
  }
  std::printf("%6s %8s %6s %14s %16s %16s %12s %11s %10s %8s %13s %8s %12s\n", "batch", "prompt",
              "gen", "prefill tok/s", "decode tok/s/seq", "decode tok/s agg", "weight GB/s",
              "triad GB/s", "read GB/s", "% triad", "w-read GB/s", "% w-read", "peak RSS MiB");
  kernels::cpu::MemoryBandwidth before{};
  if (on_cpu) before = kernels::cpu::MeasureMemoryBandwidth(e.pool.get());

  std::mt19937 rng(static_cast<uint32_t>(*seed));
  std::uniform_int_distribution<int32_t> tok(3, static_cast<int32_t>(c.vocab_size - 1));
  for (const int64_t B : batches) {
    const int64_t len = *prompt + *gen;
    runtime::KvCache cache(c.num_layers, c.num_kv_heads, c.head_dim, block_tokens,
                           B * ((len + block_tokens - 1) / block_tokens), on_cpu,
                           e.model->kv_cache_format());
    std::vector<runtime::SequenceKv> seqs(B);
    std::vector<std::vector<int32_t>> prompts(B, std::vector<int32_t>(*prompt));
    for (auto& p : prompts) for (auto& t : p) t = tok(rng);
    std::vector<model::SequenceChunk> chunks(B);
    for (int64_t i = 0; i < B; ++i) chunks[i] = {&seqs[i], prompts[i], false, true};
    std::vector<float> logits;
    auto t0 = std::chrono::steady_clock::now();
    if (auto st = e.model->Forward(chunks, cache, &logits); !st.ok()) return Fail(st);
    const double prefill_s = Seconds(t0);

    std::vector<std::vector<int32_t>> next(B, std::vector<int32_t>(1));
    auto argmax = [&] {
      for (int64_t i = 0; i < B; ++i) {
        const float* row = logits.data() + i * c.vocab_size;
        next[i][0] = static_cast<int32_t>(std::max_element(row, row + c.vocab_size) - row);
      }
    };
    argmax();
    t0 = std::chrono::steady_clock::now();
    for (int64_t step = 0; step < *gen; ++step) {
      for (int64_t i = 0; i < B; ++i) chunks[i] = {&seqs[i], next[i], false, true};
      if (auto st = e.model->Forward(chunks, cache, &logits); !st.ok()) return Fail(st);
      argmax();
    }
    const double decode_s = Seconds(t0);
    const double per_seq = *gen / decode_s;
    kernels::cpu::MemoryBandwidth after{};
    if (on_cpu) after = kernels::cpu::MeasureMemoryBandwidth(e.pool.get());
    const double triad = std::max(before.triad_gbs, after.triad_gbs);
    const double read = std::max(before.read_gbs, after.read_gbs);
    before = after;
    const double weight_gbs = weight_bytes * per_seq / 1e9;
    const double wread = on_cpu ? kernels::cpu::MeasureSpanReadGBs(e.pool.get(), spans) : 0.0;
    std::printf("%6lld %8lld %6lld %14.1f %16.2f %16.2f %12.2f %11.1f %10.1f %7.0f%% %13.1f %7.0f%% %12.0f\n",
                static_cast<long long>(B), static_cast<long long>(*prompt),
                static_cast<long long>(*gen), B * *prompt / prefill_s, per_seq, per_seq * B,
                weight_gbs, triad, read, triad > 0 ? 100.0 * weight_gbs / triad : 0.0, wread,
                wread > 0 ? 100.0 * weight_gbs / wread : 0.0, PeakRssMiB());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace tessera::cli
