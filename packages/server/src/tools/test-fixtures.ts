/** Test support: the fixture chat templates. */

import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** The fixture templates: $MINFER_FIXTURES/templates, or ../shared/fixtures/templates beside the repository. */
export const TEMPLATES = resolve(
  process.env.MINFER_FIXTURES ??
    resolve(dirname(fileURLToPath(import.meta.url)), "../../../../../shared/fixtures"),
  "templates",
);

/** The source of fixture template `file`. */
export function templateSource(file: string): string {
  return readFileSync(resolve(TEMPLATES, file), "utf8");
}
