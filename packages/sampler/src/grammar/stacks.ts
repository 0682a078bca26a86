import { END, type Program, refRule } from "./compile.js";
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
  private readonly width: number;
  private nodePos = new Int32Array(1024);
  private nodeNext = new Int32Array(1024);
  private nodeCount = 1; // node 0: the empty stack
  private readonly nodeIndex = new Map<number, number>();
  private readonly sets: StateSet[] = [];
  private readonly setIndex = new Map<string, number>();
  /** The start state. */
  readonly initial: number;

  constructor(program: Program) {
    this.program = program;
    this.code = program.code;
    this.width = program.code.length + 1;
    const out = new Set<number>();
    const seen = new Set<number>();
    for (const a of program.ruleAlts[program.root]!) this.expand(a, 0, out, seen);
    this.initial = this.intern(out);
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
    const out = new Set<number>();
    const seen = new Set<number>();
    const { charSets } = this.program;
    for (const n of set.stacks) {
      if (n === 0) continue;
      const pos = this.nodePos[n]!;
      if (charSets[this.code[pos]!]!.has(cp)) this.expand(pos + 1, this.nodeNext[n]!, out, seen);
    }
    return out.size === 0 ? DEAD : this.intern(out);
  }

  /**
   * Adds to `out` every stack reachable from position `pos` over `rest` without reading a
   * character: through rule references (pushing the position after them unless it ends the
   * alternative) and alternative ends (popping). `seen` stops repeats of a (position, rest) pair.
   */
  private expand(pos: number, rest: number, out: Set<number>, seen: Set<number>): void {
    const key = rest * this.width + pos;
    if (seen.has(key)) return;
    seen.add(key);
    const e = this.code[pos]!;
    if (e === END) {
      if (rest === 0) out.add(0);
      else this.expand(this.nodePos[rest]!, this.nodeNext[rest]!, out, seen);
    } else if (e >= 0) {
      out.add(this.node(pos, rest));
    } else {
      const cont = this.code[pos + 1] === END ? rest : this.node(pos + 1, rest);
      for (const a of this.program.ruleAlts[refRule(e)]!) this.expand(a, cont, out, seen);
    }
  }

  private node(pos: number, rest: number): number {
    const key = rest * this.width + pos;
    let n = this.nodeIndex.get(key);
    if (n === undefined) {
      n = this.nodeCount++;
      if (n === this.nodePos.length) {
        const grow = (a: Int32Array) => {
          const b = new Int32Array(a.length * 2);
          b.set(a);
          return b;
        };
        this.nodePos = grow(this.nodePos);
        this.nodeNext = grow(this.nodeNext);
      }
      this.nodePos[n] = pos;
      this.nodeNext[n] = rest;
      this.nodeIndex.set(key, n);
    }
    return n;
  }

  private intern(nodes: Set<number>): number {
    const stacks = Int32Array.from(nodes).sort();
    const key = stacks.join(",");
    let id = this.setIndex.get(key);
    if (id === undefined) {
      id = this.sets.length;
      const complete = stacks[0] === 0;
      this.sets.push({
        stacks,
        complete,
        live: stacks.length > (complete ? 1 : 0),
        ascii: new Int32Array(128).fill(UNKNOWN),
        other: new Map(),
        partialOk: new Map(),
      });
      this.setIndex.set(key, id);
    }
    return id;
  }
}
