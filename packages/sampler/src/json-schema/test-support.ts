/**
 * Test support for the JSON Schema converter: random documents drawn from a grammar's AST (independent of
 * the grammar matcher), random byte-by-byte walks through the grammar's TokenConstraint over a 256-byte
 * vocabulary (the path generation takes), and ajv validators.
 */

import { Ajv } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import type { ConstraintVocab } from "../constraint.js";
import type { Expr, Grammar, RuleDef, Sequence } from "../grammar/index.js";
import { parseRules } from "../grammar/parse.js";

/** An ajv validator for `schema` (draft 2020-12, or draft-07 for the old tuple form), formats in full mode. */
export function validator(schema: unknown, draft: "2020" | "07" = "2020"): (doc: unknown) => boolean {
  const ajv = draft === "2020" ? new Ajv2020({ strict: false }) : new Ajv({ strict: false });
  (addFormats as unknown as (a: unknown) => void)(ajv);
  const validate = ajv.compile(schema as object);
  return (doc) => validate(doc) === true;
}

/** Code points tried for a negated class (those the class allows are candidates). */
const POOL = [...'abcxyzABZ019 -_.,:;{}[]"\\/~!?#\u007féß€中😀\t\n'].map((c) => c.codePointAt(0)!);

/** Random texts from GBNF `text`'s rule `root`: alternatives and repetition counts drawn from `rand`. */
export class RandomTexts {
  private readonly rules = new Map<string, RuleDef>();
  /** The fewest code points each rule can produce (for steering deep derivations towards an end). */
  private readonly minLen = new Map<string, number>();

  constructor(text: string) {
    for (const r of parseRules(text)) this.rules.set(r.name, r);
    for (const r of this.rules.keys()) this.minLen.set(r, Infinity);
    for (let changed = true; changed; ) {
      changed = false;
      for (const [name, r] of this.rules) {
        const n = Math.min(...r.alternatives.map((s) => this.seqLen(s)));
        if (n < this.minLen.get(name)!) {
          this.minLen.set(name, n);
          changed = true;
        }
      }
    }
  }

  private seqLen(s: Sequence): number {
    return s.reduce((n, e) => n + this.exprLen(e), 0);
  }

  private exprLen(e: Expr): number {
    switch (e.kind) {
      case "literal":
        return e.chars.length;
      case "class":
        return 1;
      case "ref":
        return this.minLen.get(e.name)!;
      case "group":
        return Math.min(...e.alternatives.map((s) => this.seqLen(s)));
      case "repeat":
        return e.min === 0 ? 0 : e.min * this.exprLen(e.item);
    }
  }

  /** One random text; past `maxDepth` rule references every choice is the shortest. */
  draw(rand: () => number, maxDepth = 10): string {
    const out: number[] = [];
    this.ref("root", 0, rand, maxDepth, out);
    return String.fromCodePoint(...out);
  }

  private ref(name: string, depth: number, rand: () => number, maxDepth: number, out: number[]): void {
    const r = this.rules.get(name);
    if (r === undefined) throw new Error(`undefined rule ${name}`);
    this.alternatives(r.alternatives, depth + 1, rand, maxDepth, out);
  }

  private alternatives(
    alts: readonly Sequence[],
    depth: number,
    rand: () => number,
    maxDepth: number,
    out: number[],
  ) {
    let pick: Sequence;
    if (depth > maxDepth) {
      pick = alts.reduce((a, b) => (this.seqLen(b) < this.seqLen(a) ? b : a));
    } else pick = alts[Math.floor(rand() * alts.length)]!;
    for (const e of pick) this.expr(e, depth, rand, maxDepth, out);
  }

  private expr(e: Expr, depth: number, rand: () => number, maxDepth: number, out: number[]): void {
    switch (e.kind) {
      case "literal":
        out.push(...e.chars);
        return;
      case "class": {
        if (e.negated) {
          const ok = POOL.filter((cp) => !e.ranges.some((r) => cp >= r.lo && cp <= r.hi));
          out.push(ok[Math.floor(rand() * ok.length)]!);
        } else {
          const r = e.ranges[Math.floor(rand() * e.ranges.length)]!;
          out.push(r.lo + Math.floor(rand() * (r.hi - r.lo + 1)));
        }
        return;
      }
      case "ref":
        this.ref(e.name, depth, rand, maxDepth, out);
        return;
      case "group":
        this.alternatives(e.alternatives, depth, rand, maxDepth, out);
        return;
      case "repeat": {
        let n = e.min;
        if (depth <= maxDepth) while (n < e.max && n < e.min + 6 && rand() < 0.5) n++;
        for (let i = 0; i < n; i++) this.expr(e.item, depth, rand, maxDepth, out);
      }
    }
  }
}

/** A vocabulary of the 256 single bytes plus one end-of-generation token (256). */
export const BYTE_VOCAB: ConstraintVocab = {
  size: 257,
  tokenBytes: (id) => (id < 256 ? Uint8Array.of(id) : new Uint8Array(0)),
  isEog: (id) => id === 256,
};

/** Bytes a walk favours, so that strings and containers end in reasonable time. */
const FAVOURED = new Set([...'"}],:0123456789tfn'].map((c) => c.charCodeAt(0)));

/**
 * A random generation through `grammar`'s TokenConstraint over BYTE_VOCAB: at each step the mask says
 * which bytes may come next, one is drawn (EOG half the time once allowed), and accepted. Returns the
 * decoded text, or undefined when it ran past `maxBytes`.
 */
export function byteWalk(grammar: Grammar, rand: () => number, maxBytes = 4000): string | undefined {
  const c = grammar.constraint(BYTE_VOCAB);
  const bytes: number[] = [];
  const logits = new Float32Array(257);
  while (bytes.length < maxBytes) {
    if (c.isComplete() && (c.isExhausted() || rand() < 0.5))
      return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(bytes));
    logits.fill(0);
    c.mask(logits);
    const allowed: number[] = [];
    let total = 0;
    for (let id = 0; id < 256; id++) {
      if (logits[id] === -Infinity) continue;
      allowed.push(id);
      total += FAVOURED.has(id) ? 40 : 1;
    }
    if (allowed.length === 0) throw new Error(`walk stuck after ${JSON.stringify(bytes)}`);
    let x = rand() * total;
    let pick = allowed[allowed.length - 1]!;
    for (const id of allowed) {
      x -= FAVOURED.has(id) ? 40 : 1;
      if (x < 0) {
        pick = id;
        break;
      }
    }
    if (!c.allows(pick)) throw new Error(`mask allowed byte ${pick} that allows() refuses`);
    c.accept(pick);
    bytes.push(pick);
  }
  return undefined;
}

/** Feeds `text`'s bytes to a fresh constraint; whether every byte and then EOG were allowed. */
export function constraintAccepts(grammar: Grammar, text: string): boolean {
  const c = grammar.constraint(BYTE_VOCAB);
  for (const b of new TextEncoder().encode(text)) {
    if (!c.allows(b)) return false;
    c.accept(b);
  }
  return c.allows(256);
}
