import { readGguf } from "@minfer/gguf";
import { Tokenizer } from "@minfer/tokenizer";

/** The tokenizer of the GGUF at `path` (only its header is read). */
export async function loadTokenizer(
  path: string,
): Promise<{ tokenizer: Tokenizer; metadata: Awaited<ReturnType<typeof readGguf>>["metadata"] }> {
  const file = await readGguf(path);
  return { tokenizer: Tokenizer.fromMetadata(file.metadata), metadata: file.metadata };
}
