import {
  type GgufKV,
  GgufMetadata,
  GgufValueType,
  SYNTH_PRESETS,
  type SynthLayout,
  type SynthPreset,
} from "@minfer/gguf";
import { ModelError } from "./errors.js";
import type { Hparams } from "./hparams.js";
import { architecture } from "./registry.js";

/** One `<arch>.*` key a synthetic file of an architecture gets: its suffix, GGUF type and value. */
export type SynthKey = readonly [suffix: string, type: "u32" | "f32", value: number];

/** The shapes of a synthetic model (those of `@minfer/gguf`'s presets) and the architecture's own keys. */
export interface SynthShape extends Omit<SynthPreset, "arch"> {
  /** Keys beyond the shared ones (a sliding window, soft-caps, partial rotary …); they replace the architecture's defaults. */
  readonly keys?: readonly SynthKey[];
}

/**
 * Presets of the architectures `@minfer/gguf`'s synthesizer does not know, after the published
 * configurations: Gemma-2-2B (its 256k vocabulary is the caller's: pass one).
 */
export const MODEL_SYNTH_PRESETS: Readonly<Record<string, SynthShape & { readonly arch: string }>> = {
  "gemma2-2b": {
    arch: "gemma2",
    nLayer: 26,
    nEmbd: 2304,
    nHead: 8,
    nHeadKv: 4,
    nFf: 9216,
    headDim: 256,
    tiedOutput: true,
    contextLength: 8192,
    ropeFreqBase: 10000,
    rmsEps: 1e-6,
    keys: [["attention.sliding_window", "u32", 4096]],
  },
};

/** The shape of a preset name: a model preset here, or a shape-only one of `@minfer/gguf` (tiny, small). */
export function synthShape(preset: string): SynthShape & { readonly arch?: string } {
  const own = MODEL_SYNTH_PRESETS[preset];
  if (own) return own;
  const shared = SYNTH_PRESETS[preset];
  if (!shared)
    throw new ModelError(
      "INVALID_ARGUMENT",
      `unknown preset "${preset}"; presets: ${[...Object.keys(SYNTH_PRESETS), ...Object.keys(MODEL_SYNTH_PRESETS)].join(", ")}`,
    );
  const { arch, ...shape } = shared;
  return arch ? { ...shape, arch } : shape;
}

/**
 * The layout of a random-weight file of `arch` at `shape` for `@minfer/gguf`'s `synthesizeLayout`:
 * the shared keys, the architecture's `SYNTH_KEYS` (replaced by the shape's), and the tensors its
 * own `tensorSpecs` lists (optional ones left out, `output.weight` too when tied).
 */
export function synthLayout(arch: string, shape: SynthShape, nVocab: number, label = arch): SynthLayout {
  const mod = architecture(arch);
  const hd = shape.headDim ?? shape.nEmbd / shape.nHead;
  const keys = new Map<string, SynthKey>();
  const add = (k: SynthKey) => keys.set(k[0], k);
  for (const k of [
    ["context_length", "u32", shape.contextLength],
    ["embedding_length", "u32", shape.nEmbd],
    ["block_count", "u32", shape.nLayer],
    ["feed_forward_length", "u32", shape.nFf],
    ["attention.head_count", "u32", shape.nHead],
    ["attention.head_count_kv", "u32", shape.nHeadKv],
    ["attention.key_length", "u32", hd],
    ["attention.value_length", "u32", hd],
    ["rope.dimension_count", "u32", hd],
    ["rope.freq_base", "f32", shape.ropeFreqBase],
    ["attention.layer_norm_rms_epsilon", "f32", shape.rmsEps],
    ["vocab_size", "u32", nVocab],
  ] as const)
    add(k);
  const own = typeof mod.SYNTH_KEYS === "function" ? mod.SYNTH_KEYS(hd) : (mod.SYNTH_KEYS ?? []);
  for (const k of own) add(k);
  for (const k of shape.keys ?? []) add(k);
  const metadata: GgufKV[] = [...keys.values()].map(([suffix, type, value]) => ({
    key: `${arch}.${suffix}`,
    type: type === "u32" ? GgufValueType.UINT32 : GgufValueType.FLOAT32,
    value,
  }));
  const hp: Hparams = mod.loadHparams(new GgufMetadata(metadata));
  const tensors = [...mod.tensorSpecs(hp)]
    .filter((t) => !t.optional && !(shape.tiedOutput && t.name === "output.weight"))
    .map((t) => ({ name: t.name, dims: t.ne, norm: t.kind === "vector" && t.name.includes("norm") }));
  return { arch, metadata, tensors, label };
}
