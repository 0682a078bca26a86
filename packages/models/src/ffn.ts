import type { GraphBuilder, Tensor } from "@minfer/ir";

/** The weights of a feed-forward block: down(act(gate·x) ⊙ up·x), or down(act(up·x)) without a gate. */
export interface FfnWeights {
  readonly gate?: Tensor;
  readonly up: Tensor;
  readonly down: Tensor;
}

/** The activation: SiLU (SwiGLU with a gate) or GELU with the tanh approximation (GeGLU with a gate). */
export type FfnActivation = "silu" | "gelu";

/** A feed-forward block, F32 [nEmbd, nTokens] → same; intermediates `ffn_gate`, `ffn_up`, `ffn_act`, `ffn_out`. */
export function buildFfn(b: GraphBuilder, x: Tensor, w: FfnWeights, act: FfnActivation, il: number): Tensor {
  const u = b.name(b.mulMat(w.up, x), "ffn_up", il);
  let h: Tensor;
  if (w.gate) {
    const g = b.name(b.mulMat(w.gate, x), "ffn_gate", il);
    h = act === "silu" ? b.swiglu(g, u) : b.geglu(g, u);
  } else h = act === "silu" ? b.silu(u) : b.gelu(u);
  b.name(h, w.gate ? (act === "silu" ? "ffn_swiglu" : "ffn_geglu") : "ffn_act", il);
  return b.name(b.mulMat(w.down, h), "ffn_out", il);
}
