import type { GraphBuilder, Tensor } from "@minfer/ir";

/** The weights of a feed-forward block: down(act(gate·x) ⊙ up·x), or down(act(up·x)) without a gate. */
export interface FfnWeights {
  readonly gate?: Tensor;
  readonly up: Tensor;
  readonly down: Tensor;
  /** Biases added after each product, where the architecture has them. */
  readonly gateBias?: Tensor;
  readonly upBias?: Tensor;
  readonly downBias?: Tensor;
}

/**
 * The activation: SiLU (SwiGLU with a gate), GELU with the tanh approximation (GeGLU with a gate),
 * or the exact GELU of erf (`gelu_erf`: transformers' "gelu", BERT's; gated, gelu_erf(gate) · up).
 */
export type FfnActivation = "silu" | "gelu" | "gelu_erf";

/** A feed-forward block, F32 [nEmbd, nTokens] → same; intermediates `ffn_gate`, `ffn_up`, `ffn_act`, `ffn_out`. */
export function buildFfn(b: GraphBuilder, x: Tensor, w: FfnWeights, act: FfnActivation, il: number): Tensor {
  const product = (wt: Tensor, bias: Tensor | undefined, name: string, input: Tensor) => {
    const y = b.name(b.mulMat(wt, input), name, il);
    return bias ? b.name(b.add(y, bias), `${name}_b`, il) : y;
  };
  // The gate's product first: the fused pair (MUL_MAT_MULTI) then lists gate before up.
  const g = w.gate ? product(w.gate, w.gateBias, "ffn_gate", x) : undefined;
  const u = product(w.up, w.upBias, "ffn_up", x);
  let h: Tensor;
  if (act === "gelu_erf") h = g ? b.mul(b.name(b.geluErf(g), "ffn_gelu", il), u) : b.geluErf(u);
  else if (g) h = act === "silu" ? b.swiglu(g, u) : b.geglu(g, u);
  else h = act === "silu" ? b.silu(u) : b.gelu(u);
  b.name(h, w.gate ? (act === "silu" ? "ffn_swiglu" : "ffn_geglu") : "ffn_act", il);
  return product(w.down, w.downBias, "ffn_out", h);
}
