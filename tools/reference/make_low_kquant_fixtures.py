#!/usr/bin/env python3
"""Golden fixtures for GGUF Q2_K and Q3_K (llama.cpp's 2- and 3-bit K-quants), IQ4_NL /
IQ4_XS (its non-linear 4-bit types: codes through a 16-entry int8 table) and the grid types
IQ2_XXS / IQ2_XS / IQ2_S / IQ3_XXS / IQ3_S / IQ1_S / IQ1_M (indices into codebooks) and the ternary TQ1_0 / TQ2_0.

Writes, under tests/data/io/gguf/:
  low_kquants.gguf
      Written by gguf-py's GGUFWriter: tensors "q2_k" and "q3_k" of [3, 512]
      random raw blocks with finite f16 super-block scales (d, and Q2_K's dmin,
      uniform in +-[0.002, 0.05]), and "q2_k_edges" / "q3_k_edges" of [1, 1024]
      (four blocks each): every scale and code byte 0x00, every byte 0xFF,
      random bytes under negative scales, and random bytes under the smallest
      subnormal f16 scale.
  low_kquants.expected.safetensors
      For every tensor, an F32 tensor of the same name holding what gguf-py
      dequantizes (GGUFReader + gguf.quants.dequantize: its own numpy port of
      ggml-quants.c's dequantize_row_q2_K / q3_K), shape = GGUF dims reversed.
  iq4_blocks.gguf, iq4_blocks.expected.safetensors
      The same for tensors "iq4_nl" and "iq4_xs" of [3, 512] random blocks (f16 d as above)
      and "iq4_nl_edges" / "iq4_xs_edges" (the same four kinds of edge blocks).
  iq_grid_blocks.gguf, iq_grid_blocks.expected.safetensors
      The same for "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq1_s", "iq1_m" and
      their "_edges" (IQ1_M's f16 d sits in the top nibbles of its four u16 scale words).
  ternary_blocks.gguf, ternary_blocks.expected.safetensors
      The same for "tq1_0" and "tq2_0" (f16 d after 52 / 64 bytes of base-3 / 2-bit codes; random
      bytes include TQ1_0 bytes above 242, which ggml's quantizer never writes but its
      dequantizer reads all the same).

Only numpy, gguf and safetensors are needed (pins in requirements.txt):
    python3 -m venv /tmp/lowk && /tmp/lowk/bin/pip install gguf==0.19.0 \\
        numpy==2.4.6 safetensors==0.8.0
    /tmp/lowk/bin/python tools/reference/make_low_kquant_fixtures.py
The outputs are deterministic (fixed seed, no timestamps).
"""

from __future__ import annotations

import sys
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as QT
from safetensors.numpy import save_file

OUT = Path(__file__).resolve().parents[2] / "tests" / "data" / "io" / "gguf"
ROWS, COLS = 3, 512
# Byte offsets of the f16 scales inside a block: Q2_K scales[16] qs[64] d dmin; Q3_K hmask[32]
# qs[64] scales[12] d.
# IQ4_NL d qs[16]; IQ4_XS d scales_h scales_l[4] qs[128].
# The grid types all start with their f16 d except IQ1_M (put_scale).
SCALE_AT = {QT.Q2_K: (80, 82), QT.Q3_K: (108,), QT.IQ4_NL: (0,), QT.IQ4_XS: (0,),
            QT.IQ2_XXS: (0,), QT.IQ2_XS: (0,), QT.IQ2_S: (0,), QT.IQ3_XXS: (0,),
            QT.IQ3_S: (0,), QT.IQ1_S: (0,), QT.IQ1_M: (), QT.TQ1_0: (52,), QT.TQ2_0: (64,)}


def halves(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float16).view(np.uint8).reshape(-1, 2)


def put_iq1_m_scale(blocks: np.ndarray, half_bytes: np.ndarray) -> None:
    """IQ1_M: nibble i of the f16 d into the top nibble of u16 scale word i (bytes 48-55)."""
    h = half_bytes.copy().view(np.uint16).reshape(-1)
    words = blocks[:, 48:56].copy().view(np.uint16)
    for i in range(4):
        words[:, i] = (words[:, i] & 0x0FFF) | (((h >> (4 * i)) & 0xF) << 12)
    blocks[:, 48:56] = words.view(np.uint8)


def put_scale(blocks: np.ndarray, qt: QT, at_index: int, half_bytes: np.ndarray) -> None:
    if qt == QT.IQ1_M:
        put_iq1_m_scale(blocks, half_bytes)
    else:
        at = SCALE_AT[qt][at_index]
        blocks[:, at:at + 2] = half_bytes


def scale_slots(qt: QT) -> int:
    return 1 if qt == QT.IQ1_M else len(SCALE_AT[qt])


def random_blocks(rng: np.random.Generator, qt: QT, n_blocks: int, sign=None) -> np.ndarray:
    _, type_size = gguf.GGML_QUANT_SIZES[qt]
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for i in range(scale_slots(qt)):
        mag = rng.uniform(0.002, 0.05, size=n_blocks)
        s = rng.choice([-1.0, 1.0], size=n_blocks) if sign is None else np.full(n_blocks, sign)
        put_scale(blocks, qt, i, halves(mag * s))
    return blocks


def edge_blocks(rng: np.random.Generator, qt: QT) -> np.ndarray:
    _, type_size = gguf.GGML_QUANT_SIZES[qt]
    zeros = np.zeros((1, type_size), dtype=np.uint8)
    ones = np.full((1, type_size), 0xFF, dtype=np.uint8)
    for b in (zeros, ones):
        for i in range(scale_slots(qt)):
            put_scale(b, qt, i, halves([0.03125]))
    negative = random_blocks(rng, qt, 1, sign=-1.0)
    subnormal = random_blocks(rng, qt, 1)
    for i in range(scale_slots(qt)):
        put_scale(subnormal, qt, i, np.array([[1, 0]], dtype=np.uint8))  # f16 0x0001 = 2^-24
    return np.concatenate([zeros, ones, negative, subnormal])


def build(seed: int, types) -> list[tuple[str, np.ndarray, QT]]:
    rng = np.random.default_rng(seed)
    out = []
    for name, qt in types:
        block_size, _ = gguf.GGML_QUANT_SIZES[qt]
        blocks = random_blocks(rng, qt, ROWS * COLS // block_size)
        out.append((name, blocks.reshape(ROWS, -1), qt))
        out.append((name + "_edges", edge_blocks(rng, qt).reshape(1, -1), qt))
    return out


def write(stem: str, tensors) -> None:
    path = OUT / f"{stem}.gguf"
    w = gguf.GGUFWriter(str(path), arch="llama")
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for name, arr, qt in tensors:
        w.add_tensor(name, arr, raw_dtype=qt)  # uint8 byte shape -> element shape
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()

    expected = {}
    for t in gguf.GGUFReader(str(path)).tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))
        expected[t.name] = np.ascontiguousarray(values.reshape(shape))
        finite = np.isfinite(expected[t.name]).all()
        print(f"{t.name}: {t.tensor_type.name} {shape}, all finite: {finite}")
    save_file(expected, str(OUT / f"{stem}.expected.safetensors"),
              # One key: safetensors orders __metadata__ keys at random, and the committed file
              # must come out byte for byte the same.
              metadata={"oracle": "gguf-py 0.19.0 GGUFReader + gguf.quants.dequantize "
                                  f"of {stem}.gguf"})


def main() -> int:
    OUT.mkdir(parents=True, exist_ok=True)
    write("low_kquants", build(20261127, (("q2_k", QT.Q2_K), ("q3_k", QT.Q3_K))))
    write("iq4_blocks", build(20261128, (("iq4_nl", QT.IQ4_NL), ("iq4_xs", QT.IQ4_XS))))
    write("iq_grid_blocks", build(20261129, (
        ("iq2_xxs", QT.IQ2_XXS), ("iq2_xs", QT.IQ2_XS), ("iq2_s", QT.IQ2_S),
        ("iq3_xxs", QT.IQ3_XXS), ("iq3_s", QT.IQ3_S), ("iq1_s", QT.IQ1_S), ("iq1_m", QT.IQ1_M))))
    write("ternary_blocks", build(20261130, (("tq1_0", QT.TQ1_0), ("tq2_0", QT.TQ2_0))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
