import { GgufError } from "../errors.js";
import type { GgmlTypeInfo } from "../ggml-types.js";
import type { GgufKV, GgufMetadata } from "../metadata.js";
import { IMPORTANCE_REQUIRED_TYPES, QUANTIZE_TYPES, quantize } from "../quant/index.js";
import { chooseTypes, quantTargetByName } from "../quantize-plan.js";
import { GgufValueType } from "../value-types.js";
import type { GgufTensorToWrite } from "../write.js";
import { resolvePreset, type SynthArch } from "./presets.js";
import { SeededRandom } from "./rng.js";
import { byteVocabulary } from "./vocab.js";

/** Options of {@link synthesizeModel}. */
export interface SynthOptions {
  /** A preset name from `SYNTH_PRESETS`, e.g. `"tiny"` or `"qwen2-0.5b"`. */
  preset: string;
  /** The architecture; required for shape-only presets such as `tiny`, else implied by the preset. */
  arch?: string;
  /** Weight type name (`"f32"`, `"f16"`, `"q8_0"`, `"q4_k"`, …) or recipe (`"q4_k_m"`). Default: `"f16"`. */
  type?: string;
  /** The metadata of a vocabulary GGUF whose `tokenizer.*` keys are copied; default: 259 byte tokens. */
  vocab?: GgufMetadata;
  /** Seed of the weights. Default: 1. */
  seed?: number;
  /**
   * Elements per generated chunk, rounded down to whole rows (at least one). Chunking never
   * changes the bytes written. Default: 2^20.
   */
  chunkElements?: number;
  /**
   * Makes one chunk's bytes, e.g. on a worker thread that calls {@link synthChunk}. Without it
   * chunks are made in this thread as they are written. The bytes are the same either way.
   */
  runChunk?: (chunk: SynthChunk) => Promise<Uint8Array>;
  /** With `runChunk`: how many chunks may be in flight ahead of the one being written. Default: 8. */
  lookahead?: number;
}

/**
 * One piece of a synthesized tensor, as plain data (it crosses to worker threads): elements
 * `offset..offset+count` of the tensor's normal stream, encoded as ggml type `type`.
 */
export interface SynthChunk {
  /** Seed of the tensor's stream. */
  readonly seed: number;
  readonly mean: number;
  readonly std: number;
  /** ggml type id of the output. */
  readonly type: number;
  /** Index of the chunk's first element in the tensor (whole rows). */
  readonly offset: number;
  readonly count: number;
}

/**
 * The bytes of one chunk, independent of every other chunk: its generator state is derived
 * from the tensor seed by jumping ahead, so chunks can be made in any order and on any thread.
 */
export function synthChunk(chunk: SynthChunk): Uint8Array {
  const values = new Float32Array(chunk.count);
  SeededRandom.atNormal(chunk.seed, chunk.offset).fillNormal(values, chunk.mean, chunk.std);
  return quantize(chunk.type, values);
}

/** A model ready for `writeGguf`, and the tensors that did not get the requested type. */
export interface SynthModel {
  readonly metadata: GgufKV[];
  readonly tensors: GgufTensorToWrite[];
  readonly notes: string[];
}

interface WeightSpec {
  name: string;
  dims: number[];
  /** Norm weights are drawn around 1, everything else around 0. */
  mean: number;
}

const STD = 0.02;
const u32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.UINT32, value });
const f32 = (key: string, value: number): GgufKV => ({ key, type: GgufValueType.FLOAT32, value });
const str = (key: string, value: string): GgufKV => ({ key, type: GgufValueType.STRING, value });

function weights(
  arch: SynthArch,
  p: ReturnType<typeof resolvePreset>["preset"],
  nVocab: number,
): WeightSpec[] {
  const hd = p.headDim ?? p.nEmbd / p.nHead;
  const w = (name: string, ...dims: number[]): WeightSpec => ({ name, dims, mean: 0 });
  const norm = (name: string, n: number): WeightSpec => ({ name, dims: [n], mean: 1 });
  const out: WeightSpec[] = [w("token_embd.weight", p.nEmbd, nVocab), norm("output_norm.weight", p.nEmbd)];
  if (!p.tiedOutput) out.push(w("output.weight", p.nEmbd, nVocab));
  for (let i = 0; i < p.nLayer; i++) {
    const b = `blk.${i}.`;
    out.push(norm(`${b}attn_norm.weight`, p.nEmbd));
    out.push(w(`${b}attn_q.weight`, p.nEmbd, p.nHead * hd));
    out.push(w(`${b}attn_k.weight`, p.nEmbd, p.nHeadKv * hd));
    out.push(w(`${b}attn_v.weight`, p.nEmbd, p.nHeadKv * hd));
    if (arch === "qwen2") {
      out.push(w(`${b}attn_q.bias`, p.nHead * hd));
      out.push(w(`${b}attn_k.bias`, p.nHeadKv * hd));
      out.push(w(`${b}attn_v.bias`, p.nHeadKv * hd));
    }
    if (arch === "qwen3") {
      out.push(norm(`${b}attn_q_norm.weight`, hd));
      out.push(norm(`${b}attn_k_norm.weight`, hd));
    }
    out.push(w(`${b}attn_output.weight`, p.nHead * hd, p.nEmbd));
    out.push(norm(`${b}ffn_norm.weight`, p.nEmbd));
    out.push(w(`${b}ffn_gate.weight`, p.nEmbd, p.nFf));
    out.push(w(`${b}ffn_up.weight`, p.nEmbd, p.nFf));
    out.push(w(`${b}ffn_down.weight`, p.nFf, p.nEmbd));
  }
  return out;
}

/** Rows per chunk: about `chunkElements` elements, whole rows, so chunks quantize independently. */
function chunksOf(spec: WeightSpec, type: GgmlTypeInfo, seed: number, chunkElements: number): SynthChunk[] {
  const row = spec.dims[0]!;
  const rows = spec.dims.length > 1 ? spec.dims[1]! : 1;
  const perChunk = Math.max(1, Math.floor(chunkElements / row));
  const out: SynthChunk[] = [];
  for (let r = 0; r < rows; r += perChunk) {
    const count = Math.min(perChunk, rows - r) * row;
    out.push({ seed, mean: spec.mean, std: STD, type: type.id, offset: r * row, count });
  }
  return out;
}

/** A tensor's chunks in this thread, from one continuous stream. */
function* generate(chunks: SynthChunk[], rng: SeededRandom): Generator<Uint8Array> {
  for (const c of chunks) {
    const values = new Float32Array(c.count);
    rng.fillNormal(values, c.mean, c.std);
    yield quantize(c.type, values);
  }
}

/**
 * Runs chunks through `run` in file order with up to `lookahead` started ahead of the one being
 * consumed, so memory stays bounded. Reading out of order (or twice) works: it just restarts there.
 */
function scheduler(all: SynthChunk[], run: (c: SynthChunk) => Promise<Uint8Array>, lookahead: number) {
  const results = new Map<number, Promise<Uint8Array>>();
  let started = 0;
  return (g: number): Promise<Uint8Array> => {
    if (!results.has(g)) {
      results.clear();
      started = g;
    }
    for (const k of results.keys()) if (k < g) results.delete(k);
    for (; started < Math.min(g + 1 + lookahead, all.length); started++) {
      const r = run(all[started]!);
      r.catch(() => {}); // awaited in order; no unhandled rejection meanwhile
      results.set(started, r);
    }
    const r = results.get(g)!;
    results.delete(g);
    return r;
  };
}

/** A model's own layout for {@link synthesizeLayout}: its `<arch>.*` keys and tensors. */
export interface SynthLayout {
  /** `general.architecture`. */
  readonly arch: string;
  /** Its hyperparameter keys (`<arch>.*`); `general.*` and the tokenizer's are added. */
  readonly metadata: readonly GgufKV[];
  /** Its tensors in file order: norm weights are drawn around 1, everything else around 0. */
  readonly tensors: readonly {
    readonly name: string;
    readonly dims: readonly number[];
    readonly norm?: boolean;
  }[];
  /** Named in `general.name`. */
  readonly label: string;
}

/** The options of {@link synthesizeModel} a layout is written with (its shapes come from the layout). */
export type SynthLayoutOptions = Omit<SynthOptions, "preset" | "arch">;

/** The tokenizer keys of `vocab` (or 259 byte tokens) and their size. */
function vocabularyOf(vocab: GgufMetadata | undefined): { keys: GgufKV[]; nVocab: number } {
  const keys = vocab
    ? [...vocab.entries()].filter((kv) => kv.key.startsWith("tokenizer."))
    : byteVocabulary();
  const tokens = keys.find((kv) => kv.key === "tokenizer.ggml.tokens");
  const nVocab = tokens && typeof tokens.value === "object" ? tokens.value.items.length : 0;
  if (nVocab === 0)
    throw new GgufError("MISSING_KEY", "the vocabulary has no tokenizer.ggml.tokens", {
      key: "tokenizer.ggml.tokens",
    });
  return { keys, nVocab };
}

/** The vocabulary size {@link synthesizeLayout} will see for `vocab` (what a layout's shapes need). */
export function synthVocabSize(vocab: GgufMetadata | undefined): number {
  return vocabularyOf(vocab).nVocab;
}

/**
 * Refuses a type `quantize` cannot write from random weights: one it has no quantizer for, or
 * one written only from an importance matrix (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS).
 */
function checkSynthType(type: GgmlTypeInfo): void {
  const supported = QUANTIZE_TYPES.filter((t) => !IMPORTANCE_REQUIRED_TYPES.includes(t));
  if (!supported.includes(type.name)) {
    const why = QUANTIZE_TYPES.includes(type.name) ? " (it is written only from an importance matrix)" : "";
    throw new GgufError(
      "UNSUPPORTED_DTYPE",
      `cannot write weights as ${type.name}${why}; supported: ${supported.join(", ")}`,
    );
  }
}

/**
 * Describes a model of random weights (normal, std 0.02; norm weights near 1) with a layout
 * given by the caller (an architecture `@minfer/models` knows and this package does not).
 */
export function synthesizeLayout(layout: SynthLayout, options: SynthLayoutOptions = {}): SynthModel {
  const target = quantTargetByName(options.type ?? "f16");
  checkSynthType(target.base);
  const { keys } = vocabularyOf(options.vocab);
  const fileType = target.fileType;
  const metadata: GgufKV[] = [
    str("general.architecture", layout.arch),
    str("general.name", `minfer synth ${layout.label} (random weights)`),
    ...(fileType !== undefined ? [u32("general.file_type", fileType)] : []),
    ...(target.base.quantized ? [u32("general.quantization_version", 2)] : []),
    ...layout.metadata,
    ...keys,
  ];
  const specs: WeightSpec[] = layout.tensors.map((t) => ({
    name: t.name,
    dims: [...t.dims],
    mean: t.norm ? 1 : 0,
  }));
  return synthesize(metadata, specs, target, options);
}

function synthesize(
  metadata: GgufKV[],
  specs: WeightSpec[],
  target: ReturnType<typeof quantTargetByName>,
  options: SynthLayoutOptions,
): SynthModel {
  const seed = options.seed ?? 1;
  const chunkElements = options.chunkElements ?? 1 << 20;
  const notes: string[] = [];
  const types = chooseTypes(specs, target);
  const chunks = specs.map((spec, i) => {
    const { to, note } = types[i]!;
    if (note) notes.push(`${spec.name}: ${note}`);
    // Each tensor has its own stream, so its values do not depend on the order tensors are made in.
    return chunksOf(spec, to, (seed ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0, chunkElements);
  });
  const run = options.runChunk;
  const next = run && scheduler(chunks.flat(), run, Math.max(0, options.lookahead ?? 8));
  let first = 0;
  // Vectors (norms, biases) are F32 whatever the type, as llama.cpp writes them.
  const tensors = specs.map((spec, i): GgufTensorToWrite => {
    const mine = chunks[i]!;
    const type = mine[0]!.type;
    const base = first;
    first += mine.length;
    const data = next
      ? async function* () {
          for (let k = 0; k < mine.length; k++) yield await next(base + k);
        }
      : () => generate(mine, new SeededRandom(mine[0]!.seed));
    return { name: spec.name, type, dims: spec.dims, data };
  });
  return { metadata, tensors, notes };
}

/**
 * Describes a model of random weights (normal, std 0.02; norm weights near 1) at a preset's
 * shapes, with the tokenizer of a vocabulary GGUF. Data is generated lazily while it is written,
 * so presets of billions of parameters stream straight to disk.
 */
export function synthesizeModel(options: SynthOptions): SynthModel {
  const { preset, arch } = resolvePreset(options.preset, options.arch);
  const target = quantTargetByName(options.type ?? "f16");
  checkSynthType(target.base);
  const { keys: vocab, nVocab } = vocabularyOf(options.vocab);
  const hd = preset.headDim ?? preset.nEmbd / preset.nHead;
  const fileType = target.fileType;
  const metadata: GgufKV[] = [
    str("general.architecture", arch),
    str("general.name", `minfer synth ${options.preset} (random weights)`),
    ...(fileType !== undefined ? [u32("general.file_type", fileType)] : []),
    ...(target.base.quantized ? [u32("general.quantization_version", 2)] : []),
    u32(`${arch}.context_length`, preset.contextLength),
    u32(`${arch}.embedding_length`, preset.nEmbd),
    u32(`${arch}.block_count`, preset.nLayer),
    u32(`${arch}.feed_forward_length`, preset.nFf),
    u32(`${arch}.attention.head_count`, preset.nHead),
    u32(`${arch}.attention.head_count_kv`, preset.nHeadKv),
    u32(`${arch}.attention.key_length`, hd),
    u32(`${arch}.attention.value_length`, hd),
    u32(`${arch}.rope.dimension_count`, hd),
    f32(`${arch}.rope.freq_base`, preset.ropeFreqBase),
    f32(`${arch}.attention.layer_norm_rms_epsilon`, preset.rmsEps),
    u32(`${arch}.vocab_size`, nVocab),
    ...vocab,
  ];
  return synthesize(metadata, weights(arch, preset, nVocab), target, options);
}
