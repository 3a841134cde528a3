#!/usr/bin/env bash
# Compiler launcher for the CUDA kernel library: runs the real compile command (optionally behind
# ccache, which replays ptxas's stderr on a cache hit) and keeps nvcc's --resource-usage report
# (registers, spills, stack frame per kernel and arch) next to the object as <object>.ptxas.txt,
# where tests/kernels/cuda/ptxas_report_test reads it. Anything that is not a ptxas info line
# (errors, warnings) still goes to stderr.
set -u
out=""
prev=""
for arg in "$@"; do
  if [[ "$prev" == "-o" ]]; then out="$arg"; fi
  prev="$arg"
done
if [[ -z "$out" ]]; then exec "$@"; fi
report="${out}.ptxas.txt"
"$@" 2>"${report}.tmp"
rc=$?
grep -v -e '^ptxas info' -e '^ptxas, info' -e '^    ' -e '^$' "${report}.tmp" >&2 || true
mv -f "${report}.tmp" "$report"
exit $rc
