import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { batchVariantDevices } from "./run/speculative.js";
import { startServe } from "./serve-fuzz/harness.js";
import { bin, fixtures, minfer, type Result } from "./test-helpers.js";

const here = dirname(fileURLToPath(import.meta.url));
const stories = join(fixtures, "models/stories260K.gguf");
const goldenPath = resolve(here, "../../models/test/stories260K.llamacpp.golden.json");
const have = existsSync(stories) && existsSync(goldenPath);
const noStackTrace = (r: Result) => expect(r.stderr).not.toMatch(/^\s+at /m);
let child: ChildProcess | undefined;
afterEach(() => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  child = undefined;
});

describe.skipIf(!have)("speculative decoding in the CLI (stories260K)", () => {
  const golden = have
    ? (JSON.parse(readFileSync(goldenPath, "utf8")) as { prompt: string; ids: number[] })
    : { prompt: "", ids: [] };
  const n = 120;
  const accepted =
    /speculative \((draft|ngram)\): (\d+)\/(\d+) drafted tokens accepted \([\d.]+%\), (\d+) verifications for (\d+) tokens/;

  it("run -md (greedy) prints llama.cpp's greedy continuation and the acceptance", async () => {
    const r = await minfer(
      "run",
      "-m",
      stories,
      "-md",
      stories,
      "-p",
      golden.prompt,
      "-n",
      `${n}`,
      "--temp",
      "0",
      "--ids",
      "--draft-max",
      "4",
      "--draft-fixed",
      "-t",
      "1",
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(golden.ids.slice(0, n));
    const m = accepted.exec(r.stderr);
    expect(m, r.stderr).not.toBeNull();
    // the target drafts for itself, 4 tokens at a time (5-token verifications stay on the dot-product
    // kernels, which round as a one-token step does): every draft is accepted
    expect(m![1]).toBe("draft");
    expect(Number(m![2])).toBe(Number(m![3]));
    expect(Number(m![4])).toBeLessThan(n / 2);
    expect(r.stderr).toMatch(/draft model .*stories260K\.gguf: llama, 292\.80K params/);
  });

  it("run --spec-type ngram (greedy) prints the same continuation", async () => {
    const r = await minfer(
      "run",
      "-m",
      stories,
      "--spec-type",
      "ngram",
      "--spec-ngram-size-n",
      "2",
      "-p",
      golden.prompt,
      "-n",
      `${n}`,
      "--temp",
      "0",
      "--ids",
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual(golden.ids.slice(0, n));
    expect(accepted.exec(r.stderr)?.[1]).toBe("ngram");
  });

  it("bench -md reports both speeds, the speedup and the acceptance, the tokens identical", async () => {
    const r = await minfer(
      "bench",
      "-m",
      stories,
      "-md",
      stories,
      // (a fixed depth: the adaptive one may rightly stop drafting for a model this small)
      "--draft-fixed",
      "--draft-max",
      "4",
      "-n",
      "48",
      "-r",
      "1",
      "-t",
      "1",
      "--json",
    );
    expect(r.code, r.stderr).toBe(0);
    const x = JSON.parse(r.stdout) as Record<string, unknown>;
    expect(x.spec_type).toBe("draft");
    expect(x.identical).toBe(true);
    expect(x.plain_ts).toBeGreaterThan(0);
    expect(x.spec_ts).toBeGreaterThan(0);
    expect(x.speedup).toBeCloseTo((x.spec_ts as number) / (x.plain_ts as number), 10);
    // a same-model draft is accepted, and none is made past the 48th token
    expect(x.n_accept).toBe(x.n_drafted);
    expect(x.n_drafted).toBeGreaterThanOrEqual(36);
    expect(x.tokens_per_verify).toBeGreaterThan(1);
    const table = await minfer(
      "bench",
      "-m",
      stories,
      "--spec-type",
      "ngram",
      "-n",
      "16",
      "-r",
      "1",
      "-t",
      "1",
    );
    expect(table.code, table.stderr).toBe(0);
    expect(table.stdout).toMatch(/\| t\/s plain \| t\/s spec \| speedup \| accept/);
    expect(table.stdout).toMatch(/\| ngram +\| tg16 \(prompt 5\)/);
  });

  it("serve -md / --spec-type ngram: 8 concurrent greedy streams each give llama.cpp's continuation; drafts in /slots and the timings", async () => {
    const headers = { "content-type": "application/json" };
    const body = JSON.stringify({
      prompt: golden.prompt,
      n_predict: n,
      temperature: 0,
      return_tokens: true,
      cache_prompt: false,
    });
    for (const spec of [
      ["-md", stories, "--draft-max", "4"],
      ["--spec-type", "ngram", "--spec-ngram-size-n", "2"],
    ]) {
      const s = await startServe(bin, ["-m", stories, "-np", "8", "-c", "2048", "-t", "1", ...spec], (p) => {
        child = p;
      });
      try {
        expect(s.stderr()).toContain("speculative decoding in every slot");
        const rs = (await Promise.all(
          Array.from({ length: 8 }, () =>
            fetch(`${s.url}/completion`, { method: "POST", headers, body }).then((r) => r.json()),
          ),
        )) as { tokens: number[]; timings: { draft_n?: number; draft_n_accepted?: number } }[];
        for (const r of rs) expect(r.tokens).toEqual(golden.ids.slice(0, n));
        const drafted = rs.reduce((a, r) => a + (r.timings.draft_n ?? 0), 0);
        const kept = rs.reduce((a, r) => a + (r.timings.draft_n_accepted ?? 0), 0);
        expect(drafted, spec.join(" ")).toBeGreaterThan(8 * 10);
        expect(kept).toBeGreaterThan(0);
        const slots = (await (await fetch(`${s.url}/slots`)).json()) as { speculative: boolean }[];
        expect(slots.every((x) => x.speculative)).toBe(true);
      } finally {
        child?.kill("SIGKILL");
      }
    }
  });

  it("refuses bad speculative options naming them, without a stack trace", async () => {
    const cases: [string[], string, number][] = [
      [["--draft-max", "4"], "--draft-max needs speculative decoding: give -md FILE or --spec-type ngram", 2],
      [["--spec-type", "draft"], "--spec-type draft needs a draft model: -md FILE", 2],
      [["--spec-type", "eagle"], "--spec-type must be ngram, draft or none, got eagle", 2],
      [["--spec-type", "ngram", "-md", stories], "--spec-type ngram drafts without a model", 2],
      [["-md", stories, "--draft-max", "0"], "--draft-max must be an integer in [1, 256], got 0", 2],
      [
        ["-md", stories, "--draft-min", "9", "--draft-max", "4"],
        "--draft-min must be an integer in [0, --draft-max = 4], got 9",
        2,
      ],
      [["--spec-type", "ngram", "--draft-p-min", "0.5"], "--draft-p-min is for --spec-type draft", 2],
      [["-md", stories, "-ngld", "2", "-ngl", "0"], "the main model runs on the CPU only", 2],
      [["-md", join(fixtures, "models/llama-2-tiny-random.gguf")], "[DRAFT_MISMATCH]", 1],
    ];
    const results = await Promise.all(
      cases.map(([args]) => minfer("run", "-m", stories, "-p", "x", "-n", "4", ...args)),
    );
    results.forEach((r, i) => {
      expect(r.stderr).toContain(cases[i]![1]);
      expect(r.code, r.stderr).toBe(cases[i]![2]);
      expect(r.stdout).toBe("");
      noStackTrace(r);
    });
    expect(results.at(-1)!.stderr).toContain("vocabulary of 32000 tokens against the target's 512");
    const serve = await minfer("serve", "-m", stories, "--embedding", "--spec-type", "ngram");
    expect(serve.code).toBe(2);
    expect(serve.stderr).toContain(
      "speculative decoding (-md, --spec-type) is for generation, not --embedding",
    );
    const invariant = await minfer("serve", "-m", stories, "--embedding", "--batch-invariant");
    expect(invariant.code).toBe(2);
    expect(invariant.stderr).toContain("--batch-invariant is for generation, not --embedding");
    const batched = await minfer("bench", "-m", stories, "-npl", "2", "-md", stories);
    expect(batched.code).toBe(2);
    expect(batched.stderr).toContain("-npl (batched mode) does not take speculative decoding");
  });
});

describe("batchVariantDevices", () => {
  it("names the devices of a model whose programs are not batch-invariant (the stderr note)", () => {
    const model = (devices: { name: string; batchInvariant?: boolean }[]) =>
      ({
        placement: {
          runtimes: () =>
            devices.map((d) => ({ device: { name: d.name, caps: { batchInvariant: d.batchInvariant } } })),
        },
      }) as unknown as Parameters<typeof batchVariantDevices>[0];
    expect(batchVariantDevices(model([{ name: "cpu", batchInvariant: true }]))).toEqual([]);
    expect(
      batchVariantDevices(
        model([
          { name: "cuda:0", batchInvariant: false },
          { name: "cpu", batchInvariant: true },
        ]),
      ),
    ).toEqual(["cuda:0"]);
    expect(batchVariantDevices(model([{ name: "metal:0" }]))).toEqual(["metal:0"]);
  });
});
