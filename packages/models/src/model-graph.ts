import { DType, GraphBuilder, type Tensor } from "@minfer/ir";
import type { BuiltGraph, GraphOutput, LayerRope } from "./arch.js";
import { ModelError } from "./errors.js";
import { CANDIDATE_LOGITS_OUTPUT, CANDIDATES_OUTPUT } from "./graph-inputs.js";
import type { ModelTensors } from "./tensors.js";
import { weightTaps } from "./weight-taps.js";

/**
 * A graph under construction for one model: the builder, the file's weights by name (each
 * created once, with the dtype `loadTensors` found, F32 by default) and the constant inputs
 * whose values the model computes (RoPE factors from keys).
 */
export class ModelGraph {
  readonly b = new GraphBuilder();
  readonly #weights = new Map<string, Tensor>();
  readonly #constants = new Map<string, { tensor: Tensor; data: Float32Array }>();

  /**
   * `outputs.candidates`, when > 0, adds to the graph built by {@link finish} the ids of each
   * logits row's that many largest logits (see `BuildOptions.candidates`).
   */
  constructor(
    readonly tensors: ModelTensors | undefined,
    readonly outputs: {
      readonly candidates?: number;
      readonly output?: GraphOutput;
      readonly taps?: boolean;
    } = {},
  ) {}

  /** The weight `name` of shape `ne`. */
  weight(name: string, ne: readonly number[]): Tensor {
    let t = this.#weights.get(name);
    if (!t) {
      const dtype = this.tensors?.byName.get(name)?.dtype ?? DType.F32;
      t = this.b.weight(name, dtype, ne);
      this.#weights.set(name, t);
    }
    return t;
  }

  /** What the graph outputs (`BuildOptions.output`). */
  get output(): GraphOutput {
    return this.outputs.output ?? "logits";
  }

  /** Whether the file has the (optional) tensor `name`; without checked tensors, false. */
  has(name: string): boolean {
    return this.tensors?.byName.has(name) ?? false;
  }

  /** An F32 input named `name` whose value is `data` at every step (declared once per graph). */
  constant(name: string, data: Float32Array): Tensor {
    const c = this.#constants.get(name);
    if (c) return c.tensor;
    const tensor = this.b.input(name, DType.F32, [data.length]);
    this.#constants.set(name, { tensor, data });
    return tensor;
  }

  /** The frequency-factor tensor of a layer's RoPE, or undefined when it has none. */
  ropeFactors(rope: LayerRope): Tensor | undefined {
    const f = rope.factors;
    if (!f) return undefined;
    if ("weight" in f) return this.weight(f.weight, [rope.params.nDims / 2]);
    return this.constant(f.constant, f.data);
  }

  /** Consecutive rows [first, first + rows) of a weight as a view (a fused QKV or gate-up split). */
  rows(w: Tensor, first: number, rows: number, name: string): Tensor {
    if (first + rows > w.ne[1])
      throw new ModelError("BAD_SHAPE", `${w.name}: rows ${first}…${first + rows} exceed its ${w.ne[1]}`, {
        tensor: w.name,
      });
    return this.b.view(w, [w.ne[0], rows], [w.nb[0], w.nb[1]], first * w.nb[1], name);
  }

  /** The constant inputs declared so far, by name. */
  constants(): Map<string, Float32Array> {
    const out = new Map<string, Float32Array>();
    for (const [name, c] of this.#constants) out.set(name, c.data);
    return out;
  }

  /**
   * Marks `logits` (F32 [nVocab, nOutputs]) the output, with the candidate ids when asked for
   * (I32 [candidates, nOutputs], TOP_K of the logits: larger logit first, lower id first on ties,
   * named {@link CANDIDATES_OUTPUT}) and their logits (F32 [1, candidates, nOutputs], named
   * {@link CANDIDATE_LOGITS_OUTPUT}), and builds: every input is listed by name.
   */
  finish(logits: Tensor): BuiltGraph {
    this.b.output(logits);
    const k = this.outputs.candidates ?? 0;
    if (!Number.isInteger(k) || k < 0 || k > logits.ne[0])
      throw new ModelError(
        "INVALID_ARGUMENT",
        `candidates must be an integer in 0…${logits.ne[0]} (the vocabulary), got ${String(k)}`,
      );
    const candidates = k > 0 ? this.b.output(this.b.topK(logits, k, CANDIDATES_OUTPUT)) : undefined;
    // Their logits: each row of logits a plane of one-element rows, gathered by that row's ids.
    const candidateLogits = candidates
      ? this.b.output(
          this.b.getRows(
            this.b.reshape(logits, [1, logits.ne[0], logits.ne[1]]),
            candidates,
            CANDIDATE_LOGITS_OUTPUT,
          ),
        )
      : undefined;
    // Taps: the products' activations become outputs too (found on a first build of the nodes).
    const taps = this.outputs.taps ? weightTaps(this.b.build()) : undefined;
    for (const t of taps ?? []) {
      this.b.output(t.input);
      if (t.ids) this.b.output(t.ids);
    }
    const graph = this.b.build();
    const inputs: Record<string, Tensor> = {};
    for (const t of graph.tensors) if (t.kind === "input") inputs[t.name] = t;
    return {
      graph,
      inputs,
      constants: this.constants(),
      logits,
      ...(candidates && candidateLogits ? { candidates, candidateLogits } : {}),
      ...(taps ? { taps } : {}),
    };
  }
}
