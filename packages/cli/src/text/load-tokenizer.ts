import { readGguf } from "@minfer/gguf";
import { Tokenizer } from "@minfer/tokenizer";
import { resolveModelPath } from "../hub/commands.js";

/** The tokenizer of the GGUF at `model` (a path or hf://…; only its header is read). */
export async function loadTokenizer(
  model: string,
): Promise<{ tokenizer: Tokenizer; metadata: Awaited<ReturnType<typeof readGguf>>["metadata"] }> {
  const file = await readGguf(await resolveModelPath(model));
  return { tokenizer: Tokenizer.fromMetadata(file.metadata), metadata: file.metadata };
}
