// A sequence's saved state as a file (the server's `POST /slots/{id}?action=save|restore`, the
// CLI's `--prompt-cache FILE`): llama.cpp's sequence-state file header — magic "ggsq", version, the token list as 32-bit words (packed:
// a null token, its version and the count first; or, as older llama-servers wrote it, the tokens
// alone) — then the engine's own sequence state (its magic, version and CRC-32 checked when read).
// The header is llama.cpp's so tools that read a slot file's tokens read minfer's; the K/V data is
// minfer's own and only restores into a context over the same model and KV type.

import { EngineError } from "./errors.js";

/** llama.cpp's LLAMA_STATE_SEQ_MAGIC ("ggsq") and LLAMA_STATE_SEQ_VERSION, the header's first words. */
export const SEQUENCE_FILE_MAGIC = 0x67677371;
export const SEQUENCE_FILE_VERSION = 3;
/** The packed token list's first word (llama.cpp's LLAMA_TOKEN_NULL) and its version. */
const TOKEN_NULL = 0xffffffff;
const PACKED_VERSION = 1;
const HEADER_BYTES = 12;

/** The file of a sequence: its tokens and its state (`Context.saveSequence`). */
export function writeSequenceFile(tokens: readonly number[], state: Uint8Array): Uint8Array {
  const words = 3 + tokens.length;
  const out = new Uint8Array(HEADER_BYTES + words * 4 + state.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, SEQUENCE_FILE_MAGIC, true);
  v.setUint32(4, SEQUENCE_FILE_VERSION, true);
  v.setUint32(8, words, true);
  v.setUint32(12, TOKEN_NULL, true);
  v.setUint32(16, PACKED_VERSION, true);
  v.setUint32(20, tokens.length, true);
  for (let i = 0; i < tokens.length; i++) v.setUint32(24 + i * 4, tokens[i]!, true);
  out.set(state, HEADER_BYTES + words * 4);
  return out;
}

/**
 * A sequence file's tokens and state (for `Context.restoreSequence`, which checks the state);
 * throws an {@link EngineError} INVALID_ARGUMENT saying what is wrong with a file that is not one.
 */
export function readSequenceFile(bytes: Uint8Array): { tokens: number[]; state: Uint8Array } {
  const bad = (m: string): never => {
    throw new EngineError("INVALID_ARGUMENT", m);
  };
  if (bytes.length < HEADER_BYTES) bad(`${bytes.length} bytes is too short for a sequence file`);
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (v.getUint32(0, true) !== SEQUENCE_FILE_MAGIC) bad("not a sequence-state file (no ggsq magic)");
  const version = v.getUint32(4, true);
  if (version !== SEQUENCE_FILE_VERSION)
    bad(`sequence file version ${version}; this version of minfer reads ${SEQUENCE_FILE_VERSION}`);
  const words = v.getUint32(8, true);
  const end = HEADER_BYTES + words * 4;
  if (end > bytes.length) bad(`the token list of ${words} words runs past the file's ${bytes.length} bytes`);
  let first = 0;
  let count = words;
  if (words >= 3 && v.getUint32(12, true) === TOKEN_NULL) {
    const packed = v.getUint32(16, true);
    if (packed !== PACKED_VERSION)
      bad(`packed token list version ${packed}; this version of minfer reads ${PACKED_VERSION}`);
    count = v.getUint32(20, true);
    if (count !== words - 3) bad(`the packed token list says ${count} tokens in ${words - 3} words`);
    first = 3;
  }
  const tokens = Array.from({ length: count }, (_, i) => v.getUint32(HEADER_BYTES + (first + i) * 4, true));
  const state = bytes.subarray(end);
  if (state.length === 0) bad("the file holds tokens but no state");
  return { tokens, state };
}
