import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { bin, fixtures, minfer, type Result } from "./test-helpers.js";
import { loadTokenizer } from "./text/load-tokenizer.js";

const here = dirname(fileURLToPath(import.meta.url));
const stories = join(fixtures, "models/stories260K.gguf");
const chatml = join(fixtures, "templates/Qwen-Qwen2.5-7B-Instruct.jinja");
const goldenPath = resolve(here, "../../models/test/stories260K.llamacpp.golden.json");
const have = existsSync(stories) && existsSync(goldenPath);

/** Runs minfer with `input` piped to its stdin. */
function minferWithInput(input: string, ...args: string[]): Promise<Result> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [bin, ...args], { stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", fail);
    child.on("close", (code) => done({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(input);
  });
}

const noStackTrace = (r: Result) => expect(r.stderr).not.toMatch(/^\s+at /m);

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`${bin} is missing: build the package first (turbo run build)`);
});

describe.skipIf(!have)("minfer run", () => {
  const golden = have
    ? (JSON.parse(readFileSync(goldenPath, "utf8")) as { prompt: string; ids: number[] })
    : { prompt: "", ids: [] };
  const first20 = golden.ids.slice(0, 20);

  it("--temp 0 prints exactly llama.cpp's greedy continuation, and timings on stderr", async () => {
    const r = await minfer("run", "-m", stories, "-p", golden.prompt, "-n", "20", "--temp", "0");
    expect(r.code, r.stderr).toBe(0);
    const { tokenizer } = await loadTokenizer(stories);
    // The text, then a newline ending its line (unless the text ends one itself).
    const text = tokenizer.decode(first20);
    expect(r.stdout).toBe(text.endsWith("\n") ? text : `${text}\n`);
    expect(r.stderr).toMatch(
      /prompt eval 5 tokens, [\d.]+ ms, [\d.]+ tok\/s \| eval 20 tokens, [\d.]+ ms, [\d.]+ tok\/s\n$/,
    );
  });

  it("--ids prints the generated ids as one JSON array and nothing else", async () => {
    const r = await minfer("run", "-m", stories, "-p", golden.prompt, "-n", "20", "--temp", "0", "--ids");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${JSON.stringify(first20)}\n`);
  });

  it("sampling with a seed is reproducible; other seeds draw other tokens", async () => {
    const sample = (seed: string) =>
      minfer(
        "run",
        "-m",
        stories,
        "-p",
        "Once",
        "-n",
        "16",
        "--temp",
        "1.5",
        "--min-p",
        "0",
        "--seed",
        seed,
        "--ids",
      );
    const [a, b, c] = await Promise.all([sample("7"), sample("7"), sample("8")]);
    expect(a.code, a.stderr).toBe(0);
    expect(JSON.parse(a.stdout)).toHaveLength(16);
    expect(b.stdout).toBe(a.stdout);
    expect(c.stdout).not.toBe(a.stdout);
  });

  it("--verbose reports per-token step, compute and JS overhead on stderr only", async () => {
    const r = await minfer("run", "-m", stories, "-p", "Once", "-n", "4", "--temp", "0", "--verbose");
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain("model: llama, 5 layers");
    expect(r.stderr).toMatch(/^cpu: /m);
    expect(
      r.stderr.match(/^token \d+ \(id \d+\): step [\d.]+ ms, compute [\d.]+ ms, JS overhead/gm),
    ).toHaveLength(4);
    expect(r.stderr).toMatch(/per-token: 3 decode steps, .* JS overhead [\d.]+ ms \([\d.]+% of the step\)/);
    expect(r.stdout).not.toContain("token");
  });

  it("--verbose reports each KV cache: a gemma2 file's full-attention and windowed ones", async () => {
    const dir = mkdtempSync(join(tmpdir(), "minfer-run-"));
    try {
      const file = join(dir, "gemma2.gguf");
      const made = await minfer(
        "gguf",
        "synth",
        "--arch",
        "gemma2",
        "--preset",
        "tiny",
        "--type",
        "f32",
        "-o",
        file,
      );
      expect(made.code, made.stderr).toBe(0);
      const r = await minfer(
        "run",
        "-m",
        file,
        "-p",
        "Once",
        "-n",
        "2",
        "-c",
        "256",
        "-b",
        "32",
        "--verbose",
      );
      expect(r.code, r.stderr).toBe(0);
      // One layer each; the window (16) and a micro-batch (32) rounded up to a multiple of 32: 64 cells.
      expect(r.stderr).toMatch(
        /KV f16: full-attention 1 layers × 256 cells [\d.]+ MiB; sliding-window \(16 positions\) 1 layers × 64 cells/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("stops at a full context, says so and exits 0", async () => {
    const r = await minfer("run", "-m", stories, "-p", golden.prompt, "-c", "8", "--temp", "0", "--ids");
    expect(r.code, r.stderr).toBe(0);
    // 5 prompt tokens + 3 decoded fill 8 cells; the 4th token comes from the last logits.
    expect(JSON.parse(r.stdout)).toEqual(golden.ids.slice(0, 4));
    expect(r.stderr).toContain("the context is full (8 tokens)");
  });

  it("refuses bad options naming them, without a stack trace", async () => {
    const cases: [string[], string][] = [
      [["-n", "abc"], "-n expects an integer"],
      [["--temp", "-1"], "--temp must be a number >= 0"],
      [["--top-p", "2"], "--top-p must be a number in (0, 1]"],
      [["--kv-type", "q4"], "--kv-type must be"],
    ];
    const results = await Promise.all(
      cases.map(([args]) => minfer("run", "-m", stories, "-p", "x", ...args)),
    );
    results.forEach((r, i) => {
      expect(r.code).toBe(2);
      expect(r.stderr).toContain(cases[i]![1]);
      expect(r.stdout).toBe("");
      noStackTrace(r);
    });
    const missing = await minfer("run", "-m", stories);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("give the prompt with exactly one of -p TEXT or -f PROMPTFILE");
    const unreadable = await minfer("run", "-m", join(fixtures, "no-such.gguf"), "-p", "x");
    expect(unreadable.code).not.toBe(0);
    expect(unreadable.stderr).toContain("-m: cannot read");
    const notGguf = await minfer("run", "-m", goldenPath, "-p", "x");
    expect(notGguf.code).toBe(1);
    expect(notGguf.stderr).toContain("[BAD_MAGIC]");
    const noPromptFile = await minfer("run", "-m", stories, "-f", join(fixtures, "no-such.txt"));
    expect(noPromptFile.code).toBe(1);
    expect(noPromptFile.stderr).toContain("[ENOENT]");
    for (const r of [missing, unreadable, notGguf, noPromptFile]) noStackTrace(r);
  });
});

describe("minfer run with the built-in model", () => {
  it("without -m, greedy output is transformers' greedy continuation of the same checkpoint", async () => {
    const ref = JSON.parse(
      readFileSync(resolve(here, "../../../examples/train-default-model/reference-greedy.json"), "utf8"),
    ) as { samples: { prompt: string; prompt_ids: number[]; greedy_ids: number[] }[] };
    for (const s of ref.samples.slice(0, 3)) {
      const want = s.greedy_ids.slice(s.prompt_ids.length);
      const r = await minfer(
        "run",
        "-p",
        s.prompt,
        "-n",
        String(want.length),
        "--temp",
        "0",
        "--ids",
        "--ignore-eos",
      );
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toContain("built-in demonstration model");
      expect(JSON.parse(r.stdout)).toEqual(want);
    }
  });
});

describe.skipIf(!have)("minfer run: the sampler chain and constrained output", () => {
  const grammars = join(fixtures, "grammars");

  it("--grammar-file keeps the output inside the grammar", async () => {
    const r = await minfer(
      "run",
      "-m",
      stories,
      "-p",
      "Once upon a time",
      "-n",
      "40",
      "--seed",
      "3",
      "--grammar-file",
      join(grammars, "arithmetic.gbnf"),
    );
    expect(r.code, r.stderr).toBe(0);
    const { Grammar } = await import("@minfer/sampler");
    const g = Grammar.parse(readFileSync(join(grammars, "arithmetic.gbnf"), "utf8"));
    expect(r.stdout.length).toBeGreaterThan(0);
    // Without the newline that ends the output's line.
    expect(g.matchesPrefix(r.stdout.replace(/\n$/, "")), r.stdout).toBe(true);
  });

  it("-j makes JSON valid under the schema, ending when the object is complete", async () => {
    const schema = {
      type: "object",
      properties: {
        name: { type: "string", maxLength: 10 },
        age: { type: "integer", minimum: 1, maximum: 99 },
        kind: { enum: ["cat", "dog"] },
      },
      required: ["name", "age", "kind"],
      additionalProperties: false,
    };
    for (const seed of ["1", "2", "3"]) {
      const r = await minfer(
        "run",
        "-m",
        stories,
        "-p",
        "Once upon a time",
        "-n",
        "200",
        "--seed",
        seed,
        "-j",
        JSON.stringify(schema),
      );
      expect(r.code, r.stderr).toBe(0);
      const doc = JSON.parse(r.stdout) as { name: string; age: number; kind: string };
      expect(Object.keys(doc)).toEqual(["name", "age", "kind"]);
      expect([...doc.name].length).toBeLessThanOrEqual(10);
      expect(Number.isInteger(doc.age) && doc.age >= 1 && doc.age <= 99).toBe(true);
      expect(["cat", "dog"]).toContain(doc.kind);
    }
  });

  it("--logit-bias bans a token; the chain's flags are checked and named", async () => {
    const greedyIds = (...extra: string[]) =>
      minfer("run", "-m", stories, "-p", "Once upon a time", "-n", "8", "--temp", "0", "--ids", ...extra);
    const first = (JSON.parse((await greedyIds()).stdout) as number[])[0]!;
    const banned = await greedyIds("--logit-bias", `${first}-inf`);
    expect(banned.code, banned.stderr).toBe(0);
    expect(JSON.parse(banned.stdout)).not.toContain(first);
    const bad = [
      [["--min-p", "2"], /--min-p/],
      [["--mirostat", "3"], /--mirostat must be 0, 1 or 2/],
      [["--logit-bias", "12x"], /--logit-bias expects/],
      [["--logit-bias", "999999+1"], /outside the vocabulary/],
      [["--grammar", 'root ::= "a'], /GRAMMAR_SYNTAX|line 1/],
      [["-j", '{"type":"string","pattern":"a+"}'], /pattern/],
      [["-j", "{nope"], /--json-schema is not valid JSON/],
      [["--grammar", 'root ::= "a"', "-j", "{}"], /at most one of/],
    ] as const;
    for (const [args, message] of bad) {
      const r = await minfer("run", "-m", stories, "-p", "x", ...args);
      expect(r.code, args.join(" ")).not.toBe(0);
      expect(r.stderr).toMatch(message);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });
});

describe.skipIf(!have || !existsSync(chatml))("minfer chat", () => {
  it("answers piped lines, one reply per line, reusing the cached conversation", async () => {
    const input = "Hello there\nTell me a story\n/reset\nHello there\n";
    const args = [
      "chat",
      "-m",
      stories,
      "--chat-template-file",
      chatml,
      "-n",
      "6",
      "--temp",
      "0",
      "--verbose",
    ];
    const [r, once] = await Promise.all([
      minferWithInput(input, ...args),
      minferWithInput("Hello there\n", ...args),
    ]);
    expect(r.code, r.stderr).toBe(0);
    const turns = [...r.stderr.matchAll(/^turn: (\d+) prompt tokens, (\d+) reused, (\d+) prefilled/gm)].map(
      (m) => m.slice(1).map(Number),
    );
    expect(turns).toHaveLength(3);
    const [first, second, third] = turns as [number[], number[], number[]];
    expect(first[1]).toBe(0);
    // The second turn prefills only its new part: everything the first turn's prompt held is reused.
    expect(second[1]).toBeGreaterThanOrEqual(first[0]!);
    expect(second[2]).toBeLessThan(second[0]! - first[0]!);
    // After /reset nothing is reused, and greedy decoding repeats the first reply.
    expect(third).toEqual(first);
    // stdout holds the replies, each followed by a newline, and nothing else.
    expect(once.stdout.endsWith("\n")).toBe(true);
    expect(once.stdout.length).toBeGreaterThan(1);
    expect(r.stdout.startsWith(once.stdout)).toBe(true);
    expect(r.stdout.endsWith(`\n${once.stdout}`)).toBe(true);
    expect(r.stdout.length).toBeGreaterThan(2 * once.stdout.length + 1);
    expect(r.stdout).not.toMatch(/^> /m);
  });

  it("needs a chat template, and says how to give one", async () => {
    const r = await minferWithInput("Hi\n", "chat", "-m", stories);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("has no chat template");
    expect(r.stderr).toContain("--chat-template-file");
    expect(r.stdout).toBe("");
  });
});

describe.skipIf(!have)("minfer bench", () => {
  it("--json prints llama-bench style results with positive t/s", async () => {
    const r = await minfer("bench", "-m", stories, "-p", "16", "-n", "8", "-r", "1", "--json");
    expect(r.code, r.stderr).toBe(0);
    const results = JSON.parse(r.stdout) as Record<string, unknown>[];
    expect(results.map((x) => [x.n_prompt, x.n_gen])).toEqual([
      [16, 0],
      [0, 8],
    ]);
    for (const x of results) {
      expect(x.avg_ts).toBeGreaterThan(0);
      expect(x.samples_ts).toHaveLength(1);
      expect(x.model_n_params).toBe(292800);
      expect(x.model_type).toBe("llama 292.80K F32");
    }
  });

  it("prints a markdown table otherwise", async () => {
    const r = await minfer("bench", "-m", stories, "-p", "8", "-n", "0", "-r", "1", "-t", "1");
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^\| model +\| +size \| +params \| backend \| threads \| test \| +t\/s \|$/);
    expect(lines[2]).toMatch(/\| CPU +\| +1 \| +pp8 \| +[\d.]+ ± [\d.]+ \|$/);
  });
});
