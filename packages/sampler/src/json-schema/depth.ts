/** How deeply a schema document nests, found without recursion (converting it recurses on it). */

import { child, SchemaError } from "./errors.js";
import { MAX_DEPTH } from "./limits.js";

/**
 * Refuses a schema nesting more than {@link MAX_DEPTH} objects and arrays inside one another (JSON values
 * in `enum` / `const` included), and one that contains itself (only a JavaScript object can), with
 * SCHEMA_UNSUPPORTED naming the deepest place.
 */
export function checkDepth(schema: unknown): void {
  // Post-order over the objects and arrays, each once: its height is 1 + its tallest child's.
  const height = new Map<object, number>();
  const open = new Set<object>();
  const stack: { value: object; key: string; expanded: boolean }[] = [];
  const push = (v: unknown, key: string) => {
    if (typeof v === "object" && v !== null) stack.push({ value: v, key, expanded: false });
  };
  push(schema, "");
  while (stack.length > 0) {
    const top = stack[stack.length - 1]!;
    if (height.has(top.value)) {
      stack.pop();
      continue;
    }
    const kids = Object.values(top.value) as unknown[];
    if (!top.expanded) {
      top.expanded = true;
      open.add(top.value);
      for (const [key, k] of Object.entries(top.value)) {
        if (typeof k !== "object" || k === null) continue;
        if (open.has(k)) {
          throw new SchemaError("SCHEMA_INVALID", "", "#", "the schema contains itself (it is not JSON)");
        }
        push(k, key);
      }
      continue;
    }
    stack.pop();
    open.delete(top.value);
    let h = 0;
    for (const k of kids) if (typeof k === "object" && k !== null) h = Math.max(h, height.get(k)!);
    height.set(top.value, h + 1);
    if (h + 1 > MAX_DEPTH) {
      // The path: the open objects above this one, then down along the tallest children.
      const above = stack.filter((e) => e.expanded);
      const keys = above.length === 0 ? [] : [...above.slice(1).map((e) => e.key), top.key];
      throw tooDeep(top.value, keys, height);
    }
  }
}

/** The error, at the deepest place: `keys` down to `node`, then along its tallest children. */
function tooDeep(node: unknown, keys: string[], height: Map<object, number>): SchemaError {
  let path = keys.reduce((p, k) => child(p, k), "#");
  while (typeof node === "object" && node !== null) {
    let best: [string, object] | undefined;
    for (const [key, v] of Object.entries(node)) {
      if (typeof v !== "object" || v === null) continue;
      if (best === undefined || height.get(v)! > height.get(best[1])!) best = [key, v];
    }
    if (best === undefined) break;
    path = child(path, best[0]);
    node = best[1];
  }
  return new SchemaError(
    "SCHEMA_UNSUPPORTED",
    "",
    path,
    `the schema nests objects and arrays more than ${MAX_DEPTH} deep`,
  );
}
