import { DType, type Graph, GraphBuilder } from "@minfer/ir";

/** x [64, nTokens] → mul_mat(w1) → silu → mul_mat(w2) → out [16, nTokens]. */
export function mlpGraph(nTokens = 3): Graph {
  const b = new GraphBuilder();
  const x = b.input("x", DType.F32, [64, nTokens]);
  const h = b.mulMat(b.weight("w1", DType.Q8_0, [64, 32]), x, "up");
  const a = b.silu(h, "act");
  b.output(b.mulMat(b.weight("w2", DType.F16, [32, 16]), a, "down"));
  return b.build();
}

/** A chain of `n` unary ops over F32 [len]: every intermediate dies after the next op. */
export function chainGraph(n: number, len = 1024): Graph {
  const b = new GraphBuilder();
  let t = b.input("x", DType.F32, [len]);
  for (let i = 0; i < n; i++) t = i % 2 ? b.silu(t, `silu-${i}`) : b.scale(t, 0.5, 0, `scale-${i}`);
  b.output(t);
  return b.build();
}

/**
 * One decode step of a single attention layer with a KV cache in state: q/k/v from x, k and v
 * rows written into the cache at `cells`, attention over the window with spans.
 */
export function decodeGraph(nTokens: number, window: number): Graph {
  const b = new GraphBuilder();
  const hd = 32;
  const x = b.input("x", DType.F32, [hd, nTokens]);
  const cells = b.input("cells", DType.I32, [nTokens]);
  const spans = b.input("spans", DType.I32, [2, nTokens]);
  const kCache = b.state("cache_k", DType.F16, [hd, 64]);
  const vCache = b.state("cache_v", DType.F16, [hd, 64]);
  const q = b.mulMat(b.weight("wq", DType.F32, [hd, hd]), x, "q");
  const k = b.mulMat(b.weight("wk", DType.F32, [hd, hd]), x, "k");
  const v = b.mulMat(b.weight("wv", DType.F32, [hd, hd]), x, "v");
  b.setRows(kCache, k, cells, "k_store");
  b.setRows(vCache, v, cells, "v_store");
  const kw = b.view(kCache, [hd, 1, window], [2, 2 * hd, 2 * hd], 0, "k_window");
  const vw = b.view(vCache, [hd, 1, window], [2, 2 * hd, 2 * hd], 0, "v_window");
  const q3 = b.reshape(q, [hd, 1, nTokens]);
  const o = b.attention(q3, kw, vw, spans, { scale: 1 / Math.sqrt(hd) }, "attn");
  b.output(b.mulMat(b.weight("wo", DType.F32, [hd, hd]), b.reshape(o, [hd, nTokens]), "out"));
  return b.build();
}
