#!/usr/bin/env python3
"""llama.cpp's perplexity of the fixtures' GGUF twins: an oracle for tessera's decoder that is not
transformers.

make_hf_goldens.py writes tests/data/models/{qwen3_moe,mixtral,qwen2_moe,olmoe,granite,phi3,
llama3_rope}/model.gguf: the fixtures' f32 weights as llama.cpp's convert_hf_to_gguf.py lays
them out (qwen3moe, llama with expert_count for Mixtral, qwen2moe with its shared expert, olmoe,
experts stacked into ffn_{gate,up,down}_exps; dense granite with its multipliers, phi3 with its
fused qkv / gate_up, llama3_rope with its rope scaling as rope_freqs.weight). Run this after it:
make_hf_goldens.py rewrites each model directory, the Q4_0 files below included. This script runs
llama.cpp's own `llama-perplexity` on each over tests/data/perplexity/story.txt (n_ctx 64, its
default f16 KV cache, 2 threads) and records the running perplexity after every window and the
final estimate in tests/data/perplexity/moe_twins_llama_cpp.json. llama.cpp tokenizes the text
with the file's gpt2 vocabulary itself, so the scored-token count checks tessera's tokenizer too.

Quantized experts: llama.cpp's `llama-quantize` turns the qwen3_moe twin into Q4_0
(tests/data/models/qwen3_moe/model-Q4_0.gguf: stacked Q4_0 experts, the F32 router as
llama-quantize leaves it, a Q8_0 output matrix where Q6_K's 256-blocks do not fit), whose
llama.cpp perplexity is recorded too, and gguf-py dequantizes that file into
model-Q4_0-as-f32.gguf (dequantize_gguf.py; run with a Python that has gguf, e.g. the
requirements venv: PYTHON=.venv/bin/python).

Gemma: ggml's CPU GELU reads a table of f16 values at the f16-rounded input (GGML_GELU_FP16 in
ggml/src/ggml-cpu/vec.h), a ~1e-3 relative error per activation that moves these random models'
perplexities (mean log-likelihoods of 23-39 nats per token) by up to ~0.2%. With
LLAMA_CPP_EXACT_GELU_BIN naming a second build of the same commit whose libggml-cpu was compiled
with that one `#define GGML_GELU_FP16` line commented out (only libggml-cpu.so differs; copy the
other binaries beside it), the gemma twins are also measured there and recorded under
"models_exact_gelu": the same graph with exact GELU, which tessera must match tightly.

Needs a llama.cpp build (not a PyPI package):
    LLAMA_CPP_BIN=/path/to/llama.cpp/build/bin python3 tools/reference/llama_cpp_moe_perplexity.py
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MODELS = ["qwen3_moe", "mixtral", "qwen2_moe", "olmoe", "granite", "phi3", "llama3_rope", "olmo2",
          "olmo3", "smollm3", "qwen3_yarn", "granitemoe", "gemma",
          "gemma2", "gemma3", "gpt_oss", "phi3_longrope"]  # f32 twins; then Q4_0 qwen3_moe, MXFP4 gpt-oss
N_CTX = 64
TEXT = ROOT / "tests" / "data" / "perplexity" / "story.txt"
OUT = ROOT / "tests" / "data" / "perplexity" / "moe_twins_llama_cpp.json"


def main() -> int:
    bin_dir = Path(os.environ.get("LLAMA_CPP_BIN", ""))
    exe = bin_dir / "llama-perplexity"
    if not exe.exists():
        print("set LLAMA_CPP_BIN to a llama.cpp build's bin directory")
        return 2
    env = dict(os.environ, LD_LIBRARY_PATH=str(bin_dir))
    version = subprocess.run([str(exe), "--version"], env=env, capture_output=True, text=True)
    commit = re.search(r"commit (\w+)", version.stdout + version.stderr)
    result = {"method": ("llama.cpp llama-perplexity -f tests/data/perplexity/story.txt "
                         f"-c {N_CTX} -b {N_CTX} -t 2 (default f16 KV cache)"),
              "llama_cpp_commit": commit.group(1) if commit else "unknown",
              "n_ctx": N_CTX, "models": {}}
    qdir = ROOT / "tests" / "data" / "models" / "qwen3_moe"
    subprocess.run([str(bin_dir / "llama-quantize"), str(qdir / "model.gguf"),
                    str(qdir / "model-Q4_0.gguf"), "Q4_0"], env=env, capture_output=True,
                   check=True)
    subprocess.run([os.environ.get("PYTHON", sys.executable),
                    str(ROOT / "tools" / "reference" / "dequantize_gguf.py"),
                    str(qdir / "model-Q4_0.gguf"), str(qdir / "model-Q4_0-as-f32.gguf")],
                   check=True)
    def perplexity(bin_dir: Path, rel: str) -> dict:  # rel: under tests/data/models
        gguf = (ROOT / "tests" / "data" / "models" / rel).resolve()
        cmd = [str(bin_dir / "llama-perplexity"), "-m", str(gguf), "-f", str(TEXT), "-c",
               str(N_CTX), "-b", str(N_CTX), "-t", "2"]
        run_env = dict(os.environ, LD_LIBRARY_PATH=str(bin_dir))
        # llama.cpp logs from a thread of its own; a run whose last lines did not make it out
        # before exit is run again.
        for _ in range(3):
            out = subprocess.run(cmd, env=run_env, stdout=subprocess.PIPE,
                                 stderr=subprocess.STDOUT, text=True, check=True)
            log = out.stdout
            if "Final estimate" in log:
                break
        running = [float(v) for v in re.findall(r"\[\d+\](\d+\.\d+)", log)]
        final = re.search(r"Final estimate: PPL = (\d+\.\d+) \+/- (\d+\.\d+)", log)
        assert final and running, log[-2000:]
        return {"file": str(gguf.relative_to(ROOT)), "running_ppl": running,
                "ppl": float(final.group(1)), "ppl_stderr": float(final.group(2))}

    for name, rel in [(m, f"{m}/model.gguf") for m in MODELS] + [
            ("qwen3_moe_Q4_0", "qwen3_moe/model-Q4_0.gguf"),
            # gpt-oss's MXFP4 experts (make_gpt_oss_mxfp4_fixture.py)
            ("gpt_oss_mxfp4", "../quant/mxfp4_gpt_oss/model.gguf")]:
        result["models"][name] = perplexity(bin_dir, rel)
        print(f"{name}: PPL {result['models'][name]['ppl']} over "
              f"{len(result['models'][name]['running_ppl'])} windows")
    exact_bin = os.environ.get("LLAMA_CPP_EXACT_GELU_BIN")
    if exact_bin:
        result["exact_gelu_method"] = (
            "the same llama.cpp commit with `#define GGML_GELU_FP16` commented out in "
            "ggml/src/ggml-cpu/vec.h (libggml-cpu rebuilt alone): ggml_vec_gelu_f32 computes "
            "0.5*x*(1 + tanh(sqrt(2/pi)*x*(1 + 0.044715*x^2))) in f32 instead of reading an f16 "
            "table at the f16-rounded input")
        result["models_exact_gelu"] = {}
        for name in [m for m in MODELS if m.startswith("gemma")]:
            result["models_exact_gelu"][name] = perplexity(Path(exact_bin), f"{name}/model.gguf")
            print(f"{name} (exact GELU): PPL {result['models_exact_gelu'][name]['ppl']}")
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
