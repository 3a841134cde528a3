#!/usr/bin/env python3
"""Generate Hugging Face transformers goldens for tessera's CPU decoder.

The C++ tests never run Python: they read the committed outputs written here.
Every expected number comes from other people's code (transformers' eager
PyTorch modelling files, the `tokenizers` library, llama.cpp's perplexity
methodology re-done over transformers logits), so the C++ decoder is checked
against independent implementations.

Part 1: tiny random-weight models, tests/data/models/<name>/
    One directory per architecture (llama, llama3_rope, llama_linear_rope,
    mistral, qwen2, qwen3), each written by transformers' save_pretrained
    (safe_serialization=True, float32):
      config.json, generation_config.json, model.safetensors   (the model)
      tokenizer.json, tokenizer_config.json, special_tokens_map.json
                         (PreTrainedTokenizerFast around a byte-level BPE that
                          this script trains with `tokenizers` on CORPUS below;
                          <pad>=0, <s>=1 (BOS, added by the post-processor),
                          </s>=2)
      golden.json        (see GOLDEN SCHEMA below)
      golden_logits.safetensors
                         F32 "logits" [T, vocab]: full forward (no KV cache)
                         over golden.json's input_ids; F32 "greedy_logits"
                         [32, vocab]: the logits each greedy step chose from
                         (step 0 = last prompt position of the cached prefill,
                         step k>0 = one-token decode with the KV cache).
    The goldens are computed from the model *re-loaded from the saved
    directory* (from_pretrained, attn_implementation="eager", float32), so they
    are the oracle for exactly the committed files.

    Greedy method: a manual argmax loop with transformers' DynamicCache (prefill
    the prompt, then one token per step), 32 new tokens, EOS not special
    (generation never stops, and no logits processor touches the logits; ties
    would go to the lowest id, torch.argmax). The same 32 tokens are re-checked
    with a full no-cache forward over prompt+continuation.

    Weights: every parameter is re-drawn from a seeded torch.Generator:
    linear weights N(0, 0.2^2), biases N(0, 0.2^2) (qwen2's q/k/v biases are
    therefore non-zero), embeddings N(0, 0.5^2), every RMSNorm weight (incl.
    qwen3's per-head q_norm/k_norm) U(0.6, 1.4), so logits are far from flat.

Part 2: perplexity oracle, tests/data/perplexity/
    story.txt                  a children's story written for this script (STORY)
    stories260K_ctx128.json    llama.cpp-style perplexity of
                               ../shared/models/stories260K/stories260K.gguf on
                               story.txt with n_ctx 128 (see the file's "method").
    The model is loaded by transformers' GGUF support (dequantize + undo the
    llama Q/K permutation); before scoring, the script checks that transformers
    reproduces all three greedy continuations of llama.cpp in
    ../shared/reference/stories260K-greedy.json. Tokens come from a re-
    implementation of llama.cpp's SentencePiece-style tokenizer
    (llm_tokenizer_spm: space prefix, ' ' -> U+2581, highest-score bigram merges,
    byte fallback) over the GGUF's tokens/scores, cross-checked against
    transformers' GGUF tokenizer, against the prompt ids in the reference, and
    against llama.cpp's tokenizer test for ../shared/reference/vocab/
    ggml-vocab-llama-spm.gguf (.inp/.out).

GOLDEN SCHEMA (golden.json): architecture, model_type, hf_class, versions,
config (the saved config.json), input_ids, greedy{method, new_tokens,
top2_gap[], top1_logit[], min_top2_gap, steps_with_gap_below_1e-3,
nocache_recheck_max_abs_diff}, logits{file, tensors, max_abs_logit,
f32_vs_f64_max_abs_diff, f32_vs_f64_max_rel_diff, tolerance_note},
tokenizer{bos/eos/pad, samples[{text, ids_with_special, ids_without_special,
decoded}]}, rope{inv_freq, ...} where relevant.

Run from the repository root:
    .venv/bin/python tools/reference/make_hf_goldens.py
Deterministic: fixed seeds, one torch thread, no timestamps.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import sys
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import numpy as np
import torch
import tokenizers
import transformers
from safetensors.torch import save_file

from hf_golden_models import GGUF_TWINS, MODELS, VOCAB_SIZE
from moe_goldens import router_margins, write_gguf_twin
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import (AutoModelForCausalLM, AutoModelForImageTextToText, AutoTokenizer,
                          DynamicCache, Mistral3Config, PreTrainedTokenizerFast)

ROOT = Path(__file__).resolve().parents[2]
OUT_MODELS = ROOT / "tests" / "data" / "models"
OUT_PPL = ROOT / "tests" / "data" / "perplexity"
SHARED = Path(os.environ.get("TESSERA_SHARED", ROOT.parent / "shared"))
STORIES_DIR = SHARED / "models" / "stories260K"
STORIES_FILE = "stories260K.gguf"
STORIES_REF = SHARED / "reference" / "stories260K-greedy.json"

NEW_TOKENS = 32
SEED = 20240601

torch.manual_seed(SEED)
torch.use_deterministic_algorithms(True)
torch.set_num_threads(1)

# ---------------------------------------------------------------------------
# Tokenizer training text (written for this script).
CORPUS = """\
The little robot woke up early in the morning and looked out of the window.
The sun was bright, the sky was blue, and the birds were singing in the old oak tree.
"Today I will learn something new," said the robot to the cat on the kitchen floor.
The cat did not answer. It stretched, yawned, and went back to sleep in the warm light.

In the town there was a baker who made bread, cakes and cookies for everyone.
Every day at seven o'clock she opened the door of her shop and said hello to the children.
They bought two rolls, three apples and one big chocolate cake for the party on Saturday.
The prices were simple: 1 roll costs 2 coins, 10 rolls cost 18 coins, and a cake costs 25.

A computer reads numbers and letters, one after another, and turns them into meaning.
It splits words into pieces, looks up each piece in a table, and adds the vectors together.
Attention lets every position look back at the positions before it, but never ahead.
The model predicts the next token, then the next one, until the story is finished.

Rivers run down from the mountains to the sea. Fish swim in the cold, clear water,
and the fishermen in their small boats wait patiently for the morning catch.
When the weather turns, the waves grow tall, and everyone hurries back to the harbour.
At night the lighthouse shines its light across the water so the ships can find the way home.

Questions are good. Why is the sky blue? Why does ice float? How far away is the moon?
Some answers are short and some are long, but every answer starts with a careful look.
Write down what you see, measure what you can, and check it again the next day.
That is how scientists, cooks, carpenters and programmers all learn their trade.

Once upon a time there was a girl named Mia who loved to draw maps of imaginary islands.
Her maps had mountains, forests, deserts, and small villages with funny names like
Puddleton, Bramblewick and Upper Snoring. Her brother Leo added dragons to every map,
which made Mia laugh, although she always said that dragons did not belong on a map.

Testing, testing: one, two, three! Tabs\tand   spaces, UPPER and lower case, café and naïve,
e-mail addresses like someone@example.com, and emoji like 🙂 should all survive the round trip.
"""

# The fixed model input: BOS + the first (T-1) tokens of this sentence.
MODEL_INPUT_TEXT = ("Once upon a time the little robot looked at the bright sky and said hello "
                    "to the cat, the baker and the children in the town.")
MODEL_INPUT_LEN = 32

TOKENIZER_SAMPLES = [
    "Hello world",
    " leading space and  double  spaces",
    "The cat sat on the mat.\nThe dog did not.",
    "Numbers 12345 and 3.14, café, naïve, 🙂!",
    "",
]

# Perplexity text (written for this script; children's-story style).
STORY = """\
Once upon a time, in a small house at the edge of a big forest, there lived a little girl named Rosie. Rosie had a red hat, a green coat and a dog called Pip. Pip was small and brown, and he liked to run after leaves when the wind blew them across the garden.

One morning, Rosie woke up and looked out of the window. The sun was shining and the birds were singing. "Pip, let's go on an adventure today!" she said. Pip wagged his tail and barked two times. That meant yes.

Rosie put some bread, two apples and a bottle of water in her bag. Her mom gave her a big hug. "Be careful, and come home before dinner," Mom said. Rosie smiled and said, "I will, Mom. I promise."

Rosie and Pip walked down the path into the forest. The trees were tall and the leaves were soft under their feet. They saw a squirrel with a big nut. The squirrel ran up a tree very fast. Pip wanted to follow it, but he could not climb. He sat down and looked sad.

"Don't be sad, Pip," said Rosie. "Squirrels are good at climbing, and dogs are good at running. Everyone is good at something." Pip felt better and ran in a happy circle.

After a while they came to a little river. The water was clear and cold, and there were shiny stones at the bottom. Rosie took off her shoes and put her feet in the water. "It is so cold!" she laughed. Pip jumped in and made a big splash. Now Rosie was wet, and her coat was wet too. She did not mind. She laughed and laughed.

Near the river there was an old tree with a hole in it. Rosie looked inside the hole and saw a tiny owl. The owl had big yellow eyes. "Hello, little owl," said Rosie. "Are you lost?" The owl said, "Hoo, hoo." Rosie did not know what that meant, but she thought the owl was hungry. She gave it a small piece of her bread. The owl ate the bread and closed its eyes. It was happy.

Then the sky began to change. Big grey clouds came over the trees, and the wind grew strong. Rosie felt a drop of rain on her nose. "Oh no, Pip, it is going to rain. We have to go home," she said. They started to walk back, but the path looked different now. Rosie was not sure which way to go. She felt scared.

Pip put his nose on the ground and sniffed. He sniffed and sniffed, and then he started to walk. "Do you know the way, Pip?" Rosie asked. Pip barked once and kept walking. Rosie followed him. They walked past the river, past the tall trees and past the tree where the squirrel lived.

Soon Rosie could see the little house at the edge of the forest. There was a warm light in the window. Mom was standing at the door with a big towel. "There you are!" Mom said. "You are all wet. Come inside and get warm."

Rosie told Mom all about the adventure. She told her about the squirrel, the cold river, the tiny owl and the rain. "And Pip found the way home," she said. "He is the best dog in the world." Mom smiled and gave Pip a big bone. Pip was very proud.

That night, Rosie sat by the fire with a cup of warm milk. Pip slept next to her feet. Outside, the rain fell softly on the roof. Rosie thought about the tiny owl in the old tree. She hoped it was warm and dry too. "Tomorrow we can visit the owl again," she whispered to Pip. Pip moved his ears, but he did not wake up. Rosie closed her eyes and smiled. It had been a very good day.

The next day, the sun came back. The grass was wet and the air smelled fresh. Rosie and Pip went to the forest again, and this time Rosie brought a map that she made herself. On the map she drew the river, the old tree and the little house. "Now we will never get lost," she said. Pip barked happily, and they ran down the path together.
"""

N_CTX = 128


def versions() -> dict:
    return {"torch": torch.__version__, "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__, "numpy": np.__version__}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ---------------------------------------------------------------------------
# Part 1: tokenizer

def train_tokenizer() -> PreTrainedTokenizerFast:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE, min_frequency=2, show_progress=False,
        special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(CORPUS.splitlines(keepends=True), trainer=trainer)
    assert tok.token_to_id("<pad>") == 0 and tok.token_to_id("<s>") == 1 and tok.token_to_id("</s>") == 2
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                      special_tokens=[("<s>", 1)]),
    ])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                   pad_token="<pad>", clean_up_tokenization_spaces=False,
                                   model_max_length=256)
    return fast


def tokenizer_samples(tok) -> list[dict]:
    out = []
    for text in TOKENIZER_SAMPLES + [CORPUS.splitlines()[-2]]:
        with_sp = tok(text, add_special_tokens=True).input_ids
        without = tok(text, add_special_tokens=False).input_ids
        decoded = tok.decode(without)
        assert decoded == text, (text, decoded)
        assert with_sp == [tok.bos_token_id] + without
        out.append({"text": text, "ids_with_special": with_sp, "ids_without_special": without,
                    "decoded": decoded})
    return out


# ---------------------------------------------------------------------------
# Part 1: models (the table is hf_golden_models.py)

def init_weights(model: torch.nn.Module, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters(), key=lambda kv: kv[0]):
            if "norm" in name:
                p.copy_(torch.rand(p.shape, generator=gen) * 0.8 + 0.6)
            elif "embed_tokens" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
            elif name.endswith("sinks"):  # gpt-oss: on the scores' scale, so they matter
                p.copy_(torch.randn(p.shape, generator=gen) * 2.0)
            elif name.endswith("experts.gate_up_proj"):  # gpt-oss: wide enough that the
                p.copy_(torch.randn(p.shape, generator=gen) * 0.6)  # SwiGLU's clamps bite
            else:  # linear weights and biases (incl. an untied lm_head)
                p.copy_(torch.randn(p.shape, generator=gen) * 0.2)


def greedy(model, input_ids: torch.Tensor):
    """Manual argmax loop with a DynamicCache; returns (tokens, step logits [N, V])."""
    cache = DynamicCache()
    out = model(input_ids=input_ids, past_key_values=cache, use_cache=True)
    step_logits, tokens = [], []
    logits = out.logits[0, -1]
    for step in range(NEW_TOKENS):
        step_logits.append(logits.clone())
        nxt = int(torch.argmax(logits))
        tokens.append(nxt)
        if step + 1 == NEW_TOKENS:
            break
        out = model(input_ids=torch.tensor([[nxt]]), past_key_values=out.past_key_values,
                    use_cache=True)
        logits = out.logits[0, -1]
    return tokens, torch.stack(step_logits)


def llama3_freq_check(model) -> dict:
    cfg = model.config
    rs = cfg.rope_scaling
    head_dim = getattr(cfg, "head_dim", None) or cfg.hidden_size // cfg.num_attention_heads
    base = 1.0 / (cfg.rope_theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).float() / head_dim))
    wavelen = 2 * math.pi / base
    low_wl = rs["original_max_position_embeddings"] / rs["low_freq_factor"]
    high_wl = rs["original_max_position_embeddings"] / rs["high_freq_factor"]
    inv = model.model.rotary_emb.inv_freq.float()
    cats = []
    for i in range(len(base)):
        if wavelen[i] < high_wl:
            cats.append("untouched")
        elif wavelen[i] > low_wl:
            cats.append("scaled")
        else:
            cats.append("smoothed")
        if cats[-1] == "untouched":
            assert inv[i] == base[i]
        elif cats[-1] == "scaled":
            assert torch.isclose(inv[i], base[i] / rs["factor"], rtol=1e-6)
        else:
            assert base[i] / rs["factor"] < inv[i] < base[i]
    assert {"untouched", "smoothed", "scaled"} <= set(cats), cats
    return {"head_dim": head_dim, "low_freq_wavelen": low_wl, "high_freq_wavelen": high_wl,
            "unscaled_inv_freq": base.tolist(), "wavelen": wavelen.tolist(), "category": cats}


def make_model(name: str, cls, kwargs: dict, tok: PreTrainedTokenizerFast, index: int) -> dict:
    out_dir = OUT_MODELS / name
    if out_dir.exists():
        shutil.rmtree(out_dir)
    out_dir.mkdir(parents=True)
    torch.manual_seed(SEED + index)
    # transformers maps mistral3 to image-text-to-text only (gemma3 to causal LM as well).
    auto = AutoModelForImageTextToText if cls is Mistral3Config else AutoModelForCausalLM
    cfg = cls(**kwargs)
    model = auto.from_config(cfg, attn_implementation="eager", dtype=torch.float32)
    init_weights(model, SEED + 100 + index)
    # The decoder itself (Gemma3ForConditionalGeneration keeps it as model.language_model).
    lm = getattr(model.model, "language_model", model.model)
    if cfg.tie_word_embeddings:
        model.tie_weights()
        assert model.lm_head.weight.data_ptr() == lm.embed_tokens.weight.data_ptr()
    model.save_pretrained(out_dir, safe_serialization=True)
    tok.save_pretrained(out_dir)

    # The oracle is the re-loaded directory.
    model = auto.from_pretrained(out_dir, attn_implementation="eager",
                                                 dtype=torch.float32).eval()
    lm = getattr(model.model, "language_model", model.model)
    rtok = AutoTokenizer.from_pretrained(out_dir)
    assert rtok.bos_token_id == model.config.bos_token_id == 1
    assert rtok.eos_token_id == model.config.eos_token_id == 2
    samples = tokenizer_samples(rtok)

    input_ids = rtok(MODEL_INPUT_TEXT, add_special_tokens=True).input_ids[:MODEL_INPUT_LEN]
    assert len(input_ids) == MODEL_INPUT_LEN and input_ids[0] == 1
    x = torch.tensor([input_ids])

    with torch.no_grad():
        logits = model(input_ids=x, use_cache=False).logits[0].float()
        gen, step_logits = greedy(model, x)
        full = torch.tensor([input_ids + gen])
        nocache = model(input_ids=full, use_cache=False).logits[0, len(input_ids) - 1:-1]
        assert torch.equal(nocache.argmax(-1), torch.tensor(gen)), name
        nocache_diff = float((nocache - step_logits).abs().max())
        # f64 twin: measures the f32 rounding error of the oracle itself.
        m64 = auto.from_pretrained(out_dir, attn_implementation="eager",
                                                   dtype=torch.float64).eval()
        logits64 = m64(input_ids=x, use_cache=False).logits[0]
    d64 = (logits.double() - logits64).abs()
    max_abs = float(logits.abs().max())

    router = router_margins(model, x) if getattr(cfg, "num_experts", None) or getattr(
        cfg, "num_local_experts", None) else None

    top2 = torch.topk(step_logits, 2, dim=-1).values
    gaps = (top2[:, 0] - top2[:, 1]).tolist()
    small = [i for i, g in enumerate(gaps) if g < 1e-3]

    save_file({"logits": logits.contiguous(), "greedy_logits": step_logits.contiguous()},
              str(out_dir / "golden_logits.safetensors"))

    golden = {
        "architecture": cls.model_type,
        "name": name,
        "hf_class": type(model).__name__,
        "versions": versions(),
        "seed": SEED + index,
        "dtype": "float32",
        "attn_implementation": "eager",
        "config": json.loads((out_dir / "config.json").read_text()),
        "input_text": MODEL_INPUT_TEXT,
        "input_ids": input_ids,
        "greedy": {
            "method": ("manual argmax loop with transformers.DynamicCache: prefill input_ids, then "
                       "one token per step; raw logits (no logits processors), EOS not treated "
                       "specially, ties -> lowest id (torch.argmax); re-checked by a full no-cache "
                       "forward over input_ids + tokens"),
            "new_tokens": NEW_TOKENS,
            "tokens": gen,
            "top2_gap": gaps,
            "top1_logit": top2[:, 0].tolist(),
            "min_top2_gap": min(gaps),
            "argmin_top2_gap_step": int(np.argmin(gaps)),
            "steps_with_gap_below_1e-3": small,
            "nocache_recheck_max_abs_diff": nocache_diff,
        },
        "logits": {
            "file": "golden_logits.safetensors",
            "tensors": {
                "logits": ("F32 [T, vocab]: full forward over input_ids (no cache); row t is the "
                           "distribution for the token after position t"),
                "greedy_logits": ("F32 [32, vocab]: logits the greedy step k chose from "
                                  "(row 0 = logits[T-1] of the cached prefill)"),
            },
            "max_abs_logit": max_abs,
            "f32_vs_f64_max_abs_diff": float(d64.max()),
            "f32_vs_f64_max_rel_diff": float(d64.max() / logits64.abs().max()),
            "tolerance_note": (
                "f32 everywhere; dot products have K = 64..128 terms (f32 rel. rounding ~6e-8 "
                "per op, error grows ~sqrt(K) to K per dot product, through 2 layers + norms + "
                "softmax). Expected relative error of an independent f32 implementation vs this "
                "oracle: ~1e-6..1e-5 of max|logit|; suggested check |a-b| <= 1e-4 * max(1, "
                "max_abs_logit) (f32_vs_f64_max_abs_diff is the oracle's own measured error)."),
        },
        "tokenizer": {
            "type": "byte-level BPE (tokenizers) in PreTrainedTokenizerFast",
            "vocab_size": rtok.backend_tokenizer.get_vocab_size(),
            "bos_token": "<s>", "bos_token_id": 1, "eos_token": "</s>", "eos_token_id": 2,
            "pad_token": "<pad>", "pad_token_id": 0,
            "adds_bos": True,
            "samples": samples,
        },
    }
    if router is not None:
        golden["router"] = router
    if name == "llama3_rope":
        golden["rope"] = {"inv_freq": lm.rotary_emb.inv_freq.tolist(),
                          "attention_scaling": float(lm.rotary_emb.attention_scaling),
                          "llama3_check": llama3_freq_check(model)}
    else:
        # OLMo 3 keeps one rotary embedding per layer type; the full layers' is the global one.
        rotary = lm.rotary_embs["full_attention"] if hasattr(lm, "rotary_embs") else lm.rotary_emb
        golden["rope"] = {"inv_freq": rotary.inv_freq.tolist(),
                          "attention_scaling": float(rotary.attention_scaling)}
    (out_dir / "golden.json").write_text(json.dumps(golden, indent=1) + "\n")
    if name in GGUF_TWINS:
        write_gguf_twin(model, rtok, GGUF_TWINS[name], out_dir / "model.gguf")

    sizes = {p.name: p.stat().st_size for p in sorted(out_dir.iterdir())}
    print(f"{name}: min gap {min(gaps):.4g} at step {int(np.argmin(gaps))}, small {small}, "
          f"max|logit| {max_abs:.3f}, f32-f64 {float(d64.max()):.3g}, nocache diff {nocache_diff:.3g}, "
          f"files {sizes} total {sum(sizes.values())}")
    if name == "llama3_rope":
        c = golden["rope"]["llama3_check"]
        print("  llama3 rope categories:", list(zip([round(w, 2) for w in c["wavelen"]], c["category"])))
    return golden


# ---------------------------------------------------------------------------
# Part 2: llama.cpp SentencePiece-style tokenizer over the GGUF vocab

class SpmTokenizer:
    """Re-implementation of llama.cpp's llm_tokenizer_spm_session (src/llama-vocab.cpp)."""

    def __init__(self, gguf_path: Path):
        from gguf import GGUFReader
        r = GGUFReader(str(gguf_path))
        f = r.fields
        self.tokens = [bytes(f["tokenizer.ggml.tokens"].parts[i]).decode("utf-8")
                       for i in f["tokenizer.ggml.tokens"].data]
        self.scores = [float(np.float32(f["tokenizer.ggml.scores"].parts[i][0]))
                       for i in f["tokenizer.ggml.scores"].data]
        assert f["tokenizer.ggml.model"].contents() == "llama"
        self.bos = int(f["tokenizer.ggml.bos_token_id"].contents())
        self.eos = int(f["tokenizer.ggml.eos_token_id"].contents())
        self.add_space_prefix = (bool(f["tokenizer.ggml.add_space_prefix"].contents())
                                 if "tokenizer.ggml.add_space_prefix" in f else True)
        self.to_id = {t: i for i, t in enumerate(self.tokens)}

    def _byte_token(self, b: int) -> int:
        return self.to_id[f"<0x{b:02X}>"]

    def encode(self, text: str, add_bos: bool = True) -> list[int]:
        import heapq
        out = [self.bos] if add_bos else []
        if text == "":
            return out
        if self.add_space_prefix:
            text = " " + text
        text = text.replace(" ", "\u2581")
        data = text.encode("utf-8")
        # symbols: [start, n, prev, next]; one per UTF-8 character
        syms = []
        off = 0
        while off < len(data):
            c = data[off]
            ln = 1 if c < 0x80 else 2 if (c >> 5) == 0x6 else 3 if (c >> 4) == 0xE else 4 if (c >> 3) == 0x1E else 1
            ln = min(ln, len(data) - off)
            syms.append([off, ln, len(syms) - 1, -1])
            off += ln
            syms[-1][3] = -1 if off == len(data) else len(syms)
        heap, rev_merge = [], {}

        def add_bigram(left: int, right: int) -> None:
            if left == -1 or right == -1:
                return
            s = data[syms[left][0]:syms[left][0] + syms[left][1] + syms[right][1]]
            tid = self.to_id.get(s.decode("utf-8", errors="surrogateescape"))
            if tid is None:
                return
            # max-heap on score, ties: smaller left first
            heapq.heappush(heap, (-self.scores[tid], left, right, len(s)))
            rev_merge[s] = (left, right)

        for i in range(1, len(syms)):
            add_bigram(i - 1, i)
        while heap:
            _, left, right, size = heapq.heappop(heap)
            ls, rs = syms[left], syms[right]
            if ls[1] == 0 or rs[1] == 0 or ls[1] + rs[1] != size:
                continue
            ls[1] += rs[1]
            rs[1] = 0
            ls[3] = rs[3]
            if rs[3] >= 0:
                syms[rs[3]][2] = left
            add_bigram(ls[2], left)
            add_bigram(left, ls[3])

        def resegment(idx: int) -> None:
            s = data[syms[idx][0]:syms[idx][0] + syms[idx][1]]
            tid = self.to_id.get(s.decode("utf-8", errors="surrogateescape"))
            if tid is not None:
                out.append(tid)
                return
            if s in rev_merge:
                a, b = rev_merge[s]
                resegment(a)
                resegment(b)
                return
            out.extend(self._byte_token(b) for b in s)

        i = 0
        while i != -1:
            resegment(i)
            i = syms[i][3]
        return out


def check_spm_on_llama_vocab_tests() -> str:
    """Run SpmTokenizer on llama.cpp's own tokenizer test for a SentencePiece vocab."""
    v = SHARED / "reference" / "vocab" / "ggml-vocab-llama-spm.gguf"
    spm = SpmTokenizer(v)
    texts = Path(str(v) + ".inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")[:-1]
    expected = Path(str(v) + ".out").read_text(encoding="utf-8")[:-1].split("\n")
    assert len(texts) == len(expected) > 0
    for text, line in zip(texts, expected):
        assert spm.encode(text, add_bos=False) == [int(t) for t in line.split()], text
    msg = (f"passes llama.cpp's tokenizer test ../shared/reference/vocab/ggml-vocab-llama-spm.gguf"
           f".inp/.out ({len(texts)}/{len(texts)} strings)")
    print("SpmTokenizer", msg)
    return msg


def stories_perplexity() -> None:
    OUT_PPL.mkdir(parents=True, exist_ok=True)
    story_path = OUT_PPL / "story.txt"
    story_path.write_text(STORY, encoding="utf-8")
    gguf_path = STORIES_DIR / STORIES_FILE
    ref = json.loads(STORIES_REF.read_text())

    vocab_test = check_spm_on_llama_vocab_tests()
    spm = SpmTokenizer(gguf_path)
    hf_tok = AutoTokenizer.from_pretrained(STORIES_DIR, gguf_file=STORIES_FILE)
    # pad_token_id: the GGUF says 0xFFFFFFFF (none), which transformers would use as padding_idx.
    model = AutoModelForCausalLM.from_pretrained(STORIES_DIR, gguf_file=STORIES_FILE,
                                                 dtype=torch.float32, pad_token_id=None,
                                                 attn_implementation="eager").eval()

    greedy_checks = []
    for r in ref["results"]:
        ids_spm = spm.encode(r["prompt"])
        ids_hf = hf_tok(r["prompt"]).input_ids
        assert ids_spm == r["prompt_ids_with_bos"], (r["prompt"], ids_spm)
        x = torch.tensor([r["prompt_ids_with_bos"]])
        with torch.no_grad():
            out = model.generate(x, attention_mask=torch.ones_like(x), do_sample=False,
                                 max_new_tokens=len(r["generated_ids"]),
                                 min_new_tokens=len(r["generated_ids"]), pad_token_id=spm.eos)
        gen = out[0, x.shape[1]:].tolist()
        ok = gen == r["generated_ids"]
        greedy_checks.append({"prompt": r["prompt"], "spm_ids_match": ids_spm == r["prompt_ids_with_bos"],
                              "hf_tokenizer_ids_match": ids_hf == r["prompt_ids_with_bos"],
                              "greedy_64_match": ok})
        print(f"stories260K greedy '{r['prompt']}': match={ok}, hf tokenizer ids match="
              f"{ids_hf == r['prompt_ids_with_bos']}")
        assert ok, r["prompt"]

    tokens = spm.encode(STORY, add_bos=True)
    hf_tokens = hf_tok(STORY).input_ids
    hf_agree = hf_tokens == tokens
    print(f"story: {len(STORY.encode())} bytes, {len(tokens)} tokens, HF GGUF tokenizer agrees: {hf_agree}")
    if not hf_agree:
        first = next(i for i, (a, b) in enumerate(zip(tokens, hf_tokens)) if a != b)
        print("  first difference at", first, tokens[first - 3:first + 3], hf_tokens[first - 3:first + 3])

    n_chunks = len(tokens) // N_CTX
    assert n_chunks >= 4
    first = N_CTX // 2
    nll_sum = nll2_sum = 0.0
    count = 0
    per_window, cumulative = [], []
    for i in range(n_chunks):
        window = list(tokens[i * N_CTX:(i + 1) * N_CTX])
        window[0] = spm.bos
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([window]), use_cache=False).logits[0]
        lsm = torch.log_softmax(logits.double(), dim=-1)
        w_nll = 0.0
        for j in range(first, N_CTX - 1):
            nll = -float(lsm[j, window[j + 1]])
            w_nll += nll
            nll_sum += nll
            nll2_sum += nll * nll
            count += 1
        per_window.append(math.exp(w_nll / (N_CTX - 1 - first)))
        cumulative.append(math.exp(nll_sum / count))
    mean = nll_sum / count
    var = nll2_sum / count - mean * mean
    stderr_nll = math.sqrt(var / (count - 1))
    ppl = math.exp(mean)
    result = {
        "model": f"../shared/models/stories260K/{STORIES_FILE} (sha256 {sha256(gguf_path)})",
        "text_file": "story.txt",
        "text_sha256": sha256(story_path),
        "text_bytes": len(STORY.encode("utf-8")),
        "versions": versions(),
        "tokenization": {
            "method": ("re-implementation of llama.cpp's SentencePiece-style tokenizer "
                       "(llm_tokenizer_spm_session) over the GGUF tokens/scores: BOS first, one "
                       "space prefix (add_space_prefix default true), ' ' -> U+2581, UTF-8 "
                       "characters as initial symbols, repeatedly merge the adjacent pair whose "
                       "concatenation is a vocab token with the highest score (ties: leftmost), "
                       "unknown pieces -> byte tokens <0xXX>; the whole file is one fragment"),
            "checked_against": ("prompt_ids_with_bos of all 3 prompts in "
                                "../shared/reference/stories260K-greedy.json (llama.cpp): all match"),
            "tokenizer_self_test": vocab_test,
            "hf_gguf_tokenizer_agrees": hf_agree,
            "hf_gguf_tokenizer": f"transformers {transformers.__version__} "
                                 "AutoTokenizer.from_pretrained(dir, gguf_file=...) (LlamaTokenizerFast)",
        },
        "model_check": {
            "loader": ("transformers AutoModelForCausalLM.from_pretrained(dir, gguf_file=..., "
                       "dtype=float32, attn_implementation='eager'): dequantize + undo the llama "
                       "Q/K permutation"),
            "greedy_vs_llama_cpp": greedy_checks,
        },
        "method": ("llama.cpp perplexity: tokens = tokenize(file) with BOS first; n_chunks = "
                   "len(tokens) // n_ctx; window i = tokens[i*n_ctx:(i+1)*n_ctx] with window[0] "
                   "replaced by BOS; full forward (no cache) over the window; score positions "
                   "j = n_ctx/2 .. n_ctx-2 with nll_j = -log_softmax(logits[j])[window[j+1]] "
                   "(log_softmax in float64 from float32 logits); per-window ppl = exp(mean nll "
                   "of that window); ppl = exp(mean nll over all scored tokens); stderr_nll = "
                   "sqrt((sum nll^2/N - mean^2)/(N-1)); ppl_stderr = ppl * stderr_nll. "
                   "cumulative_ppl[i] is what llama.cpp prints as [i+1] after chunk i."),
        "n_ctx": N_CTX,
        "n_tokens": len(tokens),
        "n_chunks": n_chunks,
        "first_scored_position": first,
        "scored_per_window": N_CTX - 1 - first,
        "n_scored": count,
        "bos_token_id": spm.bos,
        "mean_nll": mean,
        "stderr_nll": stderr_nll,
        "ppl": ppl,
        "ppl_stderr": ppl * stderr_nll,
        "per_window_ppl": per_window,
        "cumulative_ppl": cumulative,
        "tokens": tokens,
    }
    out_path = OUT_PPL / "stories260K_ctx128.json"
    out_path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"stories260K ctx {N_CTX}: {n_chunks} chunks, {count} scored, ppl {ppl:.6f} "
          f"+/- {ppl * stderr_nll:.6f}, per window {[round(p, 4) for p in per_window]}")


def main() -> int:
    # `--only NAME ...` regenerates those models alone (no perplexity oracle); seeds follow each
    # model's place in MODELS, so the files are the same as from a full run.
    only = sys.argv[sys.argv.index("--only") + 1:] if "--only" in sys.argv else None
    unknown = set(only or []) - set(MODELS)
    if unknown:
        print(f"unknown model(s) {sorted(unknown)}; known: {list(MODELS)}")
        return 2
    tok = train_tokenizer()
    print(f"tokenizer: vocab {tok.backend_tokenizer.get_vocab_size()}")
    assert tok.backend_tokenizer.get_vocab_size() == VOCAB_SIZE
    goldens = {}
    for idx, (name, (cls, kwargs)) in enumerate(MODELS.items()):
        if only is None or name in only:
            goldens[name] = make_model(name, cls, kwargs, tok, idx)
    if only is None:
        stories_perplexity()
    return 0


if __name__ == "__main__":
    sys.exit(main())
