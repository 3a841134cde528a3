// The CPU activation flags every engine-loading command (serve, generate, bench, perplexity,
// inspect) accepts, with one help text each, so the commands cannot drift apart on what the flags
// cover.
#ifndef TESSERA_CLI_CPU_ACTIVATION_FLAGS_H_
#define TESSERA_CLI_CPU_ACTIVATION_FLAGS_H_

#include "cli/args.h"

namespace tessera::cli {

inline const FlagSpec kCpuInt8ActivationsFlag = {
    "cpu_int8_activations", true,
    "GGUF Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/Q4_K/Q5_K/Q6_K, INT4/INT8/INT3/INT2 weight-only, NVFP4 "
    "W4A16 and MXFP4: int8 (Q8_0-block) activations, VNNI kernels, as llama.cpp runs GGUF "
    "models; changes results slightly"};

inline const FlagSpec kCpuBf16ActivationsFlag = {
    "cpu_bf16_activations", true,
    "bf16 weights: bf16 activations (one vdpbf16ps per weight pair, as PyTorch and llama.cpp run "
    "bf16 models; 2x prefill GEMM); changes results slightly"};

}  // namespace tessera::cli

#endif  // TESSERA_CLI_CPU_ACTIVATION_FLAGS_H_
