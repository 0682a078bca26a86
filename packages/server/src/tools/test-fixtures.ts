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

/** minfer's own small templates of the formats no fixture model shows: packages/server/test-fixtures/templates. */
export const OWN_TEMPLATES = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../test-fixtures/templates",
);

/** The source of minfer's own test template `file`. */
export function ownTemplateSource(file: string): string {
  return readFileSync(resolve(OWN_TEMPLATES, file), "utf8");
}
