#!/usr/bin/env python3
"""Generate external-oracle fixtures for tessera's safetensors and GGUF readers.

Every fixture is written, and every expected value is computed, by third-party
code, so the C++ tests check our readers against other people's implementations
and not against our own understanding of the formats. The C++ test suite never
runs Python: it reads the committed files under tests/data/io/.

Outputs (relative to tests/data/io/) and the oracle behind each one:

  safetensors/all_dtypes.safetensors
      Written by safetensors.torch.save_file (the Rust safetensors serializer):
      one small tensor per dtype, including a scalar, empty tensors, 1-D/2-D/3-D
      shapes, all 256 codes of every 8-bit float format, packed F4 and a
      __metadata__ map.
  safetensors/all_dtypes.expected.json
      Per tensor: the dtype string and shape from the file header, the
      data_offsets from the header, the raw bytes (hex, from torch's in-memory
      tensor), and the values decoded by torch (tensor.to(float64) for floats,
      tolist() for ints and bool). torch cannot convert float4_e2m1fn_x2, so F4
      values are decoded by ml_dtypes.float4_e2m1fn instead (see the "oracle"
      field of that tensor).
  safetensors/sharded/model-0000i-of-0000n.safetensors, model.safetensors.index.json
      Written by huggingface_hub.save_torch_state_dict(max_shard_size=...), the
      function transformers' save_pretrained uses.
  safetensors/sharded.expected.json
      Per tensor: dtype, shape, shard file, and sum of the values as float64
      (torch), as loaded back through safetensors.safe_open.
  gguf/blocks.gguf
      Written by gguf-py's GGUFWriter (llama.cpp's Python package): F32, F16,
      BF16, Q8_0, Q4_0, Q4_1 (quantized by gguf.quants.quantize), Q4_K, Q5_K, Q6_K
      (random raw blocks with finite f16 super-block scales), a 3-D and a 1-D F32
      tensor; metadata of every GGUF value type incl. arrays and nested arrays;
      general.alignment = 64.
  gguf/blocks.expected.safetensors
      For every tensor in blocks.gguf, an F32 tensor of the same name holding the
      values that gguf-py dequantizes (GGUFReader + gguf.quants.dequantize), in
      PyTorch order (shape = GGUF dims reversed).
  gguf/blocks.expected.json
      Header facts as parsed by GGUFReader: version, alignment, data section
      start, tensor infos, and the full metadata with value-type ids.
  gguf/blocks_v2.gguf
      blocks.gguf with the u32 version field (bytes 4..7) patched to 2; v2 has the
      same layout as v3, and GGUFReader reads it back identically (checked here).

Run from the repository root:
    .venv/bin/python tools/reference/make_io_fixtures.py
The outputs are deterministic (fixed seeds; no timestamps are written).
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import struct
import sys
from pathlib import Path

import gguf
import huggingface_hub
import ml_dtypes
import numpy as np
import safetensors
import torch
from gguf import GGMLQuantizationType as QT
from gguf import GGUFValueType as VT
from safetensors import safe_open
from safetensors.torch import save_file

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "data" / "io"


def versions() -> dict[str, str]:
    return {
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "numpy": np.__version__,
        "safetensors": safetensors.__version__,
        "huggingface_hub": huggingface_hub.__version__,
        "gguf": _pkg_version("gguf"),
        "ml_dtypes": ml_dtypes.__version__,
    }


def _pkg_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def write_json(path: Path, obj) -> None:
    # allow_nan=False: any NaN/inf that slipped through the encoders below is a bug.
    path.write_text(json.dumps(obj, indent=1, allow_nan=False, ensure_ascii=False) + "\n", encoding="utf-8")


def json_float(x: float):
    """NaN and infinities as strings, everything else as a JSON number (exact double repr)."""
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return x


def safetensors_header(path: Path) -> tuple[int, dict]:
    """Plain read of the file's own header (length prefix + JSON), no interpretation."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return n, json.loads(f.read(n))


# ---------------------------------------------------------------------------
# a. safetensors: one tensor per dtype
# ---------------------------------------------------------------------------

def all_codes(dtype: torch.dtype) -> torch.Tensor:
    """All 256 byte codes 0x00..0xFF reinterpreted as an 8-bit dtype, shape [16,16]."""
    return torch.arange(256, dtype=torch.uint8).view(dtype).reshape(16, 16)


def build_all_dtypes_tensors() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(1234)
    inf, nan = float("inf"), float("nan")
    t: dict[str, torch.Tensor] = {}
    # F32: random 2-D, specials 1-D (subnormal, -0, inf, nan, max), scalar, empty.
    t["f32_2d"] = torch.randn(3, 5, generator=g, dtype=torch.float32)
    t["f32_special"] = torch.tensor(
        [0.0, -0.0, 1.0, -2.5, inf, -inf, nan, 1e-45, 3.4028234663852886e38, 1.17549435e-38, 0.1],
        dtype=torch.float32)
    t["f32_scalar"] = torch.tensor(3.5, dtype=torch.float32)
    t["f32_empty"] = torch.zeros(0, 4, dtype=torch.float32)
    # F16 / BF16 / F64
    t["f16_3d"] = torch.randn(2, 3, 4, generator=g).to(torch.float16)
    t["f16_special"] = torch.tensor([0.0, -0.0, 65504.0, -65504.0, 6e-8, 6.1035e-05, inf, -inf, nan],
                                    dtype=torch.float16)
    t["bf16_2d"] = torch.randn(4, 7, generator=g).to(torch.bfloat16)
    t["bf16_special"] = torch.tensor([0.0, -0.0, 1e-40, 3.3895e38, inf, -inf, nan], dtype=torch.bfloat16)
    t["f64_1d"] = torch.tensor([math.pi, -math.e, 1e-310, 1e300, -0.0], dtype=torch.float64)
    # 8-bit floats: every code.
    t["f8_e4m3_all"] = all_codes(torch.float8_e4m3fn)
    t["f8_e5m2_all"] = all_codes(torch.float8_e5m2)
    if hasattr(torch, "float8_e8m0fnu"):
        t["f8_e8m0_all"] = all_codes(torch.float8_e8m0fnu)
    # Packed FP4: 2 rows x 8 bytes = 2 x 16 logical elements; row 0 = bytes 0x10*k + k... all nibbles.
    if hasattr(torch, "float4_e2m1fn_x2"):
        packed = torch.tensor([[0x10, 0x32, 0x54, 0x76, 0x98, 0xBA, 0xDC, 0xFE],
                               [0x0F, 0x1E, 0x2D, 0x3C, 0x4B, 0x5A, 0x69, 0x78]], dtype=torch.uint8)
        t["f4_2d"] = packed.view(torch.float4_e2m1fn_x2)
    # Integers and bool (odd sizes, extremes).
    t["u8_1d"] = torch.randint(0, 256, (17,), generator=g, dtype=torch.int64).to(torch.uint8)
    t["i8_2d"] = torch.tensor([[-128, -1, 0], [1, 127, 42], [-77, 5, 99]], dtype=torch.int8)
    t["i16_1d"] = torch.tensor([-32768, -1, 0, 1, 32767], dtype=torch.int16)
    t["u16_1d"] = torch.tensor([0, 1, 40000, 65535], dtype=torch.int32).to(torch.uint16)
    t["i32_2d"] = torch.tensor([[-2147483648, -1, 0], [1, 2147483647, 123456]], dtype=torch.int32)
    t["i32_empty"] = torch.zeros(3, 0, 2, dtype=torch.int32)
    t["u32_1d"] = torch.tensor([0, 1, 3000000000, 4294967295], dtype=torch.int64).to(torch.uint32)
    t["i64_1d"] = torch.tensor([-(2**63), -1, 0, 2**53 + 1, 2**63 - 1], dtype=torch.int64)
    t["u64_1d"] = torch.tensor([0, 1, 2**62, -1], dtype=torch.int64).view(torch.uint64)  # -1 -> 2^64-1
    t["bool_1d"] = torch.tensor([True, False, False, True, True], dtype=torch.bool)
    return t


def f4_values(packed: torch.Tensor) -> list:
    """Decode packed E2M1 with ml_dtypes (torch has no conversion for float4_e2m1fn_x2).

    Element 2i is the LOW nibble of byte i, element 2i+1 the HIGH nibble
    (torch/safetensors/compressed-tensors convention)."""
    b = packed.view(torch.uint8).flatten().numpy()
    nib = np.empty(b.size * 2, dtype=np.uint8)
    nib[0::2] = b & 0x0F
    nib[1::2] = b >> 4
    return [json_float(float(v)) for v in nib.view(ml_dtypes.float4_e2m1fn).astype(np.float64)]


def tensor_values(t: torch.Tensor) -> list:
    if t.dtype == torch.bool or not (t.dtype.is_floating_point):
        return t.flatten().tolist()  # ints (exact, incl. u64) and bools
    return [json_float(v) for v in t.to(torch.float64).flatten().tolist()]


def save_file_reproducibly(tensors: dict[str, torch.Tensor], path: Path, metadata: dict[str, str]) -> None:
    """safetensors.torch.save_file, retried until __metadata__ comes out in sorted key order.

    The Rust serializer keeps __metadata__ in a randomly seeded HashMap, so the key
    order in the header changes from call to call. Retrying (1 in n! chance per try)
    keeps the committed file byte-for-byte reproducible."""
    for _ in range(2000):
        save_file(tensors, str(path), metadata=metadata)
        if list(safetensors_header(path)[1].get("__metadata__", {})) == sorted(metadata):
            return
    raise RuntimeError("could not get a sorted __metadata__ order")


def raw_bytes(t: torch.Tensor) -> bytes:
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()


def make_all_dtypes(out_dir: Path) -> None:
    tensors = build_all_dtypes_tensors()
    metadata = {"empty": "", "format": "pt", "json_in_string": '{"a": [1, 2]}', "note": "unicode: héllo ✓"}
    path = out_dir / "all_dtypes.safetensors"
    save_file_reproducibly(tensors, path, metadata)
    header_len, header = safetensors_header(path)
    # Read back through the library: same names, dtypes, shapes and bytes.
    with safe_open(str(path), framework="pt") as f:
        assert f.metadata() == metadata
        assert sorted(f.keys()) == sorted(tensors)
        for name in f.keys():
            back = f.get_tensor(name)
            assert back.dtype == tensors[name].dtype and back.shape == tensors[name].shape, name
            assert raw_bytes(back) == raw_bytes(tensors[name]), name

    expected_tensors = {}
    for name, t in tensors.items():
        h = header[name]
        raw = raw_bytes(t)
        entry = {
            "dtype": h["dtype"],
            "shape": h["shape"],
            "data_offsets": h["data_offsets"],
            "torch_dtype": str(t.dtype).removeprefix("torch."),
            "raw_hex": raw.hex(),
        }
        if t.dtype == getattr(torch, "float4_e2m1fn_x2", None):
            entry["values"] = f4_values(t)
            entry["values_oracle"] = ("ml_dtypes.float4_e2m1fn; element 2i = low nibble of byte i, "
                                      "2i+1 = high nibble")
        else:
            entry["values"] = tensor_values(t)
            entry["values_oracle"] = "torch .to(float64).flatten().tolist()" if t.dtype.is_floating_point \
                else "torch .flatten().tolist()"
        assert len(entry["values"]) == math.prod(h["shape"]), name
        expected_tensors[name] = entry

    write_json(out_dir / "all_dtypes.expected.json", {
        "file": "all_dtypes.safetensors",
        "oracle": "written by safetensors.torch.save_file; values decoded by torch (F4: ml_dtypes)",
        "versions": versions(),
        "header_len": header_len,
        "metadata": header.get("__metadata__", {}),
        "tensors": expected_tensors,
    })


# ---------------------------------------------------------------------------
# b. sharded safetensors checkpoint (huggingface_hub)
# ---------------------------------------------------------------------------

def build_tiny_llama_state_dict() -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(42)
    vocab, hidden, inter, n_kv_dim, layers = 32, 8, 16, 4, 2

    def w(*shape, dtype=torch.float32):
        return (torch.randn(*shape, generator=g) * 0.5).to(dtype)

    sd = {"model.embed_tokens.weight": w(vocab, hidden)}
    for i in range(layers):
        p = f"model.layers.{i}."
        sd[p + "input_layernorm.weight"] = 1.0 + w(hidden) * 0.1
        sd[p + "self_attn.q_proj.weight"] = w(hidden, hidden)
        sd[p + "self_attn.k_proj.weight"] = w(n_kv_dim, hidden)
        sd[p + "self_attn.v_proj.weight"] = w(n_kv_dim, hidden)
        sd[p + "self_attn.o_proj.weight"] = w(hidden, hidden)
        sd[p + "post_attention_layernorm.weight"] = 1.0 + w(hidden) * 0.1
        sd[p + "mlp.gate_proj.weight"] = w(inter, hidden, dtype=torch.bfloat16)
        sd[p + "mlp.up_proj.weight"] = w(inter, hidden, dtype=torch.bfloat16)
        sd[p + "mlp.down_proj.weight"] = w(hidden, inter, dtype=torch.float16)
    sd["model.norm.weight"] = 1.0 + w(hidden) * 0.1
    sd["lm_head.weight"] = w(vocab, hidden, dtype=torch.bfloat16)
    return sd


def make_sharded(out_dir: Path) -> None:
    shard_dir = out_dir / "sharded"
    if shard_dir.exists():
        shutil.rmtree(shard_dir)
    shard_dir.mkdir()
    sd = build_tiny_llama_state_dict()
    huggingface_hub.save_torch_state_dict(sd, shard_dir, max_shard_size=2500)

    index = json.loads((shard_dir / "model.safetensors.index.json").read_text())
    weight_map = index["weight_map"]
    assert sorted(weight_map) == sorted(sd)
    shard_files = sorted(set(weight_map.values()))
    assert 2 <= len(shard_files) <= 3, shard_files

    expected = {}
    total = 0
    for shard in shard_files:
        _, header = safetensors_header(shard_dir / shard)
        with safe_open(str(shard_dir / shard), framework="pt") as f:
            for name in f.keys():
                assert weight_map[name] == shard, name
                t = f.get_tensor(name)
                assert torch.equal(t, sd[name]), name
                total += t.numel() * t.element_size()
                expected[name] = {
                    "dtype": header[name]["dtype"],
                    "shape": list(t.shape),
                    "file": shard,
                    "sum": t.to(torch.float64).sum().item(),
                }
    assert total == index["metadata"]["total_size"]
    write_json(out_dir / "sharded.expected.json", {
        "directory": "sharded",
        "index_file": "model.safetensors.index.json",
        "oracle": "written by huggingface_hub.save_torch_state_dict(max_shard_size=2500); "
                  "read back with safetensors.safe_open; sums by torch in float64",
        "versions": versions(),
        "shard_files": shard_files,
        "total_size": index["metadata"]["total_size"],
        "tensors": dict(sorted(expected.items())),
    })


# ---------------------------------------------------------------------------
# c/d/e. GGUF
# ---------------------------------------------------------------------------

GGUF_ALIGNMENT = 64
NE0, NE1 = 512, 3


def random_kquant_rows(rng: np.random.Generator, qtype: QT) -> np.ndarray:
    """Random raw K-quant blocks for a [NE1, NE0] tensor, as uint8 [NE1, bytes_per_row].

    Quant/scale bytes are random; the f16 super-block scale fields (d, and dmin
    where present) are set to small positive halves so every value is finite."""
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = NE1 * NE0 // block_size
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    d = rng.uniform(0.002, 0.05, size=n_blocks).astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
    dmin = rng.uniform(0.001, 0.02, size=n_blocks).astype(np.float16).view(np.uint8).reshape(n_blocks, 2)
    if qtype in (QT.Q4_K, QT.Q5_K):      # f16 d at bytes 0..1, f16 dmin at 2..3
        blocks[:, 0:2] = d
        blocks[:, 2:4] = dmin
    elif qtype == QT.Q6_K:               # ql[128] qh[64] scales[16] f16 d (bytes 208..209)
        blocks[:, type_size - 2:] = d
    else:
        raise ValueError(qtype)
    return blocks.reshape(NE1, (NE0 // block_size) * type_size)


# (key, value type, value, array element type or None)
def gguf_metadata_items() -> list[tuple[str, VT, object, VT | None]]:
    return [
        ("test.u8", VT.UINT8, 200, None),
        ("test.i8", VT.INT8, -100, None),
        ("test.u16", VT.UINT16, 60000, None),
        ("test.i16", VT.INT16, -30000, None),
        ("test.u32", VT.UINT32, 4000000000, None),
        ("test.i32", VT.INT32, -2000000000, None),
        ("test.f32", VT.FLOAT32, 0.1, None),           # stored as the f32 nearest 0.1
        ("test.bool", VT.BOOL, True, None),
        ("test.bool_false", VT.BOOL, False, None),
        ("test.string", VT.STRING, "héllo, gguf ✓", None),
        ("test.string_empty", VT.STRING, "", None),
        ("test.u64", VT.UINT64, 2**63 + 5, None),
        ("test.i64", VT.INT64, -(2**62) - 3, None),
        ("test.f64", VT.FLOAT64, math.pi, None),
        ("test.arr.u8", VT.ARRAY, [0, 7, 255], VT.UINT8),
        ("test.arr.i8", VT.ARRAY, [-128, 0, 127], VT.INT8),
        ("test.arr.u16", VT.ARRAY, [0, 65535], VT.UINT16),
        ("test.arr.i16", VT.ARRAY, [-32768, 1, 32767], VT.INT16),
        ("test.arr.u32", VT.ARRAY, [1, 4294967295], VT.UINT32),
        ("test.arr.i32", VT.ARRAY, [-2147483648, -1, 2147483647], VT.INT32),
        ("test.arr.f32", VT.ARRAY, [0.5, -1.25, 1e-3], VT.FLOAT32),
        ("test.arr.bool", VT.ARRAY, [True, False, True], VT.BOOL),
        ("test.arr.u64", VT.ARRAY, [0, 2**64 - 1], VT.UINT64),
        ("test.arr.i64", VT.ARRAY, [-(2**63), 2**63 - 1], VT.INT64),
        ("test.arr.f64", VT.ARRAY, [1.0 / 3.0, -1e300], VT.FLOAT64),
        ("test.arr.string", VT.ARRAY, ["a", "", "ünï", "tokens with spaces"], VT.STRING),
        # Nested arrays: the writer infers the inner element type (Python int -> INT32, str -> STRING).
        ("test.arr.nested_i32", VT.ARRAY, [[1, 2, 3], [4], [-5, 6]], VT.ARRAY),
        ("test.arr.nested_string", VT.ARRAY, [["x", "yy"], ["zzz"]], VT.ARRAY),
    ]


def build_gguf_tensors() -> list[tuple[str, np.ndarray, QT]]:
    """(name, array to hand to GGUFWriter, ggml type). Arrays are in PyTorch order."""
    rng = np.random.default_rng(20240607)
    tensors = []

    def normal(*shape):
        return rng.standard_normal(shape).astype(np.float32)

    tensors.append(("f32", normal(NE1, NE0), QT.F32))
    tensors.append(("f16", normal(NE1, NE0).astype(np.float16), QT.F16))
    for name, qt in [("bf16", QT.BF16), ("q8_0", QT.Q8_0), ("q4_0", QT.Q4_0), ("q4_1", QT.Q4_1)]:
        tensors.append((name, gguf.quants.quantize(normal(NE1, NE0), qt), qt))
    for name, qt in [("q4_k", QT.Q4_K), ("q5_k", QT.Q5_K), ("q6_k", QT.Q6_K)]:
        tensors.append((name, random_kquant_rows(rng, qt), qt))
    tensors.append(("f32_3d", normal(2, 3, 5), QT.F32))   # GGUF dims [5, 3, 2]
    tensors.append(("f32_1d", normal(7), QT.F32))         # 28 bytes: next tensor needs padding
    return tensors


def write_blocks_gguf(path: Path) -> None:
    w = gguf.GGUFWriter(str(path), arch="llama")   # writes general.architecture
    w.add_custom_alignment(GGUF_ALIGNMENT)            # writes general.alignment (u32)
    w.add_name("tessera io fixture")
    w.add_quantization_version(gguf.GGML_QUANT_VERSION)
    for key, vtype, value, sub_type in gguf_metadata_items():
        w.add_key_value(key, value, vtype, sub_type=sub_type)
    for name, arr, qt in build_gguf_tensors():
        if qt in (QT.F32, QT.F16):
            w.add_tensor(name, arr)
        else:
            w.add_tensor(name, arr, raw_dtype=qt)     # uint8 byte shape -> element shape
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def reader_value(field, part_index: int, vtype: VT):
    """Python value of one non-array item whose data starts at field.parts[part_index]."""
    if vtype == VT.STRING:
        return field.parts[part_index + 1].tobytes().decode("utf-8")  # parts: [len, bytes]
    v = field.parts[part_index][0]
    if vtype == VT.BOOL:
        return bool(v)
    if vtype in (VT.FLOAT32, VT.FLOAT64):
        return json_float(float(v))
    return int(v)


def reader_array(field, start: int) -> tuple[dict, int]:
    """Walk GGUFReader's flat parts for an array starting at field.parts[start]
    (parts: elem_type, count, then elements). Returns (json, next part index)."""
    etype = VT(int(field.parts[start][0]))
    count = int(field.parts[start + 1][0])
    i = start + 2
    values, inner_types = [], []
    for _ in range(count):
        if etype == VT.ARRAY:
            sub, i = reader_array(field, i)
            values.append(sub["value"])
            inner_types.append(sub["element_type"])
        else:
            values.append(reader_value(field, i, etype))
            i += 2 if etype == VT.STRING else 1
    out = {"type": int(VT.ARRAY), "element_type": int(etype), "value": values}
    if etype == VT.ARRAY:
        out["inner_element_types"] = inner_types
    return out, i


def reader_metadata(reader: gguf.GGUFReader) -> tuple[list[str], dict]:
    keys, meta = [], {}
    for name, field in reader.fields.items():
        if name.startswith("GGUF."):      # header pseudo-fields the reader adds
            continue
        vtype = field.types[0]
        # field.parts[0..2] are key length, key bytes, value type.
        if vtype == VT.ARRAY:
            entry, end = reader_array(field, 3)
            assert end == len(field.parts)
        else:
            entry = {"type": int(vtype), "value": reader_value(field, 3, vtype)}
        keys.append(name)
        meta[name] = entry
    return keys, meta


def expected_meta_value(vtype: VT, value, sub_type):
    """What we asked the writer to store, in the JSON form used by reader_metadata."""
    if vtype == VT.FLOAT32:
        return float(np.float32(value))
    if vtype == VT.ARRAY:
        if sub_type == VT.FLOAT32:
            return [float(np.float32(v)) for v in value]
        return value
    return value


def make_gguf(out_dir: Path) -> None:
    path = out_dir / "blocks.gguf"
    write_blocks_gguf(path)
    written = {name: (arr, qt) for name, arr, qt in build_gguf_tensors()}

    reader = gguf.GGUFReader(str(path))
    version = int(reader.fields["GGUF.version"].parts[0][0])
    keys, meta = reader_metadata(reader)

    # Cross-check the reader's view of the metadata against what we wrote.
    for key, vtype, value, sub_type in gguf_metadata_items():
        assert meta[key]["type"] == int(vtype), key
        if sub_type is not None:
            assert meta[key]["element_type"] == int(sub_type), key
        assert meta[key]["value"] == expected_meta_value(vtype, value, sub_type), (key, meta[key])
    assert meta["general.alignment"] == {"type": int(VT.UINT32), "value": GGUF_ALIGNMENT}
    assert reader.alignment == GGUF_ALIGNMENT

    expected_tensors, dequant = [], {}
    for t in reader.tensors:
        arr, qt = written[t.name]
        assert t.tensor_type == qt, t.name
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        torch_shape = [int(d) for d in reversed(t.shape.tolist())]
        values = values.reshape(torch_shape)
        if qt in (QT.F32, QT.F16):
            assert np.array_equal(values, arr.astype(np.float32)), t.name
        else:
            assert np.array_equal(np.asarray(t.data).view(np.uint8).reshape(-1), arr.reshape(-1)), t.name
        assert np.all(np.isfinite(values)), t.name
        rel = t.data_offset - reader.data_offset
        assert rel % GGUF_ALIGNMENT == 0, t.name
        dequant[t.name] = torch.from_numpy(np.ascontiguousarray(values))
        block_size, type_size = gguf.GGML_QUANT_SIZES[qt]
        expected_tensors.append({
            "name": t.name,
            "type_name": qt.name,
            "type_id": int(qt),
            "dims": [int(d) for d in t.shape.tolist()],           # GGUF order, ne0 first
            "torch_shape": torch_shape,                            # dims reversed
            "n_elements": int(t.n_elements),
            "n_bytes": int(t.n_bytes),
            "block_size": block_size,
            "type_size": type_size,
            "offset": int(rel),                                    # as stored in tensor info
            "file_offset": int(t.data_offset),                     # data_start + offset
        })

    save_file_reproducibly(dequant, out_dir / "blocks.expected.safetensors",
                           {"oracle": "gguf-py GGUFReader + gguf.quants.dequantize", "source": "blocks.gguf"})

    # e. v2 variant: patch the u32 version at byte 4.
    v2 = bytearray(path.read_bytes())
    assert v2[0:4] == b"GGUF" and struct.unpack_from("<I", v2, 4)[0] == 3
    struct.pack_into("<I", v2, 4, 2)
    v2_path = out_dir / "blocks_v2.gguf"
    v2_path.write_bytes(bytes(v2))
    r2 = gguf.GGUFReader(str(v2_path))
    assert int(r2.fields["GGUF.version"].parts[0][0]) == 2
    assert reader_metadata(r2) == (keys, meta)
    for a, b in zip(reader.tensors, r2.tensors):
        assert a.name == b.name and a.data_offset == b.data_offset
        assert np.array_equal(np.asarray(a.data), np.asarray(b.data))

    write_json(out_dir / "blocks.expected.json", {
        "file": "blocks.gguf",
        "oracle": "written by gguf-py GGUFWriter; parsed by gguf-py GGUFReader; "
                  "dequantized values in blocks.expected.safetensors",
        "versions": versions(),
        "version": version,
        "alignment": int(reader.alignment),
        "data_start": int(reader.data_offset),
        "file_size": path.stat().st_size,
        "tensor_count": len(reader.tensors),
        "kv_count": len(keys),
        "tensors": expected_tensors,
        "metadata_keys": keys,
        "metadata": meta,
        "variants": {
            "blocks_v2.gguf": {
                "version": 2,
                "note": "byte-identical to blocks.gguf except the u32 version at bytes 4..7 (= 2); "
                        "v2 uses the v3 layout, so every other expectation here applies unchanged",
                "sha256": hashlib.sha256(v2).hexdigest(),
            },
        },
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
    })


def main() -> None:
    st_dir = OUT / "safetensors"
    gguf_dir = OUT / "gguf"
    st_dir.mkdir(parents=True, exist_ok=True)
    gguf_dir.mkdir(parents=True, exist_ok=True)
    make_all_dtypes(st_dir)
    make_sharded(st_dir)
    make_gguf(gguf_dir)
    for p in sorted(OUT.rglob("*")):
        if p.is_file():
            print(f"{p.stat().st_size:8d}  {p.relative_to(REPO)}")


if __name__ == "__main__":
    main()
