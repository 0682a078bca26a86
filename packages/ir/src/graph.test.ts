import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import {
  DType,
  decodeProgram,
  encodeProgram,
  fuse,
  GraphBuilder,
  graphToDot,
  graphToJson,
  IrError,
  isContiguous,
  type Node,
  Op,
  opInfoHeaderSource,
  opSpec,
  PROGRAM_FLAG_BATCH_INVARIANT,
  programHeaderSource,
  type Tensor,
  viewRoot,
} from "./index.js";

function irError(f: () => unknown): IrError {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(IrError);
    return e as IrError;
  }
  throw new Error("no error");
}

describe("shape inference", () => {
  it("gives mul_mat [m, n] and broadcasts weights over heads", () => {
    const b = new GraphBuilder();
    const w = b.weight("w", DType.Q4_K, [256, 512]);
    const x = b.input("x", DType.F32, [256, 7]);
    const y = b.mulMat(w, x);
    expect(y.ne).toEqual([512, 7, 1, 1]);
    const k = b.input("k", DType.F16, [64, 10, 2]);
    const q = b.input("q", DType.F32, [64, 3, 8]);
    expect(b.mulMat(k, q).ne).toEqual([10, 3, 8, 1]);
  });

  it("names the node, the op and the shapes on a mismatch", () => {
    const b = new GraphBuilder();
    const w = b.weight("w", DType.F16, [4096, 11008]);
    const x = b.input("x", DType.F32, [4095, 7]);
    const e = irError(() => b.mulMat(w, x, "ffn_up-0"));
    expect(e.code).toBe("SHAPE_MISMATCH");
    expect(e.message).toBe(
      "ffn_up-0: mul_mat operands disagree on k: 4096 vs 4095 (inputs: F16 [4096, 11008], F32 [4095, 7])",
    );
    expect(e.node).toBe("ffn_up-0");
  });

  it("checks dtypes, broadcast and parameters", () => {
    const b = new GraphBuilder();
    const a = b.input("a", DType.F32, [8, 4]);
    expect(irError(() => b.add(a, b.input("b", DType.F32, [3, 4]))).message).toContain("does not broadcast");
    expect(
      irError(() => b.rope(a, b.input("p", DType.F32, [4]), { mode: "neox", nDims: 8 })).message,
    ).toContain("positions must be I32");
    const h = b.input("h", DType.F32, [8, 2, 4]);
    const pos = b.input("pos", DType.I32, [4]);
    expect(irError(() => b.rope(h, pos, { mode: "neox", nDims: 9 })).code).toBe("INVALID_ARGUMENT");
    expect(b.rope(h, pos, { mode: "neox", nDims: 8 }).ne).toEqual([8, 2, 4, 1]);
    expect(irError(() => b.topK(a, 9)).message).toContain("must be 1–8");
  });

  it("tanh keeps a's shape; geglu takes gate and up of one shape, as swiglu", () => {
    const b = new GraphBuilder();
    const a = b.input("a", DType.F32, [33, 7]);
    expect(b.tanh(a).ne).toEqual([33, 7, 1, 1]);
    expect(b.tanh(a).node!.op).toBe(Op.TANH);
    const g = b.geglu(a, b.input("up", DType.F32, [33, 7]));
    expect([g.node!.op, g.ne]).toEqual([Op.GEGLU, [33, 7, 1, 1]]);
    expect(irError(() => b.geglu(a, b.input("u2", DType.F32, [33, 6]), "ffn_geglu-0")).message).toMatch(
      /^ffn_geglu-0: geglu gate and up must have the same shape/,
    );
    expect(irError(() => b.tanh(b.input("h", DType.F16, [8]))).message).toMatch(
      /tanh a must be F32, got F16/,
    );
    expect([Op.TANH, Op.GEGLU]).toEqual([20, 21]);
  });

  it("geluErf keeps a's shape as op 22 (GELU_ERF), F32 only", () => {
    const b = new GraphBuilder();
    const a = b.input("a", DType.F32, [3072, 5]);
    const g = b.geluErf(a, "ffn_gelu-0");
    expect([g.node!.op, g.ne, g.dtype, g.name]).toEqual([
      Op.GELU_ERF,
      [3072, 5, 1, 1],
      DType.F32,
      "ffn_gelu-0",
    ]);
    expect(Op.GELU_ERF).toBe(22);
    expect(opSpec(22)).toMatchObject({ name: "GELU_ERF", inputs: [1, 1], params: [] });
    expect(irError(() => b.geluErf(b.input("h", DType.F16, [8]), "ffn_gelu-1")).message).toMatch(
      /^ffn_gelu-1: gelu_erf a must be F32, got F16/,
    );
  });

  it("attention takes a mask or spans and grouped KV heads", () => {
    const b = new GraphBuilder();
    const q = b.input("q", DType.F32, [64, 8, 5]);
    const k = b.input("k", DType.F16, [64, 2, 32]);
    const v = b.input("v", DType.F16, [64, 2, 32]);
    expect(b.attention(q, k, v, b.input("mask", DType.F32, [32, 5]), { scale: 0.125 }).ne).toEqual([
      64, 8, 5, 1,
    ]);
    expect(b.attention(q, k, v, b.input("spans", DType.I32, [2, 5]), { scale: 0.125 }).ne).toEqual([
      64, 8, 5, 1,
    ]);
    const k3 = b.input("k3", DType.F16, [64, 3, 32]);
    expect(
      irError(() => b.attention(q, k3, k3, b.input("m2", DType.F32, [32, 5]), { scale: 1 })).message,
    ).toContain("multiple of kv heads");
  });
});

describe("views", () => {
  it("are zero-copy: they alias their root at an offset", () => {
    const b = new GraphBuilder();
    const cache = b.state("k_cache", DType.F16, [128, 8, 1024]);
    const layer = b.view(cache, [128, 8, 16], [2, 256, 2048], 2048 * 4);
    const t = b.transpose(layer);
    expect(t.ne).toEqual([8, 128, 16, 1]);
    expect(t.nb).toEqual([256, 2, 2048, 2048 * 16]);
    expect(viewRoot(t)).toEqual({ root: cache, offset: 8192 });
    expect(isContiguous(t)).toBe(false);
    expect(irError(() => b.reshape(t, [1024, 16])).code).toBe("BAD_VIEW");
    expect(irError(() => b.view(cache, [128, 8, 1024], undefined, 2)).message).toContain("does not fit");
    // A transposed view reaches as far as its largest stride, not its first row.
    const m = b.state("m", DType.F32, [4, 3]);
    expect(() => b.view(m, [3, 4], [16, 4], 4)).toThrow(/does not fit/);
    expect(b.view(m, [3, 4], [16, 4], 0).ne).toEqual([3, 4, 1, 1]);
  });

  it("set_rows writes into the state tensor it is given", () => {
    const b = new GraphBuilder();
    const cache = b.state("k_cache", DType.F16, [64, 100]);
    const rows = b.input("k", DType.F32, [64, 3]);
    const idx = b.input("cells", DType.I32, [3]);
    const written = b.setRows(cache, rows, idx);
    expect(viewRoot(written).root).toBe(cache);
    expect(written.node?.op).toBe(Op.SET_ROWS);
    expect(() => b.state("k_cache", DType.F16, [64, 100])).toThrow(/state key "k_cache" is already used/);
  });

  it("builds a graph whose only effect is a state write (a KV-cache update), and refuses one with no effect", () => {
    const b = new GraphBuilder();
    const cache = b.state("k_cache", DType.F16, [8, 4]);
    const idx = b.input("cells", DType.I32, [2]);
    b.setRows(cache, b.getRows(cache, idx), idx);
    expect(b.build().outputs).toEqual([]);
    const idle = new GraphBuilder();
    idle.add(idle.input("a", DType.F32, [4]), idle.input("b", DType.F32, [4]));
    expect(irError(() => idle.build()).code).toBe("BAD_GRAPH");
  });
});

function llamaBlock() {
  const b = new GraphBuilder();
  const x = b.input("x", DType.F32, [256, 4]);
  const wq = b.weight("wq", DType.Q8_0, [256, 256]);
  const wk = b.weight("wk", DType.Q8_0, [256, 64]);
  const wv = b.weight("wv", DType.Q8_0, [256, 64]);
  const g = b.weight("norm", DType.F32, [256]);
  const h = b.name(b.mul(b.rmsNorm(x, 1e-5), g), "attn_norm", 0);
  const q = b.mulMat(wq, h, "q");
  const k = b.mulMat(wk, h, "k");
  const v = b.mulMat(wv, h, "v");
  const gate = b.mulMat(b.weight("wg", DType.Q4_K, [256, 512]), h, "gate");
  const up = b.mulMat(b.weight("wu", DType.Q4_K, [256, 512]), h, "up");
  const act = b.mul(b.silu(gate), up, "act");
  b.output(q);
  b.output(k);
  b.output(v);
  b.output(act);
  return b.build();
}

describe("fusion", () => {
  it("fuses rms_norm×weight, swiglu and the q/k/v and gate/up products", () => {
    const g = llamaBlock();
    const f = fuse(g);
    const ops = f.nodes.map((n) => n.op);
    expect(ops).toEqual([Op.RMS_NORM_MUL, Op.MUL_MAT_MULTI, Op.MUL_MAT_MULTI, Op.SWIGLU]);
    expect(f.nodes[0]!.name).toBe("attn_norm-0");
    expect(f.nodes[1]!.outputs.map((t) => t.name)).toEqual(["q", "k", "v"]);
    expect(f.outputs.map((t) => t.name)).toEqual(["q", "k", "v", "act"]);
    expect(f.outputs.map((t) => t.ne)).toEqual(g.outputs.map((t) => t.ne));
  });

  it("folds a lone product's residual or bias ADD into MUL_MAT_ADD, leaving q/k/v biases to MUL_MAT_MULTI", () => {
    const b = new GraphBuilder();
    const x = b.input("x", DType.F32, [64, 3]);
    const h = b.input("h", DType.F32, [64, 3]);
    // qwen2-style q/k/v with bias ADDs: grouped by MUL_MAT_MULTI with the biases as addends.
    const qkv = ["q", "k", "v"].map((n) =>
      b.add(b.mulMat(b.weight(`w${n}`, DType.Q8_0, [64, 32]), h), b.weight(`b${n}`, DType.F32, [32]), n),
    );
    // The attention-output product with the residual (product as ADD's a), a bias (broadcast),
    // and the product as ADD's b with an equal shape.
    const o = b.add(
      b.mulMat(b.weight("wo", DType.Q4_K, [256, 64]), b.input("attn", DType.F32, [256, 3])),
      x,
      "res",
    );
    const biased = b.add(
      b.mulMat(b.weight("wd", DType.F16, [64, 64]), o),
      b.weight("bd", DType.F32, [64]),
      "biased",
    );
    const swapped = b.add(x, b.mulMat(b.weight("we", DType.F32, [64, 64]), biased), "swapped");
    // Product as ADD's b with a broadcast a: left alone (the add would not be a's shape).
    const wide = b.add(
      b.input("wide", DType.F32, [64, 3, 2]),
      b.mulMat(b.weight("wf", DType.F32, [64, 64]), x),
    );
    for (const t of [...qkv, swapped, wide]) b.output(t);
    const g = b.build();
    const f = fuse(g);
    expect(f.nodes.map((n) => n.op)).toEqual([
      Op.MUL_MAT_MULTI,
      Op.MUL_MAT_ADD,
      Op.MUL_MAT_ADD,
      Op.MUL_MAT_ADD,
      Op.MUL_MAT,
      Op.ADD,
    ]);
    expect(f.nodes.filter((n) => n.op === Op.MUL_MAT_ADD).map((n) => n.inputs.map((t) => t.name))).toEqual([
      ["wo", "attn", "x"],
      ["wd", "res", "bd"],
      ["we", "biased", "x"],
    ]);
    expect(f.outputs.map((t) => t.ne)).toEqual(g.outputs.map((t) => t.ne));
    expect(fuse(g, { mulMatAdd: false }).nodes.map((n) => n.op)).not.toContain(Op.MUL_MAT_ADD);
    expect(
      fuse(g, { mulMatMultiAdd: false })
        .nodes.slice(0, 4)
        .map((n) => n.op),
    ).toEqual([Op.MUL_MAT_MULTI, Op.ADD, Op.ADD, Op.ADD]);
  });

  it("folds qwen2's q/k/v bias ADDs into MUL_MAT_MULTI as addends (all members or none)", () => {
    const qwen2 = (kBias: "weight" | "read twice" | "f16" | "as b") => {
      const b = new GraphBuilder();
      const h = b.input("h", DType.F32, [64, 3]);
      const outs = ["q", "k", "v"].map((n, i) => {
        const p = b.mulMat(b.weight(`w${n}`, DType.Q8_0, [64, 32 + 16 * i]), h);
        const bias = b.weight(`b${n}`, n === "k" && kBias === "f16" ? DType.F16 : DType.F32, [32 + 16 * i]);
        if (n === "k" && kBias === "read twice") b.output(p);
        if (n === "k" && kBias === "as b") return b.add(b.input("r", DType.F32, [48, 3]), p, n);
        return n === "k" && kBias === "f16" ? b.add(p, b.cont(bias, DType.F32), n) : b.add(p, bias, n);
      });
      for (const t of outs) b.output(t);
      return b.build();
    };
    const g = qwen2("weight");
    const f = fuse(g);
    expect(f.nodes.map((n) => n.op)).toEqual([Op.MUL_MAT_MULTI]);
    const [multi] = f.nodes;
    expect(multi!.inputs.map((t) => t.name)).toEqual(["h", "wq", "wk", "wv", "bq", "bk", "bv"]);
    expect(multi!.outputs.map((t) => t.name)).toEqual(["q", "k", "v"]);
    expect(multi!.name).toBe("q+k+v");
    expect(f.outputs.map((t) => t.name)).toEqual(["q", "k", "v"]);
    expect(f.outputs.map((t) => t.ne)).toEqual(g.outputs.map((t) => t.ne));
    // One member's product read elsewhere, or added as ADD's b: no member takes its addend.
    for (const variant of ["read twice", "as b"] as const)
      expect(fuse(qwen2(variant)).nodes.map((n) => n.op)).toEqual([Op.MUL_MAT_MULTI, Op.ADD, Op.ADD, Op.ADD]);
    // A bias computed after the group's first product (here a CPY of an F16 bias) is not ready
    // where the fused node runs: the ADDs stay.
    expect(fuse(qwen2("f16")).nodes.map((n) => n.op)).toEqual([
      Op.MUL_MAT_MULTI,
      Op.ADD,
      Op.CPY,
      Op.ADD,
      Op.ADD,
    ]);
  });

  it("checks MUL_MAT_MULTI's input count and addends", () => {
    const b = new GraphBuilder();
    const x = b.input("x", DType.F32, [64, 4]);
    const w1 = b.weight("w1", DType.Q8_0, [64, 32]);
    const w2 = b.weight("w2", DType.F16, [64, 8]);
    const c1 = b.input("c1", DType.F32, [32]);
    const c2 = b.input("c2", DType.F32, [8, 4]);
    expect(b.node(Op.MUL_MAT_MULTI, [x, w1, w2, c1, c2], []).map((t) => t.ne)).toEqual([
      [32, 4, 1, 1],
      [8, 4, 1, 1],
    ]);
    expect(irError(() => b.node(Op.MUL_MAT_MULTI, [x, w1, w2, c1, c2, c1], [])).message).toMatch(
      /optionally one addend per weight \(3, 4, 5 or 7 inputs\), got 6/,
    );
    expect(
      irError(() => b.node(Op.MUL_MAT_MULTI, [x, w1, w2, c1, b.input("c3", DType.F32, [3])], [])).message,
    ).toMatch(/c2 does not broadcast over out2 \[8, 4, 1, 1\]/);
    expect(
      irError(() => b.node(Op.MUL_MAT_MULTI, [x, w1, w2, b.input("h", DType.F16, [32]), c2], [])).message,
    ).toMatch(/c1 must be F32/);
  });

  it("checks MUL_MAT_ADD's c: F32 and broadcastable over the product", () => {
    const b = new GraphBuilder();
    const w = b.weight("w", DType.Q8_0, [64, 32]);
    const x = b.input("x", DType.F32, [64, 4]);
    expect(b.node(Op.MUL_MAT_ADD, [w, x, b.input("c", DType.F32, [32, 4])], [])[0]!.ne).toEqual([
      32, 4, 1, 1,
    ]);
    expect(irError(() => b.node(Op.MUL_MAT_ADD, [w, x, b.input("c3", DType.F32, [3])], [])).message).toMatch(
      /c does not broadcast over the product \[32, 4, 1, 1\]/,
    );
    expect(
      irError(() => b.node(Op.MUL_MAT_ADD, [w, x, b.input("c16", DType.F16, [32])], [])).message,
    ).toMatch(/c must be F32/);
  });

  it("fuses gelu(gate) * up into GEGLU in either operand order, only where gelu is read once", () => {
    const b = new GraphBuilder();
    const gate = b.input("gate", DType.F32, [64, 3]);
    const up = b.input("up", DType.F32, [64, 3]);
    b.output(b.mul(b.gelu(gate), up, "act"));
    b.output(b.mul(up, b.gelu(up), "swapped"));
    const shared = b.gelu(b.input("g2", DType.F32, [64, 3]), "shared");
    b.output(b.mul(shared, up, "kept"));
    b.output(shared);
    const f = fuse(b.build());
    expect(f.nodes.map((n) => n.op)).toEqual([Op.GEGLU, Op.GEGLU, Op.GELU, Op.MUL]);
    expect(f.nodes[0]!.inputs.map((t) => t.name)).toEqual(["gate", "up"]);
    expect(f.nodes[0]!.name).toBe("act");
    expect(f.nodes[1]!.inputs.map((t) => t.name)).toEqual(["up", "up"]);
    expect(fuse(b.build(), { geglu: false }).nodes.map((n) => n.op)).not.toContain(Op.GEGLU);
  });

  it("leaves geluErf(gate) * up alone: GEGLU is gelu's tanh form, not the exact one", () => {
    const b = new GraphBuilder();
    const gate = b.input("gate", DType.F32, [64, 3]);
    const up = b.input("up", DType.F32, [64, 3]);
    b.output(b.mul(b.geluErf(gate), up, "act"));
    b.output(b.mul(up, b.geluErf(up), "swapped"));
    const f = fuse(b.build());
    expect(f.nodes.map((n) => n.op)).toEqual([Op.GELU_ERF, Op.MUL, Op.GELU_ERF, Op.MUL]);
    expect(f.nodes[1]!.name).toBe("act");
  });

  // phi3: q, k and v are row ranges of one fused weight attn_qkv [k, nQ + 2·nKv], gate and up the
  // halves of ffn_up [k, 2·nFf]; the models take them as views.
  function phi3Block(o: { qkvBias?: boolean; transposedV?: boolean } = {}) {
    const b = new GraphBuilder();
    const h = b.input("h", DType.F32, [256, 5]);
    const dtype = o.transposedV ? DType.F16 : DType.Q4_K;
    const qkv = b.weight("attn_qkv", dtype, [256, 128]);
    const rows = (w: Tensor, r0: number, m: number, name: string) =>
      b.view(w, [256, m], [w.nb[0], w.nb[1]], r0 * w.nb[1], name);
    // (transposedV: v's weight is a view of another weight whose rows are strided)
    const wv = o.transposedV
      ? b.transpose(b.weight("wv_t", dtype, [32, 256]), "wv")
      : rows(qkv, 96, 32, "wv");
    const ws = [rows(qkv, 0, 64, "wq"), rows(qkv, 64, 32, "wk"), wv];
    const outs = ["q", "k", "v"].map((n, i) => {
      const p = b.mulMat(ws[i]!, h, o.qkvBias ? `${n}_mm` : n);
      return o.qkvBias ? b.add(p, b.weight(`b${n}`, DType.F32, [p.ne[0]]), n) : p;
    });
    const up = b.weight("ffn_up", DType.Q6_K, [256, 192]);
    const gate = b.mulMat(rows(up, 0, 96, "w_gate"), h, "gate");
    const u = b.mulMat(rows(up, 96, 96, "w_up"), h, "up");
    for (const t of [...outs, b.swiglu(gate, u, "act")]) b.output(t);
    return b.build();
  }

  it("groups products of weight views (rows of a fused weight) into MUL_MAT_MULTI, keeping each view", () => {
    const g = phi3Block();
    const f = fuse(g);
    expect(f.nodes.map((n) => n.op)).toEqual([Op.MUL_MAT_MULTI, Op.MUL_MAT_MULTI, Op.SWIGLU]);
    const [qkv, gu] = f.nodes as [Node, Node];
    expect(qkv.inputs.map((t) => t.name)).toEqual(["h", "wq", "wk", "wv"]);
    expect(qkv.outputs.map((t) => t.name)).toEqual(["q", "k", "v"]);
    // The fused node reads the same bytes: each weight is still a view of attn_qkv at its row.
    const rowBytes = g.tensors.find((t) => t.name === "attn_qkv")!.nb[1];
    for (const [i, r0] of [0, 64, 96].entries()) {
      const w = qkv.inputs[1 + i]!;
      expect(w.kind).toBe("view");
      expect(viewRoot(w)).toEqual({
        root: expect.objectContaining({ name: "attn_qkv", kind: "weight" }),
        offset: r0 * rowBytes,
      });
      expect(w.nb).toEqual(g.nodes[i]!.inputs[0]!.nb);
    }
    expect(gu.inputs.map((t) => [t.name, viewRoot(t).offset])).toEqual([
      ["h", 0],
      ["w_gate", 0],
      ["w_up", 96 * gu.inputs[1]!.nb[1]],
    ]);
    expect(f.outputs.map((t) => t.ne)).toEqual(g.outputs.map((t) => t.ne));
    // With biases: the ADDs become the group's addends.
    const fb = fuse(phi3Block({ qkvBias: true }));
    expect(fb.nodes.map((n) => n.op)).toEqual([Op.MUL_MAT_MULTI, Op.MUL_MAT_MULTI, Op.SWIGLU]);
    expect(fb.nodes[0]!.inputs.map((t) => t.name)).toEqual(["h", "wq", "wk", "wv", "bq", "bk", "bv"]);
    // A view whose rows are not contiguous (a transposed block) is no MUL_MAT_MULTI weight.
    const ft = fuse(phi3Block({ transposedV: true }));
    expect(ft.nodes.map((n) => n.op)).toEqual([Op.MUL_MAT_MULTI, Op.MUL_MAT, Op.MUL_MAT_MULTI, Op.SWIGLU]);
    expect(ft.nodes[0]!.inputs.map((t) => t.name)).toEqual(["h", "wq", "wk"]);
  });

  it("folds a weight view's product and its bias into MUL_MAT_ADD", () => {
    const b = new GraphBuilder();
    const w = b.weight("attn_qkv", DType.Q8_0, [64, 96]);
    const wv = b.view(w, [64, 32], [w.nb[0], w.nb[1]], 64 * w.nb[1], "wv");
    b.output(b.add(b.mulMat(wv, b.input("h", DType.F32, [64, 3])), b.weight("bv", DType.F32, [32]), "v"));
    const f = fuse(b.build());
    expect(f.nodes.map((n) => n.op)).toEqual([Op.MUL_MAT_ADD]);
    expect(f.nodes[0]!.inputs.map((t) => [t.name, viewRoot(t).offset])).toEqual([
      ["wv", 64 * w.nb[1]],
      ["h", 0],
      ["bv", 0],
    ]);
  });

  it("leaves an intermediate alone when something else reads it", () => {
    const b = new GraphBuilder();
    const x = b.input("x", DType.F32, [8, 2]);
    const n = b.rmsNorm(x, 1e-6);
    const y = b.mul(n, b.weight("w", DType.F32, [8]));
    b.output(y);
    b.output(n);
    expect(fuse(b.build()).nodes.map((k) => k.op)).toEqual([Op.RMS_NORM, Op.MUL]);
  });
});

describe("export", () => {
  it("writes JSON and DOT naming every node", () => {
    const g = llamaBlock();
    const json = graphToJson(g);
    expect(json.nodes.map((n) => n.op)).toContain("RMS_NORM");
    expect(json.tensors.find((t) => t.name === "wq")).toMatchObject({
      kind: "weight",
      dtype: "Q8_0",
      ne: [256, 256, 1, 1],
    });
    const dot = graphToDot(g);
    expect(dot.startsWith("digraph minfer {")).toBe(true);
    expect(dot).toContain("attn_norm-0");
    expect(dot.match(/->/g)!.length).toBeGreaterThanOrEqual(g.nodes.reduce((a, n) => a + n.inputs.length, 0));
  });
});

describe("program encoding", () => {
  it("round-trips and refuses tensors outside their buffer", () => {
    const spec = {
      bufferSizes: [1024, 64],
      tensors: [
        { dtype: DType.F32, buffer: 0, offset: 0, ne: [4, 4, 1, 1], nb: [4, 16, 64, 64] },
        { dtype: DType.F32, buffer: 1, offset: 48, ne: [4, 1, 1, 1], nb: [4, 16, 16, 16] },
      ],
      nodes: [{ op: Op.SCALE, inputs: [0], outputs: [0], params: [0.5, -1] }],
    } as const;
    const bytes = encodeProgram(spec);
    expect(decodeProgram(bytes)).toEqual(spec);
    expect(() =>
      encodeProgram({ ...spec, tensors: [spec.tensors[0], { ...spec.tensors[1], offset: 52 }] }),
    ).toThrow(/does not fit in buffer 1/);
    expect(() => encodeProgram({ ...spec, nodes: [{ ...spec.nodes[0], params: [1] }] })).toThrow(
      /has 1 parameters, expects 2/,
    );
  });

  it("carries the batch-invariant flag in the header, and refuses bits it does not know", () => {
    const spec = {
      bufferSizes: [64],
      tensors: [{ dtype: DType.F32, buffer: 0, offset: 0, ne: [4, 1, 1, 1], nb: [4, 16, 16, 16] }],
      nodes: [{ op: Op.SCALE, inputs: [0], outputs: [0], params: [0.5, -1] }],
    } as const;
    const plain = encodeProgram(spec);
    expect(new DataView(plain.buffer).getUint32(28, true)).toBe(0);
    const flagged = encodeProgram({ ...spec, flags: PROGRAM_FLAG_BATCH_INVARIANT });
    expect(new DataView(flagged.buffer).getUint32(28, true)).toBe(PROGRAM_FLAG_BATCH_INVARIANT);
    expect(decodeProgram(flagged)).toEqual({ ...spec, flags: PROGRAM_FLAG_BATCH_INVARIANT });
    expect(() => encodeProgram({ ...spec, flags: 2 })).toThrow(/program flags 2/);
  });

  it("native/common/program_format.h is generated from these constants", () => {
    const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
    const header = readFileSync(resolve(root, "native/common/program_format.h"), "utf8");
    expect(header).toBe(programHeaderSource());
  });

  it("native/common/op_info.h is generated from the op specs", () => {
    const root = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
    const header = readFileSync(resolve(root, "native/common/op_info.h"), "utf8");
    expect(header).toBe(opInfoHeaderSource());
    // Every op of the committed program_format.h enum (parsed from the C++ text, not from the
    // generator's input) has exactly one table entry.
    const format = readFileSync(resolve(root, "native/common/program_format.h"), "utf8");
    const enumBody = /enum class Op : int32_t \{([^}]*)\}/.exec(format)?.[1] ?? "";
    const enumOps = [...enumBody.matchAll(/^\s*([A-Z0-9_]+) = \d+,/gm)].map((m) => m[1]);
    const tableOps = [...header.matchAll(/MINFER_OP\(([A-Z0-9_]+)\),/g)].map((m) => m[1]);
    expect(enumOps.length).toBeGreaterThan(20);
    expect([...tableOps].sort()).toEqual([...enumOps].sort());
  });
});
