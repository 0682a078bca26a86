import { DType } from "@minfer/ir";
import { at, type Dense, dense, index } from "./dense.js";

/**
 * Fused attention for each query i and head h (kv head h / (nHead / nKvHead), GQA):
 * s_j = q·k_j · scale; with softcap > 0, s_j = softcap · tanh(s_j / softcap); s_j += mask[j, i]
 * (mask form), or only cells j in [start_i, end_i) take part (spans form); out = Σ softmax(s)_j v_j.
 * The softmax reduces over the query's own visible cells only. A query that sees no cell gets 0.
 */
export function attention(
  q: Dense,
  k: Dense,
  v: Dense,
  maskOrSpans: Dense,
  maskDtype: DType,
  scale: number,
  softcap: number,
): Dense {
  const [hd, nHead, nQ] = q.ne;
  const nKvHead = k.ne[1];
  const nKv = k.ne[2];
  const hdv = v.ne[0];
  const group = nHead / nKvHead;
  const spans = maskDtype === DType.I32;
  const out = dense([hdv, nHead, nQ, 1]);
  const s = new Float64Array(nKv);
  for (let i = 0; i < nQ; i++) {
    let lo = 0;
    let hi = nKv;
    if (spans) {
      lo = maskOrSpans.data[at(maskOrSpans.ne, 0, i, 0, 0)]!;
      hi = maskOrSpans.data[at(maskOrSpans.ne, 1, i, 0, 0)]!;
      if (hi > lo) {
        index(lo, nKv, `attention span start of query ${i}`);
        index(hi - 1, nKv, `attention span end − 1 of query ${i}`);
      }
    }
    for (let h = 0; h < nHead; h++) {
      const kh = Math.floor(h / group);
      const qs = at(q.ne, 0, h, i, 0);
      let max = Number.NEGATIVE_INFINITY;
      for (let j = lo; j < hi; j++) {
        const ks = at(k.ne, 0, kh, j, 0);
        let dot = 0;
        for (let d = 0; d < hd; d++) dot += q.data[qs + d]! * k.data[ks + d]!;
        let x = dot * scale;
        if (softcap > 0) x = softcap * Math.tanh(x / softcap);
        if (!spans) x += maskOrSpans.data[at(maskOrSpans.ne, j, i, 0, 0)]!;
        s[j] = x;
        if (x > max) max = x;
      }
      const os = at(out.ne, 0, h, i, 0);
      if (max === Number.NEGATIVE_INFINITY) continue;
      let sum = 0;
      for (let j = lo; j < hi; j++) {
        const w = Math.exp(s[j]! - max);
        sum += w;
        const vs = at(v.ne, 0, kh, j, 0);
        for (let d = 0; d < hdv; d++) out.data[os + d]! += w * v.data[vs + d]!;
      }
      for (let d = 0; d < hdv; d++) out.data[os + d]! /= sum;
    }
  }
  return out;
}
