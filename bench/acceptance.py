#!/usr/bin/env python3
"""The CPU-speed acceptance of issue 7 measured in one go, printed as markdown tables.

Decode: `tessera bench` at batch 1 and 16 for every format the acceptance names (TinyLlama-1.1B
shape; GGUF files synthesized into MODELS if missing, FP8 / INT4 / NVFP4 through the bench-*
precision plans on the F16 file), each row with the triad and the read of the model's own weight
pages that tessera bench measures in the same process: batch-1 weight GB/s as % of the triad
(target >= 80%) and batch-16 aggregate over batch 1 (target >= 8x for Q4_0 and FP8).

Prefill: tessera_matmul_bench at M = 128 on the issue's shapes, every kernel beside oneDNN's
matmul in the same binary and run (bf16 and int8 against oneDNN bf16 / s8, target >= 0.8x; the
4-bit and FP8 formats against oneDNN bf16, target >= 0.5x), min-max of the per-shape ratios.
The kernel rows are the ones the engine runs for each format on an AVX-512 BF16 CPU without AMX
(this project's VMs); the label column is the benchmark's own label where it sets one (oneDNN's
ISA, the int8 tiles' kernel). On other CPUs the engine picks
other kernels (AMX tiles, AVX2 twins): bench/README.md says which.

Usage: bench/acceptance.py [--build build/fast] [--models /tmp/synth] [--skip-decode]
       [--skip-prefill] [--gen 32] [--prompt 32] [--repetitions 3]
Run it on an otherwise idle machine: a second job on a 2-core VM halves every number. Python 3
standard library only (the test suite never runs it).
"""
import argparse
import json
import os
import subprocess
import sys

VOCAB = "../shared/reference/vocab/ggml-vocab-llama-spm.gguf"

# (label, model file, extra tessera bench flags, batch-16 target applies)
PLAN = "--precision_plan"
DECODE = [
    ("Q4_0 (default: int8 activations)", "tl-Q4_0.gguf", [], True),
    ("Q8_0 (default: int8 activations)", "tl-Q8_0.gguf", [], False),
    ("FP8 W8A16 (bench-fp8-wo)", "tl-F16.gguf", [PLAN, "configs/plans/bench-fp8-wo.json"], True),
    ("FP8 W8A8 (bench-fp8)", "tl-F16.gguf", [PLAN, "configs/plans/bench-fp8.json"], True),
    ("INT4 g128 (default: exact activations)", "tl-F16.gguf",
     [PLAN, "configs/plans/bench-int4-g128.json"], False),
    ("INT4 g128, int8 activations", "tl-F16.gguf",
     [PLAN, "configs/plans/bench-int4-g128.json", "--cpu_int8_activations"], False),
    ("NVFP4 W4A4 (bench-nvfp4)", "tl-F16.gguf", [PLAN, "configs/plans/bench-nvfp4.json"], False),
    ("NVFP4 W4A16 (bench-nvfp4-a16, exact)", "tl-F16.gguf",
     [PLAN, "configs/plans/bench-nvfp4-a16.json"], False),
]

SHAPES = ["4096x4096", "4096x14336", "14336x4096", "1.1b_qo", "1.1b_gate_up", "1.1b_down"]
# (label, benchmark prefix, oneDNN baseline, target)
PREFILL = [
    ("bf16, exact activations (default)", "BM_FloatPanelMatmul/BF16_FMA", "bf16", 0.8),
    ("bf16, --cpu_bf16_activations", "BM_Bf16DotMatmul/BF16", "bf16", 0.8),
    ("INT8 W8A8", "BM_Int8DotMatmul/INT8_W8A8", "s8", 0.8),
    ("Q4_0 (default: int8 activations)", "BM_Int4x16Matmul/Q4_0", "bf16", 0.5),
    ("Q4_K (default: int8 activations)", "BM_Int4x16Matmul/Q4_K", "bf16", 0.5),
    ("INT4 g128, exact (default outside GGUF)", "BM_QuantMatmul/INT4_G128_PAIRS", "bf16", 0.5),
    ("INT4 g128, int16 activations", "BM_QuantMatmul/INT4_G128_PAIRS_I16", "bf16", 0.5),
    ("INT4 g128, int8 activations", "BM_Int4x16Matmul/INT4_G128", "bf16", 0.5),
    ("NVFP4 W4A4", "BM_Int4x16Matmul/NVFP4", "bf16", 0.5),
    ("NVFP4 W4A16, exact", "BM_QuantMatmul/NVFP4_PAIRS", "bf16", 0.5),
    ("MXFP4, exact", "BM_QuantMatmul/MXFP4_PAIRS", "bf16", 0.5),
    ("FP8 W8A16, exact", "BM_QuantMatmul/FP8_PANEL", "bf16", 0.5),
    ("FP8 W8A8", "BM_QuantMatmul/FP8_W8A8_PANEL", "bf16", 0.5),
]


def run(cmd, env=None):
    """stdout of cmd; on failure its stderr and a message naming the command, then exit 1."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        sys.exit(f"acceptance.py: {' '.join(cmd)} exited with {proc.returncode}")
    return proc.stdout


def decode_rows(args):
    tessera = os.path.join(args.build, "cli", "tessera")
    for name in ("Q4_0", "Q8_0", "F16"):
        path = os.path.join(args.models, f"tl-{name}.gguf")
        if not os.path.exists(path):
            run([tessera, "synth", "--shape", "tinyllama-1.1b", "--type", name, "--out", path,
                 "--vocab-from", VOCAB])
    print(f"Decode, `tessera bench --batch 1,16 --prompt {args.prompt} --gen {args.gen}` "
          "(weight GB/s at batch 1; triad and weight read of the same process):\n")
    print("| format | B=1 tok/s | weight GB/s (triad) | % triad | % w-read | B=16 agg tok/s | "
          "B16 / B1 | >= 80% triad | >= 8x |")
    print("|---|---|---|---|---|---|---|---|---|")
    for label, model, flags, batch_target in DECODE:
        cmd = [tessera, "bench", "--model", os.path.join(args.models, model), "--batch", "1,16",
               "--prompt", str(args.prompt), "--gen", str(args.gen)] + flags
        out = run(cmd)
        rows = {}
        for line in out.splitlines():
            f = line.split()
            if len(f) == 13 and f[0].isdigit():
                rows[int(f[0])] = f
        if 1 not in rows or 16 not in rows:
            sys.exit(f"acceptance.py: no batch-1 / batch-16 row from {' '.join(cmd)}:\n{out}")
        b1, b16 = rows[1], rows[16]
        ratio = float(b16[5]) / float(b1[4])
        pct = float(b1[9].rstrip("%"))
        print(f"| {label} | {b1[4]} | {b1[6]} ({b1[7]}) | {b1[9]} | {b1[11]} | {b16[5]} | "
              f"{ratio:.1f}x | {'yes' if pct >= 80 else 'no'} | "
              f"{('yes' if ratio >= 8 else 'no') if batch_target else '-'} |", flush=True)
    print()


def verdict(low, high, target):
    if low >= target:
        return "yes"
    return "some shapes" if high >= target else "no"


def prefill_rows(args):
    bench = os.path.join(args.build, "bench", "tessera_matmul_bench")
    names = [p for _, p, _, _ in PREFILL] + ["BM_OneDnnMatmul/bf16", "BM_OneDnnMatmul/s8"]
    pattern = ("^(" + "|".join(names) + ")/(" +
               "|".join(s.replace(".", "\\.") for s in SHAPES) + ")/M:128(/|$)")
    env = dict(os.environ)
    env.setdefault("TESSERA_BENCH_COVER_MIB", "64")
    # Medians of repetitions: a single run of a shape now and then read half its rate here (another
    # tenant of the VM), which a min-max over the shapes then reports.
    filt = f"{pattern}|^BM_Triad|^BM_Peak"
    cmd = [bench, f"--benchmark_filter={filt}", "--benchmark_format=json",
           f"--benchmark_min_time={args.min_time}",
           f"--benchmark_repetitions={args.repetitions}", "--benchmark_report_aggregates_only=true"]
    out = run(cmd, env)
    try:
        benchmarks = json.loads(out)["benchmarks"]
    except (ValueError, KeyError):
        sys.exit(f"acceptance.py: no benchmark ran (built without libbenchmark-dev?): {cmd}")
    results = {}
    labels = {}
    peaks = {}
    for b in benchmarks:
        # A benchmark skipped on this CPU (BM_PeakBf16Dot without BF16, ...) has no aggregates
        # and no counters: its error entries are left out.
        if b.get("error_occurred") or b.get("aggregate_name", "median") != "median":
            continue
        name = b.get("run_name", b["name"]).removesuffix("/real_time")
        if name.startswith("BM_Triad") or name.startswith("BM_Peak"):
            peaks[name] = b.get("GB/s", b.get("GFLOP/s", b.get("GOP/s")))
            continue
        rate = b.get("GFLOP/s", b.get("GOP/s"))
        if rate is not None:
            results[name] = rate
            labels[name.rsplit("/", 2)[0]] = b.get("label", "")
    unit = {"BM_Triad": "GB/s", "BM_PeakVnni": "GOP/s", "BM_PeakInt16Dot": "GOP/s"}
    peak_text = ", ".join(f"{k.removeprefix('BM_')} {v:.0f} {unit.get(k, 'GFLOP/s')}"
                          for k, v in peaks.items() if v is not None)
    missing = [f"{p}/{s}" for p in names for s in SHAPES if f"{p}/{s}/M:128" not in results]
    if missing:
        sys.exit("acceptance.py: these ran without a rate or not at all (oneDNN missing from the "
                 "build, or a skipped kernel): " + ", ".join(missing))
    print(f"Prefill GEMM, M = 128, medians of {args.repetitions} repetitions, "
          f"`TESSERA_BENCH_COVER_MIB={env['TESSERA_BENCH_COVER_MIB']} {bench} "
          f"--benchmark_filter='{filt}' "
          f"--benchmark_min_time={args.min_time} --benchmark_repetitions={args.repetitions} "
          "--benchmark_report_aggregates_only=true` "
          f"({peak_text}; rates as each benchmark counts them, 2·M·N·K per second, integer "
          "kernels too):\n")
    print("| kernel | label | GFLOP/s (min-max over shapes) | / oneDNN (min-max) | target | met |")
    print("|---|---|---|---|---|---|")
    for base in ("bf16", "s8"):
        rates = [results[f"BM_OneDnnMatmul/{base}/{s}/M:128"] for s in SHAPES]
        print(f"| oneDNN {base} | {labels.get('BM_OneDnnMatmul/' + base, '')} | "
              f"{min(rates):.0f}-{max(rates):.0f} | 1 | - | - |")
    for label, prefix, base, target in PREFILL:
        rates = [results[f"{prefix}/{s}/M:128"] for s in SHAPES]
        ratios = [r / results[f"BM_OneDnnMatmul/{base}/{s}/M:128"] for r, s in zip(rates, SHAPES)]
        print(f"| {label} (`{prefix.removeprefix('BM_')}`) | {labels.get(prefix, '')} | "
              f"{min(rates):.0f}-{max(rates):.0f} | "
              f"{min(ratios):.2f}-{max(ratios):.2f}x {base} | {target}x | "
              f"{verdict(min(ratios), max(ratios), target)} |", flush=True)
    print()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build/fast")
    parser.add_argument("--models", default="/tmp/synth")
    parser.add_argument("--prompt", type=int, default=32)
    parser.add_argument("--gen", type=int, default=32)
    parser.add_argument("--min-time", default="0.3")
    parser.add_argument("--repetitions", type=int, default=3)
    parser.add_argument("--skip-decode", action="store_true")
    parser.add_argument("--skip-prefill", action="store_true")
    args = parser.parse_args()
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    os.makedirs(args.models, exist_ok=True)
    if not args.skip_decode:
        decode_rows(args)
    if not args.skip_prefill:
        prefill_rows(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
