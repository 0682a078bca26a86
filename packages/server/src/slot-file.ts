// A slot's saved state as a file (`POST /slots/{id}?action=save|restore`): llama.cpp's
// sequence-state file header — magic "ggsq", version, the token list as 32-bit words (packed:
// a null token, its version and the count first; or, as older llama-servers wrote it, the tokens
// alone) — then the engine's own sequence state (its magic, version and CRC-32 checked when read).
// The header is llama.cpp's so tools that read a slot file's tokens read minfer's; the K/V data is
// minfer's own and only restores into a context over the same model and KV type.

/** llama.cpp's LLAMA_STATE_SEQ_MAGIC ("ggsq") and LLAMA_STATE_SEQ_VERSION, the header's first words. */
export const SLOT_FILE_MAGIC = 0x67677371;
export const SLOT_FILE_VERSION = 3;
/** The packed token list's first word (llama.cpp's LLAMA_TOKEN_NULL) and its version. */
const TOKEN_NULL = 0xffffffff;
const PACKED_VERSION = 1;
const HEADER_BYTES = 12;

/** The file of a slot: its tokens and the engine's state of its sequence. */
export function writeSlotFile(tokens: readonly number[], state: Uint8Array): Uint8Array {
  const words = 3 + tokens.length;
  const out = new Uint8Array(HEADER_BYTES + words * 4 + state.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, SLOT_FILE_MAGIC, true);
  v.setUint32(4, SLOT_FILE_VERSION, true);
  v.setUint32(8, words, true);
  v.setUint32(12, TOKEN_NULL, true);
  v.setUint32(16, PACKED_VERSION, true);
  v.setUint32(20, tokens.length, true);
  for (let i = 0; i < tokens.length; i++) v.setUint32(24 + i * 4, tokens[i]!, true);
  out.set(state, HEADER_BYTES + words * 4);
  return out;
}

/** A slot file's tokens and state; throws an Error saying what is wrong with a file that is not one. */
export function readSlotFile(bytes: Uint8Array): { tokens: number[]; state: Uint8Array } {
  if (bytes.length < HEADER_BYTES) throw new Error(`${bytes.length} bytes is too short for a slot file`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (v.getUint32(0, true) !== SLOT_FILE_MAGIC) throw new Error("not a slot file (no ggsq magic)");
  const version = v.getUint32(4, true);
  if (version !== SLOT_FILE_VERSION)
    throw new Error(`slot file version ${version}; this server reads ${SLOT_FILE_VERSION}`);
  const words = v.getUint32(8, true);
  const end = HEADER_BYTES + words * 4;
  if (end > bytes.length)
    throw new Error(`the token list of ${words} words runs past the file's ${bytes.length} bytes`);
  let first = 0;
  let count = words;
  if (words >= 3 && v.getUint32(12, true) === TOKEN_NULL) {
    const packed = v.getUint32(16, true);
    if (packed !== PACKED_VERSION)
      throw new Error(`packed token list version ${packed}; this server reads ${PACKED_VERSION}`);
    count = v.getUint32(20, true);
    if (count !== words - 3)
      throw new Error(`the packed token list says ${count} tokens in ${words - 3} words`);
    first = 3;
  }
  const tokens = Array.from({ length: count }, (_, i) => v.getUint32(HEADER_BYTES + (first + i) * 4, true));
  const state = bytes.subarray(end);
  if (state.length === 0) throw new Error("the file holds tokens but no state");
  return { tokens, state };
}
