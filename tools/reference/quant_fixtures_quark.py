"""Spec-built AMD Quark and gpt-oss `mxfp4` fixtures for make_quant_fixtures.py.

Kept apart from make_quant_fixtures.py (already ~1500 lines); every builder takes that
module as `h` for its helpers (fixture_dir, finish, the number-format and packing helpers),
so the fixtures follow the same conventions: expected.safetensors (F32 dequantized weight
per quantized linear), logits.safetensors (transformers forward with those weights and the
activation fake-quant of the scheme), expected.json (layer_plan with "ignored" and weight
"num_bits", tolerance).

No producer runs here: amd-quark 0.13 needs huggingface_hub 2.x, which transformers 4.57
(pinned for the other fixtures) rejects (it needs huggingface_hub < 1.0); gpt-oss checkpoints
are made by OpenAI's own tooling and transformers' mxfp4 integration only quantizes MoE
experts through triton_kernels (CUDA). The files follow quant-formats.md: Quark §4.1 (exclude,
then layer_quant_config first fnmatch match, then layer_type_quant_config, then global), §5.5
(FP8), §6.2 (INT8), §7.3 (int4/uint4 = AWQ-GEMM layout under Quark names), §9.4 (OCP MXFP4);
gpt-oss §9.2 (`<module>_blocks` / `<module>_scales`), here for dense MLP projections.
"""

from __future__ import annotations

import fnmatch

import torch
from safetensors.torch import load_file, save_file

NOT_INSTALLABLE = ("amd-quark 0.13 cannot be installed next to the pinned transformers 4.57: "
                   "amd-quark needs huggingface_hub 2.x, transformers 4.57 needs "
                   "huggingface_hub < 1.0")


# ---------------------------------------------------------------------------
# Quark config pieces (the keys Quark's export writes, §5.5)
def qspec(dtype, qscheme, *, ch_axis=None, group_size=None, is_dynamic=False, symmetric=True,
          observer=None, **extra):
    d = {"dtype": dtype, "qscheme": qscheme, "ch_axis": ch_axis, "group_size": group_size,
         "is_dynamic": is_dynamic, "symmetric": symmetric, "round_method": "half_even",
         "scale_type": "float", "observer_cls": observer}
    d.update(extra)
    return d


def qlayer(weight, input_tensors=None):
    return {"weight": weight, "input_tensors": input_tensors, "output_tensors": None,
            "bias": None}


def quark_config(global_cfg, layer_cfg, exclude):
    return {"quant_method": "quark", "global_quant_config": global_cfg,
            "layer_quant_config": layer_cfg, "layer_type_quant_config": {},
            "exclude": exclude, "algo_config": None, "quant_mode": "eager_mode",
            "export": {"kv_cache_group": [], "min_kv_scale": 0.0, "pack_method": "reorder",
                       "weight_format": "real_quantized"},
            "version": "0.13.0"}


def quark_match(qcfg, module):
    """(config or None, how matched): §4.1 (vllm quark.py _find_matched_config; exclude with
    names, fnmatch globs and re: as Quark tools write them)."""
    for e in qcfg["exclude"]:
        if e == module or fnmatch.fnmatchcase(module, e):
            return None, f"exclude '{e}'"
    for pat, cfg in qcfg["layer_quant_config"].items():
        if fnmatch.fnmatchcase(module, pat):
            return cfg, f"layer_quant_config '{pat}' (first match)"
    if "Linear" in qcfg["layer_type_quant_config"]:
        return qcfg["layer_type_quant_config"]["Linear"], "layer_type_quant_config Linear"
    return qcfg["global_quant_config"], "global_quant_config"


# ---------------------------------------------------------------------------
# Quantizers (spec formulas; scales from min/max, RTN)
def e8m0_from_amax(amax, even):
    """OCP MX shared exponent for E2M1 elements (§9.1): FLOOR: floor(log2 amax) - 2; EVEN
    (Quark's scale_calculation_mode "even", torchao ScaleCalculationMode.EVEN): amax's mantissa
    first rounded to E2M1's 1 mantissa bit (add 2^21 to the F32 bits, keep sign+exponent)."""
    bits = amax.to(torch.float32).contiguous().view(torch.int32)
    if even:
        bits = (bits + (1 << 21)) & 0x7F800000
    e = ((bits >> 23) & 0xFF) - 127 - 2
    return (e.clamp(-127, 127) + 127).to(torch.uint8)


def mx_quantize(w, even):
    """w [N, K] -> (codes [N, K] uint8, e8m0 [N, K/32] uint8, dequant F32)."""
    N, K = w.shape
    wb = w.reshape(N, K // 32, 32)
    e = e8m0_from_amax(wb.abs().amax(-1), even)
    x = torch.pow(2.0, e.to(torch.float32) - 127.0).unsqueeze(-1)  # exact powers of two
    codes = _H.e2m1_rne(wb / x).reshape(N, K)
    deq = (_H.e2m1_val(codes).reshape(N, K // 32, 32) * x).reshape(N, K)
    return codes, e, deq


def act_int8_static(scale, zp):
    """§6.1/§6.2 static: qa = sat_i8(rne(x/s) + azp); x' = (qa - azp) * s."""
    def f(x):
        s = scale.reshape(()).to(x.dtype)
        z = float(zp)
        q = torch.clamp(torch.round(_H._div(x, s)) + z, -128, 127)
        return (q - z) * s
    return f


def observe_range(x):
    """Min/max including 0 (torch / Quark MinMax observers)."""
    return torch.clamp(x.amin(), max=0.0), torch.clamp(x.amax(), min=0.0)


def quantize_linear(mname, w, cfg, x):
    """One Quark linear: (stored tensors, dequantized F32 weight, act fake-quant or None,
    activation description, weight num_bits)."""
    h = _H
    ws, ins = cfg["weight"], cfg.get("input_tensors")
    dt, qs = ws["dtype"], ws["qscheme"]
    out = {}
    N, K = w.shape
    if dt == "fp8_e4m3":
        s = (w.abs().amax() if qs == "per_tensor" else w.abs().amax(1)) / 448.0
        s = s.to(torch.float32)
        q = h.sat_e4m3(w / (s if s.dim() == 0 else s[:, None]))
        out[".weight"], out[".weight_scale"] = q, s
        deq = q.to(torch.float32) * (s if s.dim() == 0 else s[:, None])
        bits = 8
    elif dt == "int8":
        amax = w.abs().amax() if qs == "per_tensor" else w.abs().amax(1)
        s = (amax / 127.5).to(torch.float32)  # symmetric: amax / ((qmax - qmin) / 2)
        sb = s if s.dim() == 0 else s[:, None]
        q = torch.clamp(torch.round(w / sb), -128, 127).to(torch.int8)
        out[".weight"], out[".weight_scale"] = q, s
        out[".weight_zero_point"] = torch.zeros(s.shape, dtype=torch.int8)
        deq = q.to(torch.float32) * sb
        bits = 8
    elif dt in ("uint4", "int4"):
        gs = ws["group_size"]
        wg = w.reshape(N, K // gs, gs)
        if dt == "uint4":  # asymmetric, codes 0..15
            lo, hi = torch.clamp(wg.amin(-1), max=0.0), torch.clamp(wg.amax(-1), min=0.0)
            s = ((hi - lo) / 15.0).to(torch.float32)                      # [N, G]
            z = torch.clamp(-torch.round(lo / s), 0, 15).to(torch.int64)  # [N, G]
            qmin, qmax = 0, 15
        else:  # symmetric signed, codes -8..7, zero point 0
            s = (wg.abs().amax(-1) / 7.5).to(torch.float32)
            z = torch.zeros(s.shape, dtype=torch.int64)
            qmin, qmax = -8, 7
        sk, zk = s.repeat_interleave(gs, 1), z.repeat_interleave(gs, 1)
        q = torch.clamp(torch.round(w / sk) + zk, qmin, qmax).to(torch.int64)
        # amd-quark Pack_4_bits: int4 stored as two's-complement nibbles (value & 0xF)
        out[".weight"] = h.awq_pack((q & 0xF).T.contiguous())         # I32 [K, N/8]
        out[".weight_scale"] = s.T.contiguous()                       # F32 [K/gs, N]
        out[".weight_zero_point"] = h.awq_pack((z & 0xF).T.contiguous())  # I32 [K/gs, N/8]
        deq = (q - zk).to(torch.float32) * sk
        bits = 4
    elif dt == "fp4":
        codes, e, deq = mx_quantize(w, even=ws.get("scale_calculation_mode") == "even")
        out[".weight"], out[".weight_scale"] = h.pack_nibbles(codes), e
        bits = 4
    else:
        raise ValueError(dt)
    act, adesc = None, "none (weight-only)"
    if ins is not None and ins["dtype"] == "fp8_e4m3":
        if ins["is_dynamic"]:
            act, adesc = h.act_fp8_token(), "FP8 dynamic per-token: s = amax_row/448"
        else:
            out[".input_scale"] = (x.abs().amax() / 448.0).to(torch.float32)
            act = h.act_fp8_static(out[".input_scale"])
            adesc = "FP8 static per-tensor: qa = sat_e4m3(x / input_scale)"
    elif ins is not None and ins["dtype"] == "int8":
        if ins["symmetric"]:
            si, zp = (x.abs().amax() / 127.5).to(torch.float32), 0
        else:
            lo, hi = observe_range(x)
            si = ((hi - lo) / 255.0).to(torch.float32)
            zp = int(torch.clamp(-128 - torch.round(lo / si), -128, 127))
        out[".input_scale"] = si
        out[".input_zero_point"] = torch.tensor(zp, dtype=torch.int8)
        act = act_int8_static(si, zp)
        adesc = (f"INT8 static per-tensor, zero point {zp}: qa = sat_i8(rne(x / input_scale) + "
                 "zp), x' = (qa - zp) * input_scale")
    elif ins is not None and ins["dtype"] == "fp4":
        adesc = ("declared MXFP4 dynamic per-32 (is_dynamic), NOT simulated: tessera runs MXFP4 "
                 "W4A16 on the CPU and ignores MX activation quantization; the logits are "
                 "weight-only")
    return {mname + k: v for k, v in out.items()}, deq, act, adesc, bits


def spec_decode(sd, mname, cfg):
    """Independent decoder of one stored linear (from the saved file; cfg: its matched Quark
    config, for int4 vs uint4), or None if dense."""
    h, p = _H, mname + "."
    w = sd[p + "weight"]
    if w.dtype == h.F8:
        s = sd[p + "weight_scale"]
        return w.to(torch.float32) * (s if s.dim() == 0 else s[:, None])
    if w.dtype == torch.int8:
        s, z = sd[p + "weight_scale"], sd[p + "weight_zero_point"].to(torch.float32)
        if s.dim():
            s, z = s[:, None], z[:, None]
        return (w.to(torch.float32) - z) * s
    if w.dtype == torch.int32:  # §7.3: AWQ order, transposed
        q, z = h.awq_unpack(w), h.awq_unpack(sd[p + "weight_zero_point"])  # [K, N], [G, N]
        if cfg["weight"]["dtype"] == "int4":  # two's-complement nibbles: sign-extend
            q, z = q - 16 * (q >= 8), z - 16 * (z >= 8)
        s = sd[p + "weight_scale"].to(torch.float32)
        g = torch.arange(q.shape[0]) // (q.shape[0] // s.shape[0])
        return ((q - z[g]).to(torch.float32) * s[g]).T
    if w.dtype == torch.uint8:  # §9.4
        x = torch.pow(2.0, sd[p + "weight_scale"].to(torch.float32) - 127.0)
        return h.e2m1_val(h.unpack_nibbles(w)) * x.repeat_interleave(32, 1)
    return None


# ---------------------------------------------------------------------------
QUARK = {
    "quark_fp8": dict(
        glob=qlayer(qspec("fp8_e4m3", "per_tensor", observer="PerTensorMinMaxObserver"),
                    qspec("fp8_e4m3", "per_tensor", observer="PerTensorMinMaxObserver")),
        layer={"*.self_attn.o_proj": qlayer(
            qspec("fp8_e4m3", "per_channel", ch_axis=0, observer="PerChannelMinMaxObserver"),
            qspec("fp8_e4m3", "per_channel", ch_axis=1, is_dynamic=True,
                  observer="PerChannelMinMaxObserver"))},
        exclude=["lm_head", "*.1.mlp.down_proj"], nmse=1e-2,
        descr="FP8 per_tensor weights + static per_tensor input_scale (global); o_proj "
              "overridden (layer_quant_config glob) to per_channel weights + dynamic "
              "per-token inputs; model.layers.1.mlp.down_proj excluded by the glob "
              "'*.1.mlp.down_proj' (stored F32)."),
    "quark_int8": dict(
        glob=qlayer(qspec("int8", "per_channel", ch_axis=0, observer="PerChannelMinMaxObserver"),
                    qspec("int8", "per_tensor", symmetric=False,
                          observer="PerTensorMinMaxObserver")),
        layer={"*.mlp.down_proj": qlayer(
            qspec("int8", "per_tensor", observer="PerTensorMinMaxObserver"),
            qspec("int8", "per_tensor", observer="PerTensorMinMaxObserver"))},
        exclude=["lm_head"], nmse=1e-2,
        descr="INT8 per_channel symmetric weights (weight_zero_point zeros) + static "
              "per_tensor asymmetric inputs (input_scale, input_zero_point I8); down_proj "
              "overridden to per_tensor weights + static symmetric inputs (zero point 0)."),
    "quark_int4": dict(
        glob=qlayer(qspec("uint4", "per_group", ch_axis=1, group_size=32, symmetric=False,
                          observer="PerGroupMinMaxObserver")),
        layer={"*.self_attn.v_proj": qlayer(qspec("int4", "per_group", ch_axis=1,
                                                  group_size=32,
                                                  observer="PerGroupMinMaxObserver")),
               "*.1.mlp.down_proj": qlayer(qspec("uint4", "per_group", ch_axis=1,
                                                 group_size=64, symmetric=False,
                                                 observer="PerGroupMinMaxObserver")),
               "*.mlp.down_proj": qlayer(qspec("uint4", "per_group", ch_axis=1,
                                               group_size=128, symmetric=False,
                                               observer="PerGroupMinMaxObserver"))},
        exclude=["lm_head"], nmse=5e-2,
        descr="uint4 asymmetric per_group 32 weight-only (AWQ-GEMM layout under Quark names, "
              "pack_method reorder: weight I32 [K, N/8], weight_scale F32 [K/gs, N], "
              "weight_zero_point I32 [K/gs, N/8]); layer_quant_config: v_proj signed int4 "
              "symmetric group 32 (two's-complement nibbles as amd-quark's Pack_4_bits "
              "writes them, weight_zero_point zeros); layer 1 down_proj "
              "group 64 (first match; the later '*.mlp.down_proj' also matches it), layer 0 "
              "down_proj group 128."),
    "quark_mxfp4": dict(
        glob=qlayer(qspec("fp4", "per_group", ch_axis=-1, group_size=32,
                          observer="PerBlockMXObserver", scale_format="e8m0",
                          scale_calculation_mode="even", mx_element_dtype="fp4"),
                    qspec("fp4", "per_group", ch_axis=-1, group_size=32, is_dynamic=True,
                          observer="PerBlockMXObserver", scale_format="e8m0",
                          scale_calculation_mode="even", mx_element_dtype="fp4")),
        layer={"*.mlp.down_proj": qlayer(qspec("fp8_e4m3", "per_tensor",
                                               observer="PerTensorMinMaxObserver"))},
        exclude=["lm_head"], nmse=5e-2,
        descr="OCP MXFP4 weights (E2M1, E8M0 scale per 32, scale_calculation_mode even) with "
              "declared dynamic MXFP4 inputs; down_proj overridden to FP8 per_tensor "
              "weight-only."),
}

_H = None  # make_quant_fixtures, set by the builders


def make_quark(h, name):
    global _H
    _H = h
    fx = QUARK[name]
    qcfg = quark_config(fx["glob"], fx["layer"], fx["exclude"])
    d = h.fixture_dir(name)
    unq = h.bf16_unquantized()
    calib = h.capture_inputs(unq)
    out = {k: v for k, v in h.BASE_SD.items()
           if not any(k.startswith(m + ".") for m in h.LINEARS)}
    out.update(unq)
    expected, plan, act_q, quantized = {}, {}, {}, []
    for mname in h.LINEARS:
        cfg, how = quark_match(qcfg, mname)
        if cfg is None or cfg.get("weight") is None:
            out[mname + ".weight"] = h.BASE_SD[mname + ".weight"]
            plan[mname] = {"ignored": True, "matched": how, "stored": "F32 weight"}
            continue
        tensors, deq, act, adesc, bits = quantize_linear(
            mname, h.BASE_SD[mname + ".weight"], cfg, calib[mname])
        out.update(tensors)
        expected[mname + ".weight"] = deq
        if act is not None:
            act_q[mname] = act
        plan[mname] = {"weight": {**cfg["weight"], "num_bits": bits},
                       "input_tensors": cfg.get("input_tensors"), "activation": adesc,
                       "matched": how, "ignored": False}
        quantized.append(mname)
    plan["lm_head"] = {"ignored": True, "matched": "exclude 'lm_head'",
                       "stored": "BF16 lm_head.weight"}
    save_file({k: v.contiguous() for k, v in sorted(out.items())},
              str(d / "model.safetensors"), metadata={"format": "pt"})
    h.write_config(d, qcfg)
    sd = load_file(str(d / "model.safetensors"))
    spec = {m + ".weight": spec_decode(sd, m, quark_match(qcfg, m)[0]) for m in quantized}
    acts = sorted({plan[m]["activation"] for m in quantized})
    return h.finish(
        d, name, made_by="spec-built",
        producer={"library": None, "how": "spec-built (quant-formats.md §4.1, §5.5, §6.2, "
                  "§7.3, §9.4): " + NOT_INSTALLABLE + ". " + fx["descr"] + " Scales from "
                  "min/max (RTN): FP8 amax/448; INT8 symmetric amax/127.5, asymmetric "
                  "(max-min)/255 with zp = clamp(-128 - rne(min/s)) (ranges include 0); "
                  "uint4 (max-min)/15, zp = clamp(-rne(min/s), 0, 15); MXFP4 E8M0 by the EVEN "
                  "rule (§9.1), elements rne_sat(w / 2^(e-127)). Static input scales from the "
                  "input of each linear over input_ids on the unquantized model. Config keys "
                  "as Quark's export writes them (version field: the layout targeted, not a "
                  "producer run)."},
        dequant_by={"made_by": "spec-built", "function": "Quark (q - zp) * s per scheme: FP8 "
                    "fp32(q) * weight_scale; INT8 (q - weight_zero_point) * weight_scale; "
                    "uint4 W[n,k] = (q[k,n] - z[k/g,n]) * s[k/g,n] (AWQ order); MXFP4 "
                    "e2m1(code) * 2^(e-127)"},
        quant_summary=qcfg, plan=plan, expected=expected,
        weights_hf={m: expected[m + ".weight"] for m in quantized}, act_q=act_q or None,
        act_scheme=acts if act_q else "none (weight-only)" + (
            "; MXFP4 input_tensors declared but not simulated (tessera ignores MX "
            "activation quantization on the CPU)" if name == "quark_mxfp4" else ""),
        unquantized=unq, spec_decoded=spec, nmse_limit=fx["nmse"],
        extra={"producer_not_installable": NOT_INSTALLABLE})


# ---------------------------------------------------------------------------
# gpt-oss `quant_method: mxfp4` naming on dense MLP projections (§9.2)
GPTOSS_NOT_CONVERT = ["model.layers.*.self_attn", "model.embed_tokens", "lm_head"]


def make_gptoss_dense(h, name):
    global _H
    _H = h
    d = h.fixture_dir(name)
    unq = h.bf16_unquantized()
    out = {k: v for k, v in h.BASE_SD.items()
           if not any(k.startswith(m + ".") for m in h.LINEARS) or ".self_attn." in k}
    out.update(unq)
    expected, plan, quantized = {}, {}, []
    for mname in h.LINEARS:
        if ".self_attn." in mname:
            plan[mname] = {"ignored": True, "matched": "modules_to_not_convert "
                           "'model.layers.*.self_attn' (regex prefix)", "stored": "F32 weight"}
            continue
        w = h.BASE_SD[mname + ".weight"]
        N, K = w.shape
        codes, e, deq = mx_quantize(w, even=False)
        out[mname + "_blocks"] = h.pack_nibbles(codes).reshape(N, K // 32, 16)
        out[mname + "_scales"] = e
        expected[mname + ".weight"] = deq
        plan[mname] = {"weight": {"format": "MXFP4 (E2M1, E8M0 per 32, gpt-oss "
                                  "<module>_blocks/_scales)", "num_bits": 4},
                       "activation": "none (weight-only)", "ignored": False}
        quantized.append(mname)
    plan["lm_head"] = {"ignored": True, "stored": "BF16 lm_head.weight"}
    save_file({k: v.contiguous() for k, v in sorted(out.items())},
              str(d / "model.safetensors"), metadata={"format": "pt"})
    qcfg = {"quant_method": "mxfp4", "modules_to_not_convert": GPTOSS_NOT_CONVERT}
    h.write_config(d, qcfg)
    sd = load_file(str(d / "model.safetensors"))
    spec = {}
    for m in quantized:  # §9.2: ldexp(LUT[nibble], scale - 127), byte j = elements 2j, 2j+1
        blocks = sd[m + "_blocks"]
        codes = h.unpack_nibbles(blocks.reshape(blocks.shape[0], -1))
        ex = (sd[m + "_scales"].to(torch.int32) - 127).repeat_interleave(32, 1)
        spec[m + ".weight"] = torch.ldexp(h.e2m1_val(codes), ex.to(torch.float32))
    return h.finish(
        d, name, made_by="spec-built",
        producer={"library": None, "how": "spec-built (quant-formats.md §9.1, §9.2): gpt-oss "
                  "checkpoints come from OpenAI's tooling and transformers' mxfp4 integration "
                  "quantizes only MoE experts, through triton_kernels (CUDA). Here the dense "
                  "MLP projections of both layers use the gpt-oss tensor naming "
                  "<module>_blocks U8 [N, K/32, 16] (byte j of a block: element 2j low "
                  "nibble, 2j+1 high) and <module>_scales U8 E8M0 [N, K/32]; scales by the OCP "
                  "FLOOR rule e = floor(log2 amax) - 2, elements rne_sat(w / 2^(e-127)); "
                  "attention, embeddings and lm_head unquantized via modules_to_not_convert "
                  "(regex prefixes, transformers' mxfp4 integration)."},
        dequant_by={"made_by": "spec-built", "function": "W = FP4_VALUES[nibble] * "
                    "2^(scale - 127) (transformers convert_moe_packed_tensors, ldexp)"},
        quant_summary=qcfg, plan=plan, expected=expected,
        weights_hf={m: expected[m + ".weight"] for m in quantized}, act_q=None,
        act_scheme="none (weight-only)", unquantized=unq, spec_decoded=spec, nmse_limit=5e-2)


def builders():
    """Name -> builder(h, name), in the order they are listed."""
    return {**{n: make_quark for n in QUARK}, "gptoss_mxfp4_dense": make_gptoss_dense}
