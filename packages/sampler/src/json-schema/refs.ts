/** Local `$ref` resolution: `#`, `#/$defs/x`, `#/definitions/x` and any other JSON pointer into the root. */

import { invalid, unsupported } from "./errors.js";

/** The schema `ref` points at within `root`; `path` is where the `$ref` is (for errors). */
export function resolveRef(root: unknown, ref: unknown, path: string): unknown {
  if (typeof ref !== "string") throw invalid("$ref", path, "must be a string");
  if (!ref.startsWith("#"))
    throw unsupported("$ref", path, `to "${ref}" is not supported (only local refs, "#/...")`);
  if (ref === "#") return root;
  if (!ref.startsWith("#/"))
    throw unsupported("$ref", path, `to "${ref}" is not supported (anchors are not)`);
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const segment = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, segment)) {
      throw invalid("$ref", path, `"${ref}" does not resolve`);
    }
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

/** The last segment of `ref` (a rule-name hint). */
export function refHint(ref: string): string {
  const last = ref.split("/").pop() ?? "";
  return last === "" || last === "#" ? "root" : last;
}
