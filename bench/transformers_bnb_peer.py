#!/usr/bin/env python3
"""transformers + bitsandbytes on this CPU: the peer for tessera on bitsandbytes checkpoints.

Times the work `tessera bench --batch 1,B --prompt P --gen G` times, on the same checkpoint:
prefill (one forward of P tokens, no cache), batch-1 decode (G single-token forwards on the KV
cache after the prompt, greedy) and batch-B decode (B sequences of P tokens prefilled together,
then G steps of B tokens), with torch on THREADS threads, best of ROUNDS after an untimed warm-up.
bitsandbytes runs its CPU backend (0.50: its gemv / dequantize kernels, the bf16 compute dtype of
the checkpoint; LLM.int8 its int8 matmul).
Prints one line of JSON.

Usage: transformers_bnb_peer.py MODEL_DIR [--prompt 128] [--gen 32] [--batch 16]
       [--threads 2] [--rounds 2]
"""

import argparse
import json
import time

import torch
import transformers
import bitsandbytes
from transformers import AutoModelForCausalLM


def decode(model, ids, gen):
    with torch.no_grad():
        out = model(ids, use_cache=True)
        past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
        t = time.time()
        for _ in range(gen):
            out = model(tok, past_key_values=past, use_cache=True)
            past, tok = out.past_key_values, out.logits[:, -1:].argmax(-1)
        return gen / (time.time() - t)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--gen", type=int, default=32)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    model = AutoModelForCausalLM.from_pretrained(a.model, device_map="cpu",
                                                 dtype=torch.bfloat16).eval()
    vocab = model.config.vocab_size
    gen = torch.Generator().manual_seed(0)
    one = torch.randint(3, vocab, (1, a.prompt), generator=gen)
    many = torch.randint(3, vocab, (a.batch, a.prompt), generator=gen)
    # Untimed warm-up: bitsandbytes' first calls compile or load its CPU kernels (torch.compile of
    # the dequantize, the kernel library); a cold first forward ran 3x slower.
    with torch.no_grad():
        model(one, use_cache=False)
    decode(model, one, 2)
    decode(model, many[:2], 2)
    best = {"prefill": 0.0, "decode_b1": 0.0, "decode_agg": 0.0}
    for _ in range(a.rounds):
        with torch.no_grad():
            t = time.time()
            model(one, use_cache=False)
            best["prefill"] = max(best["prefill"], a.prompt / (time.time() - t))
        best["decode_b1"] = max(best["decode_b1"], decode(model, one, a.gen))
        best["decode_agg"] = max(best["decode_agg"], a.batch * decode(model, many, a.gen))
    print(json.dumps({"peer": f"transformers {transformers.__version__} + bitsandbytes "
                              f"{bitsandbytes.__version__} (torch {torch.__version__})",
                      "threads": a.threads, "batch": a.batch, **best}))


if __name__ == "__main__":
    main()
