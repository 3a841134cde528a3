// The CPU activation flags every engine-loading command (serve, generate, bench, perplexity,
// inspect) accepts, and the KV cache element type of the commands that run a cache (serve,
// generate, bench), with one help text each, so the commands cannot drift apart on what the flags
// cover.
#ifndef TESSERA_CLI_CPU_ACTIVATION_FLAGS_H_
#define TESSERA_CLI_CPU_ACTIVATION_FLAGS_H_

#include <string>

#include "cli/args.h"
#include "engine/backend/cpu/cpu_kernel_selector.h"

namespace tessera::cli {

inline const FlagSpec kCpuInt8ActivationsFlag = {
    "cpu_int8_activations", true,
    "int8 (Q8_0-block) activations and integer kernels, which change results slightly. Default: "
    "GGUF layers of every quantized type (gpt-oss MXFP4 too) on a CPU with AVX-512 VNNI or "
    "AVX2, as llama.cpp runs GGUF models, and INT4/NVFP4 W4A16/MXFP4 layers on a CPU with AVX2 but "
    "not "
    "AVX-512 (there about twice as fast at batch 1 as their exact f32-activation kernel). Given: "
    "also INT4/INT8/INT3/INT2 weight-only, NVFP4 W4A16 and MXFP4 everywhere. =false: exact f32 "
    "activations everywhere (the scalar reference kernels where no f32 kernel runs: without "
    "AVX2)"};

// The layers --cpu_int8_activations covers: absent the GGUF block formats, given (=true) every
// format with int8-activation tiles, =false none.
inline backend::cpu::Int8Activations Int8ActivationsFlag(const Args& args) {
  const std::string v = args.GetString("cpu_int8_activations", "");
  if (v.empty()) return backend::cpu::Int8Activations::kGgufBlocks;
  return v == "true" ? backend::cpu::Int8Activations::kAll : backend::cpu::Int8Activations::kNone;
}

inline const FlagSpec kCpuBf16ActivationsFlag = {
    "cpu_bf16_activations", true,
    "bf16 weights, FP8 W8A16, INT4 weight-only, NVFP4 W4A16, MXFP4 and bitsandbytes 4-bit: bf16 "
    "activations (one vdpbf16ps per weight pair, as PyTorch and llama.cpp run bf16 models and "
    "vLLM's Marlin kernels W8A16 / W4A16 layers; bitsandbytes' NF4 / FP4 codebook rounded to bf16 "
    "too, as bitsandbytes computes in its bf16 compute dtype; up to 2x prefill GEMM, faster 4-bit "
    "decode); changes results slightly"};

inline const FlagSpec kCpuInt16ActivationsFlag = {
    "cpu_int16_activations", true,
    "INT4 (act-order too) / INT8 / INT3 / INT2 weight-only, NVFP4 W4A16 and MXFP4 (groups of "
    "16-128) on AVX-512 VNNI: int16 activations with one scale per weight group, within "
    "2^-16 of each group's largest |x| (one vpdpwssd per weight pair: 1.3-1.6x the exact GEMM "
    "from 16 rows); changes results slightly. --cpu_bf16_activations (and int8 activations) win "
    "where they cover a layer"};

inline const FlagSpec kKvCacheDtypeFlag = {
    "kv_cache_dtype", false,
    "KV cache elements: auto (default: f16 for GGUF models, as llama.cpp; f32 otherwise), f32 "
    "(exact), f16 or bf16 (half the memory and attention traffic), fp8 (E4M3 with the "
    "checkpoint's k/v scales, a quarter). CPU only; the CUDA decoder keeps f32"};

}  // namespace tessera::cli

#endif  // TESSERA_CLI_CPU_ACTIVATION_FLAGS_H_
