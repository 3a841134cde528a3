#!/usr/bin/env bash
# Prints the TESSERA_CPU_ISA modes (kernels/cpu/fast/isa_limit.h) this machine can emulate below
# its own ISA, one per line: avx2 where it has AVX-512 (the kernels of Zen 2 / Zen 3 and older
# Intel), then avx512-vnni where it also has AVX-512 BF16 or AMX (those of Cascade Lake and Ice
# Lake servers). tools/test.sh and tools/sanitize.sh run their tests once more in each.
if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then
  echo avx2
  if grep -qwE 'avx512_bf16|amx_tile' /proc/cpuinfo 2>/dev/null; then echo avx512-vnni; fi
fi
exit 0
