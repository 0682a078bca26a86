import { DType, dtypeName, FLOAT_DTYPES, rowBytes, WEIGHT_DTYPES } from "./dtype.js";
import { IrError } from "./errors.js";
import { inferOutputs } from "./infer.js";
import { Op, opSpec, RopeMode } from "./ops.js";
import {
  byteSpan,
  contiguousStrides,
  describe,
  isContiguous,
  type Node,
  numel,
  type Shape,
  type Tensor,
  type TensorKind,
} from "./tensor.js";

/** A built graph: tensors and nodes in execution order, and the tensors the caller reads back. */
export interface Graph {
  readonly tensors: readonly Tensor[];
  /** In a valid execution order (every input computed before its use). */
  readonly nodes: readonly Node[];
  readonly outputs: readonly Tensor[];
  /**
   * Each output column (token) must be the same bits as when computed alone: the programs of this
   * graph carry PROGRAM_FLAG_BATCH_INVARIANT. Default false.
   */
  readonly batchInvariant?: boolean;
}

/** Parameters of {@link GraphBuilder.rope}; defaults are plain RoPE without scaling. */
export interface RopeParams {
  /** "normal" rotates pairs (2i, 2i+1), "neox" pairs (i, i + nDims/2). */
  mode: "normal" | "neox";
  /** Dimensions rotated (the head size unless partial rotary). */
  nDims: number;
  /** Default: 10000. */
  freqBase?: number;
  /** Linear scaling of positions (1 / factor). Default: 1. */
  freqScale?: number;
  /** YaRN: original context, extrapolation mix, attention factor and ramp bounds. Defaults: 0, 0, 1, 32, 1. */
  nCtxOrig?: number;
  extFactor?: number;
  attnFactor?: number;
  betaFast?: number;
  betaSlow?: number;
}

type Dims = readonly number[];

function shape4(ne: Dims, what: string): Shape {
  if (ne.length < 1 || ne.length > 4)
    throw new IrError("SHAPE_MISMATCH", `${what}: shapes have 1 to 4 dimensions, got ${ne.length}`);
  for (const n of ne) {
    if (!Number.isSafeInteger(n) || n < 0)
      throw new IrError("SHAPE_MISMATCH", `${what}: dimension ${n} is not a size`);
  }
  return [ne[0] ?? 1, ne[1] ?? 1, ne[2] ?? 1, ne[3] ?? 1];
}

/** Byte strides given for the leading dimensions, extended over the rest as if contiguous. */
function fillStrides(nb: Dims, ne: Shape, what: string): Shape {
  if (nb.length < 1 || nb.length > 4)
    throw new IrError("BAD_VIEW", `${what}: give 1 to 4 strides, got ${nb.length}`);
  const out = [...nb];
  for (let i = out.length; i < 4; i++) out.push(out[i - 1]! * ne[i - 1]!);
  for (const s of out)
    if (!Number.isSafeInteger(s) || s < 0)
      throw new IrError("BAD_VIEW", `${what}: stride ${s} is not a byte count`);
  return out as unknown as Shape;
}

/**
 * Builds a graph op by op, inferring and checking shapes as it goes. Tensors are named for
 * debugging: `b.name(t, "attn_norm", layer)` names the tensor and the node computing it.
 */
export class GraphBuilder {
  readonly #tensors: Tensor[] = [];
  readonly #nodes: Node[] = [];
  readonly #outputs: Tensor[] = [];

  #tensor(
    kind: TensorKind,
    name: string,
    dtype: DType,
    ne: Shape,
    nb?: Shape,
    view?: { of: Tensor; offset: number },
    source?: string,
  ): Tensor {
    dtypeName(dtype);
    const t: Tensor = {
      id: this.#tensors.length,
      name,
      dtype,
      ne,
      nb: nb ?? contiguousStrides(dtype, ne),
      kind,
      viewOf: view?.of,
      viewOffset: view?.offset ?? 0,
      node: undefined,
      source,
    };
    this.#tensors.push(t);
    return t;
  }

  /** A tensor the caller fills before each run (token ids, positions, masks, …). */
  input(name: string, dtype: DType, ne: Dims): Tensor {
    return this.#tensor("input", name, dtype, shape4(ne, name));
  }

  /** A weight; `source` names its data (by default the tensor name). */
  weight(name: string, dtype: DType, ne: Dims, source = name): Tensor {
    return this.#tensor("weight", name, dtype, shape4(ne, name), undefined, undefined, source);
  }

  /**
   * Memory that outlives one run, such as a KV cache. `key` (default: the name) identifies it to
   * the scheduler, which binds it to the same buffer in every graph; keys are unique in a graph.
   */
  state(name: string, dtype: DType, ne: Dims, key = name): Tensor {
    const clash = this.#tensors.find((t) => t.kind === "state" && t.source === key);
    if (clash) throw new IrError("BAD_GRAPH", `state key "${key}" is already used by ${clash.name}`, name);
    return this.#tensor("state", name, dtype, shape4(ne, name), undefined, undefined, key);
  }

  /** Names a tensor (and the node computing it): `name("attn_norm", 3)` → "attn_norm-3". */
  name(t: Tensor, name: string, layer?: number): Tensor {
    const full = layer === undefined ? name : `${name}-${layer}`;
    t.name = full;
    if (t.node && t.node.outputs.length === 1) t.node.name = full;
    return t;
  }

  /** Marks a tensor as a result the caller reads after the run. */
  output(t: Tensor): Tensor {
    if (!this.#outputs.includes(t)) this.#outputs.push(t);
    return t;
  }

  // ---- views: zero-copy, the memory is the viewed tensor's ----

  /** A view with its own shape and byte strides at a byte offset into `t`. */
  view(t: Tensor, ne: Dims, nb: Dims | undefined, offset: number, name = `${t.name}.view`): Tensor {
    const shape = shape4(ne, name);
    const strides = nb === undefined ? contiguousStrides(t.dtype, shape) : fillStrides(nb, shape, name);
    const v = { dtype: t.dtype, ne: shape, nb: strides };
    if (!Number.isSafeInteger(offset) || offset < 0 || offset + byteSpan(v) > byteSpan(t)) {
      throw new IrError(
        "BAD_VIEW",
        `a view of ${describe(v)} at byte ${offset} does not fit in ${describe(t)} (${byteSpan(t)} bytes)`,
        name,
      );
    }
    const out = this.#tensor("view", name, t.dtype, shape, strides, { of: t, offset });
    out.node = t.node;
    return out;
  }

  /** The same elements in another shape; `t` must be contiguous. */
  reshape(t: Tensor, ne: Dims, name = `${t.name}.reshape`): Tensor {
    const shape = shape4(ne, name);
    if (numel({ ne: shape }) !== numel(t)) {
      throw new IrError(
        "SHAPE_MISMATCH",
        `reshape of ${describe(t)} to [${ne.join(", ")}] changes the element count`,
        name,
      );
    }
    if (!isContiguous(t))
      throw new IrError(
        "BAD_VIEW",
        `reshape needs a contiguous tensor; ${t.name} is not (copy it first)`,
        name,
      );
    return this.view(t, shape, undefined, 0, name);
  }

  /** Reorders dimensions: axis i of `t` becomes axis `axes[i]` of the result (ggml's convention). */
  permute(t: Tensor, axes: readonly [number, number, number, number], name = `${t.name}.permute`): Tensor {
    if ([...axes].sort().join() !== "0,1,2,3")
      throw new IrError("BAD_VIEW", `permute axes ${axes.join(",")} are not 0–3 once each`, name);
    const ne = [0, 0, 0, 0];
    const nb = [0, 0, 0, 0];
    for (let i = 0; i < 4; i++) {
      ne[axes[i]!] = t.ne[i]!;
      nb[axes[i]!] = t.nb[i]!;
    }
    const out = this.#tensor("view", name, t.dtype, ne as unknown as Shape, nb as unknown as Shape, {
      of: t,
      offset: 0,
    });
    out.node = t.node;
    return out;
  }

  transpose(t: Tensor, name = `${t.name}.T`): Tensor {
    return this.permute(t, [1, 0, 2, 3], name);
  }

  // ---- ops ----

  #op(
    op: Op,
    inputs: readonly Tensor[],
    params: readonly number[],
    name?: string,
    dst?: Tensor | { dtype: DType },
  ): Tensor[] {
    const nodeName = name ?? `${opSpec(op)!.name.toLowerCase()}#${this.#nodes.length}`;
    for (const t of inputs) {
      if (this.#tensors[t.id] !== t)
        throw new IrError("BAD_GRAPH", `input ${t.name} belongs to another graph`, nodeName);
    }
    const specs = inferOutputs(op, inputs, params, nodeName);
    const node: Node = {
      id: this.#nodes.length,
      name: nodeName,
      op,
      inputs: [...inputs],
      outputs: [],
      params: [...params],
    };
    const outputs = specs.map((s, i) => {
      if ("aliasOf" in s) {
        const target = s.aliasOf >= 0 ? inputs[s.aliasOf]! : dst!;
        if (!("id" in target)) return this.#tensor("result", nodeName, target.dtype, inputs[0]!.ne);
        // The op writes into the target's memory: its output is a view of it.
        return this.#tensor("view", nodeName, target.dtype, target.ne, target.nb, { of: target, offset: 0 });
      }
      return this.#tensor("result", specs.length > 1 ? `${nodeName}.${i}` : nodeName, s.dtype, s.ne);
    });
    (node as unknown as { outputs: Tensor[] }).outputs = outputs;
    for (const t of outputs) t.node = node;
    this.#nodes.push(node);
    return outputs;
  }

  /** Rows `idx` (I32) of `a` as F32 (dequantized when `a` is quantized). */
  getRows(a: Tensor, idx: Tensor, name?: string): Tensor {
    return this.#op(Op.GET_ROWS, [a, idx], [], name)[0]!;
  }

  /** `a` [k, m] (weights, any weight dtype) × `b` [k, n] → F32 [m, n]; a broadcasts over b's dims 2 and 3. */
  mulMat(a: Tensor, b: Tensor, name?: string): Tensor {
    return this.#op(Op.MUL_MAT, [a, b], [], name)[0]!;
  }

  add(a: Tensor, b: Tensor, name?: string): Tensor {
    return this.#op(Op.ADD, [a, b], [], name)[0]!;
  }

  mul(a: Tensor, b: Tensor, name?: string): Tensor {
    return this.#op(Op.MUL, [a, b], [], name)[0]!;
  }

  scale(a: Tensor, scale: number, bias = 0, name?: string): Tensor {
    return this.#op(Op.SCALE, [a], [scale, bias], name)[0]!;
  }

  rmsNorm(a: Tensor, eps: number, name?: string): Tensor {
    return this.#op(Op.RMS_NORM, [a], [eps], name)[0]!;
  }

  norm(a: Tensor, eps: number, name?: string): Tensor {
    return this.#op(Op.NORM, [a], [eps], name)[0]!;
  }

  /** Rotary embedding of `a` [headDim, nHead, nTokens] at `pos` (I32 [nTokens]). */
  rope(a: Tensor, pos: Tensor, p: RopeParams, freqFactors?: Tensor, name?: string): Tensor {
    const params = [
      p.mode === "neox" ? RopeMode.NEOX : RopeMode.NORMAL,
      p.nDims,
      p.nCtxOrig ?? 0,
      p.freqBase ?? 10000,
      p.freqScale ?? 1,
      p.extFactor ?? 0,
      p.attnFactor ?? 1,
      p.betaFast ?? 32,
      p.betaSlow ?? 1,
    ];
    return this.#op(Op.ROPE, freqFactors ? [a, pos, freqFactors] : [a, pos], params, name)[0]!;
  }

  softmax(
    a: Tensor,
    options: { mask?: Tensor; scale?: number; maxBias?: number } = {},
    name?: string,
  ): Tensor {
    const inputs = options.mask ? [a, options.mask] : [a];
    return this.#op(Op.SOFTMAX, inputs, [options.scale ?? 1, options.maxBias ?? 0], name)[0]!;
  }

  /**
   * Fused attention: q [hd, nHead, nQ], k [hd, nKvHead, nKv] and v [hdv, nKvHead, nKv] (typically
   * views of a KV cache), and either a mask (F32/F16 [nKv, nQ]; -Infinity hides a cell) or spans
   * (I32 [2, nQ]: each query sees cells [start, end)). Result F32 [hdv, nHead, nQ].
   */
  attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    maskOrSpans: Tensor,
    options: { scale: number; softcap?: number },
    name?: string,
  ): Tensor {
    return this.#op(Op.ATTENTION, [q, k, v, maskOrSpans], [options.scale, options.softcap ?? 0], name)[0]!;
  }

  silu(a: Tensor, name?: string): Tensor {
    return this.#op(Op.SILU, [a], [], name)[0]!;
  }

  /** gelu(a) with the tanh approximation (ggml's gelu, transformers' "gelu_new"), F32. */
  gelu(a: Tensor, name?: string): Tensor {
    return this.#op(Op.GELU, [a], [], name)[0]!;
  }

  /**
   * The exact GELU, 0.5 · a · (1 + erf(a / √2)), element by element (F32): transformers'
   * "gelu" (BERT, XLM-RoBERTa). The fusion pass leaves it alone (GEGLU is the tanh form).
   */
  geluErf(a: Tensor, name?: string): Tensor {
    return this.#op(Op.GELU_ERF, [a], [], name)[0]!;
  }

  swiglu(gate: Tensor, up: Tensor, name?: string): Tensor {
    return this.#op(Op.SWIGLU, [gate, up], [], name)[0]!;
  }

  /**
   * Gated GELU: gelu(gate) · up, element by element, with {@link GraphBuilder.gelu}'s tanh
   * approximation; `gate` and `up` are F32 of one shape (as {@link GraphBuilder.swiglu}).
   */
  geglu(gate: Tensor, up: Tensor, name?: string): Tensor {
    return this.#op(Op.GEGLU, [gate, up], [], name)[0]!;
  }

  /**
   * tanh(a), element by element (F32). Logit soft-capping is `scale(tanh(scale(a, 1 / c)), c)`.
   */
  tanh(a: Tensor, name?: string): Tensor {
    return this.#op(Op.TANH, [a], [], name)[0]!;
  }

  /** Copies `a` into `dst` (any float dtype, same element count), converting; returns the written view of dst. */
  cpy(a: Tensor, dst: Tensor, name?: string): Tensor {
    if (numel(a) !== numel(dst)) {
      throw new IrError(
        "SHAPE_MISMATCH",
        `cpy of ${describe(a)} into ${describe(dst)} changes the element count`,
        name,
      );
    }
    this.#writable(dst.dtype, dst.ne[0], name);
    return this.#op(Op.CPY, [a], [], name, dst)[0]!;
  }

  /** A contiguous copy of `a` in `dtype` (default: a's dtype). */
  /** A cpy/cont destination must be a float type, I32, or a block type the rows fill whole. */
  #writable(dtype: DType, rowLength: number, name?: string): void {
    if (dtype === DType.I32 || FLOAT_DTYPES.includes(dtype)) return;
    if (!WEIGHT_DTYPES.includes(dtype)) {
      throw new IrError("BAD_DTYPE", `cannot copy into ${dtypeName(dtype)}`, name);
    }
    rowBytes(dtype, rowLength);
  }

  cont(a: Tensor, dtype: DType = a.dtype, name?: string): Tensor {
    this.#writable(dtype, a.ne[0], name);
    return this.#op(Op.CPY, [a], [], name, { dtype })[0]!;
  }

  /** Writes the rows of `src` into `dst` at the rows `idx` (I32); returns dst as written. */
  setRows(dst: Tensor, src: Tensor, idx: Tensor, name?: string): Tensor {
    return this.#op(Op.SET_ROWS, [dst, src, idx], [], name)[0]!;
  }

  concat(a: Tensor, b: Tensor, dim: number, name?: string): Tensor {
    return this.#op(Op.CONCAT, [a, b], [dim], name)[0]!;
  }

  argsort(a: Tensor, descending = false, name?: string): Tensor {
    return this.#op(Op.ARGSORT, [a], [descending ? 1 : 0], name)[0]!;
  }

  topK(a: Tensor, k: number, name?: string): Tensor {
    return this.#op(Op.TOP_K, [a], [k], name)[0]!;
  }

  /** Mixture-of-experts product: for each token t and slot e, experts[:, :, ids[e, t]] × b[:, e, t]. */
  mulMatId(experts: Tensor, b: Tensor, ids: Tensor, name?: string): Tensor {
    return this.#op(Op.MUL_MAT_ID, [experts, b, ids], [], name)[0]!;
  }

  /** Adds a node as is (used by passes such as fusion). */
  node(op: Op, inputs: readonly Tensor[], params: readonly number[], name?: string): Tensor[] {
    return this.#op(op, inputs, params, name);
  }

  build(): Graph {
    // A graph must produce something: an output, or a write into state (e.g. a KV-cache shift).
    if (this.#outputs.length === 0 && !this.#nodes.some((n) => n.op === Op.SET_ROWS))
      throw new IrError(
        "BAD_GRAPH",
        "the graph has no outputs (mark them with output()) and writes no state",
      );
    return { tensors: [...this.#tensors], nodes: [...this.#nodes], outputs: [...this.#outputs] };
  }
}
