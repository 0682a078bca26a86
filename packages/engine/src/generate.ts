import type { Context } from "./context.js";

/** The index of the largest logit (the first on ties). */
export function argmax(logits: Float32Array): number {
  let best = 0;
  for (let i = 1; i < logits.length; i++) if (logits[i]! > logits[best]!) best = i;
  return best;
}

/**
 * Greedy generation: prefills `promptIds` in one decode call, then decodes one token per call,
 * always taking the argmax. Stops after `maxTokens` tokens or at an end-of-generation token
 * (the tokenizer's `isEog` by default; it is not returned). Returns the generated ids.
 */
export async function greedy(
  context: Context,
  promptIds: readonly number[],
  maxTokens: number,
  isEog: (id: number) => boolean = (id) => context.model.tokenizer.isEog(id),
): Promise<number[]> {
  const out: number[] = [];
  if (maxTokens <= 0) return out;
  let logits = await context.decode(promptIds);
  for (;;) {
    const id = argmax(logits);
    if (isEog(id)) break;
    out.push(id);
    if (out.length >= maxTokens) break;
    logits = await context.decode([id]);
  }
  return out;
}
