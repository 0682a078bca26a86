/** Mutations of the tensor table: shapes, types, names, presence, order and contents. */
import { int, pick } from "./prng.mjs";

const GGML_TYPES = [0, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 20, 24, 26, 28, 30, 31, 39, 1000];

/** The tensor table: shapes, types, names, presence, order and contents. */
export function mutateTensor(d, r) {
  const i = int(r, d.tensors.length);
  const t = d.tensors[i];
  const op = int(r, 8);
  if (op <= 1) {
    const k = int(r, t.dims.length + 1);
    const dims = t.dims.slice();
    const roll = r();
    let what;
    if (roll < 0.15 && dims.length < 4) {
      dims.splice(k, 0, pick(r, [1, 2]));
      what = "adds a dim";
    } else if (roll < 0.3 && dims.length > 1) {
      dims.splice(Math.min(k, dims.length - 1), 1);
      what = "drops a dim";
    } else if (roll < 0.4 && dims.length > 1) {
      dims.reverse();
      what = "reverses its dims";
    } else {
      const j = Math.min(k, dims.length - 1);
      dims[j] = pick(r, [
        0,
        1,
        dims[j] * 2,
        dims[j] + 1,
        dims[j] - 1,
        dims[j] + 32,
        2 ** 31,
        2 ** 32 - 1,
        2 ** 40,
      ]);
      what = `dim ${j} := ${dims[j]}`;
    }
    t.dims = dims;
    return `tensor ${t.name} ${what} -> [${dims.join(", ")}]`;
  }
  if (op === 2) {
    t.type = pick(r, GGML_TYPES);
    return `tensor ${t.name} type := ${t.type}`;
  }
  if (op === 3) {
    const old = t.name;
    t.name = pick(r, [
      `blk.${pick(r, [99, 4294967296, 5, 1, 2])}.attn_norm.weight`,
      "blk.-1.attn_q.weight",
      "blk.99999999999999999999.ffn_up.weight",
      "",
      "x".repeat(300),
      d.tensors[int(r, d.tensors.length)].name,
      old.replace(/^blk\.(\d+)\./, (_, n) => `blk.${Number(n) + 1}.`),
    ]);
    return `tensor ${old} renamed ${JSON.stringify(t.name.slice(0, 40))}`;
  }
  if (op === 4) {
    d.tensors.splice(i, 1);
    return `drop tensor ${t.name}`;
  }
  if (op === 5) {
    const extra = {
      name: pick(r, ["extra.weight", `blk.${int(r, 8)}.extra.weight`, "rope_freqs.weight"]),
      type: 0,
      dims: [pick(r, [1, 4, 8, 32])],
      data: undefined,
    };
    d.tensors.splice(int(r, d.tensors.length + 1), 0, extra);
    return `add tensor ${extra.name} [${extra.dims}]`;
  }
  if (op === 6) {
    const j = int(r, d.tensors.length);
    [d.tensors[i], d.tensors[j]] = [d.tensors[j], d.tensors[i]];
    return `swap tensors ${i} and ${j}`;
  }
  // Contents: NaN / Inf / huge values (bytes of 0xff, 0x7f) in a tensor's data.
  const byte = pick(r, [0xff, 0x7f, 0x7c]);
  t.data = new Uint8Array(t.data?.length ?? 0).fill(byte);
  return `tensor ${t.name} data filled with 0x${byte.toString(16)}`;
}
