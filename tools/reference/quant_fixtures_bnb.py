"""bitsandbytes fixtures for make_quant_fixtures.py (quant-formats.md has no bnb section; the
layout below is bitsandbytes 0.50's own, read from its source and checked on its files).

Made by the producer on a CPU: bitsandbytes (0.50: its CPU / pure-torch backends quantize and
dequantize) through transformers' BitsAndBytesConfig integration (bnb_nf4_double) or through
bnb.functional.quantize_4bit and QuantState.as_dict(packed=True), the serialization
Linear4bit._save_to_state_dict writes (bnb_fp4_b128: a block size transformers does not expose).

A 4-bit linear `<m>` is stored as
  <m>.weight                                 U8 [ceil(N*K/2), 1]: codes of the flattened [N, K]
                                             weight, element 2j in the HIGH nibble of byte j
  <m>.weight.absmax                          F32 [ceil(N*K/B)] (or U8 codes with double quant)
  <m>.weight.quant_map                       F32 [16] the codebook (NF4 or bnb's FP4)
  <m>.weight.nested_absmax, .nested_quant_map  F32 (double quant: absmax = nested_quant_map[u8]
                                             * nested_absmax[i // 256] + nested_offset)
  <m>.weight.quant_state.bitsandbytes__<nf4|fp4>  U8 JSON {quant_type, blocksize, dtype, shape,
                                             nested_blocksize, nested_dtype, nested_offset}
Blocks of B run over the flattened weight (rows of K are whole blocks when B divides K).
bnb's dequantize_4bit computes quant_map[code] * absmax[block] in f32 and then casts to the
quant state's dtype; expected.safetensors holds the f32 products (the dequantize with the
state's dtype set to float32: the producer's arithmetic before its cast), and expected.json
records that bnb's own output equals them rounded to that dtype.
"""

from __future__ import annotations

import copy
import json
import math
import tempfile

import torch
from safetensors.torch import load_file, save_file


def _bnb():
    import bitsandbytes as bnb  # noqa: F401  (imported lazily: the other fixtures do not need it)
    import bitsandbytes.functional as F
    return bnb, F


def spec_decode_4bit(sd, prefix, n, k):
    """Independent decoder of a bnb 4-bit linear from its saved tensors (no bnb code)."""
    qs = json.loads(bytes(sd[[key for key in sd if key.startswith(prefix + ".weight.quant_state.")][0]]
                          .tolist()).decode())
    bs = qs["blocksize"]
    raw = sd[prefix + ".weight"].contiguous().view(torch.uint8).flatten()
    codes = torch.empty(raw.numel() * 2, dtype=torch.int64)
    codes[0::2] = (raw >> 4).to(torch.int64)
    codes[1::2] = (raw & 15).to(torch.int64)
    codes = codes[: n * k]
    qmap = sd[prefix + ".weight.quant_map"].to(torch.float32)
    absmax = sd[prefix + ".weight.absmax"]
    if "nested_offset" in qs:
        nb = qs["nested_blocksize"]
        nmap = sd[prefix + ".weight.nested_quant_map"].to(torch.float32)
        nabs = sd[prefix + ".weight.nested_absmax"].to(torch.float32)
        idx = torch.arange(absmax.numel())
        absmax = nmap[absmax.to(torch.int64)] * nabs[idx // nb]
        absmax = absmax + torch.tensor(qs["nested_offset"], dtype=torch.float32)
    absmax = absmax.to(torch.float32)
    out = qmap[codes] * absmax[torch.arange(n * k) // bs]
    return out.reshape(n, k), qs


def _producer_dequant(weight, quant_state):
    """bnb's 4-bit dequantization: the f32 products and bnb's own (dtype-cast) output.

    bitsandbytes 0.50 routes dequantize_4bit on a CPU to its C kernel
    (cdequantize_blockwise_cpu_*), which at block sizes >= 128 disagrees with the stored
    codes (a 64x64 randn weight: 3540-3939 of 4096 elements differ from quant_map[code] *
    absmax, max error to the original weight 1.65 against 0.67). The products come from its
    pure-torch backend instead (backends/default/ops.py _dequantize_4bit_compute, the formula
    its CUDA kernel implements), which equals the C kernel at block sizes 32 and 64."""
    _, F = _bnb()
    from bitsandbytes.backends.default.ops import _dequantize_4bit_compute
    absmax = quant_state.absmax
    if quant_state.nested:
        absmax = F.dequantize_blockwise(quant_state.absmax, quant_state.state2)
        absmax += quant_state.offset
        absmax = absmax.float()
    raw = weight.contiguous().view(torch.uint8).reshape(-1)
    f32 = _dequantize_4bit_compute(raw, absmax, quant_state.code, quant_state.blocksize,
                                   quant_state.shape, torch.float32)
    if quant_state.blocksize <= 64:
        own = F.dequantize_4bit(weight, quant_state)
        assert torch.equal(f32.to(quant_state.dtype), own), "bnb's output is not its products cast"
    return f32.to(torch.float32)


def _quantize_with_transformers(h, qc, dtype):
    """The base model loaded by transformers with BitsAndBytesConfig `qc` on the CPU in `dtype`,
    and what its save_pretrained writes: (model, state dict, config.json)."""
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(str(h.BASE_DIR), quantization_config=qc,
                                                 device_map="cpu", dtype=dtype)
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        sd = load_file(tmp + "/model.safetensors")
        cfg_saved = json.loads(open(tmp + "/config.json").read())
    return model, sd, cfg_saved


def make_bnb_nf4_double(h, name):
    """transformers + bitsandbytes: NF4, double quant, the model loaded in bfloat16 (bnb's
    usual setting: every unquantized tensor and the quant state's dtype are bf16);
    `llm_int8_skip_modules` keeps layer 1's down_proj unquantized."""
    from transformers import BitsAndBytesConfig
    d = h.fixture_dir(name)
    skip = ["lm_head", "model.layers.1.mlp.down_proj"]
    qc = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                            bnb_4bit_use_double_quant=True,
                            bnb_4bit_compute_dtype=torch.bfloat16,
                            llm_int8_skip_modules=skip)
    model, sd, cfg_saved = _quantize_with_transformers(h, qc, torch.bfloat16)
    save_file(dict(sorted(sd.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
    h.write_config(d, cfg_saved["quantization_config"], {"dtype": "bfloat16"})
    return _finish_4bit(h, d, name, model, sd, skip, cfg_saved["quantization_config"],
                        how="transformers AutoModelForCausalLM.from_pretrained(base, "
                            "quantization_config=BitsAndBytesConfig(load_in_4bit, nf4, "
                            "double quant, compute bf16, llm_int8_skip_modules), "
                            "device_map='cpu', dtype=bfloat16) then save_pretrained")


def make_bnb_fp4_b128(h, name):
    """bitsandbytes functional: bnb's FP4 codebook, block size 128 (blocks span two rows of
    the K = 64 projections), no double quant, quant state dtype float32; serialized with
    QuantState.as_dict(packed=True) as Linear4bit._save_to_state_dict does."""
    from transformers import BitsAndBytesConfig
    _, F = _bnb()
    d = h.fixture_dir(name)
    sd = {k: v.clone() for k, v in h.BASE_SD.items()}
    for mname in h.LINEARS:
        w = sd.pop(mname + ".weight")
        packed, state = F.quantize_4bit(w, blocksize=128, compress_statistics=False,
                                        quant_type="fp4")
        sd[mname + ".weight"] = packed
        for key, v in state.as_dict(packed=True).items():
            sd[mname + ".weight." + key] = v
    sd.update(h.bf16_unquantized())
    save_file(dict(sorted(sd.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
    qc = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="fp4",
                            bnb_4bit_use_double_quant=False,
                            bnb_4bit_compute_dtype=torch.float32).to_dict()
    h.write_config(d, qc)
    return _finish_4bit(h, d, name, None, sd, ["lm_head"], qc,
                        how="bitsandbytes.functional.quantize_4bit(w, blocksize=128, "
                            "quant_type='fp4') per linear, serialized with "
                            "QuantState.as_dict(packed=True); config "
                            "BitsAndBytesConfig(load_in_4bit, fp4).to_dict()")


def _finish_4bit(h, d, name, model, sd, skip, qcfg, *, how):
    bnb, F = _bnb()
    expected, spec, plan, weights_hf, own_cast = {}, {}, {}, {}, {}
    unq = {}
    for key, v in sd.items():
        base_key = key
        if base_key in h.BASE_SD and not any(key == m + ".weight" for m in h.LINEARS):
            unq[key] = v  # unquantized tensors as stored (bf16 norms too in a bf16 model)
    for mname in h.LINEARS:
        n, k = h.BASE_SD[mname + ".weight"].shape
        qs_keys = [key for key in sd if key.startswith(mname + ".weight.quant_state.")]
        if not qs_keys:
            w = sd[mname + ".weight"]
            unq[mname + ".weight"] = w
            weights_hf[mname] = w.to(torch.float32)
            plan[mname] = {"ignored": True, "stored": str(w.dtype).replace("torch.", "")}
            continue
        qd = {key[len(mname) + len(".weight."):]: v for key, v in sd.items()
              if key.startswith(mname + ".weight.")}
        state = F.QuantState.from_dict(qd, torch.device("cpu"))
        f32 = _producer_dequant(sd[mname + ".weight"], state)
        dec, qs = spec_decode_4bit(sd, mname, n, k)
        expected[mname + ".weight"] = f32
        spec[mname + ".weight"] = dec
        weights_hf[mname] = f32
        own_cast[mname] = str(state.dtype).replace("torch.", "")
        plan[mname] = {"weight": {"num_bits": 4, "quant_type": qs["quant_type"],
                                  "blocksize": qs["blocksize"],
                                  "double_quant": "nested_offset" in qs,
                                  "quant_state_dtype": qs["dtype"]},
                       "activation": "f32 (exact)", "ignored": False}
    plan["lm_head"] = {"ignored": True}
    return h.finish(
        d, name, made_by="producer",
        producer={"library": "bitsandbytes", "how": how},
        dequant_by={"made_by": "producer",
                    "function": "bitsandbytes backends/default/ops.py "
                                "_dequantize_4bit_compute in float32 (quant_map[code] * absmax, "
                                "the products dequantize_4bit casts to the quant state's dtype; "
                                "double quant: functional.dequantize_blockwise + offset); at "
                                "block size 64 bnb's own dequantize_4bit equals them cast (its "
                                "CPU C kernel is wrong at 128 and above: _producer_dequant)",
                    "state_dtype": own_cast},
        quant_summary=qcfg, plan=plan, expected=expected, weights_hf=weights_hf,
        act_q={}, act_scheme=None, unquantized=unq, spec_decoded=spec, nmse_limit=5e-2,
        extra={"bnb_skip_modules": skip})


def make_bnb_int8(h, name):
    """transformers + bitsandbytes LLM.int8 (load_in_8bit): `.weight` I8 [N, K], `.SCB` F32 [N]
    (each row's absmax), `.weight_format` U8 0 (row-major). Dequantized by bnb's own
    int8_vectorwise_dequant, (q * SCB) * f32(1/127); tessera multiplies q by fl(SCB / 127). Each
    side rounds twice and f32(1/127) is 0.0625 ulp from 1/127, so they are at most 4.07 * 2^-24
    apart relatively (dequant_relative_tolerance below: 5 * 2^-24)."""
    from transformers import BitsAndBytesConfig
    _, F = _bnb()
    d = h.fixture_dir(name)
    skip = ["lm_head", "model.layers.0.mlp.down_proj"]
    qc = BitsAndBytesConfig(load_in_8bit=True, llm_int8_skip_modules=skip)
    _, sd, cfg_saved = _quantize_with_transformers(h, qc, torch.float32)
    sd.update(h.bf16_unquantized())
    save_file(dict(sorted(sd.items())), str(d / "model.safetensors"), metadata={"format": "pt"})
    h.write_config(d, cfg_saved["quantization_config"])
    expected, spec, plan, weights_hf, unq = {}, {}, {}, {}, dict(h.bf16_unquantized())
    for mname in h.LINEARS:
        if mname + ".SCB" not in sd:
            w = sd[mname + ".weight"]
            unq[mname + ".weight"] = w
            weights_hf[mname] = w.to(torch.float32)
            plan[mname] = {"ignored": True, "stored": str(w.dtype).replace("torch.", "")}
            continue
        q, scb = sd[mname + ".weight"], sd[mname + ".SCB"]
        assert int(sd[mname + ".weight_format"]) == 0
        f32 = F.int8_vectorwise_dequant(q, scb).to(torch.float32)
        expected[mname + ".weight"] = f32
        # independent decode: the formula of bitsandbytes' LLM.int8 paper and README
        spec[mname + ".weight"] = (q.to(torch.float32) * scb.view(-1, 1)) * \
            torch.tensor(1.0 / 127.0, dtype=torch.float32)
        weights_hf[mname] = f32
        plan[mname] = {"weight": {"num_bits": 8, "scale": "SCB row absmax, w = q * SCB / 127"},
                       "activation": "f32 (exact; bnb's int8 matmul with outlier columns "
                                     "approximates this product)", "ignored": False}
    plan["lm_head"] = {"ignored": True}
    return h.finish(
        d, name, made_by="producer",
        producer={"library": "bitsandbytes", "how": "transformers AutoModelForCausalLM."
                  "from_pretrained(base, quantization_config=BitsAndBytesConfig(load_in_8bit, "
                  "llm_int8_skip_modules), device_map='cpu', dtype=float32) then "
                  "save_pretrained; embed_tokens / lm_head replaced by their bf16 values"},
        dequant_by={"made_by": "producer",
                    "function": "bitsandbytes.functional.int8_vectorwise_dequant(weight, SCB)"},
        quant_summary=cfg_saved["quantization_config"], plan=plan, expected=expected,
        weights_hf=weights_hf, act_q={}, act_scheme=None, unquantized=unq, spec_decoded=spec,
        nmse_limit=1e-3,
        extra={"bnb_skip_modules": skip, "dequant_relative_tolerance": 5 * 2.0 ** -24,
               "dequant_tolerance_note": "tessera computes fl(q * fl(SCB / 127)), bitsandbytes "
                                         "fl(fl(q * SCB) * fl(1/127)): two roundings each, and "
                                         "fl(1/127) is 0.0625 ulp from 1/127, so at most "
                                         "4.07 * 2^-24 apart relatively"})


def builders():
    return {"bnb_nf4_double": make_bnb_nf4_double, "bnb_fp4_b128": make_bnb_fp4_b128,
            "bnb_int8": make_bnb_int8}
