import { existsSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * The shared test fixtures (../shared/fixtures beside the repository, or MINFER_FIXTURES).
 * Test-only: not exported from the package.
 */
export function fixturesDir(): string {
  const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");
  const dir = process.env.MINFER_FIXTURES ?? resolve(repo, "../shared/fixtures");
  if (!existsSync(dir)) throw new Error(`test fixtures not found at ${dir}; set MINFER_FIXTURES`);
  return dir;
}
