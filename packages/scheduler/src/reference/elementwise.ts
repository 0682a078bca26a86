import { at, type Dense, dense } from "./dense.js";
import { erfc } from "./erf.js";

/** out = a ⊕ b with b repeated over a (ggml's broadcast: b's size divides a's in every dim). */
function broadcast(a: Dense, b: Dense, f: (x: number, y: number) => number): Dense {
  const out = dense(a.ne);
  const [n0, n1, n2, n3] = a.ne;
  for (let i3 = 0; i3 < n3; i3++)
    for (let i2 = 0; i2 < n2; i2++)
      for (let i1 = 0; i1 < n1; i1++)
        for (let i0 = 0; i0 < n0; i0++) {
          const bi = at(b.ne, i0 % b.ne[0], i1 % b.ne[1], i2 % b.ne[2], i3 % b.ne[3]);
          const ai = at(a.ne, i0, i1, i2, i3);
          out.data[ai] = f(a.data[ai]!, b.data[bi]!);
        }
  return out;
}

function map(a: Dense, f: (x: number) => number): Dense {
  return dense(a.ne, a.data.map(f));
}

/** a + b, b broadcast over a. */
export const add = (a: Dense, b: Dense): Dense => broadcast(a, b, (x, y) => x + y);
/** a * b, b broadcast over a. */
export const mul = (a: Dense, b: Dense): Dense => broadcast(a, b, (x, y) => x * y);
/** a * scale + bias. */
export const scale = (a: Dense, s: number, bias: number): Dense => map(a, (x) => x * s + bias);

/** x * sigmoid(x). */
export function siluValue(x: number): number {
  return x / (1 + Math.exp(-x));
}
export const silu = (a: Dense): Dense => map(a, siluValue);

const GELU_C = Math.sqrt(2 / Math.PI);
/** gelu, tanh approximation (ggml_gelu): 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))). */
export function geluValue(x: number): number {
  return 0.5 * x * (1 + Math.tanh(GELU_C * x * (1 + 0.044715 * x * x)));
}
export const gelu = (a: Dense): Dense => map(a, geluValue);
/** tanh(a). */
export const tanh = (a: Dense): Dense => map(a, Math.tanh);

/**
 * The exact gelu, 0.5·x·(1 + erf(x/√2)) = x·Φ(x) (transformers' "gelu"), written with erfc so the
 * negative tail keeps its relative precision.
 */
export function geluErfValue(x: number): number {
  return 0.5 * x * erfc(-x / Math.SQRT2);
}
export const geluErf = (a: Dense): Dense => map(a, geluErfValue);

/** silu(gate) * up; same shapes. */
export function swiglu(gate: Dense, up: Dense): Dense {
  return dense(
    gate.ne,
    gate.data.map((g, i) => siluValue(g) * up.data[i]!),
  );
}

/** gelu(gate) * up (gelu's tanh approximation); same shapes. */
export function geglu(gate: Dense, up: Dense): Dense {
  return dense(
    gate.ne,
    gate.data.map((g, i) => geluValue(g) * up.data[i]!),
  );
}
