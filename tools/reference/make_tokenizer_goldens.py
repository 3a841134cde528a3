#!/usr/bin/env python3
"""Generate tokenizer goldens for tessera's tokenizer.json loader with Hugging Face `tokenizers`.

Each fixture is a small BPE tokenizer trained here by the `tokenizers` library (the Rust
implementation transformers uses) and saved by it as tokenizer.json; every expected id and
string comes from that same library's encode/decode. The C++ tests never run Python: they read
the committed files under tests/data/tokenizers/<name>/.

Fixtures (vocab ~300-1000 each):

  bytelevel_gpt2     ByteLevel pre-tokenizer (GPT-2 regex), ByteLevel decoder, ByteLevel
                     post-processor (adds nothing); merges rewritten to the legacy "a b" string
                     form; special <|endoftext|> <|im_start|> <|im_end|>, an lstrip special
                     <mask> and a non-special added token <tool>.
  bytelevel_llama3   Split(Llama-3 regex, Isolated) + ByteLevel(use_regex=False),
                     ignore_merges=True, TemplateProcessing "<|begin_of_text|> $A".
  bytelevel_qwen2    NFC normalizer, Split(Qwen2 regex) + ByteLevel(use_regex=False); ChatML
                     specials; no BOS.
  bytelevel_o200k    Split(o200k regex, as gpt-oss's / GPT-4o's tokenizer.json: a word is
                     upper / title / modifier / other letters and marks before lower ones,
                     contractions attached, digits in threes, "/" kept after punctuation) +
                     ByteLevel(use_regex=False); harmony's specials; no BOS.
  spm_llama2         Llama-2 "legacy" layout: BPE with byte_fallback, unk <unk> and fuse_unk;
                     normalizer Prepend("▁") + Replace(" ", "▁"); no pre-tokenizer; decoder
                     Replace("▁", " ") + ByteFallback + Fuse + Strip(" ", 1, 0);
                     TemplateProcessing "<s> $A". A small alphabet forces byte fallback.
  spm_metaspace_nfc  NFC normalizer, Metaspace pre-tokenizer (prepend_scheme "first",
                     split=False), decoders ByteFallback + Metaspace; "<s> $A </s>" template.

goldens.json per fixture: library versions, bos/eos as named in tokenizer_config.json, and for
every string of a hard set (whitespace runs, tabs, newlines, CJK, emoji with ZWJ and skin
tones, combining marks, digit runs, code, special tokens inside text, contractions,
non-ASCII Latin, the empty string, byte-like and marker-like text):
  ids                    Tokenizer.encode(text, add_special_tokens=False).ids
  ids_with_special       Tokenizer.encode(text, add_special_tokens=True).ids
  decoded                Tokenizer.decode(ids, skip_special_tokens=False)
  decoded_skip_special   Tokenizer.decode(ids_with_special, skip_special_tokens=True)
We use `tokenizers` directly (not transformers), so no clean_up_tokenization_spaces is applied.

Run from the repository root:
    .venv/bin/python tools/reference/make_tokenizer_goldens.py
Training is deterministic for a fixed corpus, so re-running reproduces the committed files.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import tokenizers
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers
from tokenizers import pre_tokenizers, processors, trainers

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "tests" / "data" / "tokenizers"

LLAMA3_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
O200K_PATTERN = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)
QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# The strings every fixture is checked on.
HARD_STRINGS = [
    "",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n\n\n",
    " \n \t ",
    "\r\n windows line\r\n",
    "Hello world",
    " Hello world",
    "Hello  world   !",
    "end with spaces   ",
    "a" + " " * 17 + "b",
    "\t\tindented\n    more\tindented",
    "I'm sure you'll see they've gone; it's John's. DON'T SHOUT, I'LL GO, we'd",
    "naïve façade Ångström Ærøskøbing straße œuvre Ĳssel ǅ",
    "Cafe\u0301 vs Caf\u00e9, A\u030a vs \u00c5, n\u0303, \u0301leading combining",
    "你好，世界！日本語のテキスト 한국어 텍스트",
    "😀 👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 ❤️ 🇫🇷",
    "1234567890 3.14159 1,000,000 007 ٣٤٥ ①②",
    "def f(x):\n    return x**2  # square\n",
    "for (int i = 0; i < n; ++i) { a[i] = b[i] >> 2; }",
    "<|im_start|>user\nHello!<|im_end|>\n<|im_start|>assistant\n",
    "<s>Hi</s> <s> x</s>",
    "a<|endoftext|>b <|endoftext|> c",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>",
    "use <tool>call</tool> now",
    "fill the <mask> here and  <mask>",
    "<0xFF> <0x41> \\xff\\xfe literal",
    "Ġ Ċ ▁ marker-like text ▁▁",
    "\u00ff\u00fe\ufffd replacement",
    "zero\u200bwidth\u200djoiner\u2028sep",
    "مرحبا שלום नमस्ते สวัสดี",
    "!!!!!!! ??? ...",
    "Mixed CASE 'S 'T 'Re 'VE contractions",
]

# What the o200k regex splits differently from the others: case changes inside a word, title
# case, contractions after capitals, "/" after punctuation, digit runs.
O200K_EXTRA = [
    "camelCaseWords HTTPServer getHTTPResponse iPhone McDonald's ǅemal",
    "see ./path/to/file.txt and ../../up/, a//b ;/ x",
    "THE END'S NEAR. Don't-Stop 12345678 v1.2.3",
]

CORPUS = HARD_STRINGS + [
    "The quick brown fox jumps over the lazy dog. " * 3,
    "Once upon a time, there was a little girl named Lily. She loved to play outside.",
    "She said: \"I'm going home, and you're coming with me!\" He'd agreed.",
    "In 2024, 1,234 people paid $56.78 each; 90% of them were happy.",
    "import numpy as np\nx = np.zeros((3, 4))\nprint(x.shape)\n",
    "if (a == b && c != d) { return -1; } else { return 0; }",
    "The café served crème brûlée and piña colada to the naïve tourists.",
    "東京は日本の首都です。北京是中国的首都。서울은 한국의 수도입니다.",
    "Emoji mood: 😀😃😄😁 🎉🎉 👍👍🏻👍🏿",
    "    indented code\n\tand tabs\n\n\nand blank lines",
    "Hello world! Hello there. Hello, Hello, hello HELLO.",
]


def train(tok: Tokenizer, vocab_size: int, specials: list, **extra) -> None:
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  show_progress=False, **extra)
    tok.train_from_iterator(CORPUS * 2, trainer=trainer)


def bytelevel_gpt2() -> tuple[Tokenizer, dict]:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    train(tok, 600, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
          initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, special=True, normalized=False)])
    tok.add_tokens([AddedToken("<tool>", special=False, normalized=False)])
    return tok, {"bos_token": None, "eos_token": "<|endoftext|>"}


def bytelevel_llama3() -> tuple[Tokenizer, dict]:
    tok = Tokenizer(models.BPE(ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                "<|end_header_id|>", "<|eot_id|>"]
    train(tok, 800, specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False),
        processors.TemplateProcessing(single="<|begin_of_text|> $A",
                                      pair="<|begin_of_text|> $A <|begin_of_text|> $B",
                                      special_tokens=[("<|begin_of_text|>", bos)]),
    ])
    return tok, {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}


def bytelevel_qwen2() -> tuple[Tokenizer, dict]:
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    train(tok, 700, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"],
          initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    return tok, {"bos_token": None, "eos_token": "<|im_end|>"}


def bytelevel_o200k() -> tuple[Tokenizer, dict]:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(O200K_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    specials = ["<|startoftext|>", "<|endoftext|>", "<|return|>", "<|start|>", "<|message|>",
                "<|channel|>", "<|end|>", "<|call|>"]
    train(tok, 800, specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    return tok, {"bos_token": None, "eos_token": "<|return|>"}


def with_byte_tokens(tok: Tokenizer, specials: list, byte_fallback_model: dict) -> Tokenizer:
    """Rebuilds a trained BPE so that ids are specials, <0x00>..<0xFF>, then the rest, the
    layout of Llama 2's vocabulary (bytes are ordinary vocabulary entries there)."""
    data = json.loads(tok.to_str())
    old_vocab = data["model"]["vocab"]
    vocab = {}
    for s in specials:
        vocab[s] = len(vocab)
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for text, _ in sorted(old_vocab.items(), key=lambda kv: kv[1]):
        if text not in vocab:
            vocab[text] = len(vocab)
    data["model"]["vocab"] = vocab
    data["model"].update(byte_fallback_model)
    for added in data["added_tokens"]:
        added["id"] = vocab[added["content"]]
    return Tokenizer.from_str(json.dumps(data))


def spm_llama2() -> tuple[Tokenizer, dict]:
    tok = Tokenizer(models.BPE())
    # Train on ▁-split words like SentencePiece, then drop the pre-tokenizer as Llama 2 does.
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"),
                                           normalizers.Replace(" ", "▁")])
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never")
    specials = ["<unk>", "<s>", "</s>"]
    train(tok, 500, specials, limit_alphabet=80)
    tok = with_byte_tokens(tok, specials, {"byte_fallback": True, "unk_token": "<unk>",
                                           "fuse_unk": True})
    tok.pre_tokenizer = None
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    return tok, {"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": True}


def spm_metaspace_nfc() -> tuple[Tokenizer, dict]:
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                 split=True)
    specials = ["<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>"]
    train(tok, 450, specials, limit_alphabet=90)
    tok = with_byte_tokens(tok, specials, {"byte_fallback": True, "unk_token": "<unk>",
                                           "fuse_unk": True})
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first",
                                                 split=False)
    tok.decoder = decoders.Sequence([decoders.ByteFallback(),
                                     decoders.Metaspace(replacement="▁", prepend_scheme="first")])
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> $B", special_tokens=[("<s>", 1), ("</s>", 2)])
    return tok, {"bos_token": "<s>", "eos_token": "</s>"}


FIXTURES = {
    "bytelevel_gpt2": bytelevel_gpt2,
    "bytelevel_llama3": bytelevel_llama3,
    "bytelevel_qwen2": bytelevel_qwen2,
    "spm_llama2": spm_llama2,
    "spm_metaspace_nfc": spm_metaspace_nfc,
    "bytelevel_o200k": bytelevel_o200k,
}


def legacy_merges(path: Path) -> None:
    """Rewrites merges as "a b" strings (the format of tokenizers < 0.20, still accepted)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    merges = data["model"]["merges"]
    assert all(" " not in a and " " not in b for a, b in merges)
    data["model"]["merges"] = [f"{a} {b}" for a, b in merges]
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    # The rewritten file must load and tokenize identically.
    Tokenizer.from_file(str(path))


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, build in FIXTURES.items():
        tok, config = build()
        d = OUT / name
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        tok.save(str(d / "tokenizer.json"), pretty=True)
        if name == "bytelevel_gpt2":
            legacy_merges(d / "tokenizer.json")
        tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        (d / "tokenizer_config.json").write_text(json.dumps(config, indent=1) + "\n")
        cases = []
        for text in HARD_STRINGS + (O200K_EXTRA if name == "bytelevel_o200k" else []):
            ids = tok.encode(text, add_special_tokens=False).ids
            ids_special = tok.encode(text, add_special_tokens=True).ids
            cases.append({
                "text": text,
                "ids": ids,
                "ids_with_special": ids_special,
                "decoded": tok.decode(ids, skip_special_tokens=False),
                "decoded_skip_special": tok.decode(ids_special, skip_special_tokens=True),
            })
        goldens = {
            "generator": "tools/reference/make_tokenizer_goldens.py",
            "versions": {"tokenizers": tokenizers.__version__},
            "vocab_size": tok.get_vocab_size(with_added_tokens=True),
            "bos_id": tok.token_to_id(config["bos_token"]) if config.get("bos_token") else None,
            "eos_id": tok.token_to_id(config["eos_token"]),
            "cases": cases,
        }
        (d / "goldens.json").write_text(json.dumps(goldens, ensure_ascii=False, indent=1) + "\n",
                                        encoding="utf-8")
        size = sum(f.stat().st_size for f in d.iterdir())
        print(f"{name}: vocab {goldens['vocab_size']}, {size // 1024} KB")
        assert size < 300 * 1024, name
    return 0


if __name__ == "__main__":
    sys.exit(main())
