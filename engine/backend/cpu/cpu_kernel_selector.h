// The CPU backend's answer to "which kernel runs this LinearSpec": every format has a scalar
// reference kernel on the CPU, so every spec is supported; the kernel id names it for the plan.
#ifndef TESSERA_ENGINE_BACKEND_CPU_CPU_KERNEL_SELECTOR_H_
#define TESSERA_ENGINE_BACKEND_CPU_CPU_KERNEL_SELECTOR_H_

#include <string>

#include "engine/quant/precision_plan.h"

namespace tessera::backend::cpu {

// Which layers quantize their activations to int8 blocks of 32 (Q8_0's) for the int8 tiles
// (kernels/cpu/fast/int4_x16.h: AVX-512 VNNI, else AVX2).
enum class Int8Activations {
  kNone,  // exact f32 activations everywhere
  // GGUF block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K to Q6_K) where this CPU has
  // AVX-512 VNNI or AVX2: ggml's own dot products for these types take Q8 activations, so this is
  // what the file's numbers mean to llama.cpp, and 3x its decode speed over the f32-activation
  // kernels here. The default; elsewhere (a CPU without AVX2, where the tiles would run their
  // scalar loop) f32 activations stay.
  // GGUF MXFP4 (gpt-oss) too. INT4 / NVFP4 W4A16 / MXFP4 layers join them on CPUs with AVX2 but
  // not AVX-512, where the f32-activation 4-bit kernel cannot run (the reason says so).
  kGgufBlocks,
  // Also INT4 / INT8 / INT3 / INT2 weight-only, NVFP4 W4A16 and MXFP4 (--cpu_int8_activations).
  kAll,
};

// The last part of an int8-tile layer's kernel name ("cpu/gguf-q4_0-vnni"): which kernel runs
// the tiles on this CPU, "vnni", "avxvnni", "avx2" or "portable" (the scalar loop).
std::string Int8TileSuffix();

class CpuKernelSelector : public quant::KernelSelector {
 public:
  // int8_activations: which layers run int8 (Q8_0-block) activations and the int8 tiles (a: q8_0
  // act) instead of exact f32 activations.
  // bf16_activations: bf16 weights, FP8 W8A16 and the 4-bit weight-only formats (INT4, NVFP4
  // W4A16, MXFP4) on their fast kernels multiply bf16-rounded activations (a: bf16) instead of
  // exact f32 ones (the hi + lo split where the kernel is a bf16 one).
  // int16_activations: the weight-only formats (INT4 / INT8 / INT3 / INT2, NVFP4 W4A16, MXFP4)
  // multiply int16 activations with one scale per weight group (a: int16 act) on the pair panels'
  // int16 route, where this CPU runs it and
  // the layer's groups fit it (else exact f32 activations, with a note in the plan);
  // bf16_activations, and int8 activations where they cover the layer, win where both are set.
  explicit CpuKernelSelector(Int8Activations int8_activations = Int8Activations::kNone,
                             bool bf16_activations = false, bool int16_activations = false)
      : int8_activations_(int8_activations),
        bf16_activations_(bf16_activations),
        int16_activations_(int16_activations) {}
  std::string name() const override { return "cpu"; }
  absl::Status Select(quant::LinearSpec* spec) const override;

 private:
  // Whether layers of every int8-capable format take int8 activations (kAll).
  bool Int8ForAll() const { return int8_activations_ == Int8Activations::kAll; }
  // Whether INT4 / NVFP4 W4A16 / MXFP4 layers take int8 activations: kAll, or by default without
  // AVX-512 where the int8 tiles run (AVX2): there they decode about twice as fast as the exact
  // f32 panels at batch 1.
  bool Int8ForFourBit() const;
  // Under bf16_activations, a 4-bit weight-only layer with f32 activations takes bf16 ones and
  // `kernel`; returns whether it did.
  bool TakeBf16Activations(quant::LinearSpec* spec, const char* kernel) const;
  // The same for int16_activations: `kernel` plus "-i16-act" where the int16 route takes the
  // layer (`fast_kernel`: the layer's f32-activation kernel is the fast one, whose pair panels
  // the route runs on); else a note in the plan's reason. The label names the activation scheme
  // also where the layer's panels end up without the route (every path multiplies the same x̂).
  bool TakeInt16Activations(quant::LinearSpec* spec, const char* kernel, bool fast_kernel) const;

  Int8Activations int8_activations_;
  bool bf16_activations_;
  bool int16_activations_;
};

}  // namespace tessera::backend::cpu

#endif  // TESSERA_ENGINE_BACKEND_CPU_CPU_KERNEL_SELECTOR_H_
