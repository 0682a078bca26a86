import { execFile } from "node:child_process";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));

/** The built CLI the tests run (`turbo run build` makes it). */
export const bin = resolve(here, "../dist/bin.js");

/** The shared test data: $MINFER_FIXTURES, or ../shared/fixtures beside the repository. */
export const fixtures = process.env.MINFER_FIXTURES ?? resolve(here, "../../../../shared/fixtures");

/** What a CLI run left. */
export interface Result {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs the built CLI with `args`; a failing exit is a result too, not a rejection. */
export async function minfer(...args: string[]): Promise<Result> {
  return minferWithEnv(process.env, ...args);
}

/** As {@link minfer}, with the child's environment `env`. */
export async function minferWithEnv(env: NodeJS.ProcessEnv, ...args: string[]): Promise<Result> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [bin, ...args], {
      maxBuffer: 64 << 20,
      env,
    });
    return { code: 0, stdout, stderr };
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string };
    return { code: err.code, stdout: err.stdout, stderr: err.stderr };
  }
}

/**
 * A legacy .dat importance matrix (llama-imatrix --output-format dat) of the given entries: for
 * each, its name, one call and its per-column values.
 */
export function imatrixDat(entries: readonly { name: string; values: Float32Array }[]): Uint8Array {
  const parts: Uint8Array[] = [];
  const i32 = (v: number) => {
    const b = new Uint8Array(4);
    new DataView(b.buffer).setInt32(0, v, true);
    parts.push(b);
  };
  i32(entries.length);
  for (const e of entries) {
    const name = new TextEncoder().encode(e.name);
    i32(name.length);
    parts.push(name);
    i32(1);
    i32(e.values.length);
    parts.push(new Uint8Array(e.values.buffer.slice(0)));
  }
  return Buffer.concat(parts);
}
