/**
 * A progress bar on stderr. On a terminal it redraws one line; otherwise (logs, pipes) it prints
 * nothing until `done()`, so captured output stays clean.
 */
export class ProgressBar {
  readonly #tty: boolean;
  readonly #start = performance.now();
  #last = 0;

  constructor(
    readonly label: string,
    readonly total: number,
    readonly stream: NodeJS.WriteStream = process.stderr,
  ) {
    this.#tty = Boolean(stream.isTTY);
  }

  update(done: number, detail = ""): void {
    if (!this.#tty) return;
    const now = performance.now();
    if (now - this.#last < 100 && done < this.total) return;
    this.#last = now;
    const frac = this.total > 0 ? Math.min(1, done / this.total) : 1;
    const width = 30;
    const filled = Math.round(frac * width);
    const elapsed = (now - this.#start) / 1000;
    const eta = frac > 0 ? elapsed / frac - elapsed : 0;
    const bar = `${"█".repeat(filled)}${"░".repeat(width - filled)}`;
    const line = `${this.label} ${bar} ${(frac * 100).toFixed(0).padStart(3)}% ${elapsed.toFixed(1)}s eta ${eta.toFixed(0)}s ${detail}`;
    this.stream.write(`\r${line.slice(0, (this.stream.columns ?? 120) - 1)}\x1b[K`);
  }

  /** Ends the bar, leaving nothing of it on the terminal. */
  clear(): void {
    if (this.#tty) this.stream.write("\r\x1b[K");
  }

  /** Ends the bar and prints `summary` on its own line. */
  done(summary: string): void {
    if (this.#tty) this.stream.write("\r\x1b[K");
    this.stream.write(`${summary} (${((performance.now() - this.#start) / 1000).toFixed(1)}s)\n`);
  }
}
