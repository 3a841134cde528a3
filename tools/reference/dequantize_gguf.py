#!/usr/bin/env python3
"""Writes a copy of a GGUF model with every quantized tensor replaced by F32 values that gguf-py
dequantizes (gguf.quants.dequantize: its own numpy port of ggml-quants.c), metadata and F32 / F16
/ BF16 tensors copied as they are.

An end-to-end oracle for a quantized format: the same model run from the copy (plain F32 weights,
no quantized kernel involved) and from the original must agree to f32 rounding with exact
activations. Used by hand on TinyLlama-shape files llama-quantize made (bench/README.md,
twenty-sixth session), e.g.

    /tmp/lowk/bin/python tools/reference/dequantize_gguf.py /tmp/synth/tl-IQ2_XXS.gguf \\
        /tmp/synth/tl-IQ2_XXS-as-f32.gguf
    build/fast/cli/tessera perplexity --model /tmp/synth/tl-IQ2_XXS.gguf --file T \\
        --cpu_int8_activations=false      # and the same with the -as-f32 copy

Needs only gguf and numpy (pins as make_low_kquant_fixtures.py).
"""

from __future__ import annotations

import sys

import gguf
import numpy as np

KEEP = {gguf.GGMLQuantizationType.F32, gguf.GGMLQuantizationType.F16,
        gguf.GGMLQuantizationType.BF16}


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    reader = gguf.GGUFReader(sys.argv[1])
    arch = reader.fields[gguf.Keys.General.ARCHITECTURE].contents()
    writer = gguf.GGUFWriter(sys.argv[2], arch=arch)
    for field in reader.fields.values():
        if field.name == gguf.Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        vtype = field.types[0]
        sub = field.types[-1] if vtype == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), vtype, sub_type=sub)

    def values(t):
        if t.tensor_type in KEEP:
            return t.data
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))
        return gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32).reshape(shape)

    for t in reader.tensors:
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))
        if t.tensor_type in KEEP:
            writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes,
                                   raw_dtype=t.tensor_type)
        else:
            n = int(np.prod(shape))
            writer.add_tensor_info(t.name, shape, np.dtype(np.float32), 4 * n)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in reader.tensors:
        writer.write_tensor_data(np.ascontiguousarray(values(t)))
    writer.close()
    print(f"wrote {sys.argv[2]}: {len(reader.tensors)} tensors")
    return 0


if __name__ == "__main__":
    sys.exit(main())
