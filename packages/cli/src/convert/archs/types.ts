// What each converter architecture (archs/<arch>.ts) declares; convert.ts runs it.
import type { GgufKV } from "@minfer/gguf";
import type { ConfigReader } from "../hf-config.js";
import type { TokenizerPolicy } from "../hf-tokenizer.js";

/** A vocabulary an architecture reads itself (BERT's WordPiece, XLM-RoBERTa's Unigram). */
export interface ArchVocab {
  /** The `tokenizer.*` keys. */
  metadata: GgufKV[];
  nVocab: number;
  /** `tokenizer.ggml.pre`. */
  pre: string;
  notes: string[];
}

/** Where one checkpoint tensor goes in the GGUF, and what is done to its values. */
export interface Slot {
  /** GGUF name. */
  gguf: string;
  /** The Hugging Face shape (outermost first) config.json implies. */
  shape: number[];
  /** Llama-style Q/K: rows permuted within each head of `headDim` rows (see tensor-map's permuteRows). */
  permute?: { heads: number; headDim: number };
  /** Gemma's RMSNorm multiplies by (1 + w): GGUF stores w + 1. */
  addOne?: boolean;
  /** The checkpoint may hold more rows than `shape[0]`; only the first are written (Gemma 3's embedding). */
  trimRows?: boolean;
  /** The output projection: left out when the embeddings are tied or the checkpoint has none. */
  lmHead?: boolean;
  /**
   * Rows dropped from the start of the checkpoint tensor, which has `shape[0] + skipRows` rows
   * (XLM-RoBERTa's position table starts at padding_idx + 1).
   */
  skipRows?: number;
  /** Always written as F32 (llama.cpp keeps position and token-type embeddings in F32). */
  f32?: boolean;
}

/** A checkpoint tensor renamed to its expected name, or skipped with the reason. */
export type Rename = string | { skip: string };

/** What one checkpoint of an architecture converts to. */
export interface ArchPlan {
  /** `<arch>.*` keys. */
  metadata(nVocab: number): GgufKV[];
  /** The checkpoint's tensors by (renamed) Hugging Face name. */
  tensors(nVocab: number): Map<string, Slot>;
  /** Tensors the converter computes (RoPE factors). */
  extraTensors?(): { name: string; values: Float32Array }[];
  /** Renames checkpoint tensor names (prefixes of multimodal wrappers) or skips them. */
  rename?(name: string): Rename;
  /** How the shared tokenizer reader converts the vocabulary (absent when `vocab` is given). */
  tokenizer?: TokenizerPolicy;
  /** Reads the vocabulary of checkpoint `dir` itself, instead of the shared tokenizer reader. */
  vocab?(dir: string): ArchVocab;
  /** The vocabulary size the tokenizer is padded to (config.json's or the class default). */
  vocabSize?: number;
  tied: boolean;
  /** What the conversion chose or left out, for the summary. */
  notes: string[];
}

export interface ArchSpec {
  /** `general.architecture`. */
  readonly arch: string;
  /** Hugging Face class names (config.json `architectures`). */
  readonly classes: readonly string[];
  /** `model_type` values accepted when config.json lists no architectures. */
  readonly modelTypes: readonly string[];
  /** The transformers config class defaults of keys config.json may leave out. */
  readonly defaults: Readonly<Record<string, unknown>>;
  /** Reads the config (refusing what cannot be represented) and plans the conversion. */
  plan(r: ConfigReader, source: string): ArchPlan;
}
