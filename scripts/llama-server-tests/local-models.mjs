// Models the suite downloads from Hugging Face that have no fixture file: made here, once per
// run, with minfer's GGUF writer in llama.cpp's layout, so llama-server and minfer meet the same
// local file. Their weights are random: the tests that need a trained model's answers (a
// reranker that ranks "Machine learning" first) fail against both and are left out of
// expected-pass.txt.
//   - ggml-org/models/bert-bge-small: a 2-layer BERT (mean pooling) with the real bge WordPiece
//     vocabulary of the fixtures, so token counts are bge-small's.
//   - ggml-org/models/jina-reranker-v1-tiny-en: the same BERT with a classifier head (rank pooling).
//   - ggml-org/test-model-stories260K-infill: stories260K with fill-in-the-middle keys naming three of
//     its byte tokens no text uses (ids 3, 4, 5) prefix, suffix and middle (the weights are the same).
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const SHAPE = {
  nLayer: 2,
  nEmbd: 64,
  nHead: 4,
  nHeadKv: 4,
  nFf: 128,
  contextLength: 512,
  ropeFreqBase: 10000,
  rmsEps: 1e-12,
};

/** Seeded N(0, 1) draws. */
function gaussian(seed) {
  let s = seed >>> 0;
  const u = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s + 0.5) / 4294967296;
  };
  return () => Math.sqrt(-2 * Math.log(u())) * Math.cos(2 * Math.PI * u());
}

/** Writes the models into `dir`; returns Hugging Face name → local path. */
export async function makeLocalModels(repo, fixtures, dir) {
  const imp = (p) => import(pathToFileURL(join(repo, p)).href);
  const gguf = await imp("packages/gguf/dist/index.js");
  const models = await imp("packages/models/dist/index.js");
  const vocab = (await gguf.readGguf(join(fixtures, "vocab/ggml-vocab-bert-bge.gguf"))).metadata;
  const out = new Map();
  const make = async (name, pooling, head) => {
    const base = models.synthLayout("bert", SHAPE, gguf.synthVocabSize(vocab));
    const metadata = base.metadata.map((kv) =>
      kv.key === "bert.pooling_type" ? { ...kv, value: pooling } : kv,
    );
    const e = SHAPE.nEmbd;
    const extra = head
      ? [
          { name: "cls.weight", dims: [e, e] },
          { name: "cls.bias", dims: [e] },
          { name: "cls.output.weight", dims: [e, 1] },
          { name: "cls.output.bias", dims: [1] },
        ]
      : [];
    const m = gguf.synthesizeLayout(
      { ...base, metadata, tensors: [...base.tensors, ...extra] },
      { type: "f32", seed: 5, vocab },
    );
    // weights of a trained model's scale, so texts get distinct embeddings
    const g = gaussian(9);
    const tensors = m.tensors.map((t) => {
      const n = t.dims.reduce((a, b) => a * b, 1);
      const norm = t.name.includes("norm") && t.name.endsWith(".weight");
      const std = t.dims.length === 1 ? 0.1 : 2 / Math.sqrt(t.dims[0]);
      const v = new Float32Array(n);
      for (let i = 0; i < n; i++) v[i] = (norm ? 1 : 0) + std * g();
      return { ...t, data: new Uint8Array(v.buffer) };
    });
    const path = join(dir, `${name.replaceAll("/", "_")}.gguf`);
    await gguf.writeGguf(path, m.metadata, tensors);
    out.set(name, path);
  };
  // stories260K with FIM ids
  const stories = await gguf.readGguf(join(fixtures, "models/stories260K.gguf"));
  const fimKeys = ["fim_pre_token_id", "fim_suf_token_id", "fim_mid_token_id"].map((k, i) => ({
    key: `tokenizer.ggml.${k}`,
    type: gguf.GgufValueType.UINT32,
    value: 3 + i,
  }));
  const storyTensors = [];
  for (const t of stories.tensors)
    storyTensors.push({
      name: t.name,
      type: t.type,
      dims: t.dims,
      data: await gguf.readTensorData(stories, t),
    });
  const infill = join(dir, "stories260K-infill.gguf");
  await gguf.writeGguf(infill, [...stories.metadata.entries(), ...fimKeys], storyTensors);
  out.set("ggml-org/test-model-stories260K-infill", infill);
  await make("ggml-org/models/bert-bge-small/ggml-model-f16.gguf", 1, false);
  await make("ggml-org/models/jina-reranker-v1-tiny-en/ggml-model-f16.gguf", 4, true);
  return out;
}

/** The map as the shim reads it from MINFER_SHIM_MODELS. */
export function readShimModels(env) {
  const raw = env.MINFER_SHIM_MODELS;
  return raw ? new Map(Object.entries(JSON.parse(raw))) : new Map();
}
