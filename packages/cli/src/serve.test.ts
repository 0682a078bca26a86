import type { ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ServeProcess, startServe } from "./serve-fuzz/harness.js";
import { bin, fixtures, minfer } from "./test-helpers.js";

// `minfer serve` as a process: the startup report, SIGTERM draining in-flight requests before
// exiting 0, and flags checked before anything starts.

const stories = resolve(fixtures, "models/stories260K.gguf");
let child: ChildProcess | undefined;

afterEach(() => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
  child = undefined;
});

/** Starts `minfer serve` on a free port; resolves with its address once the report says ready. */
function serve(...args: string[]): Promise<ServeProcess> {
  return startServe(bin, args, (proc) => {
    child = proc;
  });
}

describe("minfer serve", () => {
  it("--strict-api refuses a field the server does not use; without it the field is named in a header; --alias, --temp, -n", async () => {
    const s = await serve(
      "-m",
      stories,
      "-np",
      "1",
      "-c",
      "256",
      "--strict-api",
      "--chat-template",
      "chatml",
    );
    expect(s.stderr()).toContain("chat template: --chat-template chatml");
    const body = JSON.stringify({ prompt: "Once", max_tokens: 1, frobnicate: 1 });
    const headers = { "content-type": "application/json" };
    const r = await fetch(`${s.url}/v1/completions`, { method: "POST", headers, body });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { param: string } }).error.param).toBe("frobnicate");
    child!.kill("SIGKILL");
    const lax = await serve(
      "-m",
      stories,
      "-np",
      "1",
      "-c",
      "256",
      "--alias",
      "tiny-stories",
      "--temp",
      "0",
      "-n",
      "3",
    );
    const models = (await (await fetch(`${lax.url}/v1/models`)).json()) as { data: { id: string }[] };
    expect(models.data[0]!.id).toBe("tiny-stories");
    const ok = await fetch(`${lax.url}/v1/completions`, { method: "POST", headers, body });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("x-minfer-ignored-fields")).toBe("frobnicate");
    // --temp and -n: the defaults of a request that leaves them unset
    const run = (extra: object) =>
      fetch(`${lax.url}/v1/completions`, {
        method: "POST",
        headers,
        body: JSON.stringify({ prompt: "Once", logit_bias: { "2": -100 }, ...extra }),
      }).then(
        (r) => r.json() as Promise<{ choices: { text: string }[]; usage: { completion_tokens: number } }>,
      );
    const byDefault = await run({});
    expect(byDefault.usage.completion_tokens).toBe(3);
    expect(byDefault.choices[0]!.text).toBe((await run({ temperature: 0 })).choices[0]!.text);
  });

  it("reports slots and context, then on SIGTERM finishes the running stream and exits 0", async () => {
    const s = await serve("-m", stories, "-np", "2", "-c", "4096", "--metrics");
    expect(s.stderr()).toContain("2 slots × 2048 tokens of context each (KV cache 4096 cells");
    expect(s.stderr()).toContain("every layer and op runs on it");
    // End-of-sequence (id 2) banned: the stream runs its 150 tokens whatever gets sampled.
    const res = await fetch(`${s.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        prompt: "Once upon a time",
        max_tokens: 150,
        temperature: 1,
        seed: 1,
        logit_bias: { "2": -100 },
        stream: true,
      }),
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain("data: ");
    child!.kill("SIGTERM");
    // New requests are refused from now on (the port closes), the running stream goes on.
    await new Promise((r) => setTimeout(r, 100));
    const late = await fetch(`${s.url}/health`).then(
      (r) => r.status,
      () => "refused",
    );
    expect([503, "refused"]).toContain(late);
    let rest = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).toContain('"finish_reason":"length"');
    // The stream went on after the signal, to its last token.
    const all = `${new TextDecoder().decode(first.value)}${rest}`;
    expect(all.split("data: ").length).toBeGreaterThan(150);
    expect(rest.endsWith("data: [DONE]\n\n")).toBe(true);
    expect(await s.exit).toBe(0);
    expect(s.stderr()).toContain("SIGTERM: no new requests");
  });

  it("on SIGTERM, requests still running at the drain bound are each answered, and it exits 0", async () => {
    const s = await serve("-m", stories, "-np", "1", "-c", "4096", "--drain-timeout", "0.3");
    // End-of-sequence banned and no token bound: these run until the context is full.
    const long = {
      prompt: "Once upon a time",
      max_tokens: 100000,
      temperature: 1,
      seed: 1,
      logit_bias: { "2": -100 },
    };
    const ask = (body: object) =>
      fetch(`${s.url}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    const streamed = await ask({ ...long, stream: true });
    const reader = streamed.body!.getReader();
    await reader.read();
    // A second request waits for the one slot.
    const queued = ask(long).then(async (r) => ({
      status: r.status,
      body: (await r.json()) as { error: { code: string } },
    }));
    await new Promise((r) => setTimeout(r, 100));
    child!.kill("SIGTERM");
    let rest = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    const events = rest.split("\n\n").filter((e) => e.startsWith("data: "));
    const last = JSON.parse(events.at(-1)!.slice(6)) as {
      error: { code: string; type: string; message: string };
    };
    expect(last.error.code).toBe("shutting_down");
    expect(last.error.message).toContain("shutting down");
    const q = await queued;
    expect(q.status).toBe(503);
    expect(q.body.error.code).toBe("shutting_down");
    expect(await s.exit).toBe(0);
    expect(s.stderr()).toContain("SIGTERM: no new requests; letting running ones finish (0.3 s at most)");
    expect(s.stderr()).toContain("told the server is shutting down");
  });

  it("refuses bad flags with a clear message", async () => {
    const r = await minfer("serve", "-m", stories, "-np", "0");
    expect(r.code).not.toBe(0);
    expect(r.stderr).toContain("-np");
    const q = await minfer("serve", "-m", stories, "--timeout", "-1");
    expect(q.stderr).toContain("--timeout");
    const d = await minfer("serve", "-m", stories, "--drain-timeout", "-1");
    expect(d.code).not.toBe(0);
    expect(d.stderr).toContain("--drain-timeout");
    for (const [flag, value] of [
      ["--alias", ""],
      ["--top-p", "2"],
      ["--xtc-threshold", "7"],
      ["--reasoning-format", "r1"],
      ["--reasoning-budget", "-2"],
    ] as const) {
      const bad = await minfer("serve", "-m", stories, flag, value);
      expect(bad.code, flag).not.toBe(0);
      expect(bad.stderr).toContain(flag);
    }
    const t = await minfer("serve", "-m", stories, "--chat-template", "llama9");
    expect(t.code).not.toBe(0);
    expect(t.stderr).toContain("--chat-template");
    expect(t.stderr).toContain("chatml");
  });
});
