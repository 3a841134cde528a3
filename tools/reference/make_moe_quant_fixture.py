#!/usr/bin/env python3
"""Quantized checkpoints made by their producer: compressed-tensors W4A16 of the qwen3_moe fixture
(tests/data/models/qwen3_moe, make_hf_goldens.py), and with `--model gemma3_mm` of the multimodal
Gemma 3 fixture (Gemma3ForConditionalGeneration: the decoder's projections quantized, the vision
tower, the projector and lm_head ignored, as llm-compressor's Gemma 3 recipes do; weights saved
under transformers' model.language_model.* names, written to tests/data/quant/ct_w4a16_gemma3_mm).

Every attention projection and every expert's gate / up / down projection is quantized to int4,
symmetric, groups of 32 along K, packed as compressed-tensors' `pack-quantized` format writes it;
the router (`mlp.gate`) and lm_head stay F32: the `ignore` list llm-compressor's MoE recipes use
(`re:.*mlp.gate$`), which vLLM expects (it builds the router unquantized). Scales come from
compressed_tensors' calculate_qparams on each group's min / max (llm-compressor's MinMax
observer, RTN); packing and config from ModelCompressor.

Writes tests/data/quant/ct_w4a16_qwen3_moe/:
    config.json, model.safetensors, tokenizer files   the checkpoint
    expected.safetensors   every quantized module's weight as compressed-tensors' own
                           decompress_module returns it (F32)
    logits.safetensors     transformers' Qwen3MoeForCausalLM (eager, F32, no cache) over the
                           qwen3_moe golden's input_ids with those weights
    expected.json          modules, tolerance, versions

Run from the repository root with the requirements venv (compressed-tensors, transformers):
    .venv/bin/python tools/reference/make_moe_quant_fixture.py
Deterministic: the weights are the committed fixture's, RTN, no randomness.
"""

from __future__ import annotations

import json
import shutil
import sys
from importlib import metadata
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file
from transformers import AutoModelForCausalLM

ROOT = Path(__file__).resolve().parents[2]
MODEL = sys.argv[sys.argv.index("--model") + 1] if "--model" in sys.argv else "qwen3_moe"
BASE = ROOT / "tests" / "data" / "models" / MODEL
OUT = ROOT / "tests" / "data" / "quant" / f"ct_w4a16_{MODEL}"
# What stays unquantized: the MoE router (vLLM builds it unquantized), or Gemma 3's vision side.
IGNORE = {"qwen3_moe": ["lm_head", "re:.*mlp.gate$"],
          "gemma3_mm": ["lm_head", "re:.*vision_tower.*", "re:.*multi_modal_projector.*"]}[MODEL]
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]
GROUP = 32


def load(dtype=torch.float32):
    return AutoModelForCausalLM.from_pretrained(str(BASE), dtype=dtype,
                                                attn_implementation="eager").eval()


def main() -> int:
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.compressors.base import decompress_module
    from compressed_tensors.quantization import (QuantizationArgs, QuantizationConfig,
                                                 QuantizationScheme, apply_quantization_config)
    from compressed_tensors.quantization.utils import calculate_qparams

    torch.manual_seed(0)
    golden = json.loads((BASE / "golden.json").read_text())
    input_ids = torch.tensor([golden["input_ids"]])
    model = load()
    args = QuantizationArgs(num_bits=4, type="int", symmetric=True, strategy="group",
                            group_size=GROUP)
    cfg = QuantizationConfig(
        config_groups={"group_0": QuantizationScheme(targets=["Linear"], weights=args)},
        ignore=IGNORE)
    apply_quantization_config(model, cfg, show_progress=False)
    quantized = [n for n, m in model.named_modules() if getattr(m, "quantization_scheme", None)]
    assert not any(n.endswith("mlp.gate") or n == "lm_head" or "vision" in n for n in quantized)
    mods = dict(model.named_modules())
    with torch.no_grad():
        for name in quantized:
            m = mods[name]
            g = m.weight.data.unflatten(-1, (-1, GROUP))
            s, z = calculate_qparams(g.amin(-1), g.amax(-1), args)
            m.weight_scale.data.copy_(s)
            if hasattr(m, "weight_zero_point"):
                m.weight_zero_point.data.copy_(z)
    comp = ModelCompressor.from_pretrained_model(model)
    comp.compress_model(model)
    sd = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}

    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    for f in TOKENIZER_FILES:
        shutil.copy(BASE / f, OUT / f)
    save_file(dict(sorted(sd.items())), str(OUT / "model.safetensors"), metadata={"format": "pt"})
    shutil.copy(BASE / "config.json", OUT / "config.json")
    comp.update_config(str(OUT))

    # The producer's dequantization, then transformers' forward with those weights.
    expected = {}
    with torch.no_grad():
        for name in quantized:
            decompress_module(mods[name])
            expected[name + ".weight"] = mods[name].weight.data.to(torch.float32).contiguous()
    save_file(expected, str(OUT / "expected.safetensors"))
    logits = {}
    for dtype in (torch.float32, torch.float64):
        ref = load(dtype)
        state = {k: v.to(dtype) for k, v in expected.items()}
        missing = ref.load_state_dict(state, strict=False)
        assert not missing.unexpected_keys, missing.unexpected_keys
        with torch.no_grad():
            logits[dtype] = ref(input_ids=input_ids, use_cache=False).logits[0]
    save_file({"logits": logits[torch.float32].contiguous()}, str(OUT / "logits.safetensors"))
    max_abs = float(logits[torch.float32].abs().max())
    f64 = float((logits[torch.float32].double() - logits[torch.float64]).abs().max())
    experts = sorted(n for n in quantized if ".experts." in n)
    (OUT / "expected.json").write_text(json.dumps({
        "name": OUT.name,
        "made_by": "producer",
        "producer": ("compressed-tensors: apply_quantization_config (W4A16: int4 symmetric, "
                     f"group {GROUP}, targets Linear, ignore {', '.join(IGNORE[:-1])} and {IGNORE[-1]}), "
                     "calculate_qparams on each group's min/max, ModelCompressor.compress_model "
                     "(pack-quantized), ModelCompressor.update_config"),
        "dequantized_weights": ("expected.safetensors: compressed_tensors.compressors.base."
                                "decompress_module of every quantized module, F32"),
        "base_model": f"tests/data/models/{MODEL}",
        "input_ids": golden["input_ids"],
        "quantized_modules": len(quantized),
        "quantized_experts": len(experts),
        "unquantized": (["model.layers.*.mlp.gate (router)", "lm_head", "embeddings", "norms"]
                        if MODEL == "qwen3_moe" else
                        ["vision tower", "multi-modal projector", "lm_head", "embeddings",
                         "norms"]),
        "logits": {
            "file": "logits.safetensors", "shape": list(logits[torch.float32].shape),
            "method": (f"transformers {type(model).__name__}, eager, F32, no cache, quantized "
                       "modules' weights replaced by expected.safetensors"),
            "max_abs_logit": max_abs,
            "f32_vs_f64_max_abs_diff": f64,
            "suggested_atol": max(10 * f64, 1e-4 * max_abs),
            "tolerance_note": ("weight-only: with the dequantized weights bit-exact the logits "
                               "are an ordinary F32 forward; atol = max(10 * "
                               "f32_vs_f64_max_abs_diff, 1e-4 * max_abs_logit)"),
        },
        "versions": {n: metadata.version(n) for n in
                     ("torch", "transformers", "compressed-tensors", "safetensors")},
    }, indent=1) + "\n")
    sizes = {p.name: p.stat().st_size for p in sorted(OUT.iterdir())}
    print(f"{OUT.relative_to(ROOT)}: {len(quantized)} quantized modules ({len(experts)} expert "
          f"projections), max|logit| {max_abs:.3f}, f32-f64 {f64:.3g}, files {sizes}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
