// llama.cpp's "preserved tokens": a chat format's markers that a model's vocabulary may hold as
// control tokens (Mistral's [TOOL_CALLS], Llama 3's <|python_tag|>, Command R's <|START_ACTION|>, …).
// Control tokens render as nothing in generated text, so without this the call and reasoning
// parsers would never see those markers.

import { type Tokenizer, TokenType } from "@minfer/tokenizer";

/** The single control tokens among `markers` in this vocabulary; undefined when none is one. */
export function preservedTokens(
  tokenizer: Tokenizer,
  markers: readonly string[],
): ReadonlySet<number> | undefined {
  const ids = new Set<number>();
  // (looked up by text, not tokenized: a request is refused by its size before anything is tokenized)
  for (const m of markers) {
    const id = tokenizer.vocab.ids.get(m);
    if (id !== undefined && tokenizer.vocab.types[id] === TokenType.CONTROL) ids.add(id);
  }
  return ids.size > 0 ? ids : undefined;
}
