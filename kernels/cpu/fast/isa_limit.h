// An operator's (and the tests') switch that makes this process use the CPU as an AVX2 machine:
// TESSERA_CPU_ISA=avx2 in the environment turns off every AVX-512 kernel (the hand-written ones
// check Avx512Allowed() next to CPUID; Highway's AVX3 targets are disabled at start-up), so the
// AVX2 paths that users of Zen 2 / Zen 3 and older Intel CPUs run are tested and measured on the
// AVX-512 machines this project has. Read once, before main() (any binary that calls
// FastTargetName or a kernel's CPU check links it); any other value (or none) leaves the CPU's
// own features in charge.
#ifndef TESSERA_KERNELS_CPU_FAST_ISA_LIMIT_H_
#define TESSERA_KERNELS_CPU_FAST_ISA_LIMIT_H_

namespace tessera::kernels::cpu::fast {

// False under TESSERA_CPU_ISA=avx2.
bool Avx512Allowed();

}  // namespace tessera::kernels::cpu::fast

#endif  // TESSERA_KERNELS_CPU_FAST_ISA_LIMIT_H_
