import { SamplerError } from "../errors.js";
import { END, type Program, refRule } from "./compile.js";
import { MAX_STATE_PARSES } from "./limits.js";
import { PairTable } from "./pair-table.js";
import { INVALID, NO_PARTIAL, partialHigh, partialLow, utf8Step } from "./utf8.js";

/** The state id of "no stack survives". */
export const DEAD = -1;
const UNKNOWN = -2;

/** One interned set of stacks: a matcher state. */
interface StateSet {
  /** Interned stack ids, ascending; 0 is the empty stack (the root is complete). */
  readonly stacks: Int32Array;
  readonly complete: boolean;
  /** Some stack still expects a character. */
  readonly live: boolean;
  /** Next state per ASCII code point ({@link UNKNOWN} until computed). */
  readonly ascii: Int32Array;
  readonly other: Map<number, number>;
  /** Whether a character under way (packed partial UTF-8) can still complete to an accepted one. */
  readonly partialOk: Map<number, boolean>;
}

/**
 * The pushdown matcher of a {@link Program}, as llama.cpp's grammar matcher works: a state is the
 * set of stacks of grammar positions, each stack's top at a character set, expanded through rule
 * references. Stacks are interned (a stack is `(position, rest)`, shared), and so are sets, so a
 * state is a small integer and transitions on a code point are cached per state.
 */
export class Matcher {
  readonly program: Program;
  private readonly code: Int32Array;
  private nodePos = new Int32Array(1024);
  private nodeNext = new Int32Array(1024);
  private nodeCount = 1; // node 0: the empty stack
  /** (position, rest) → node. */
  private readonly nodeIndex = new PairTable();
  private readonly sets: StateSet[] = [];
  /** States by a hash of their stacks (several when hashes collide). */
  private readonly setIndex = new Map<number, number[]>();
  /** Scratch for {@link expand}: (position, rest) pairs still to visit. */
  private readonly work: number[] = [];
  /** Scratch for one step: the (position, rest) pairs expanded so far. */
  private readonly seen = new PairTable();
  /** Scratch for one step: the stacks found, and a mark per node of the step that found it. */
  private readonly found: number[] = [];
  private marks = new Uint32Array(1024);
  private step = 0;
  /** The start state. */
  readonly initial: number;

  constructor(program: Program) {
    this.program = program;
    this.code = program.code;
    this.begin();
    for (const a of program.ruleAlts[program.root]!) this.expand(a, 0);
    this.initial = this.intern();
  }

  /** Number of interned states (grows as new states are met; for cache limits). */
  get stateCount(): number {
    return this.sets.length;
  }

  /** Whether state `s` holds a complete match of the root. */
  isComplete(s: number): boolean {
    return this.sets[s]!.complete;
  }

  /** Whether some stack of state `s` still expects a character. */
  isLive(s: number): boolean {
    return this.sets[s]!.live;
  }

  /** The state after code point `cp` from state `s`, or {@link DEAD}. */
  next(s: number, cp: number): number {
    const set = this.sets[s]!;
    if (cp < 128) {
      const t = set.ascii[cp]!;
      if (t !== UNKNOWN) return t;
      const u = this.advance(set, cp);
      set.ascii[cp] = u;
      return u;
    }
    const t = set.other.get(cp);
    if (t !== undefined) return t;
    const u = this.advance(set, cp);
    set.other.set(cp, u);
    return u;
  }

  /** Whether the character under way `partial` can still complete to a code point state `s` accepts. */
  partialOk(s: number, partial: number): boolean {
    const set = this.sets[s]!;
    let ok = set.partialOk.get(partial);
    if (ok === undefined) {
      const lo = partialLow(partial);
      const hi = partialHigh(partial);
      ok = false;
      for (const n of set.stacks) {
        if (n !== 0 && this.program.charSets[this.code[this.nodePos[n]!]!]!.intersects(lo, hi)) {
          ok = true;
          break;
        }
      }
      set.partialOk.set(partial, ok);
    }
    return ok;
  }

  /**
   * Feeds `bytes` from state `s` with the character under way `partial`. Returns
   * the new state and writes the new partial into `out[0]`; {@link DEAD} when a byte is refused
   * (invalid UTF-8, a code point no stack accepts, or a character that cannot complete).
   */
  feed(s: number, partial: number, bytes: Uint8Array, out: Int32Array): number {
    let state = s;
    let p = partial;
    for (let i = 0; i < bytes.length; i++) {
      const r = utf8Step(p, bytes[i]!);
      if (r === INVALID) return DEAD;
      if (r >= 0) {
        state = this.next(state, r);
        if (state === DEAD) return DEAD;
        p = NO_PARTIAL;
      } else {
        p = -r;
        if (!this.partialOk(state, p)) return DEAD;
      }
    }
    out[0] = p;
    return state;
  }

  private advance(set: StateSet, cp: number): number {
    const { charSets } = this.program;
    this.begin();
    for (const n of set.stacks) {
      if (n === 0) continue;
      const pos = this.nodePos[n]!;
      if (charSets[this.code[pos]!]!.has(cp)) this.expand(pos + 1, this.nodeNext[n]!);
    }
    return this.found.length === 0 ? DEAD : this.intern();
  }

  /** Starts a step: nothing found or expanded yet. */
  private begin(): void {
    this.seen.clear();
    this.found.length = 0;
    this.step++;
    if (this.step === 0xffffffff) {
      this.marks.fill(0);
      this.step = 1;
    }
  }

  /** Adds stack `n` to what this step found. */
  private found1(n: number): void {
    if (this.marks[n] === this.step) return;
    this.marks[n] = this.step;
    this.found.push(n);
    if (this.found.length > MAX_STATE_PARSES) {
      throw new SamplerError(
        "GRAMMAR_TOO_LARGE",
        `the grammar is too ambiguous for this text: more than ${MAX_STATE_PARSES} parses are open at once`,
        "grammar",
      );
    }
  }

  /**
   * Adds to this step's stacks every one reachable from position `pos` over `rest` without reading
   * a character: through rule references (pushing the position after them unless it ends the
   * alternative) and alternative ends (popping). `seen` stops repeats of a (position, rest) pair.
   * A loop over an explicit work list, not recursion: the rests can be as deep as the text nests.
   * Throws GRAMMAR_TOO_LARGE past MAX_STATE_PARSES stacks.
   */
  private expand(pos: number, rest: number): void {
    const { work, seen, code } = this;
    const base = work.length;
    work.push(pos, rest);
    try {
      while (work.length > base) {
        const r = work.pop()!;
        const p = work.pop()!;
        if (!seen.add(p, r)) continue;
        const e = code[p]!;
        if (e === END) {
          if (r === 0) this.found1(0);
          else work.push(this.nodePos[r]!, this.nodeNext[r]!);
        } else if (e >= 0) {
          this.found1(this.node(p, r));
        } else {
          const cont = code[p + 1] === END ? r : this.node(p + 1, r);
          const alts = this.program.ruleAlts[refRule(e)]!;
          for (let i = alts.length - 1; i >= 0; i--) work.push(alts[i]!, cont);
        }
      }
    } finally {
      work.length = base;
    }
  }

  private node(pos: number, rest: number): number {
    let n = this.nodeIndex.get(pos, rest);
    if (n < 0) {
      n = this.nodeCount++;
      if (n === this.nodePos.length) {
        this.nodePos = grown(this.nodePos);
        this.nodeNext = grown(this.nodeNext);
        const marks = new Uint32Array(this.marks.length * 2);
        marks.set(this.marks);
        this.marks = marks;
      }
      this.nodePos[n] = pos;
      this.nodeNext[n] = rest;
      this.nodeIndex.set(pos, rest, n);
    }
    return n;
  }

  /** The state of the stacks this step found (an existing one if they are the same). */
  private intern(): number {
    const stacks = Int32Array.from(this.found).sort();
    let h = stacks.length;
    for (const n of stacks) h = (Math.imul(h, 31) + n) | 0;
    const bucket = this.setIndex.get(h);
    if (bucket) {
      for (const id of bucket) if (sameStacks(this.sets[id]!.stacks, stacks)) return id;
    }
    const id = this.sets.length;
    const complete = stacks[0] === 0;
    this.sets.push({
      stacks,
      complete,
      live: stacks.length > (complete ? 1 : 0),
      ascii: new Int32Array(128).fill(UNKNOWN),
      other: new Map(),
      partialOk: new Map(),
    });
    if (bucket) bucket.push(id);
    else this.setIndex.set(h, [id]);
    return id;
  }
}

function grown(a: Int32Array): Int32Array<ArrayBuffer> {
  const b = new Int32Array(a.length * 2);
  b.set(a);
  return b;
}

function sameStacks(a: Int32Array, b: Int32Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
