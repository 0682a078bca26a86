/** Splitting a model's think block off its generated text as it streams. */

import type { ThinkTags } from "./tags.js";

export interface ReasoningSplitterOptions {
  readonly tags: ThinkTags;
  /** The prompt opened the block: the text starts inside it, without the start tag. */
  readonly open: boolean;
  /**
   * Markers that end the block beside its end tag (a format whose model may start its tool calls straight
   * from thinking); they stay in the content.
   */
  readonly ends?: readonly string[];
}

export interface Split {
  reasoning: string;
  content: string;
}

type State = "start" | "inside" | "content";

/** The length of the longest end of `s` that is the start of one of `markers` (a marker not yet whole). */
function partialLength(s: string, markers: readonly string[]): number {
  let best = 0;
  for (const m of markers)
    for (let n = Math.min(m.length - 1, s.length); n > best; n--)
      if (s.endsWith(m.slice(0, n))) {
        best = n;
        break;
      }
  return best;
}

/**
 * Incremental splitter of generated text into reasoning and content, as llama.cpp reads a think block:
 * the block is only at the start of the message (after whitespace, its start tag; or from the first
 * character when the prompt opened it); its text, without the whitespace after the start tag and before the
 * end tag, is reasoning; the text after the end tag (its leading whitespace dropped) is content. A start
 * tag later in the text is content, and so is all of a message that does not start with one. A block the
 * text never closes (cut by max_tokens) is reasoning to the end. Text that might still be a tag is held
 * back until it is known.
 */
export class ReasoningSplitter {
  readonly #tags: ThinkTags;
  readonly #ends: readonly string[];
  #state: State;
  #buf = "";
  /** Inside: whitespace at the block's start is still being dropped. */
  #leading = true;
  /** After the block: whitespace at the content's start is dropped. */
  #afterBlock = false;

  constructor(o: ReasoningSplitterOptions) {
    this.#tags = o.tags;
    this.#ends = [o.tags.end, ...(o.ends ?? [])];
    this.#state = o.open ? "inside" : "start";
  }

  /** Whether the text so far is still inside the think block (or before knowing whether one comes). */
  get thinking(): boolean {
    return this.#state !== "content";
  }

  push(text: string): Split {
    this.#buf += text;
    return this.#step(false);
  }

  end(): Split {
    return this.#step(true);
  }

  #step(final: boolean): Split {
    const out: Split = { reasoning: "", content: "" };
    for (;;) {
      if (this.#state === "start" && !this.#atStart(final)) break;
      if (this.#state === "inside" && !this.#inside(final, out)) break;
      if (this.#state === "content") {
        this.#content(out);
        break;
      }
    }
    return out;
  }

  /** "start": true when it is decided whether the message starts with the block. */
  #atStart(final: boolean): boolean {
    const { start } = this.#tags;
    const p = this.#buf.length - this.#buf.trimStart().length;
    const rest = this.#buf.slice(p);
    if (rest.startsWith(start)) {
      this.#buf = rest.slice(start.length);
      this.#state = "inside";
      return true;
    }
    if (!final && start.startsWith(rest)) return false;
    this.#state = "content";
    return true;
  }

  /** "inside": reasoning up to the end tag (or a marker ending the block); true when the block ended. */
  #inside(final: boolean, out: Split): boolean {
    if (this.#leading) {
      const t = this.#buf.trimStart();
      if (t === "") {
        this.#buf = "";
        return false;
      }
      this.#buf = t;
      this.#leading = false;
    }
    let at = -1;
    let marker = "";
    for (const m of this.#ends) {
      const k = this.#buf.indexOf(m);
      if (k >= 0 && (at < 0 || k < at)) {
        at = k;
        marker = m;
      }
    }
    if (at >= 0) {
      out.reasoning += this.#buf.slice(0, at).trimEnd();
      if (marker === this.#tags.end) {
        this.#buf = this.#buf.slice(at + marker.length);
        this.#afterBlock = true;
      } else this.#buf = this.#buf.slice(at);
      this.#state = "content";
      return true;
    }
    // Hold back a tag's start at the end, and trailing whitespace (dropped if the end tag follows).
    const keep = final ? 0 : partialLength(this.#buf, this.#ends);
    const body = this.#buf.slice(0, this.#buf.length - keep);
    const released = body.trimEnd();
    out.reasoning += released;
    this.#buf = this.#buf.slice(released.length);
    if (final) this.#buf = "";
    return false;
  }

  #content(out: Split): void {
    if (this.#afterBlock) {
      const t = this.#buf.trimStart();
      if (t === "") {
        this.#buf = "";
        return;
      }
      this.#buf = t;
      this.#afterBlock = false;
    }
    out.content += this.#buf;
    this.#buf = "";
  }
}
