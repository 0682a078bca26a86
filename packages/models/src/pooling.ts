import type { GgufMetadata } from "@minfer/gguf";
import { guard } from "./arch-keys.js";
import { ModelError } from "./errors.js";

/**
 * How an embedding model turns a sequence's hidden states into one vector: `none` (every token's
 * own), `mean` (their average), `cls` (the first token's), `last` (the last token's) or `rank`
 * (the first token's through the model's classifier head: a relevance score).
 */
export type Pooling = "none" | "mean" | "cls" | "last" | "rank";

/** The poolings, by the value llama.cpp writes to `<arch>.pooling_type` (its enum llama_pooling_type). */
export const POOLING_BY_ID: readonly Pooling[] = ["none", "mean", "cls", "last", "rank"];

/** Every pooling's name. */
export const POOLINGS: readonly Pooling[] = POOLING_BY_ID;

/** `<arch>.pooling_type`, or undefined when the file has none (or llama.cpp's "unspecified", -1). */
export function readPooling(meta: GgufMetadata, arch: string): Pooling | undefined {
  const key = `${arch}.pooling_type`;
  const id = guard(key, () => meta.optInteger(key));
  if (id === undefined || id === -1) return undefined;
  const p = POOLING_BY_ID[id];
  if (p === undefined)
    throw new ModelError(
      "BAD_KEY",
      `metadata key "${key}" is ${id}; expected 0…${POOLING_BY_ID.length - 1} (${POOLING_BY_ID.join(", ")})`,
      { key },
    );
  return p;
}
