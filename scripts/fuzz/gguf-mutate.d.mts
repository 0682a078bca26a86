// Types of gguf-mutate.mjs for the TypeScript tests that import it.

/** A model to mutate: its metadata and tensors (data in memory). */
export interface FuzzSubject {
  readonly name: string;
  readonly kvs: readonly unknown[];
  readonly tensors: readonly { name: string; type: number; dims: readonly number[]; data: Uint8Array }[];
}

/** The fixtures and two synthetic BPE models; throws when a fixture is missing. */
export function loadSubjects(): FuzzSubject[];

/** One mutated file: its bytes and what was changed. */
export function mutate(subject: FuzzSubject, r: () => number): { bytes: Uint8Array; ops: string[] };

/** mulberry32. */
export function prng(seed: number): () => number;

/** The independent stream of one (seed, subject, iteration). */
export function iterationRng(seed: number, subject: number, iteration: number): () => number;
