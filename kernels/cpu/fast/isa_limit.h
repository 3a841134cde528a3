// An operator's (and the tests') switch that makes this process use the CPU as an older one:
// TESSERA_CPU_ISA=avx2 turns off every AVX-512 kernel (the hand-written ones check
// Avx512Allowed() next to CPUID; Highway's AVX3 targets are disabled at start-up), so the AVX2
// paths that users of Zen 2 / Zen 3 and Intel client CPUs run are tested and measured on the
// AVX-512 machines this project has; TESSERA_CPU_ISA=avx512-vnni keeps AVX-512 (and VNNI where the
// CPU has it) but turns off AVX-512 BF16, AVX-512 FP16 and AMX, as Cascade Lake and Ice Lake
// servers are (Skylake-SP has no VNNI either; this switch cannot take away what the CPU has not).
// Read once, before main() (any binary that calls FastTargetName or a kernel's CPU check links
// it); any other value (or none) leaves the CPU's own features in charge.
#ifndef TESSERA_KERNELS_CPU_FAST_ISA_LIMIT_H_
#define TESSERA_KERNELS_CPU_FAST_ISA_LIMIT_H_

namespace tessera::kernels::cpu::fast {

// False under TESSERA_CPU_ISA=avx2.
bool Avx512Allowed();

// Whether an extension named as __builtin_cpu_supports names it may be used: false for
// "avx512bf16", "avx512fp16" and "avxvnni" (the VEX form Alder Lake and Sapphire Rapids have, and
// Cascade Lake / Ice Lake do not) under TESSERA_CPU_ISA=avx512-vnni, false for every one under
// avx2 (Avx512Allowed), true otherwise.
bool Avx512ExtensionAllowed(const char* extension);

// Whether AMX tiles may be used: false under TESSERA_CPU_ISA=avx2 or avx512-vnni.
bool AmxAllowed();

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_ISA_LIMIT_H_
