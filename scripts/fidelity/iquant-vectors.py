#!/usr/bin/env python3
# Regenerates packages/gguf/src/quant/iquant-vectors.json, the known answers that
# packages/gguf/src/quant/iquants.test.ts checks @minfer/gguf's dequantizers against, bit for bit,
# for the ggml types IQ4_NL, IQ4_XS, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M, TQ1_0,
# TQ2_0 and MXFP4.
#
# The expected values come from an implementation independent of minfer's: llama.cpp's Python
# package gguf-py (gguf/quants.py, numpy), whose decoders carry their own copies of the lookup
# grids (2-bit packed hex, not ggml-common.h's C literals). Each type gets a few blocks of
# pseudo-random bytes from a fixed seed; the fields that hold a float scale (the f16 d, IQ1_M's
# d spread over four nibbles, MXFP4's E8M0 exponent) are then overwritten with finite values
# (positive, negative, subnormal and zero d; small, large and subnormal-producing exponents), so
# every output is finite. Grid indices, signs and sub-scales stay random.
#
#   python3 scripts/fidelity/iquant-vectors.py [GGUF_PY_DIR]     (default: /tmp/lsrc/gguf-py)
#
# Needs numpy (2.x; gguf-py's arithmetic relies on its type promotion rules). GGUF_PY_DIR is the
# gguf-py folder of a llama.cpp checkout (ggml-org/llama.cpp); the output records its version and
# the SHA-256 of its quants.py. Output is deterministic for a given gguf-py.
import hashlib
import json
import re
import sys
from pathlib import Path

import numpy as np

SEED = 0x1C0DE
HERE = Path(__file__).resolve().parent
OUT = HERE.parent.parent / "packages/gguf/src/quant/iquant-vectors.json"

# Per type: where the block's float scale lives. ("f16", offset): an IEEE half d at that byte
# offset; "iq1m": d's four nibbles are the top nibbles of the u16 scales at bytes 48, 50, 52, 54;
# "e8m0": the exponent byte at offset 0.
TYPES = {
    "IQ4_NL": ("f16", 0),
    "IQ4_XS": ("f16", 0),
    "IQ2_XXS": ("f16", 0),
    "IQ2_XS": ("f16", 0),
    "IQ2_S": ("f16", 0),
    "IQ3_XXS": ("f16", 0),
    "IQ3_S": ("f16", 0),
    "IQ1_S": ("f16", 0),
    "IQ1_M": ("iq1m", 48),
    "TQ1_0": ("f16", 52),
    "TQ2_0": ("f16", 64),
    "MXFP4": ("e8m0", 0),
}


def f16_bits(x: float) -> int:
    return int(np.array([x], dtype=np.float16).view(np.uint16)[0])


def scale_plan(rng: np.random.Generator, n_blocks: int) -> list[int]:
    """f16 bits of d for each block: moderate ±, subnormal, zero, then the f16 maximum (short blocks only)."""
    moderate = lambda: float(rng.uniform(2.0**-10, 4.0))  # noqa: E731
    plan = [f16_bits(moderate()), f16_bits(-moderate()), int(rng.integers(1, 0x400)), 0x0000]
    while len(plan) < n_blocks - 1:
        plan.append(f16_bits(moderate() * (1 if len(plan) % 2 else -1)))
    plan.append(0x7BFF if n_blocks > 5 else f16_bits(moderate()))
    return plan[:n_blocks]


def e8m0_plan(rng: np.random.Generator, n_blocks: int) -> list[int]:
    """E8M0 exponents: 127 (scale 1), the two subnormal-half-scale codes 0 and 1, the largest code
    whose ±12·2^(e−128) is still finite (252), and random moderate ones."""
    plan = [127, 0, 1, 252]
    while len(plan) < n_blocks:
        plan.append(int(rng.integers(100, 150)))
    return plan


def make_blocks(rng: np.random.Generator, name: str, block_size: int, type_size: int) -> np.ndarray:
    n_blocks = 8 if block_size == 32 else 5
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    kind, at = TYPES[name]
    if kind == "e8m0":
        blocks[:, at] = e8m0_plan(rng, n_blocks)
        return blocks
    for b, d in enumerate(scale_plan(rng, n_blocks)):
        if kind == "f16":
            blocks[b, at] = d & 0xFF
            blocks[b, at + 1] = d >> 8
        else:  # iq1m: nibble k of d goes to bits 12..15 of u16 k, i.e. the high nibble of byte 2k+1
            for k in range(4):
                hi = at + 2 * k + 1
                blocks[b, hi] = (blocks[b, hi] & 0x0F) | (((d >> (4 * k)) & 0xF) << 4)
    return blocks


def main() -> None:
    gguf_py = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/lsrc/gguf-py").resolve()
    sys.path.insert(0, str(gguf_py))
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType
    import gguf.quants as q

    quants_py = gguf_py / "gguf/quants.py"
    version = re.search(r'^version = "([^"]+)"', (gguf_py / "pyproject.toml").read_text(), re.M)
    rng = np.random.default_rng(SEED)
    types = {}
    for name in TYPES:
        qtype = GGMLQuantizationType[name]
        block_size, type_size = GGML_QUANT_SIZES[qtype]
        blocks = make_blocks(rng, name, block_size, type_size)
        values = q.dequantize(blocks, qtype).astype(np.float32).reshape(len(blocks), block_size)
        if not np.isfinite(values).all():
            raise SystemExit(f"{name}: non-finite output; adjust the scale plan")
        bits = values.view(np.uint32)
        types[name] = {
            "id": int(qtype),
            "blockSize": block_size,
            "typeSize": type_size,
            "blocks": [bytes(b).hex() for b in blocks],
            # each value as the 8 hex digits of its f32 bit pattern, most significant first
            "values": ["".join(f"{int(u):08x}" for u in row) for row in bits],
        }
    # gguf-py's own copies of the lookup tables, unpacked, as SHA-256 of their values as int8/uint8
    # bytes (a grid entry's values in element order), so the test can check minfer's tables whole,
    # not only the entries the random blocks happen to index.
    def table_hash(values: np.ndarray) -> str:
        return hashlib.sha256(np.asarray(values).astype(np.int8).tobytes()).hexdigest()

    tables = {}
    for cname, cls in [
        ("iq2xxs_grid", q.IQ2_XXS),
        ("iq2xs_grid", q.IQ2_XS),
        ("iq2s_grid", q.IQ2_S),
        ("iq3xxs_grid", q.IQ3_XXS),
        ("iq3s_grid", q.IQ3_S),
        ("iq1s_grid", q.IQ1_S),
    ]:
        cls.init_grid()
        tables[cname] = table_hash(cls.grid.reshape(-1))
    tables["ksigns_iq2xs"] = hashlib.sha256(q.IQ2_XXS.ksigns).hexdigest()
    tables["kvalues_iq4nl"] = table_hash(np.array(q.IQ4_NL.kvalues))
    tables["kvalues_mxfp4"] = table_hash(np.array(q.MXFP4.kvalues))
    doc = {
        "about": "Known answers for @minfer/gguf's i-quant/ternary/MXFP4 dequantizers, computed by "
        "llama.cpp's gguf-py; regenerate with scripts/fidelity/iquant-vectors.py.",
        "ggufPy": {
            "version": version.group(1) if version else "unknown",
            "quantsPySha256": hashlib.sha256(quants_py.read_bytes()).hexdigest(),
            "numpy": np.__version__,
        },
        "seed": SEED,
        "tables": tables,
        "types": types,
    }
    OUT.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
