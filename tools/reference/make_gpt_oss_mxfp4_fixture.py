#!/usr/bin/env python3
"""gpt-oss with MXFP4 experts, laid out as OpenAI's gpt-oss-20b / -120b checkpoints are, and the
same experts as llama.cpp's converter repacks them into a GGUF (ggml type MXFP4).

Base: the gpt_oss fixture (tests/data/models/gpt_oss, make_hf_goldens.py). Its experts'
gate_up_proj [E, H, 2F] and down_proj [E, F, H] are quantized here to MXFP4 (E2M1 codes, one
E8M0 scale per 32 inputs; round to nearest code after dividing by 2^e, e = ceil(log2(amax / 6)),
the OCP MX recipe) and stored as transformers' mxfp4 integration reads them:
  mlp.experts.gate_up_proj_blocks [E, 2F, H/32, 16] U8   (low nibble = even input)
  mlp.experts.gate_up_proj_scales [E, 2F, H/32]     U8   (exponent + 127)
  mlp.experts.down_proj_blocks    [E, H, F/32, 16], down_proj_scales [E, H, F/32]
with config.json's quantization_config {"quant_method": "mxfp4", "modules_to_not_convert":
[attention, router, embeddings, lm_head]} as OpenAI's. No PyPI tool writes MXFP4 without a GPU
(transformers' quantize_to_mxfp4 needs triton_kernels), so the codes are spec-built; the oracle
is what reads them: transformers 4.57's Mxfp4HfQuantizer, which on a CPU dequantizes the blocks
(convert_moe_packed_tensors, exact in bf16) and runs GptOssExperts.

Writes tests/data/quant/mxfp4_gpt_oss/:
    config.json, model.safetensors, tokenizer files   the checkpoint
    expected.safetensors   every expert's gate_up_proj / down_proj as transformers dequantized
                           them, per expert and output-major ([2F, H], [H, F]; F32), under
                           model.layers.L.mlp.experts.E.{gate_up_proj,down_proj}.weight
    logits.safetensors     transformers' GptOssForCausalLM (eager, F32 after the dequantization)
                           over the gpt_oss golden's input_ids
    expected.json          counts, tolerance, versions
    model.gguf             the GGUF twin as conversion/gpt_oss.py writes it (repack_mxfp4: gate /
                           up split from the interleaved rows, nibbles reordered, the scale byte
                           before each block's 16 code bytes), the rest as the gpt_oss twin.
    model-as-f32.gguf      model.gguf with the MXFP4 experts as gguf-py dequantizes them
                           (dequantize_gguf.py: its own port of ggml's dequantize_row_mxfp4).

Run from the repository root with the requirements venv:
    .venv/bin/python tools/reference/make_gpt_oss_mxfp4_fixture.py
Deterministic: the weights are the committed fixture's, RTN.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM, AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from moe_goldens import write_gguf_twin  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
BASE = ROOT / "tests" / "data" / "models" / "gpt_oss"
OUT = ROOT / "tests" / "data" / "quant" / "mxfp4_gpt_oss"
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]
FP4 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                    -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def quantize(w: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """w [E, N, K] (output-major) -> blocks [E, N, K/32, 16] U8, scales [E, N, K/32] U8."""
    e, n, k = w.shape
    g = w.reshape(e, n, k // 32, 32).double()
    amax = g.abs().amax(-1, keepdim=True).clamp_min(2.0 ** -120)
    exp = torch.ceil(torch.log2(amax / 6.0)).clamp(-127, 127)
    q = g / torch.pow(2.0, exp)
    # Nearest of the 16 codes (ties to the lower index, i.e. the smaller magnitude first).
    codes = (q[..., None] - FP4.double()).abs().argmin(-1).to(torch.uint8)
    blocks = codes[..., 0::2] | (codes[..., 1::2] << 4)
    return blocks.contiguous(), (exp[..., 0] + 127).to(torch.uint8).contiguous()


def main() -> int:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    sd = load_file(str(BASE / "model.safetensors"))
    cfg = json.loads((BASE / "config.json").read_text())
    out = {}
    for name, t in sd.items():
        if name.endswith("mlp.experts.gate_up_proj") or name.endswith("mlp.experts.down_proj"):
            blocks, scales = quantize(t.transpose(1, 2).contiguous())
            out[name + "_blocks"], out[name + "_scales"] = blocks, scales
        else:
            out[name] = t
    save_file(out, str(OUT / "model.safetensors"), metadata={"format": "pt"})
    cfg["quantization_config"] = {
        "quant_method": "mxfp4",
        "modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                   "model.embed_tokens", "lm_head"]}
    (OUT / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    for f in TOKENIZER_FILES:
        shutil.copy(BASE / f, OUT / f)

    model = AutoModelForCausalLM.from_pretrained(str(OUT), attn_implementation="eager",
                                                 dtype=torch.float32).eval()
    # The experts come out of the dequantization in bf16 (exact for E2M1 times a power of two).
    model = model.float()
    for name, p in model.named_parameters():
        assert p.dtype == torch.float32, name
    quantized = 0
    expected = {}
    for i, layer in enumerate(model.model.layers):
        ex = layer.mlp.experts
        assert not hasattr(ex, "gate_up_proj_blocks"), "transformers kept the blocks"
        for proj in ("gate_up_proj", "down_proj"):
            w = getattr(ex, proj).detach().float()  # [E, K, N]
            for e in range(w.shape[0]):
                expected[f"model.layers.{i}.mlp.experts.{e}.{proj}.weight"] = (
                    w[e].transpose(0, 1).contiguous())
                quantized += 1
    save_file(expected, str(OUT / "expected.safetensors"))
    golden = json.loads((BASE / "golden.json").read_text())
    ids = golden["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0].float()
    save_file({"logits": logits.contiguous()}, str(OUT / "logits.safetensors"))
    base_logits = load_file(str(BASE / "golden_logits.safetensors"))["logits"]
    result = {
        "base": "tests/data/models/gpt_oss",
        "producer": {"library": "spec-built codes (this script); transformers mxfp4 integration "
                                "as the reader",
                     "how": "RTN to E2M1 with e = ceil(log2(amax/6)) per 32 inputs"},
        "versions": {p: metadata.version(p) for p in ("transformers", "torch", "safetensors")},
        "quantized_modules": quantized,
        "quantized_experts": quantized,
        "input_ids": ids,
        "logits": {"max_abs": float(logits.abs().max()),
                   "max_abs_diff_vs_unquantized": float((logits - base_logits).abs().max()),
                   "suggested_atol": 1e-4 * max(1.0, float(logits.abs().max())),
                   "note": "f32 forward with the dequantized experts; 1e-4 relative as the "
                           "unquantized goldens"},
    }
    (OUT / "expected.json").write_text(json.dumps(result, indent=1) + "\n")
    tok = AutoTokenizer.from_pretrained(str(OUT))
    unquantized = AutoModelForCausalLM.from_pretrained(str(BASE), dtype=torch.float32).eval()
    write_gguf_twin(unquantized, tok, "gpt-oss", OUT / "model.gguf",
                    mxfp4_experts={k: v for k, v in out.items() if "_blocks" in k or "_scales" in k})
    subprocess.run([sys.executable, str(ROOT / "tools" / "reference" / "dequantize_gguf.py"),
                    str(OUT / "model.gguf"), str(OUT / "model-as-f32.gguf")], check=True)
    print(json.dumps(result["logits"]), {p.name: p.stat().st_size for p in OUT.iterdir()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
