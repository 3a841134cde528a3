#!/usr/bin/env python3
"""Generate quantized-checkpoint fixtures for tessera's loaders, tests/data/quant/<name>/.

Every fixture is a tiny quantized checkpoint of the *same random base model* as the
engine goldens (tests/data/models/llama: hidden 64, 2 layers, 4 heads, 2 KV heads,
intermediate 128, vocab 320), written whenever possible by the producer's own code:

  * compressed-tensors (Neural Magic / vLLM project): QuantizationConfig +
    apply_quantization_config + its calculate_qparams / generate_gparam (scales from
    min/max of the weights, i.e. what llm-compressor's MinMax observer feeds it; RTN,
    no GPTQ) + ModelCompressor.compress_model; dequantized weights from the
    compressor's own decompress (decompress_module).
  * gguf-py (llama.cpp): GGUFWriter, gguf.quants.quantize / gguf.quants.dequantize.
  * transformers: FineGrainedFP8HfQuantizer.create_quantized_param (block FP8), called
    directly on CPU (its validate_environment wants a GPU, the maths is plain torch).
  * nvidia-modelopt: NVFP4QTensor.quantize / NVFP4QTensor.dequantize.
  * spec-built (docs quant-formats.md, cited section) where no producer runs on a
    CPU or installs next to the pinned transformers: fbgemm_fp8 (needs fbgemm_gpu),
    GPTQ (gptqmodel / auto-gptq need transformers>=5 or CUDA builds), AWQ (AutoAWQ is
    CUDA-only), compressed-tensors actorder g_idx (removed from compressed-tensors 0.20).

Each fixture directory holds
  config.json (+ side file: hf_quant_config.json / quantize_config.json) or model.gguf,
  model.safetensors (the producer's tensor names and dtypes), tokenizer files copied
  from tests/data/models/llama, and
  expected.safetensors   F32 "<module>.weight" for every quantized linear: the
                         dequantized weight as the producer's own dequantize computes it
                         (or the spec formula, for spec-built fixtures); GGUF: the GGUF
                         tensor name ("blk.0.attn_q.weight"), rows in GGUF order (Q/K
                         permuted as convert_hf_to_gguf does), shape [N, K].
  logits.safetensors     F32 "logits" [T, vocab]: transformers LlamaForCausalLM (eager,
                         F32) over the fixed input_ids of tests/data/models/llama/
                         golden.json, with every quantized linear's weight replaced by its
                         expected.safetensors value and, for formats that quantize
                         activations, a forward pre-hook that quantize-dequantizes the
                         linear's input with the reference formula of quant-formats.md
                         (the JSON names the scheme).
  expected.json          provenance (producer vs spec-built, library versions), config
                         summary, per-layer plan, input_ids, checks (independent spec
                         decoder of the saved files == expected (bitwise, except that the
                         sign of a zero may differ: recorded), NMSE vs the
                         base weights, logits vs base, f32 vs f64 reference) and a
                         tolerance note.

W4A4 NVFP4 fixtures (ct_nvfp4, modelopt_nvfp4) pass a margin guard (nvfp4_margin_guard):
no activation code within 1e-4 relative of an E2M1 / E4M3 rounding decision point, so that
an engine's f32 summation order cannot flip a code; expected.json "margins" records it.

Unquantized tensors: the RMSNorm weights stay F32; model.embed_tokens.weight and
lm_head.weight are stored as BF16 (the base F32 values rounded to nearest even) to keep
each fixture under 600 KB; GGUF stores token_embd/output as F16 (llama.cpp's default
--outtype). The reference logits use exactly the stored values.

Run from the repository root (about 10 s for the default set on 2 cores):
    .venv/bin/python tools/reference/make_quant_fixtures.py            # default set
    .venv/bin/python tools/reference/make_quant_fixtures.py --list
    .venv/bin/python tools/reference/make_quant_fixtures.py NAME ...   # only these
Deterministic: no randomness beyond the base model files, one torch thread.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
import warnings  # noqa: E402

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from safetensors import safe_open  # noqa: E402
from safetensors.torch import load_file, save_file  # noqa: E402
from transformers import AutoModelForCausalLM  # noqa: E402

torch.set_num_threads(1)
torch.use_deterministic_algorithms(True)
try:  # compressed-tensors logs through loguru; keep the output readable
    from loguru import logger as _loguru
    _loguru.remove()
except ImportError:
    pass

ROOT = Path(__file__).resolve().parents[2]
BASE_DIR = ROOT / "tests" / "data" / "models" / "llama"
OUT = ROOT / "tests" / "data" / "quant"
TOKENIZER_FILES = ["tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "generation_config.json"]
MAX_DIR_BYTES = 600_000
MAX_TOTAL_BYTES = 6_000_000

F8 = torch.float8_e4m3fn
E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
                     -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
E2M1_BOUNDS = torch.tensor([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0])

ATTN = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"]
MLP = ["mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]
N_LAYERS = 2
LINEARS = [f"model.layers.{i}.{p}" for i in range(N_LAYERS) for p in ATTN + MLP]


def versions(*names):
    out = {"python": sys.version.split()[0]}
    for n in ("torch", "numpy", "safetensors", "transformers") + names:
        try:
            out[n] = metadata.version(n)
        except metadata.PackageNotFoundError:
            out[n] = None
    return out


# ---------------------------------------------------------------------------
# Base model and reference forward
GOLDEN = json.loads((BASE_DIR / "golden.json").read_text())
INPUT_IDS = GOLDEN["input_ids"]
BASE_CFG = json.loads((BASE_DIR / "config.json").read_text())
BASE_SD = load_file(str(BASE_DIR / "model.safetensors"))


def load_base_model():
    return AutoModelForCausalLM.from_pretrained(str(BASE_DIR), dtype=torch.float32,
                                                attn_implementation="eager").eval()


REF_MODEL = load_base_model()


def bf16_unquantized():
    """Unquantized big tensors as stored in the safetensors fixtures (BF16)."""
    return {k: BASE_SD[k].to(torch.bfloat16)
            for k in ("model.embed_tokens.weight", "lm_head.weight")}


@torch.no_grad()
def ref_logits(weights, act_q=None, unquantized=None, dtype=torch.float32, capture=None):
    """Run the base model with replaced weights (dict HF module name -> [N,K] tensor),
    replaced unquantized tensors (dict param name -> tensor) and optional per-module
    activation fake-quant functions. Returns logits [T, vocab] in `dtype`."""
    model = copy.deepcopy(REF_MODEL).to(dtype)
    sd = {}
    for k, v in (unquantized or {}).items():
        sd[k] = v.to(dtype)
    for mod, w in weights.items():
        sd[mod + ".weight"] = w.to(dtype)
    missing = model.load_state_dict(sd, strict=False)
    assert not missing.unexpected_keys, missing.unexpected_keys
    hooks = []
    mods = dict(model.named_modules())
    for name, fn in (act_q or {}).items():
        hooks.append(mods[name].register_forward_pre_hook(
            lambda m, args, fn=fn: (fn(args[0]),)))
    for name in (capture or {}):
        hooks.append(mods[name].register_forward_pre_hook(
            lambda m, args, name=name: capture[name].append(args[0].detach().clone()) or None))
    out = model(torch.tensor([INPUT_IDS]), use_cache=False).logits[0]
    for h in hooks:
        h.remove()
    return out


def capture_inputs(unquantized):
    """Inputs of every linear when running the (unquantized) base model: calibration."""
    cap = {m: [] for m in LINEARS}
    ref_logits({}, None, unquantized, capture=cap)
    return {m: torch.cat([t.reshape(-1, t.shape[-1]) for t in v]) for m, v in cap.items()}


# ---------------------------------------------------------------------------
# Number-format helpers (quant-formats.md §2.2)
def sat_e4m3(x):
    return x.clamp(-448.0, 448.0).to(F8)


def e2m1_rne(v):
    """FP32 -> E2M1 code (0..15), RNE with saturation at 6 (§2.2)."""
    a = v.abs().clamp(max=6.0)
    lo = torch.searchsorted(E2M1_BOUNDS.to(a.dtype), a.contiguous(), right=False)
    hi = torch.searchsorted(E2M1_BOUNDS.to(a.dtype), a.contiguous(), right=True)
    idx = torch.where(hi != lo, torch.where(lo % 2 == 0, lo, hi), lo)
    return (idx + 8 * (v < 0).to(idx.dtype)).to(torch.uint8)


def e2m1_val(codes, dtype=torch.float32):
    return E2M1.to(dtype)[codes.long()]


def unpack_nibbles(packed):
    """U8 [N, K/2] -> codes [N, K]: low nibble = even k (§8.1)."""
    p = packed.to(torch.int32)
    return torch.stack([p & 0xF, p >> 4], dim=-1).reshape(p.shape[0], -1)


def pack_nibbles(codes):
    c = codes.to(torch.int32)
    return (c[:, 0::2] | (c[:, 1::2] << 4)).to(torch.uint8)


# --- activation fake-quant (what the serving kernels compute), quant-formats.md ---
# ALT: the same formula with the other order of operations (x * (1/s) instead of x / s,
# or the reverse); the logits difference it causes is recorded as the rounding-order
# sensitivity of the activation quantization.
ALT = {"on": False}


def _div(x, s):
    return x * (1.0 / s) if ALT["on"] else x / s


def act_fp8_static(scale):
    s = scale.reshape(())

    def f(x):
        return sat_e4m3(_div(x, s.to(x.dtype))).to(x.dtype) * s.to(x.dtype)
    return f


def act_fp8_token(ub=None):
    def f(x):
        a = x.abs().amax(-1, keepdim=True)
        if ub is None:
            s = a / 448.0
        else:  # fbgemm_fp8 (§5.2)
            s = torch.clamp(torch.minimum(a, torch.tensor(ub, dtype=x.dtype)) / 448.0,
                            min=1.0 / (448.0 * 512.0))
        return sat_e4m3(_div(x, s)).to(x.dtype) * s
    return f


def act_fp8_group(group):
    def f(x):
        K = x.shape[-1]
        pad = (-K) % group
        xp = torch.nn.functional.pad(x, (0, pad)).unflatten(-1, (-1, group))
        s = torch.clamp(xp.abs().amax(-1, keepdim=True), min=1e-10) / 448.0
        y = sat_e4m3(_div(xp, s)).to(x.dtype) * s
        return y.flatten(-2)[..., :K]
    return f


def act_int8_token():
    def f(x):
        a = x.abs().amax(-1, keepdim=True)
        v = x / (a / 127.0) if ALT["on"] else x * (127.0 / a)
        q = torch.clamp(torch.round(v), -128, 127)
        return q * (a / 127.0)
    return f


def act_nvfp4(g):
    """§8.3, g = CT input_global_scale = 1 / ModelOpt input_scale (a divisor)."""
    def f(x):
        gg = g.reshape(()).to(x.dtype)
        xs = x.unflatten(-1, (-1, 16))
        amax = xs.abs().amax(-1, keepdim=True)
        sf = (gg * amax / 6.0).clamp(max=448.0).to(F8).to(x.dtype)
        if ALT["on"]:  # compressed-tensors order: x / (sf / g)
            v = torch.where(sf == 0, torch.zeros_like(xs), xs / (sf / gg))
        else:  # vLLM kernel order: x * (g / sf)
            v = xs * torch.where(sf == 0, torch.zeros_like(sf), gg / sf)
        q = e2m1_val(e2m1_rne(v), x.dtype)
        return (q * sf / gg).flatten(-2)
    return f


# --- NVFP4 activation margin guard ---------------------------------------------------
# A W4A4 fixture is fragile when some activation sits on an E2M1 decision point
# (|x*g/sf| = 0.25, 0.75, ..., 5) or when g*amax_block/6 sits on an E4M3 rounding midpoint:
# an engine whose f32 sums run in another order than torch's then flips that code and the
# logits move by O(1). The guard runs the fake-quant forward in float64 and, for every
# module whose minimum relative distance to a decision point is below NVFP4_MARGIN, scales
# its global scale g by NVFP4_STEP (a calibration value: the checkpoint stays a valid
# producer checkpoint), repeating until the margin holds everywhere.
NVFP4_MARGIN = 1e-4
NVFP4_STEP = 1.0 - 3e-4
NVFP4_MAX_STEPS = 20
_E4M3_POS = torch.arange(0, 127, dtype=torch.uint8).view(F8).to(torch.float64)  # 0 .. 448
E4M3_MIDPOINTS = (_E4M3_POS[1:] + _E4M3_POS[:-1]) / 2


def _rel_dist(y, points):
    """Minimum over y of min_p |y - p| / p (y >= 0, points ascending, float64)."""
    y = y.reshape(-1).to(torch.float64).contiguous()
    if y.numel() == 0:
        return float("inf")
    i = torch.searchsorted(points, y).clamp(1, points.numel() - 1)
    lo, hi = points[i - 1], points[i]
    d = torch.minimum((y - lo).abs() / lo, (y - hi).abs() / hi)
    return float(d.min())


def nvfp4_margins(x, g):
    """(E2M1 margin, E4M3 margin) of x [rows, K] quantized with global scale g (float64)."""
    gg = g.reshape(()).to(torch.float64)
    xs = x.to(torch.float64).unflatten(-1, (-1, 16))
    amax = xs.abs().amax(-1, keepdim=True)
    y = gg * amax / 6.0
    e4m3 = _rel_dist(y[y <= 448.0], E4M3_MIDPOINTS)
    sf = y.clamp(max=448.0).to(F8).to(torch.float64)
    v = (xs * torch.where(sf == 0, torch.zeros_like(sf), gg / sf)).abs()
    e2m1 = _rel_dist(v, E2M1_BOUNDS.to(torch.float64))
    return e2m1, e4m3


def nvfp4_margin_guard(weights_hf, unq, params, to_g, step):
    """params: module -> stored scalar (F32) the activation global scale g comes from;
    to_g(param) -> g; step(param) -> param moving g by the factor NVFP4_STEP.
    Modules are fixed in forward order (a module's g changes the inputs of every later
    module, never of an earlier one): each pass steps the first module without margin.
    Returns (params, act_q, margins, report)."""
    order = [m for m in LINEARS if m in params]
    params = {m: params[m] for m in order}
    start = {m: float(p) for m, p in params.items()}
    steps = {m: 0 for m in order}
    for _ in range(NVFP4_MAX_STEPS * len(order) + 1):
        rec = {m: [] for m in order}

        def recorder(m, fn):
            return lambda x: (rec[m].append(x.detach().clone()), fn(x))[1]
        act = {m: recorder(m, act_nvfp4(to_g(p))) for m, p in params.items()}
        ref_logits(weights_hf, act, unq, dtype=torch.float64)
        per = {}
        for m in order:
            x = torch.cat([t.reshape(-1, t.shape[-1]) for t in rec[m]])
            per[m] = nvfp4_margins(x, to_g(params[m]))
        bad = [m for m in order if min(per[m]) < NVFP4_MARGIN]
        if not bad:
            break
        m = bad[0]
        assert steps[m] < NVFP4_MAX_STEPS, f"NVFP4 margin guard: {m} has no margin " \
            f"after {steps[m]} steps: {per[m]}"
        params[m] = step(params[m])
        steps[m] += 1
    print("   NVFP4 margin guard: steps " +
          (", ".join(f"{m}: {n}" for m, n in steps.items() if n) or "none") +
          f"; min margin {min(min(v) for v in per.values()):.2e}", flush=True)
    act_q = {m: act_nvfp4(to_g(p)) for m, p in params.items()}
    report = {
        "note": "NVFP4 activation margin guard: the fake-quant forward in float64 must keep "
                "every |x*g/sf| at least a relative " + f"{NVFP4_MARGIN:g}" + " from the E2M1 "
                "decision points {0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5} and every g*amax/6 (not "
                "above 448) at least that far from an E4M3 rounding midpoint, so that an "
                "engine's f32 summation order cannot flip a code; a module that fails has its "
                "global scale g moved by the factor " + f"{NVFP4_STEP!r}" + " per step (the "
                "stored value is a calibration value) until it holds.",
        "min_relative_margin": NVFP4_MARGIN,
        "step_factor_on_g": NVFP4_STEP,
        "adjusted": {m: {"steps": steps[m], "before": start[m], "after": float(params[m])}
                     for m in params if steps[m]},
        "e2m1_margin": {m: per[m][0] for m in params},
        "e4m3_margin": {m: per[m][1] for m in params},
    }
    margins = {m: min(per[m]) for m in params}
    return params, act_q, margins, report


# ---------------------------------------------------------------------------
# Fixture writing helpers
def fixture_dir(name):
    d = OUT / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    for f in TOKENIZER_FILES:
        shutil.copy(BASE_DIR / f, d / f)
    return d


def write_config(d, quant_cfg, extra=None):
    cfg = copy.deepcopy(BASE_CFG)
    if quant_cfg is not None:
        cfg["quantization_config"] = quant_cfg
    cfg.update(extra or {})
    (d / "config.json").write_text(json.dumps(cfg, indent=2, sort_keys=True) + "\n")


def tensor_table(path):
    out = {}
    with safe_open(str(path), "pt") as f:
        hdr_len = int.from_bytes(open(path, "rb").read(8), "little")
        hdr = json.loads(open(path, "rb").read(8 + hdr_len)[8:])
        for k in f.keys():
            out[k] = {"dtype": hdr[k]["dtype"], "shape": hdr[k]["shape"]}
    return out


def nmse(a, b):
    a, b = a.double(), b.double()
    return float(((a - b) ** 2).sum() / (b ** 2).sum())


BASE_LOGITS_CACHE = {}


def finish(d, name, *, made_by, producer, dequant_by, quant_summary, plan, expected,
           weights_hf, act_q, act_scheme, unquantized, spec_decoded, extra=None,
           nmse_limit):
    """expected: dict tensor name -> F32 (written to expected.safetensors);
    weights_hf: dict HF module -> F32 weight for the reference forward;
    spec_decoded: dict tensor name -> F32 from the independent spec decoder of the files."""
    expected = {k: v.to(torch.float32).contiguous() for k, v in expected.items()}
    save_file(expected, str(d / "expected.safetensors"))
    # bit-exact check of the independent spec decoder against the producer's values
    assert set(spec_decoded) == set(expected), (set(spec_decoded) ^ set(expected))
    zero_sign = {}
    for k in expected:
        a, b = expected[k], spec_decoded[k].to(torch.float32).contiguous()
        if not torch.equal(a.view(torch.int32), b.view(torch.int32)):
            # values equal but bits not: only the sign of zero may differ (E2M1 code 8 is -0)
            if torch.equal(a, b):
                zero_sign[k] = {"elements": int((a.view(torch.int32) != b.view(torch.int32)).sum()),
                                "expected_negative_zeros": int(((a == 0) & torch.signbit(a)).sum()),
                                "spec_negative_zeros": int(((b == 0) & torch.signbit(b)).sum())}
                continue
            bad = (a != b).sum().item()
            raise AssertionError(f"{name}: spec decoder != producer dequant for {k} "
                                 f"({bad} elements, max {(a - b).abs().max().item()})")
    # quality vs the base model
    nm = {}
    for mod, w in weights_hf.items():
        nm[mod] = nmse(w, BASE_SD[mod + ".weight"])
    worst = max(nm.values())
    assert worst < nmse_limit, f"{name}: NMSE {worst} >= {nmse_limit}"

    key = tuple(sorted((k, v.dtype) for k, v in unquantized.items()))
    if key not in BASE_LOGITS_CACHE:
        BASE_LOGITS_CACHE[key] = ref_logits({}, None, unquantized)
    base = BASE_LOGITS_CACHE[key]
    logits = ref_logits(weights_hf, act_q, unquantized)
    logits64 = ref_logits(weights_hf, act_q, unquantized, dtype=torch.float64)
    save_file({"logits": logits.contiguous()}, str(d / "logits.safetensors"))
    diff_base = (logits - base).abs().max().item()
    top1 = (logits.argmax(-1) == base.argmax(-1)).float().mean().item()
    f64 = (logits.double() - logits64).abs().max().item()
    max_abs = logits.abs().max().item()
    cos = torch.nn.functional.cosine_similarity(logits.double().flatten(),
                                                base.double().flatten(), dim=0).item()
    # the random base model amplifies weight errors strongly (linear gain ~1.6 per layer),
    # so closeness to the unquantized logits is only a sanity bound
    assert cos > 0.8, (name, cos)
    alt = None
    if act_q:
        ALT["on"] = True
        try:
            alt = (ref_logits(weights_hf, act_q, unquantized) - logits).abs().max().item()
        finally:
            ALT["on"] = False
        tol_note = ("Activations are fake-quantized. Computing x/s instead of x*(1/s) (or "
                    "the reverse) flips codes that sit on a rounding boundary; "
                    "alt_rounding_order_max_abs_diff is what that did here. The f64 run "
                    "also quantizes its (f64) activations, so f32_vs_f64_max_abs_diff "
                    "mostly measures codes flipped by ~1e-7 input differences: it is the "
                    "flip sensitivity of this fixture, not matmul noise. Suggested: atol = "
                    "max(2 * alt_rounding_order_max_abs_diff, 2 * f32_vs_f64_max_abs_diff, "
                    "1e-4 * max_abs_logit); an engine that quantizes activations in "
                    "bf16/f16 or accumulates differently can need more.")
        tol = max(2 * alt, 2 * f64, 1e-4 * max_abs)
    else:
        tol_note = ("Weight-only: with the dequantized weights bit-exact, the logits are an "
                    "ordinary F32 forward; compare like the base goldens (atol = max(10 * "
                    "f32_vs_f64_max_abs_diff, 1e-4 * max_abs_logit)).")
        tol = max(10 * f64, 1e-4 * max_abs)

    files = sorted(p.name for p in d.iterdir())
    ckpt_tables = {}
    for p in d.iterdir():
        if p.name == "model.safetensors":
            ckpt_tables = tensor_table(p)
    doc = {
        "name": name,
        "made_by": made_by,  # "producer" or "spec-built"
        "checkpoint_producer": producer,
        "dequantized_weights": dequant_by,
        "versions": versions("compressed-tensors", "gguf", "nvidia-modelopt", "torchao", "bitsandbytes"),
        "base_model": "tests/data/models/llama (same random weights; F32)",
        "unquantized_tensors": {k: str(v.dtype).replace("torch.", "") +
                                " (base F32 rounded to nearest even)"
                                for k, v in unquantized.items()},
        "quantization": quant_summary,
        "layer_plan": plan,
        "input_ids": INPUT_IDS,
        "expected": {"file": "expected.safetensors", "dtype": "F32",
                     "tensors": {k: list(v.shape) for k, v in expected.items()},
                     "spec_decoder_bit_exact": not zero_sign,
                     "spec_decoder_equal_values": True},
        "logits": {
            "file": "logits.safetensors", "tensor": "logits",
            "shape": list(logits.shape),
            "method": "transformers LlamaForCausalLM, eager attention, F32, no cache, "
                      "quantized linears replaced by the expected (dequantized) weights",
            "activation_quantization_simulated": act_scheme,
            "max_abs_logit": max_abs,
            "f32_vs_f64_max_abs_diff": f64,
            "alt_rounding_order_max_abs_diff": alt,
            "vs_unquantized_max_abs_diff": diff_base,
            "vs_unquantized_cosine": cos,
            "vs_unquantized_top1_agreement": top1,
            "suggested_atol": tol,
            "tolerance_note": tol_note,
        },
        "checks": {"nmse_vs_base_weight": nm, "nmse_limit": nmse_limit},
        "files": files,
    }
    if ckpt_tables:
        doc["checkpoint_tensors"] = ckpt_tables
    if zero_sign:
        doc["expected"]["zero_sign_differences"] = {
            "note": "the producer's dequantize and the spec decoder (code -> signed E2M1 "
                    "value, code 8 = -0.0) agree on every value but not on the sign of "
                    "some zeros; compare dequantized weights as floats (-0.0 == 0.0) or "
                    "normalise zeros before a bitwise comparison",
            "tensors": zero_sign}
    doc.update(extra or {})
    (d / "expected.json").write_text(json.dumps(doc, indent=1, sort_keys=False) + "\n")
    size = sum(p.stat().st_size for p in d.iterdir())
    print(f"  {name}: {size} bytes, max NMSE {worst:.2e}, logits vs base {diff_base:.3g} "
          f"(max |logit| {max_abs:.3g}), cos {cos:.3f}, f32-f64 {f64:.2e}, alt {alt}, top1 {top1:.3f}")
    assert size < MAX_DIR_BYTES, f"{name} is {size} bytes"
    return size


# ---------------------------------------------------------------------------
# compressed-tensors
def ct_observe(w, args):
    """Min/max of the weight per the strategy's reduction (llm-compressor MinMax)."""
    from compressed_tensors.quantization import QuantizationStrategy as S
    s = args.strategy
    if s == S.TENSOR:
        return w.amin().reshape(1), w.amax().reshape(1)
    if s == S.CHANNEL:
        return w.amin(1, keepdim=True), w.amax(1, keepdim=True)
    if s in (S.GROUP, S.TENSOR_GROUP):
        g = w.unflatten(-1, (-1, args.group_size))
        return g.amin(-1), g.amax(-1)
    if s == S.BLOCK:
        br, bc = args.block_structure
        nr, nc = math.ceil(w.shape[0] / br), math.ceil(w.shape[1] / bc)
        lo, hi = torch.empty(nr, nc), torch.empty(nr, nc)
        for i in range(nr):
            for j in range(nc):
                blk = w[i * br:(i + 1) * br, j * bc:(j + 1) * bc]
                lo[i, j], hi[i, j] = blk.amin(), blk.amax()
        return lo, hi
    raise ValueError(s)


def ct_spec_decode(d):
    """Independent decoder of a compressed-tensors checkpoint (quant-formats.md §5.3,
    §6.1, §7.2, §8.3, §9.3), from the files only."""
    cfg = json.loads((d / "config.json").read_text())["quantization_config"]
    sd = load_file(str(d / "model.safetensors"))
    out = {}
    for mod in LINEARS:
        p = mod + "."
        if p + "weight_packed" in sd:
            packed = sd[p + "weight_packed"]
            scale = sd[p + "weight_scale"]
            if packed.dtype == torch.uint8:  # nvfp4 / mxfp4
                q = e2m1_val(unpack_nibbles(packed))
                if p + "weight_global_scale" in sd:  # NVFP4: scale / global, then * q
                    s = scale.to(torch.float32) / sd[p + "weight_global_scale"]
                    gs = 16
                else:  # MXFP4: E8M0
                    s = torch.pow(2.0, scale.to(torch.float32) - 127.0)
                    gs = 32
                out[p + "weight"] = q * s.repeat_interleave(gs, dim=1)
                continue
            N, K = sd[p + "weight_shape"].tolist()
            bits = 32 // (K // packed.shape[1]) if K % packed.shape[1] == 0 else None
            bits = 4 if bits is None else bits
            pf = 32 // bits
            mask = (1 << bits) - 1
            w = packed.to(torch.int64) & 0xFFFFFFFF
            u = torch.stack([(w >> (bits * i)) & mask for i in range(pf)], -1).reshape(N, -1)[:, :K]
            q = (u - (1 << (bits - 1))).to(torch.float32)
            G = scale.shape[1]
            g = torch.arange(K) // (K // G)
            if p + "weight_g_idx" in sd:
                g = sd[p + "weight_g_idx"].long()
            zp = torch.zeros(N, G)
            if p + "weight_zero_point" in sd:
                z = sd[p + "weight_zero_point"].to(torch.int64) & 0xFFFFFFFF
                zu = torch.stack([(z >> (bits * i)) & mask for i in range(pf)], 1)
                zu = zu.reshape(-1, z.shape[1])[:N]  # packed along N (dim 0)
                zp = (zu - (1 << (bits - 1))).to(torch.float32)
            out[p + "weight"] = (q - zp[:, g]) * scale.to(torch.float32)[:, g]
        elif (p + "weight") in sd and sd[p + "weight"].dtype in (F8, torch.int8):
            q = sd[p + "weight"].to(torch.float32)
            s = sd[p + "weight_scale"].to(torch.float32)
            N, K = q.shape
            if s.numel() == 1:
                out[p + "weight"] = q * s.reshape(())
            elif s.shape == (N, 1):
                out[p + "weight"] = q * s
            else:  # block: [ceil(N/bn), ceil(K/bk)]
                bn, bk = math.ceil(N / s.shape[0]), math.ceil(K / s.shape[1])
                grp = [g for g in cfg["config_groups"].values()
                       if g["weights"].get("block_structure")]
                bn, bk = grp[0]["weights"]["block_structure"]
                S = s.repeat_interleave(bn, 0)[:N].repeat_interleave(bk, 1)[:, :K]
                out[p + "weight"] = q * S
    return out


def ct_fixture(name, groups, *, act_kind, nmse_limit, descr, plan_note=None):
    """groups: dict group name -> (QuantizationScheme, modules-regex list)."""
    from compressed_tensors.compressors import ModelCompressor
    from compressed_tensors.compressors.base import decompress_module
    from compressed_tensors.quantization import (QuantizationConfig, QuantizationStrategy,
                                                 apply_quantization_config)
    from compressed_tensors.quantization.utils import calculate_qparams, generate_gparam

    d = fixture_dir(name)
    unq = bf16_unquantized()
    calib = capture_inputs(unq)
    model = load_base_model()
    cfg = QuantizationConfig(config_groups=groups, ignore=["lm_head"])
    apply_quantization_config(model, cfg, show_progress=False)
    mods = dict(model.named_modules())
    plan, act_q = {}, {}
    with torch.no_grad():
        for mname in LINEARS:
            m = mods[mname]
            sch = m.quantization_scheme
            wa, ia = sch.weights, sch.input_activations
            w = m.weight.data
            gscale = None
            if wa.strategy == QuantizationStrategy.TENSOR_GROUP:
                gscale = generate_gparam(w.amin(), w.amax())
                m.weight_global_scale.data.copy_(gscale)
            lo, hi = ct_observe(w, wa)
            s, z = calculate_qparams(lo, hi, wa, global_scale=gscale)
            m.weight_scale.data.copy_(s)
            if hasattr(m, "weight_zero_point"):
                m.weight_zero_point.data.copy_(z)
            x = calib[mname]
            if ia is not None and not ia.dynamic:  # static per-tensor input scale
                s_in, _ = calculate_qparams(x.amin().reshape(1), x.amax().reshape(1), ia)
                m.input_scale.data.copy_(s_in)
            if ia is not None and ia.strategy == QuantizationStrategy.TENSOR_GROUP:
                m.input_global_scale.data.copy_(generate_gparam(x.amin(), x.amax()))
    comp = ModelCompressor.from_pretrained_model(model)
    comp.compress_model(model)
    sd = {k: v.detach().clone() for k, v in model.state_dict().items()}
    sd.update(unq)
    # the producer's own dequantization of every compressed module
    expected, fp4_note = {}, []
    with torch.no_grad():
        for mname in LINEARS:
            m = mods[mname]
            sch = m.quantization_scheme
            fmt = sch.format.value if sch.format else comp.quantization_config.format
            if fmt in ("nvfp4-pack-quantized", "mxfp4-pack-quantized"):
                # the FP4 compressors' decompress unpacks to BF16
                # (unpack_fp4_from_uint8's default dtype) and dequantizes in BF16, which
                # would round the F32 result; run the same steps with dtype float32.
                from compressed_tensors.compressors.base import BaseCompressor
                from compressed_tensors.compressors.nvfp4.helpers import unpack_fp4_from_uint8
                from compressed_tensors.quantization.lifecycle.forward import dequantize
                cls = BaseCompressor.get_value_from_registry(fmt)
                packed = sd[mname + ".weight_packed"]
                unpacked = unpack_fp4_from_uint8(packed, packed.shape[0], packed.shape[1] * 2,
                                                 dtype=torch.float32)
                scale_f = cls._decompress_scale(sd[mname + ".weight_scale"], torch.float32)
                expected[mname + ".weight"] = dequantize(
                    x_q=unpacked, scale=scale_f, args=sch.weights,
                    global_scale=sd.get(mname + ".weight_global_scale"), dtype=torch.float32)
                fp4_note.append(mname)
            else:
                decompress_module(m)
                expected[mname + ".weight"] = m.weight.data.to(torch.float32).clone()
            ia = sch.input_activations
            entry = {"weight": sch.weights.model_dump(exclude_none=True, mode="json"),
                     "format": str(sch.format.value if sch.format else comp.quantization_config.format),
                     "ignored": False}
            if ia is None:
                entry["activation"] = "none (weight-only, A16)"
            elif ia.strategy == QuantizationStrategy.TENSOR and not ia.dynamic:
                entry["activation"] = "FP8 E4M3 static per-tensor: qa = sat_e4m3(x / input_scale)"
                act_q[mname] = act_fp8_static(sd[mname + ".input_scale"])
            elif ia.type == "float" and ia.num_bits == 8 and ia.strategy == QuantizationStrategy.TOKEN:
                entry["activation"] = "FP8 E4M3 dynamic per-token: s = amax_row/448"
                act_q[mname] = act_fp8_token()
            elif ia.type == "float" and ia.num_bits == 8 and ia.strategy == QuantizationStrategy.GROUP:
                entry["activation"] = (f"FP8 E4M3 dynamic per-token-group of {ia.group_size} "
                                       "along K (partial last group when K < group): "
                                       "s = max(amax, 1e-10)/448")
                act_q[mname] = act_fp8_group(ia.group_size)
            elif ia.type == "int" and ia.strategy == QuantizationStrategy.TOKEN:
                entry["activation"] = ("INT8 dynamic symmetric per-token (vLLM kernel): "
                                       "qa = sat_i8(rne(x * 127/amax)), x' = qa * amax/127")
                act_q[mname] = act_int8_token()
            elif ia.strategy == QuantizationStrategy.TENSOR_GROUP:
                entry["activation"] = ("NVFP4 dynamic local per-16 E4M3 block scale with "
                                       "static input_global_scale g (§8.3)")
                act_q[mname] = act_nvfp4(sd[mname + ".input_global_scale"])
            else:
                raise ValueError(ia)
            if ia is not None:
                entry["input_activations"] = ia.model_dump(exclude_none=True, mode="json")
            plan[mname] = entry
    plan["lm_head"] = {"ignored": True, "stored": "BF16 lm_head.weight"}
    plan["model.embed_tokens"] = {"ignored": True, "stored": "BF16 (not a Linear target)"}
    extra = {"notes": plan_note} if plan_note else {}
    fp4_act = [m for m in LINEARS if m + ".input_global_scale" in sd]
    if fp4_act:  # W4A4: keep every activation code away from a rounding decision point
        gs_new, act_new, margins, report = nvfp4_margin_guard(
            {m: expected[m + ".weight"] for m in LINEARS}, unq,
            {m: sd[m + ".input_global_scale"] for m in fp4_act},
            to_g=lambda p: p, step=lambda p: p * NVFP4_STEP)
        for m in fp4_act:
            sd[m + ".input_global_scale"] = gs_new[m]
            act_q[m] = act_new[m]
        extra["margins"] = margins
        extra["nvfp4_margin_guard"] = report
    save_file({k: v.contiguous() for k, v in sorted(sd.items())}, str(d / "model.safetensors"),
              metadata={"format": "pt"})
    write_config(d, None)
    comp.update_config(str(d))
    qcfg = json.loads((d / "config.json").read_text())["quantization_config"]
    spec = ct_spec_decode(d)
    acts = sorted({plan[m].get("activation") for m in LINEARS})
    return finish(
        d, name, made_by="producer",
        producer={"library": "compressed-tensors", "how": descr +
                  " Scales: compressed_tensors calculate_qparams / generate_gparam on the "
                  "min/max of each weight (the reduction llm-compressor's MinMax observer "
                  "performs; RTN, no GPTQ); static input scales from the min/max of each "
                  "linear's input over input_ids on the unquantized model; packing: "
                  "ModelCompressor.compress_model; config: ModelCompressor.update_config."},
        dequant_by={"made_by": "producer",
                    "function": "compressed_tensors.compressors.base.decompress_module "
                                "(the format's compressor .decompress -> lifecycle dequantize)"
                    if not fp4_note else
                    "compressed-tensors' FP4 decompress steps with dtype float32: "
                    "unpack_fp4_from_uint8(weight_packed, N, K, dtype=float32), "
                    "<compressor>._decompress_scale(weight_scale, float32), "
                    "quantization.lifecycle.forward.dequantize(x_q, scale, args, "
                    "global_scale=weight_global_scale, dtype=float32) = q * (scale / "
                    "global_scale) (the compressor's own decompress does the same in BF16, "
                    "unpack_fp4_from_uint8's default dtype, which would round the result)"},
        quant_summary=qcfg, plan=plan, expected=expected,
        weights_hf={m: expected[m + ".weight"] for m in LINEARS},
        act_q=act_q, act_scheme=acts if act_q else "none", unquantized=unq,
        spec_decoded=spec, nmse_limit=nmse_limit, extra=extra or None)


def ct_scheme(preset=None, targets=("Linear",), **kw):
    from compressed_tensors.quantization import (QuantizationArgs, QuantizationScheme,
                                                 preset_name_to_scheme)
    if preset:
        s = preset_name_to_scheme(preset, list(targets))
        for part, upd in kw.items():
            args = getattr(s, part)
            setattr(s, part, QuantizationArgs(**{**args.model_dump(), **upd}))
        return s
    return QuantizationScheme(targets=list(targets), **kw)


def make_ct(name):
    if name == "ct_fp8":
        return ct_fixture(name, {"group_0": ct_scheme("FP8")}, act_kind="static",
                          nmse_limit=1e-2, descr="Preset FP8 (W8A8 FP8, static per-tensor "
                          "weights and inputs).")
    if name == "ct_fp8_dynamic":
        return ct_fixture(name, {"group_0": ct_scheme("FP8_DYNAMIC")}, act_kind="token",
                          nmse_limit=1e-2, descr="Preset FP8_DYNAMIC (channel weights, "
                          "dynamic per-token activations).")
    if name == "ct_fp8_block":
        return ct_fixture(name, {"group_0": ct_scheme("FP8_BLOCK")}, act_kind="group",
                          nmse_limit=1e-2, descr="Preset FP8_BLOCK unchanged: 128x128 "
                          "weight blocks (every tensor here is a single partial block: "
                          "N, K <= 128, scale shape [1,1]) and dynamic per-token-group-128 "
                          "activations (one partial group when K = 64).")
    if name == "ct_w8a8_int8":
        return ct_fixture(name, {"group_0": ct_scheme("W8A8")}, act_kind="int8",
                          nmse_limit=1e-2, descr="Preset W8A8 (INT8 channel symmetric "
                          "weights, INT8 dynamic per-token symmetric activations).")
    if name == "ct_w4a16":
        return ct_fixture(name, {"group_0": ct_scheme("W4A16", weights={"group_size": 32})},
                          act_kind=None, nmse_limit=5e-2,
                          descr="Preset W4A16 with group_size 32 (int4 symmetric).")
    if name == "ct_w4a16_asym":
        return ct_fixture(name, {"group_0": ct_scheme("W4A16_ASYM", weights={"group_size": 32})},
                          act_kind=None, nmse_limit=5e-2,
                          descr="Preset W4A16_ASYM with group_size 32 (int4 asymmetric, "
                          "packed zero points).")
    if name == "ct_nvfp4":
        return ct_fixture(name, {"group_0": ct_scheme("NVFP4")}, act_kind="nvfp4",
                          nmse_limit=5e-2, descr="Preset NVFP4 (W4A4: tensor_group 16 "
                          "weights with weight_global_scale; input_global_scale from the "
                          "input amax).")
    if name == "ct_nvfp4a16":
        return ct_fixture(name, {"group_0": ct_scheme("NVFP4A16")}, act_kind=None,
                          nmse_limit=5e-2, descr="Preset NVFP4A16 (weight-only NVFP4).")
    if name == "ct_mxfp4":
        return ct_fixture(name, {"group_0": ct_scheme("MXFP4A16")}, act_kind=None,
                          nmse_limit=5e-2, descr="Preset MXFP4A16 (weight-only MXFP4, "
                          "group 32, E8M0 scales); the W4A4 MXFP4 preset is not used "
                          "because its dynamic MX activation rounding is not specified "
                          "in quant-formats.md.")
    if name == "ct_mixed":
        return ct_fixture(
            name,
            {"group_0": ct_scheme("FP8_DYNAMIC", targets=["re:.*self_attn\\.(q|k|v|o)_proj$"]),
             "group_1": ct_scheme("W4A16", targets=["re:.*mlp\\.(gate|up|down)_proj$"],
                                  weights={"group_size": 32})},
            act_kind="mixed", nmse_limit=5e-2,
            descr="Two config groups: attention q/k/v/o = preset FP8_DYNAMIC "
            "(float-quantized), MLP gate/up/down = preset W4A16 group 32 "
            "(pack-quantized); global format mixed-precision.")
    raise KeyError(name)


# ---------------------------------------------------------------------------
# compressed-tensors W4A16 with actorder "group" (g_idx): spec-built
def make_ct_actorder(name):
    d = fixture_dir(name)
    unq = bf16_unquantized()
    calib = capture_inputs(unq)
    gs, bits = 32, 4
    sd = {k: v for k, v in BASE_SD.items() if not any(k.startswith(m + ".") for m in LINEARS)}
    sd.update(unq)
    expected, plan = {}, {}
    for mname in LINEARS:
        w = BASE_SD[mname + ".weight"]
        N, K = w.shape
        hdiag = (calib[mname].double() ** 2).sum(0)
        perm = torch.argsort(hdiag, descending=True, stable=True)
        g_idx = torch.empty(K, dtype=torch.int32)
        g_idx[perm] = (torch.arange(K) // gs).to(torch.int32)
        G = K // gs
        scale = torch.empty(N, G)
        for g in range(G):
            cols = (g_idx == g).nonzero().flatten()
            amax = w[:, cols].abs().amax(1)
            scale[:, g] = amax / 7.5  # compressed-tensors symmetric: amax / ((qmax-qmin)/2)
        scale = torch.where(scale == 0, torch.finfo(torch.float32).eps, scale)
        s_k = scale[:, g_idx.long()]
        q = torch.clamp(torch.round(w / s_k), -8, 7)
        u = (q + 8).to(torch.int64)
        words = torch.zeros(N, K // 8, dtype=torch.int64)
        for i in range(8):
            words |= u[:, i::8] << (4 * i)
        sd[mname + ".weight_packed"] = words.to(torch.int32) if False else \
            torch.from_numpy(words.numpy().astype(np.uint32).view(np.int32))
        sd[mname + ".weight_scale"] = scale
        sd[mname + ".weight_g_idx"] = g_idx
        sd[mname + ".weight_shape"] = torch.tensor([N, K])
        expected[mname + ".weight"] = q * s_k
        plan[mname] = {"weight": {"num_bits": 4, "type": "int", "symmetric": True,
                                  "strategy": "group", "group_size": gs,
                                  "actorder": "group"},
                       "format": "pack-quantized", "activation": "none (weight-only, A16)",
                       "ignored": False}
    plan["lm_head"] = {"ignored": True}
    save_file(dict(sorted(sd.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
    import compressed_tensors
    qcfg = {"config_groups": {"group_0": {
        "format": "pack-quantized", "input_activations": None, "output_activations": None,
        "targets": ["Linear"],
        "weights": {"actorder": "group", "block_structure": None, "dynamic": False,
                    "group_size": gs, "num_bits": 4, "observer": "minmax",
                    "observer_kwargs": {}, "strategy": "group", "symmetric": True,
                    "type": "int"}}},
        "format": "pack-quantized", "global_compression_ratio": None, "ignore": ["lm_head"],
        "kv_cache_scheme": None, "quant_method": "compressed-tensors",
        "quantization_status": "compressed", "sparsity_config": {}, "transform_config": {},
        "version": compressed_tensors.__version__}
    write_config(d, qcfg)
    return finish(
        d, name, made_by="spec-built",
        producer={"library": None, "how": "spec-built (quant-formats.md §7.2): "
                  "compressed-tensors 0.20 no longer implements g_idx / actorder in "
                  "quantize or its pack compressor, and GPTQ (llm-compressor) does not "
                  "install next to transformers 4.57. g_idx is what GPTQ actorder=group "
                  "writes: columns sorted by descending Hessian diagonal sum(x^2) over "
                  "input_ids, g_idx[perm[i]] = i // 32; RTN values (no GPTQ error "
                  "feedback); scale = amax/7.5 over each g_idx group's columns (the "
                  "compressed-tensors symmetric formula); weight_scale F32."},
        dequant_by={"made_by": "spec-built", "function":
                    "W[n,k] = (u - 8) * weight_scale[n, g_idx[k]] (reimplemented)"},
        quant_summary=qcfg, plan=plan, expected=expected,
        weights_hf={m: expected[m + ".weight"] for m in LINEARS},
        act_q=None, act_scheme="none", unquantized=unq,
        spec_decoded=ct_spec_decode(d), nmse_limit=5e-2)


# ---------------------------------------------------------------------------
# GGUF (gguf-py)
def gguf_permute(w, n_head, n_head_kv):
    """convert_hf_to_gguf.py LlamaModel.permute."""
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def gguf_unpermute(w, n_head, n_head_kv):
    if n_head_kv is not None and n_head != n_head_kv:
        n_head = n_head_kv
    return (w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


GGUF_NAMES = {"self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
              "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
              "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def gguf_spec_dequant(raw, qtype, n, k):
    """§11.3, numpy, independent of gguf-py."""
    import gguf
    b = np.asarray(raw, dtype=np.uint8).reshape(n, -1)
    if qtype == gguf.GGMLQuantizationType.Q8_0:
        blk = b.reshape(n, k // 32, 34)
        d = blk[..., :2].copy().view(np.float16).astype(np.float32)
        qs = blk[..., 2:].copy().view(np.int8).astype(np.float32)
        return (qs * d).reshape(n, k)
    if qtype == gguf.GGMLQuantizationType.Q4_0:
        blk = b.reshape(n, k // 32, 18)
        d = blk[..., :2].copy().view(np.float16).astype(np.float32)
        qs = blk[..., 2:]
        lo = (qs & 0xF).astype(np.float32) - 8
        hi = (qs >> 4).astype(np.float32) - 8
        return (np.concatenate([lo, hi], -1) * d).reshape(n, k)
    raise ValueError(qtype)


def make_gguf(name):
    import gguf
    d = fixture_dir(name)
    for f in TOKENIZER_FILES:  # the GGUF carries its tokenizer; keep HF files too
        pass
    cfg = BASE_CFG
    nh, nkv = cfg["num_attention_heads"], cfg["num_key_value_heads"]
    Q8, Q4 = gguf.GGMLQuantizationType.Q8_0, gguf.GGMLQuantizationType.Q4_0
    # per-tensor types: layer 0 attention Q8_0 / MLP Q4_0, layer 1 the other way round
    types = {}
    for i in range(N_LAYERS):
        for p in ATTN:
            types[(i, p)] = Q8 if i == 0 else Q4
        for p in MLP:
            types[(i, p)] = Q4 if i == 0 else Q8
    path = d / "model.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name("tessera-tiny-llama")
    w.add_context_length(cfg["max_position_embeddings"])
    w.add_embedding_length(cfg["hidden_size"])
    w.add_block_count(cfg["num_hidden_layers"])
    w.add_feed_forward_length(cfg["intermediate_size"])
    w.add_rope_dimension_count(cfg["head_dim"])
    w.add_head_count(nh)
    w.add_head_count_kv(nkv)
    w.add_layer_norm_rms_eps(cfg["rms_norm_eps"])
    w.add_rope_freq_base(cfg["rope_theta"])
    w.add_vocab_size(cfg["vocab_size"])
    w.add_file_type(gguf.LlamaFileType.MOSTLY_Q4_0)
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    tok = json.loads((BASE_DIR / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    special = {a["id"] for a in tok["added_tokens"] if a["special"]}
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([int(gguf.TokenType.CONTROL) if i in special else
                       int(gguf.TokenType.NORMAL) for i in range(len(tokens))])
    w.add_token_merges([" ".join(m) if isinstance(m, list) else m
                        for m in tok["model"]["merges"]])
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_pad_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)

    f16 = lambda t: t.numpy().astype(np.float16)  # noqa: E731
    w.add_tensor("token_embd.weight", f16(BASE_SD["model.embed_tokens.weight"]))
    raw_by_name, plan, hf_of = {}, {}, {}
    for i in range(N_LAYERS):
        pre = f"model.layers.{i}."
        w.add_tensor(f"blk.{i}.attn_norm.weight",
                     BASE_SD[pre + "input_layernorm.weight"].numpy())
        for p in ATTN + MLP:
            hw = BASE_SD[pre + p + ".weight"]
            if p == "self_attn.q_proj":
                hw = gguf_permute(hw, nh, nh)
            elif p == "self_attn.k_proj":
                hw = gguf_permute(hw, nh, nkv)
            gname = f"blk.{i}.{GGUF_NAMES[p]}.weight"
            qt = types[(i, p)]
            raw = gguf.quants.quantize(hw.numpy().astype(np.float32), qt)
            raw_by_name[gname] = (raw, qt, hw.shape)
            hf_of[gname] = pre + p
            if p == "self_attn.o_proj":
                w.add_tensor(gname, raw, raw_dtype=qt)
                w.add_tensor(f"blk.{i}.ffn_norm.weight",
                             BASE_SD[pre + "post_attention_layernorm.weight"].numpy())
            else:
                w.add_tensor(gname, raw, raw_dtype=qt)
            plan[gname] = {"hf_module": pre + p, "ggml_type": qt.name,
                           "block_size": 32, "activation": "none (F32 activations)",
                           "rows_permuted": p in ("self_attn.q_proj", "self_attn.k_proj"),
                           "ignored": False}
    w.add_tensor("output_norm.weight", BASE_SD["model.norm.weight"].numpy())
    w.add_tensor("output.weight", f16(BASE_SD["lm_head.weight"]))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    plan["token_embd.weight"] = {"ggml_type": "F16", "ignored": True}
    plan["output.weight"] = {"ggml_type": "F16", "ignored": True}

    # read back with GGUFReader, dequantize with gguf-py (the producer)
    r = gguf.GGUFReader(str(path))
    expected, spec, weights_hf = {}, {}, {}
    for t in r.tensors:
        if t.name not in raw_by_name:
            continue
        raw, qt, shape = raw_by_name[t.name]
        assert t.tensor_type == qt and np.array_equal(np.asarray(t.data).reshape(-1),
                                                      raw.reshape(-1))
        deq = gguf.quants.dequantize(np.asarray(t.data), t.tensor_type).reshape(shape)
        expected[t.name] = torch.from_numpy(np.ascontiguousarray(deq, dtype=np.float32))
        spec[t.name] = torch.from_numpy(gguf_spec_dequant(t.data, t.tensor_type, *shape))
        hfw = expected[t.name]
        mod = hf_of[t.name]
        if mod.endswith("q_proj"):
            hfw = gguf_unpermute(hfw, nh, nh)
        elif mod.endswith("k_proj"):
            hfw = gguf_unpermute(hfw, nh, nkv)
        weights_hf[mod] = hfw
    # sanity: unpermute(permute(W)) == W
    wq = BASE_SD["model.layers.0.self_attn.k_proj.weight"]
    assert torch.equal(gguf_unpermute(gguf_permute(wq, nh, nkv), nh, nkv), wq)
    unq = {"model.embed_tokens.weight": BASE_SD["model.embed_tokens.weight"].half(),
           "lm_head.weight": BASE_SD["lm_head.weight"].half()}
    return finish(
        d, name, made_by="producer",
        producer={"library": "gguf (gguf-py from llama.cpp)", "how":
                  "GGUFWriter, llama layout; weights quantized from the base F32 with "
                  "gguf.quants.quantize; attn_q/attn_k rows permuted with "
                  "convert_hf_to_gguf LlamaModel.permute (n_head 4 / n_head_kv 2); "
                  "per-tensor types: blk.0 attention Q8_0 + FFN Q4_0, blk.1 attention "
                  "Q4_0 + FFN Q8_0; token_embd/output F16, norms F32; tokenizer: the "
                  "HF byte-level BPE as tokenizer.ggml.model = gpt2 (tokens, token_type "
                  "CONTROL for <pad>/<s>/</s>, merges, bos 1, eos 2, pad 0, add_bos true, "
                  "pre 'default'). Q4_K/Q6_K are impossible here: K-quants need rows that "
                  "are multiples of 256 and K is 64 or 128."},
        dequant_by={"made_by": "producer", "function": "gguf.quants.dequantize on the "
                    "tensors read back by gguf.GGUFReader; names and row order are GGUF's "
                    "(attn_q/attn_k permuted), shape [N, K]"},
        quant_summary={"container": "GGUF v3", "general.file_type": "MOSTLY_Q4_0 (7)",
                       "types": {k: v["ggml_type"] for k, v in plan.items()}},
        plan=plan, expected=expected, weights_hf=weights_hf, act_q=None,
        act_scheme="none", unquantized=unq, spec_decoded=spec, nmse_limit=5e-2,
        extra={"gguf_to_hf": {k: hf_of[k] for k in sorted(hf_of)},
               "logits_note": "reference forward uses HF order: attn_q/attn_k "
                              "un-permuted (the inverse of LlamaModel.permute), which is "
                              "the same model as llama.cpp's interleaved RoPE on the "
                              "permuted rows"})


# ---------------------------------------------------------------------------
# HF fp8 (FineGrainedFP8, block) via transformers' own quantizer code
def make_hf_fp8_block(name, block=(16, 32)):
    from transformers import FineGrainedFP8Config
    from transformers.integrations.finegrained_fp8 import FP8Linear, replace_with_fp8_linear
    from transformers.quantizers.quantizer_finegrained_fp8 import FineGrainedFP8HfQuantizer

    d = fixture_dir(name)
    unq = bf16_unquantized()
    qc = FineGrainedFP8Config(activation_scheme="dynamic", weight_block_size=list(block))
    qz = FineGrainedFP8HfQuantizer(qc, pre_quantized=False)
    model = load_base_model()
    model = replace_with_fp8_linear(model, modules_to_not_convert=["lm_head"],
                                    quantization_config=qc)
    for mname in LINEARS:
        qz.create_quantized_param(model, BASE_SD[mname + ".weight"], mname + ".weight",
                                  torch.device("cpu"))
    sd = model.state_dict()
    out = {k: v.detach().clone() for k, v in sd.items() if k in BASE_SD or
           k.endswith(".weight_scale_inv")}
    for k in BASE_SD:
        if k not in out:
            out[k] = BASE_SD[k]
    out.update(unq)
    save_file(dict(sorted(out.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
    qcfg = qc.to_dict()
    write_config(d, qcfg)
    # producer's dequantization: transformers has no standalone block dequant in 4.57
    # except FP8Linear's matmul path; the integration's reference is W = q * S[n/bn, k/bk]
    expected, spec, plan, act_q = {}, {}, {}, {}
    mods = dict(model.named_modules())
    bn, bk = block
    for mname in LINEARS:
        m = mods[mname]
        assert isinstance(m, FP8Linear)
        q = out[mname + ".weight"].to(torch.float32)
        S = out[mname + ".weight_scale_inv"]
        N, K = q.shape
        expected[mname + ".weight"] = q * S.repeat_interleave(bn, 0)[:N].repeat_interleave(bk, 1)[:, :K]
        # independent decode (loop form)
        dq = torch.empty(N, K)
        for i in range(N):
            for j0 in range(0, K, bk):
                dq[i, j0:j0 + bk] = q[i, j0:j0 + bk] * S[i // bn, j0 // bk]
        spec[mname + ".weight"] = dq
        act_q[mname] = act_fp8_group(bk)
        plan[mname] = {"weight": f"FP8 E4M3 block {bn}x{bk}, weight_scale_inv F32 "
                                 f"[{math.ceil(N / bn)},{math.ceil(K / bk)}] (multiplier)",
                       "activation": f"FP8 dynamic per-token-group {bk}: s = max(amax,1e-10)/448",
                       "ignored": False}
    plan["lm_head"] = {"ignored": True}
    return finish(
        d, name, made_by="producer",
        producer={"library": "transformers", "how":
                  "FineGrainedFP8HfQuantizer.create_quantized_param (transformers "
                  "quantizer_finegrained_fp8.py) called on CPU for every linear: per block "
                  "scale = 448/amax, q = fp8(clamp(w*scale)), weight_scale_inv = "
                  "reciprocal(scale); config = FineGrainedFP8Config.to_dict(). Block "
                  f"{list(block)}: transformers' quantizer rejects shapes that are not "
                  "multiples of the block, so the 128x128 default cannot be produced for "
                  "N, K in {32, 64, 128} (ct_fp8_block covers a partial 128x128 block), "
                  "and its scale.squeeze() turns a [1, c] scale into [c] (then fails to "
                  "load into FP8Linear), so every dimension needs >= 2 blocks: hence the "
                  "non-square [16, 32] (bn=16 rows of N, bk=32 along K)."},
        dequant_by={"made_by": "spec formula (transformers 4.57 has no CPU dequantize for "
                    "this format; FP8Linear only runs Triton kernels)",
                    "function": "W[n,k] = fp32(q[n,k]) * weight_scale_inv[n//bn, k//bk] "
                                "(quant-formats.md §5.1)"},
        quant_summary=qcfg, plan=plan, expected=expected,
        weights_hf={m: expected[m + ".weight"] for m in LINEARS}, act_q=act_q,
        act_scheme=f"FP8 dynamic per-token-group {bk} (§5.1)", unquantized=unq,
        spec_decoded=spec, nmse_limit=1e-2)


# ---------------------------------------------------------------------------
# fbgemm_fp8: spec-built
def make_fbgemm(name, ub=1200.0):
    d = fixture_dir(name)
    unq = bf16_unquantized()
    out = dict(BASE_SD)
    out.update(unq)
    expected, spec, plan, act_q = {}, {}, {}, {}
    for mname in LINEARS:
        w = BASE_SD[mname + ".weight"]
        # fbgemm quantize_fp8_per_row: scale = 448 / row_max; q = fp8(w*scale); stored 1/scale
        inv = 448.0 / w.abs().amax(1, keepdim=True)
        q = sat_e4m3(w * inv)
        ws = inv.reciprocal()
        del out[mname + ".weight"]
        out[mname + ".weight"] = q
        out[mname + ".weight_scale"] = ws
        expected[mname + ".weight"] = q.to(torch.float32) * ws
        act_q[mname] = act_fp8_token(ub)
        plan[mname] = {"weight": "FP8 E4M3 per output row, weight_scale F32 [N,1]",
                       "activation": f"FP8 dynamic per-token, ub {ub}", "ignored": False}
    plan["lm_head"] = {"ignored": True}
    save_file(dict(sorted(out.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
    sd = load_file(str(d / "model.safetensors"))
    spec = {m + ".weight": sd[m + ".weight"].to(torch.float32) * sd[m + ".weight_scale"]
            for m in LINEARS}
    qcfg = {"quant_method": "fbgemm_fp8", "activation_scale_ub": ub,
            "modules_to_not_convert": ["lm_head"]}
    write_config(d, qcfg)
    return finish(
        d, name, made_by="spec-built",
        producer={"library": None, "how": "spec-built (quant-formats.md §5.2): transformers' "
                  "FbgemmFp8HfQuantizer calls torch.ops.fbgemm.quantize_fp8_per_row, which "
                  "needs fbgemm-gpu (CUDA). Re-implemented as fbgemm does it: scale = "
                  "448/row_amax, q = fp8(w*scale), weight_scale = 1/scale (F32 [N,1])."},
        dequant_by={"made_by": "spec-built", "function": "W[n,:] = q[n,:] * weight_scale[n]"},
        quant_summary=qcfg, plan=plan, expected=expected,
        weights_hf={m: expected[m + ".weight"] for m in LINEARS}, act_q=act_q,
        act_scheme=f"FP8 dynamic per-token: s = max(min(amax, {ub})/448, 1/(448*512)) (§5.2)",
        unquantized=unq, spec_decoded=spec, nmse_limit=1e-2)


# ---------------------------------------------------------------------------
# GPTQ (v1 / v2) and AWQ GEMM: spec-built
def gptq_quantize(w, bits, gs, sym, g_idx):
    """AutoGPTQ Quantizer.find_params + quantize, RTN (no Hessian update).
    w [N, K]; groups by g_idx. Returns q [N,K] ints, z [G,N] ints, s [G,N] f16."""
    N, K = w.shape
    maxq = 2 ** bits - 1
    G = int(g_idx.max()) + 1
    s = torch.empty(G, N, dtype=torch.float16)
    z = torch.empty(G, N, dtype=torch.int64)
    for g in range(G):
        cols = (g_idx == g).nonzero().flatten()
        x = w[:, cols]
        xmin = torch.clamp(x.amin(1), max=0)
        xmax = torch.clamp(x.amax(1), min=0)
        if sym:
            xmax = torch.maximum(xmin.abs(), xmax)
            xmin = torch.where(xmin < 0, -xmax, xmin)
        scale = (xmax - xmin) / maxq
        scale = torch.where(scale == 0, torch.ones_like(scale), scale)
        zero = torch.full_like(scale, (maxq + 1) / 2) if sym else torch.round(-xmin / scale)
        s[g] = scale.to(torch.float16)
        z[g] = zero.to(torch.int64)
    sk = s[g_idx.long()].T.to(torch.float32)  # [N, K]
    zk = z[g_idx.long()].T
    q = torch.clamp(torch.round(w / sk) + zk, 0, maxq).to(torch.int64)
    return q, z, s


def pack_along_rows(vals, bits):
    """vals [R, C] uint -> int32 [R*bits/32, C], LSB first (bits in {2,4,8})."""
    pf = 32 // bits
    R, C = vals.shape
    out = np.zeros((R // pf, C), dtype=np.uint64)
    v = vals.numpy().astype(np.uint64)
    for i in range(pf):
        out |= v[i::pf] << np.uint64(bits * i)
    return torch.from_numpy(out.astype(np.uint32).view(np.int32))


def unpack_along_rows(packed, bits, R):
    pf = 32 // bits
    p = packed.numpy().view(np.uint32).astype(np.uint64)
    out = np.zeros((p.shape[0] * pf, p.shape[1]), dtype=np.int64)
    for i in range(pf):
        out[i::pf] = (p >> np.uint64(bits * i)) & np.uint64((1 << bits) - 1)
    return torch.from_numpy(out[:R])


def make_gptq(name, *, bits=4, gs=32, sym=True, desc_act=False, v2=False):
    d = fixture_dir(name)
    unq = bf16_unquantized()
    calib = capture_inputs(unq) if desc_act else None
    out = {k: v for k, v in BASE_SD.items() if not any(k.startswith(m + ".") for m in LINEARS)}
    out.update(unq)
    expected, plan = {}, {}
    for mname in LINEARS:
        w = BASE_SD[mname + ".weight"]
        N, K = w.shape
        if desc_act:
            perm = torch.argsort((calib[mname].double() ** 2).sum(0), descending=True,
                                 stable=True)
            g_idx = torch.empty(K, dtype=torch.int32)
            g_idx[perm] = (torch.arange(K) // gs).to(torch.int32)
        else:
            g_idx = (torch.arange(K) // gs).to(torch.int32)
        q, z, s = gptq_quantize(w, bits, gs, sym, g_idx)
        stored_z = z if v2 else z - 1
        assert (stored_z >= 0).all(), "v1 zero of 0 would overflow (see §7.1 caveat)"
        out[mname + ".qweight"] = pack_along_rows(q.T.contiguous(), bits)      # [K*b/32, N]
        out[mname + ".qzeros"] = pack_along_rows(stored_z.T.contiguous(), bits).T.contiguous()
        out[mname + ".scales"] = s                                            # [G, N] f16
        out[mname + ".g_idx"] = g_idx
        expected[mname + ".weight"] = (s[g_idx.long()].T.to(torch.float32) *
                                       (q - z[g_idx.long()].T).to(torch.float32))
        plan[mname] = {"weight": f"int{bits} {'sym' if sym else 'asym'} group {gs}"
                       f"{' desc_act (g_idx permutation)' if desc_act else ''}",
                       "activation": "none (weight-only)", "ignored": False}
    plan["lm_head"] = {"ignored": True}
    save_file(dict(sorted(out.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
    fmt = "gptq_v2" if v2 else "gptq"
    qcfg = {"quant_method": "gptq", "bits": bits, "group_size": gs, "desc_act": desc_act,
            "sym": sym, "true_sequential": True, "static_groups": False, "lm_head": False,
            "damp_percent": 0.01, "checkpoint_format": fmt, "format": fmt,
            "pack_dtype": "int32",
            "meta": {"quantizer": ["tessera make_quant_fixtures.py (spec-built, RTN)"]}}
    write_config(d, qcfg)
    (d / "quantize_config.json").write_text(json.dumps(qcfg, indent=2, sort_keys=True) + "\n")
    # independent spec decode from the files (§7.1)
    sd = load_file(str(d / "model.safetensors"))
    spec = {}
    for mname in LINEARS:
        p = mname + "."
        K = sd[p + "g_idx"].shape[0]
        N = sd[p + "scales"].shape[1]
        qq = unpack_along_rows(sd[p + "qweight"], bits, K)           # [K, N]
        zz = unpack_along_rows(sd[p + "qzeros"].T.contiguous(), bits, N).T  # [G, N]
        if not v2:
            zz = (zz + 1) & ((1 << bits) - 1)
        gi = sd[p + "g_idx"].long()
        spec[p + "weight"] = (sd[p + "scales"].to(torch.float32)[gi] *
                              (qq - zz[gi]).to(torch.float32)).T
    return finish(
        d, name, made_by="spec-built",
        producer={"library": None, "how": "spec-built (quant-formats.md §7.1): gptqmodel 7.x "
                  "and auto-gptq do not install next to transformers 4.57 / torch 2.15 on "
                  "CPU (gptqmodel requires transformers >= 5.20; auto-gptq needs a CUDA "
                  "build). Values: AutoGPTQ Quantizer.find_params/quantize formulas "
                  "(scale = (xmax-xmin)/maxq with xmin/xmax clamped to include 0; sym: "
                  "zero = (maxq+1)/2; asym: zero = round(-xmin/scale)), RTN without the "
                  "GPTQ Hessian update; scales stored F16 and q computed with the F16 "
                  "scale" + ("; desc_act: columns sorted by descending sum(x^2) over "
                             "input_ids (the GPTQ H diagonal), g_idx[perm[i]] = i // "
                             f"{gs}" if desc_act else "") +
                  (f"; v1 stores zero-1 in qzeros (sym 4-bit: 0x77777777)" if not v2 else
                   "; v2 stores the zero as is")},
        dequant_by={"made_by": "spec-built", "function": "W[n,k] = scales[g_idx[k], n] * "
                    "(q[k,n] - Z[g_idx[k], n])" + (", Z = stored + 1" if not v2 else
                                                   ", Z = stored")},
        quant_summary=qcfg, plan=plan, expected=expected,
        weights_hf={m: expected[m + ".weight"] for m in LINEARS}, act_q=None,
        act_scheme="none", unquantized=unq, spec_decoded=spec,
        nmse_limit=5e-2 if bits >= 4 else 2e-1)


AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]


def awq_pack(vals):
    """vals [R, N] uint4 -> int32 [R, N/8] with the AWQ interleave."""
    R, N = vals.shape
    v = vals.numpy().astype(np.uint64).reshape(R, N // 8, 8)
    out = np.zeros((R, N // 8), dtype=np.uint64)
    for p in range(8):
        out |= v[:, :, AWQ_ORDER[p]] << np.uint64(4 * p)
    return torch.from_numpy(out.astype(np.uint32).view(np.int32))


def awq_unpack(packed):
    p = packed.numpy().view(np.uint32).astype(np.uint64)
    R, C = p.shape
    out = np.zeros((R, C, 8), dtype=np.int64)
    for pp in range(8):
        out[:, :, AWQ_ORDER[pp]] = (p >> np.uint64(4 * pp)) & np.uint64(0xF)
    return torch.from_numpy(out.reshape(R, C * 8))


def make_awq(name, gs=32):
    d = fixture_dir(name)
    unq = bf16_unquantized()
    out = {k: v for k, v in BASE_SD.items() if not any(k.startswith(m + ".") for m in LINEARS)}
    out.update(unq)
    expected, plan = {}, {}
    for mname in LINEARS:
        w = BASE_SD[mname + ".weight"]
        N, K = w.shape
        wg = w.reshape(N, K // gs, gs)
        # AutoAWQ pseudo_quantize_tensor (zero_point=True, w_bit=4)
        mx, mn = wg.amax(-1), wg.amin(-1)
        scales = ((mx - mn).clamp(min=1e-5) / 15)
        zeros = (-torch.round(mn / scales)).clamp(0, 15)
        s16 = scales.to(torch.float16)
        sk = s16.to(torch.float32).repeat_interleave(gs, 1)
        zk = zeros.repeat_interleave(gs, 1)
        q = torch.clamp(torch.round(w / sk) + zk, 0, 15).to(torch.int64)  # [N, K]
        out[mname + ".qweight"] = awq_pack(q.T.contiguous())            # [K, N/8]
        out[mname + ".qzeros"] = awq_pack(zeros.to(torch.int64).T.contiguous())  # [K/g, N/8]
        out[mname + ".scales"] = s16.T.contiguous()                       # [K/g, N]
        expected[mname + ".weight"] = (q - zk.to(torch.int64)).to(torch.float32) * sk
        plan[mname] = {"weight": f"uint4 asym group {gs} (AWQ GEMM)",
                       "activation": "none (weight-only)", "ignored": False}
    plan["lm_head"] = {"ignored": True}
    save_file(dict(sorted(out.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
    qcfg = {"quant_method": "awq", "bits": 4, "group_size": gs, "zero_point": True,
            "version": "gemm", "modules_to_not_convert": None}
    write_config(d, qcfg)
    sd = load_file(str(d / "model.safetensors"))
    spec = {}
    for mname in LINEARS:
        p = mname + "."
        qq = awq_unpack(sd[p + "qweight"])        # [K, N]
        zz = awq_unpack(sd[p + "qzeros"])         # [K/g, N]
        ss = sd[p + "scales"].to(torch.float32)   # [K/g, N]
        K = qq.shape[0]
        g = torch.arange(K) // gs
        spec[p + "weight"] = ((qq - zz[g]).to(torch.float32) * ss[g]).T
    return finish(
        d, name, made_by="spec-built",
        producer={"library": None, "how": "spec-built (quant-formats.md §7.3): AutoAWQ is "
                  "CUDA-only and archived. Values: AutoAWQ pseudo_quantize_tensor "
                  "(scale = clamp(max-min, 1e-5)/15, zero = clamp(-round(min/scale), 0, "
                  "15)) without the activation-aware search (RTN), scales F16, q computed "
                  "with the F16 scale; packing: AWQ_ORDER [0,2,4,6,1,3,5,7]."},
        dequant_by={"made_by": "spec-built", "function": "W[n,k] = (q[k,n] - z[k/g,n]) * "
                    "scales[k/g,n] (AutoAWQ dequantize_gemm)"},
        quant_summary=qcfg, plan=plan, expected=expected,
        weights_hf={m: expected[m + ".weight"] for m in LINEARS}, act_q=None,
        act_scheme="none", unquantized=unq, spec_decoded=spec, nmse_limit=5e-2)


# ---------------------------------------------------------------------------
# ModelOpt NVFP4 (NVFP4QTensor) and ModelOpt FP8
def make_modelopt_nvfp4(name):
    from modelopt.torch.quantization.qtensor import NVFP4QTensor
    import modelopt
    d = fixture_dir(name)
    unq = bf16_unquantized()
    calib = capture_inputs(unq)
    out = {k: v for k, v in BASE_SD.items() if not any(k.startswith(m + ".") for m in LINEARS)}
    out.update(unq)
    expected, plan, act_q = {}, {}, {}
    for mname in LINEARS:
        w = BASE_SD[mname + ".weight"]
        qt, sf, ws2 = NVFP4QTensor.quantize(w, 16)
        out[mname + ".weight"] = qt._quantized_data.contiguous()
        out[mname + ".weight_scale"] = sf.contiguous()
        out[mname + ".weight_scale_2"] = ws2.to(torch.float32).reshape(())
        in_scale = (calib[mname].abs().amax() / (6.0 * 448.0)).to(torch.float32).reshape(())
        out[mname + ".input_scale"] = in_scale
        deq = qt.dequantize(dtype=torch.float32, scale=sf, double_scale=ws2,
                            block_sizes={-1: 16})
        expected[mname + ".weight"] = deq.to(torch.float32)
        act_q[mname] = act_nvfp4(1.0 / in_scale)
        plan[mname] = {"weight": "NVFP4 (E2M1, E4M3 scale per 16, weight_scale_2 multiplier)",
                       "activation": "NVFP4 dynamic per-16 with static input_scale "
                                     "(g = 1/input_scale)", "ignored": False}
    plan["lm_head"] = {"ignored": True}
    # W4A4: keep every activation code away from a rounding decision point (g = 1/input_scale)
    in_scales, act_q, margins, guard = nvfp4_margin_guard(
        {m: expected[m + ".weight"] for m in LINEARS}, unq,
        {m: out[m + ".input_scale"] for m in LINEARS},
        to_g=lambda p: 1.0 / p, step=lambda p: p / NVFP4_STEP)
    for m in LINEARS:
        out[m + ".input_scale"] = in_scales[m]
    save_file(dict(sorted(out.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
    ver = modelopt.__version__
    hf_q = {"producer": {"name": "modelopt", "version": ver},
            "quantization": {"quant_algo": "NVFP4", "kv_cache_quant_algo": None,
                             "group_size": 16, "exclude_modules": ["lm_head"]}}
    (d / "hf_quant_config.json").write_text(json.dumps(hf_q, indent=4) + "\n")
    qcfg = {"quant_method": "modelopt", "quant_algo": "NVFP4", "group_size": 16,
            "kv_cache_quant_algo": None, "ignore": ["lm_head"],
            "producer": {"name": "modelopt", "version": ver}}
    write_config(d, qcfg)
    sd = load_file(str(d / "model.safetensors"))
    spec = {}
    for mname in LINEARS:
        p = mname + "."
        q = e2m1_val(unpack_nibbles(sd[p + "weight"]))
        blk = sd[p + "weight_scale"].to(torch.float32) * sd[p + "weight_scale_2"]
        spec[p + "weight"] = q * blk.repeat_interleave(16, 1)
    return finish(
        d, name, made_by="producer",
        producer={"library": "nvidia-modelopt", "how":
                  "modelopt.torch.quantization.qtensor.NVFP4QTensor.quantize(w, 16) on CPU "
                  "for each linear (weight_scale_2 = amax/2688, E4M3 block scales, packed "
                  "E2M1); input_scale = amax(input over input_ids)/2688 (ModelOpt's "
                  "max calibration, computed here); hf_quant_config.json and the config.json "
                  "quantization_config written by this script in ModelOpt's layout (the "
                  "unified HF exporter needs a full mtq.quantize calibration loop)."},
        dequant_by={"made_by": "producer", "function": "NVFP4QTensor.dequantize(dtype=F32, "
                    "scale=weight_scale, double_scale=weight_scale_2, block_sizes={-1:16}) = "
                    "e2m1 * (fp32(weight_scale) * weight_scale_2)"},
        quant_summary=hf_q, plan=plan, expected=expected,
        weights_hf={m: expected[m + ".weight"] for m in LINEARS}, act_q=act_q,
        act_scheme="NVFP4 per §8.3 with g = 1/input_scale", unquantized=unq,
        spec_decoded=spec, nmse_limit=5e-2,
        extra={"margins": margins, "nvfp4_margin_guard": guard})


def make_modelopt_fp8(name):
    import modelopt
    d = fixture_dir(name)
    unq = bf16_unquantized()
    calib = capture_inputs(unq)
    out = {k: v for k, v in BASE_SD.items() if not any(k.startswith(m + ".") for m in LINEARS)}
    out.update(unq)
    expected, plan, act_q = {}, {}, {}
    how = "spec-built (§5.4 export formulas: scale = amax/448, q = fp8(w/scale))"
    for mname in LINEARS:
        w = BASE_SD[mname + ".weight"]
        ws = (w.abs().amax() / 448.0).to(torch.float32)
        try:
            from modelopt.torch.export.quant_utils import to_quantized_weight
            q = to_quantized_weight(w, ws, "fp8")
            how = ("producer: weight_scale = amax/448 (ModelOpt get_scaling_factor formula), "
                   "q = modelopt.torch.export.quant_utils.to_quantized_weight(w, scale, "
                   "'fp8')")
        except Exception:  # noqa: BLE001
            q = sat_e4m3(w / ws)
        out[mname + ".weight"] = q
        out[mname + ".weight_scale"] = ws.reshape(())
        ins = (calib[mname].abs().amax() / 448.0).to(torch.float32).reshape(())
        out[mname + ".input_scale"] = ins
        expected[mname + ".weight"] = q.to(torch.float32) * ws
        act_q[mname] = act_fp8_static(ins)
        plan[mname] = {"weight": "FP8 per-tensor, weight_scale F32 scalar",
                       "activation": "FP8 static per-tensor input_scale", "ignored": False}
    plan["lm_head"] = {"ignored": True}
    save_file(dict(sorted(out.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
    ver = modelopt.__version__
    hf_q = {"producer": {"name": "modelopt", "version": ver},
            "quantization": {"quant_algo": "FP8", "kv_cache_quant_algo": None,
                             "exclude_modules": ["lm_head"]}}
    (d / "hf_quant_config.json").write_text(json.dumps(hf_q, indent=4) + "\n")
    write_config(d, {"quant_method": "modelopt", "quant_algo": "FP8", "ignore": ["lm_head"],
                     "kv_cache_quant_algo": None, "producer": {"name": "modelopt",
                                                               "version": ver}})
    sd = load_file(str(d / "model.safetensors"))
    spec = {m + ".weight": sd[m + ".weight"].to(torch.float32) * sd[m + ".weight_scale"]
            for m in LINEARS}
    return finish(
        d, name, made_by="producer" if how.startswith("producer") else "spec-built",
        producer={"library": "nvidia-modelopt", "how": how},
        dequant_by={"made_by": "spec formula", "function": "W = fp32(q) * weight_scale"},
        quant_summary=hf_q, plan=plan, expected=expected,
        weights_hf={m: expected[m + ".weight"] for m in LINEARS}, act_q=act_q,
        act_scheme="FP8 static per-tensor: qa = sat_e4m3(x / input_scale)",
        unquantized=unq, spec_decoded=spec, nmse_limit=1e-2)


# ---------------------------------------------------------------------------
BUILDERS = {
    # priority order of the issue; the default set is the prefix that fits
    # MAX_TOTAL_BYTES (each fixture is about 0.5 MB, most of it the F32 expected weights)
    "ct_fp8": make_ct,
    "ct_fp8_dynamic": make_ct,
    "ct_fp8_block": make_ct,
    "ct_w8a8_int8": make_ct,
    "ct_w4a16": make_ct,
    "ct_w4a16_asym": make_ct,
    "ct_nvfp4": make_ct,
    "ct_mxfp4": make_ct,
    "ct_mixed": make_ct,
    "gguf_q8_0_q4_0": make_gguf,
    "hf_fp8_block": make_hf_fp8_block,
    # beyond the default 6 MB budget (each is verified the same way; build by name)
    "gptq_v2_asym_desc_act": lambda n: make_gptq(n, sym=False, desc_act=True, v2=True),
    "awq_gemm": make_awq,
    "modelopt_nvfp4": make_modelopt_nvfp4,
    "gptq_v1_sym": lambda n: make_gptq(n, sym=True, desc_act=False, v2=False),
    "fbgemm_fp8": make_fbgemm,
    "modelopt_fp8": make_modelopt_fp8,
    "ct_w4a16_actorder": make_ct_actorder,
    "ct_nvfp4a16": make_ct,
    "gptq_v1_8bit": lambda n: make_gptq(n, bits=8, sym=True),
}
DEFAULT = list(BUILDERS)[:11]


def _spec_builder(fn):
    """Builders of tools/reference/quant_fixtures_quark.py get this module for its helpers."""
    return lambda n: fn(sys.modules[__name__], n)


# spec-built AMD Quark and gpt-oss mxfp4 fixtures (beyond the default set; build by name)
import quant_fixtures_quark  # noqa: E402  (this script's directory is sys.path[0])

BUILDERS.update({n: _spec_builder(f) for n, f in quant_fixtures_quark.builders().items()})
# bitsandbytes 4-bit, made by bitsandbytes itself on a CPU (beyond the default set)
import quant_fixtures_bnb  # noqa: E402

BUILDERS.update({n: _spec_builder(f) for n, f in quant_fixtures_bnb.builders().items()})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*", help="fixtures to (re)build; default: the default set")
    ap.add_argument("--list", action="store_true")
    args = ap.parse_args()
    if args.list:
        for n in BUILDERS:
            print(n, "(default)" if n in DEFAULT else "")
        return
    names = args.names or DEFAULT
    OUT.mkdir(parents=True, exist_ok=True)
    for n in names:
        print(f"[{n}]", flush=True)
        BUILDERS[n](n)
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    print(f"total tests/data/quant: {total} bytes")
    if total >= MAX_TOTAL_BYTES:
        print(f"WARNING: over the {MAX_TOTAL_BYTES} byte budget")


if __name__ == "__main__":
    main()
