"""Mixture-of-experts parts of make_hf_goldens.py: how far each fixture's expert choices are
from a tie (router_margins), and the GGUF twin of a fixture as llama.cpp's convert_hf_to_gguf.py
lays it out (write_gguf_twin: the MoE architectures, dense granite with its multipliers, phi3,
and llama with Llama 3 rope scaling as rope_freqs.weight). Imported by make_hf_goldens.py, not run on
its own.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]


def router_margins(model, x: torch.Tensor) -> dict:
    """Per sparse layer, the smallest gap (over the prefill tokens) between the k-th and the
    (k+1)-th routing probability: how far every expert choice is from a tie, so an independent
    f32 implementation (whose probabilities differ in the last bits) picks the same experts."""
    cfg = model.config
    k = cfg.num_experts_per_tok
    margins = {}
    hooks = []
    for i, layer in enumerate(model.model.layers):
        block = getattr(layer, "block_sparse_moe", None) or layer.mlp
        gate = getattr(block, "gate", None)
        if gate is None and hasattr(getattr(block, "router", None), "layer"):  # Granite MoE's
            gate = block.router.layer
        gpt_oss = gate is None and hasattr(block, "router")  # GptOssTopKRouter: logits + bias
        if gpt_oss:
            gate = block.router
        elif not isinstance(gate, torch.nn.Linear):
            continue  # a dense MLP layer (qwen3_moe's mlp_only_layers)

        def hook(mod, inp, out, i=i, gpt_oss=gpt_oss):
            logits = (torch.nn.functional.linear(inp[0], mod.weight, mod.bias) if gpt_oss
                      else out)
            p = torch.softmax(logits.float().reshape(-1, logits.shape[-1]), dim=-1)
            top = torch.topk(p, k + 1, dim=-1).values
            margins[i] = float((top[:, k - 1] - top[:, k]).min())
        hooks.append(gate.register_forward_hook(hook))
    with torch.no_grad():
        model(input_ids=x, use_cache=False)
    for h in hooks:
        h.remove()
    return {"top_k": k, "min_topk_probability_gap_per_layer": margins,
            "note": ("smallest gap between the k-th and (k+1)-th softmax probability of the "
                     "router over the prefill tokens, per sparse layer")}


def llama_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.permute: rotate-half pairs -> interleaved pairs."""
    return (w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:])
            .swapaxes(1, 2).reshape(w.shape))


def llama3_rope_factors(base: float, dim: int, rope: dict) -> np.ndarray:
    """convert_hf_to_gguf.py's LlamaModel.generate_extra_tensors: Llama 3 rope scaling as the
    per-pair frequency divisors of rope_freqs.weight (ggml divides each pair's theta by it)."""
    import math
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    factor = rope.get("factor", 8.0)
    low, high = rope.get("low_freq_factor", 1.0), rope.get("high_freq_factor", 4.0)
    old_len = rope.get("original_max_position_embeddings", 8192)
    low_wavelen, high_wavelen = old_len / low, old_len / high
    out = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            out.append(1)
        elif wavelen > low_wavelen:
            out.append(factor)
        else:
            smooth = (old_len / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(out, dtype=torch.float32).numpy()


def repack_mxfp4(blocks: torch.Tensor, scales: torch.Tensor) -> np.ndarray:
    """conversion/gpt_oss.py's repack_mxfp4 (llama.cpp 0c1e570): transformers' nibble order
    (low nibble = even element) to ggml's block_mxfp4 (low nibbles = the first 16 elements, high
    nibbles = the last 16), each block's E8M0 byte first; [E, N, K/32, 16] + [E, N, K/32] ->
    [E, N, K/32 * 17] bytes."""
    t = blocks
    t = ((t & 0x0F) << 4) | ((t & 0xF0) >> 4)
    blk_a, blk_b = t.chunk(2, dim=-1)
    blk_a0 = (blk_a & 0xF0).view(-1, 1)
    blk_a1 = (blk_a << 4).view(-1, 1)
    blk_a = torch.stack((blk_a0, blk_a1), dim=2).view(t.shape)
    blk_b0 = (blk_b >> 4).view(-1, 1)
    blk_b1 = (blk_b & 0x0F).view(-1, 1)
    blk_b = torch.stack((blk_b0, blk_b1), dim=2).view(t.shape)
    out = blk_a | blk_b
    out = ((out & 0xF0) >> 4) | ((out & 0x0F) << 4)
    data = torch.concat((scales.unsqueeze(-1), out), dim=-1)
    return data.reshape(data.shape[0], data.shape[1], -1).numpy()


def write_gpt_oss_layer(put, sd: dict, p: str, i: int, put_raw=None, mxfp4=None) -> None:
    """One gpt-oss layer after its attn_norm as conversion/gpt_oss.py writes unquantized experts: biases as
    `.bias` tensors, sinks as attn_sinks.weight, the MLP norm as post_attention_norm, gate_up
    transposed to [E, 2F, H] and split into even (gate) and odd (up) rows, down transposed."""
    for role, t in (("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v"), ("o", "attn_output")):
        put(f"blk.{i}.{t}.weight", sd[p + f"self_attn.{role}_proj.weight"])
        put(f"blk.{i}.{t}.bias", sd[p + f"self_attn.{role}_proj.bias"])
    put(f"blk.{i}.attn_sinks.weight", sd[p + "self_attn.sinks"])
    put(f"blk.{i}.post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"])
    put(f"blk.{i}.ffn_gate_inp.weight", sd[p + "mlp.router.weight"])
    put(f"blk.{i}.ffn_gate_inp.bias", sd[p + "mlp.router.bias"])
    bias = sd[p + "mlp.experts.gate_up_proj_bias"]
    if mxfp4 is not None:  # generate_extra_tensors: MXFP4 experts repacked, gate / up rows split
        gb, gs = mxfp4[p + "mlp.experts.gate_up_proj_blocks"], mxfp4[p + "mlp.experts.gate_up_proj_scales"]
        put_raw(f"blk.{i}.ffn_gate_exps.weight", repack_mxfp4(gb[:, ::2], gs[:, ::2]))
        put_raw(f"blk.{i}.ffn_up_exps.weight", repack_mxfp4(gb[:, 1::2], gs[:, 1::2]))
        put_raw(f"blk.{i}.ffn_down_exps.weight",
                repack_mxfp4(mxfp4[p + "mlp.experts.down_proj_blocks"],
                             mxfp4[p + "mlp.experts.down_proj_scales"]))
    else:
        gate_up = np.swapaxes(sd[p + "mlp.experts.gate_up_proj"], -1, -2)
        put(f"blk.{i}.ffn_gate_exps.weight", gate_up[:, ::2, :])
        put(f"blk.{i}.ffn_up_exps.weight", gate_up[:, 1::2, :])
        put(f"blk.{i}.ffn_down_exps.weight", np.swapaxes(sd[p + "mlp.experts.down_proj"], -1, -2))
    put(f"blk.{i}.ffn_gate_exps.bias", bias[..., ::2])
    put(f"blk.{i}.ffn_up_exps.bias", bias[..., 1::2])
    put(f"blk.{i}.ffn_down_exps.bias", sd[p + "mlp.experts.down_proj_bias"])


def write_gguf_twin(model, tok, arch: str, path: Path, mxfp4_experts: dict | None = None) -> None:
    """The model as llama.cpp's convert_hf_to_gguf.py writes it, f32: qwen3moe (Qwen3MoeModel),
    qwen2moe (Qwen2MoeModel: q/k/v biases, the shared expert as ffn_*_shexp and its [1, hidden]
    gate as ffn_gate_inp_shexp) or llama with expert_count (Mixtral, q/k permuted to interleaved
    RoPE pairs), experts stacked into blk.N.ffn_{gate,up,down}_exps [experts, N, K], the router
    as blk.N.ffn_gate_inp, and the byte-level BPE tokenizer as a gpt2 vocabulary."""
    import gguf
    cfg = model.config
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    w = gguf.GGUFWriter(str(path), arch)
    # llama.cpp's vocabulary loader gives a model named "phi3" Phi-3's special tokens (<unk>,
    # <|endoftext|>), which this fixture's tokenizer does not have.
    w.add_name("fused-qkv" if arch == "phi3" else path.parent.name)
    w.add_context_length(cfg.max_position_embeddings)
    w.add_embedding_length(cfg.hidden_size)
    w.add_block_count(cfg.num_hidden_layers)
    w.add_head_count(cfg.num_attention_heads)
    w.add_head_count_kv(cfg.num_key_value_heads)
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_dimension_count(int(head_dim * (getattr(cfg, "partial_rotary_factor", None) or 1.0)))
    w.add_rope_freq_base(cfg.rope_theta)
    w.add_layer_norm_rms_eps(cfg.rms_norm_eps)
    gemma = arch in ("gemma", "gemma2", "gemma3")
    if arch == "olmo2" and getattr(cfg, "layer_types", None):  # OLMo 3 (Olmo2Model's converter)
        if "sliding_attention" in cfg.layer_types:
            w.add_sliding_window(cfg.sliding_window)
            w.add_sliding_window_pattern([t == "sliding_attention" for t in cfg.layer_types])
    if arch in ("gemma2", "gemma3"):  # Gemma2Model / Gemma3Model
        if cfg.attn_logit_softcapping:
            w.add_attn_logit_softcapping(cfg.attn_logit_softcapping)
        if cfg.final_logit_softcapping:
            w.add_final_logit_softcapping(cfg.final_logit_softcapping)
        w.add_sliding_window(cfg.sliding_window)
    if arch == "gemma3":
        # The converter writes no pattern (llama.cpp's default is 6) and relies on the default
        # local base 10000; this 3-layer fixture names its period.
        w.add_sliding_window_pattern(3)
        rope = cfg.rope_scaling or {}
        if rope.get("rope_type") == "linear":
            w.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
            w.add_rope_scaling_factor(rope["factor"])
    w.add_vocab_size(cfg.vocab_size)
    qwen = arch in ("qwen2moe", "qwen3moe", "olmoe")  # olmoe names experts as Qwen does
    moe_prefix = "mlp" if qwen else "block_sparse_moe"
    names = ({"gate": "gate_proj", "up": "up_proj", "down": "down_proj"} if qwen
             else {"gate": "w1", "up": "w3", "down": "w2"})
    if arch == "qwen2moe":
        w.add_expert_shared_feed_forward_length(cfg.shared_expert_intermediate_size)
    if arch == "phi3":  # dense, fused qkv and gate_up (Phi3MiniModel)
        w.add_feed_forward_length(cfg.intermediate_size)
        n_experts = 0
    elif gemma or arch == "olmo2":
        w.add_feed_forward_length(cfg.intermediate_size)
        n_experts = 0
    elif arch in ("granite", "granitemoe"):  # GraniteModel / GraniteMoeModel: four multipliers
        w.add_feed_forward_length(cfg.intermediate_size)
        w.add_embedding_scale(cfg.embedding_multiplier)
        w.add_attention_scale(cfg.attention_multiplier)
        w.add_residual_scale(cfg.residual_multiplier)
        w.add_logit_scale(cfg.logits_scaling)
        n_experts = 0
        if arch == "granitemoe":  # and Mixtral-style experts
            w.add_expert_count(cfg.num_local_experts)
            w.add_expert_used_count(cfg.num_experts_per_tok)
            n_experts = cfg.num_local_experts
    elif arch == "gpt-oss":  # GptOssModel: windows (default pattern: period 2), expert widths
        w.add_expert_count(cfg.num_local_experts)
        w.add_expert_used_count(cfg.num_experts_per_tok)
        w.add_feed_forward_length(cfg.intermediate_size)
        w.add_expert_feed_forward_length(cfg.intermediate_size)
        w.add_sliding_window(cfg.sliding_window)
        n_experts = cfg.num_local_experts
    elif arch == "olmoe":  # experts feed_forward_length wide (llama.cpp's olmoe graph)
        w.add_expert_count(cfg.num_experts)
        w.add_expert_used_count(cfg.num_experts_per_tok)
        w.add_feed_forward_length(cfg.intermediate_size)
        n_experts = cfg.num_experts
    elif qwen:
        w.add_expert_count(cfg.num_experts)
        w.add_expert_used_count(cfg.num_experts_per_tok)
        w.add_expert_feed_forward_length(cfg.moe_intermediate_size)
        w.add_feed_forward_length(cfg.intermediate_size)
        n_experts = cfg.num_experts
    elif getattr(cfg, "num_local_experts", None):  # Mixtral
        w.add_expert_count(cfg.num_local_experts)
        w.add_expert_used_count(cfg.num_experts_per_tok)
        w.add_feed_forward_length(cfg.intermediate_size)
        n_experts = cfg.num_local_experts
    else:  # dense llama
        w.add_feed_forward_length(cfg.intermediate_size)
        n_experts = 0
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    # Tokenizer: the fixture's byte-level BPE as llama.cpp's gpt2 model.
    tj = json.loads(tok.backend_tokenizer.to_str())
    vocab = tj["model"]["vocab"]
    tokens = [None] * len(vocab)
    for t, i in vocab.items():
        tokens[i] = t
    special = {t["id"] for t in tj["added_tokens"] if t.get("special")}
    merges = [m if isinstance(m, str) else " ".join(m) for m in tj["model"]["merges"]]
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_types([gguf.TokenType.CONTROL if i in special else gguf.TokenType.NORMAL
                       for i in range(len(tokens))])
    w.add_token_merges(merges)
    w.add_bos_token_id(tok.bos_token_id)
    w.add_eos_token_id(tok.eos_token_id)
    w.add_pad_token_id(tok.pad_token_id)
    w.add_add_bos_token(True)

    def put(name: str, a: np.ndarray) -> None:
        # Gemma norms are (1 + w) in transformers; the converter stores 1 + w (modify_tensors).
        if gemma and name.endswith("norm.weight"):
            a = a + np.float32(1.0)
        w.add_tensor(name, np.ascontiguousarray(a, dtype=np.float32))

    def put_raw(name: str, data: np.ndarray) -> None:  # MXFP4 blocks as the converter adds them
        w.add_tensor(name, np.ascontiguousarray(data), raw_dtype=gguf.GGMLQuantizationType.MXFP4)

    put("token_embd.weight", sd["model.embed_tokens.weight"])
    rope = getattr(cfg, "rope_scaling", None) or {}
    if rope.get("rope_type") == "yarn" and arch in ("qwen3", "gpt-oss"):  # TextModel's generic
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(rope["factor"])
        w.add_rope_scaling_orig_ctx_len(rope["original_max_position_embeddings"])
        if arch == "gpt-oss":  # its config names the betas, which the converter then writes
            w.add_rope_scaling_yarn_beta_fast(rope["beta_fast"])
            w.add_rope_scaling_yarn_beta_slow(rope["beta_slow"])
    if rope.get("rope_type") == "llama3":
        put("rope_freqs.weight", llama3_rope_factors(cfg.rope_theta, head_dim, rope))
    if arch == "phi3" and rope.get("rope_type", rope.get("type")) == "longrope":  # Phi3MiniModel
        import math
        original = cfg.original_max_position_embeddings
        scale = cfg.max_position_embeddings / original
        w.add_rope_scaling_attn_factors(
            math.sqrt(1 + math.log(scale) / math.log(original)) if scale > 1.0 else 1.0)
        w.add_rope_scaling_orig_ctx_len(original)
        put("rope_factors_long.weight", np.array(rope["long_factor"], dtype=np.float32))
        put("rope_factors_short.weight", np.array(rope["short_factor"], dtype=np.float32))
    for i in range(cfg.num_hidden_layers):
        p = f"model.layers.{i}."
        q, k = sd.get(p + "self_attn.q_proj.weight"), sd.get(p + "self_attn.k_proj.weight")
        if arch in ("llama", "granite", "granitemoe", "smollm3"):
            q = llama_permute(q, cfg.num_attention_heads)
            k = llama_permute(k, cfg.num_key_value_heads)
        if arch == "olmo2":  # output norms only, q/k norms over the whole projections
            for role, t in (("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v"), ("o", "attn_output")):
                put(f"blk.{i}.{t}.weight", sd[p + f"self_attn.{role}_proj.weight"])
            put(f"blk.{i}.attn_q_norm.weight", sd[p + "self_attn.q_norm.weight"])
            put(f"blk.{i}.attn_k_norm.weight", sd[p + "self_attn.k_norm.weight"])
            put(f"blk.{i}.post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"])
            for role in ("gate", "up", "down"):
                put(f"blk.{i}.ffn_{role}.weight", sd[p + f"mlp.{role}_proj.weight"])
            put(f"blk.{i}.post_ffw_norm.weight", sd[p + "post_feedforward_layernorm.weight"])
            continue
        put(f"blk.{i}.attn_norm.weight", sd[p + "input_layernorm.weight"])
        if arch == "gpt-oss":
            write_gpt_oss_layer(put, sd, p, i, put_raw=put_raw, mxfp4=mxfp4_experts)
            continue
        if arch == "phi3":
            put(f"blk.{i}.attn_qkv.weight", sd[p + "self_attn.qkv_proj.weight"])
            put(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"])
            put(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
            put(f"blk.{i}.ffn_up.weight", sd[p + "mlp.gate_up_proj.weight"])
            put(f"blk.{i}.ffn_down.weight", sd[p + "mlp.down_proj.weight"])
            continue
        put(f"blk.{i}.attn_q.weight", q)
        put(f"blk.{i}.attn_k.weight", k)
        put(f"blk.{i}.attn_v.weight", sd[p + "self_attn.v_proj.weight"])
        put(f"blk.{i}.attn_output.weight", sd[p + "self_attn.o_proj.weight"])
        if arch in ("gemma2", "gemma3"):  # sandwich norms
            if arch == "gemma3":
                put(f"blk.{i}.attn_q_norm.weight", sd[p + "self_attn.q_norm.weight"])
                put(f"blk.{i}.attn_k_norm.weight", sd[p + "self_attn.k_norm.weight"])
            put(f"blk.{i}.post_attention_norm.weight", sd[p + "post_attention_layernorm.weight"])
            put(f"blk.{i}.ffn_norm.weight", sd[p + "pre_feedforward_layernorm.weight"])
            put(f"blk.{i}.post_ffw_norm.weight", sd[p + "post_feedforward_layernorm.weight"])
            for role in ("gate", "up", "down"):
                put(f"blk.{i}.ffn_{role}.weight", sd[p + f"mlp.{role}_proj.weight"])
            continue
        if arch == "qwen2moe":
            for r, g in (("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v")):
                put(f"blk.{i}.{g}.bias", sd[p + f"self_attn.{r}_proj.bias"])
        if arch in ("qwen3", "qwen3moe", "olmoe"):  # per head / over the whole projection
            put(f"blk.{i}.attn_q_norm.weight", sd[p + "self_attn.q_norm.weight"])
            put(f"blk.{i}.attn_k_norm.weight", sd[p + "self_attn.k_norm.weight"])
        put(f"blk.{i}.ffn_norm.weight", sd[p + "post_attention_layernorm.weight"])
        if n_experts == 0:
            for role in ("gate", "up", "down"):
                put(f"blk.{i}.ffn_{role}.weight", sd[p + f"mlp.{role}_proj.weight"])
            continue
        if arch == "granitemoe":  # the converter splits input_linear into gate and up halves
            fused = sd[p + "block_sparse_moe.input_linear.weight"]
            f = cfg.intermediate_size
            put(f"blk.{i}.ffn_gate_inp.weight", sd[p + "block_sparse_moe.router.layer.weight"])
            put(f"blk.{i}.ffn_gate_exps.weight", fused[:, :f, :])
            put(f"blk.{i}.ffn_up_exps.weight", fused[:, f:, :])
            put(f"blk.{i}.ffn_down_exps.weight", sd[p + "block_sparse_moe.output_linear.weight"])
            continue
        put(f"blk.{i}.ffn_gate_inp.weight", sd[p + moe_prefix + ".gate.weight"])
        for role in ("gate", "up", "down"):
            stacked = np.stack([sd[f"{p}{moe_prefix}.experts.{e}.{names[role]}.weight"]
                                for e in range(n_experts)])
            put(f"blk.{i}.ffn_{role}_exps.weight", stacked)
        if arch == "qwen2moe":
            put(f"blk.{i}.ffn_gate_inp_shexp.weight", sd[p + "mlp.shared_expert_gate.weight"])
            for role in ("gate", "up", "down"):
                put(f"blk.{i}.ffn_{role}_shexp.weight",
                    sd[f"{p}mlp.shared_expert.{names[role]}.weight"])
    put("output_norm.weight", sd["model.norm.weight"])
    if not cfg.tie_word_embeddings:
        put("output.weight", sd["lm_head.weight"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"  {path.relative_to(ROOT)}: {path.stat().st_size} bytes ({arch})")
