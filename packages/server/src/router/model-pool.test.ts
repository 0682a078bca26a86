import { describe, expect, it } from "vitest";
import { ModelPool, type PoolModel, type Upstream } from "./model-pool.js";

// The pool alone, with launches that are promises the test settles: how many run at once, who is
// unloaded, what a failed load does.

function harness(maxLoaded: number, keepAliveMs = Number.POSITIVE_INFINITY) {
  const running = new Set<string>();
  let peak = 0;
  const pending = new Map<string, { resolve: () => void; reject: (e: Error) => void }>();
  const closed: string[] = [];
  const models: PoolModel[] = ["a", "b", "c"].map((id) => ({ id, path: `/m/${id}.gguf` }));
  const pool = new ModelPool({
    models,
    maxLoaded,
    keepAliveMs,
    launch: (m) =>
      new Promise<Upstream>((resolve, reject) => {
        running.add(m.id);
        peak = Math.max(peak, running.size);
        pending.set(m.id, {
          resolve: () =>
            resolve({
              url: `http://up/${m.id}`,
              close: async () => {
                running.delete(m.id);
                closed.push(m.id);
              },
            }),
          reject: (e) => {
            running.delete(m.id);
            reject(e);
          },
        });
      }),
  });
  const tick = () => new Promise((r) => setTimeout(r, 5));
  return { pool, running, pending, closed, peak: () => peak, tick };
}

describe("ModelPool", () => {
  it("never runs more than maxLoaded, unloading the least recently used idle model", async () => {
    const h = harness(2);
    const a = h.pool.acquire("a");
    const b = h.pool.acquire("b");
    await h.tick();
    h.pending.get("a")!.resolve();
    h.pending.get("b")!.resolve();
    expect((await a).url).toBe("http://up/a");
    await b;
    h.pool.release("a");
    h.pool.release("b");
    // two requests for c at once: one load, a (least recently used) unloaded first
    const c1 = h.pool.acquire("c");
    const c2 = h.pool.acquire("c");
    await h.tick();
    expect(h.closed).toEqual(["a"]);
    h.pending.get("c")!.resolve();
    expect((await c1).url).toBe("http://up/c");
    expect((await c2).url).toBe("http://up/c");
    expect(h.peak()).toBe(2);
    expect(h.pool.list().map((m) => [m.id, m.state, m.active])).toEqual([
      ["a", "unloaded", 0],
      ["b", "loaded", 0],
      ["c", "loaded", 2],
    ]);
  });

  it("waits for a busy model to become idle before unloading it", async () => {
    const h = harness(1);
    const a = h.pool.acquire("a");
    await h.tick();
    h.pending.get("a")!.resolve();
    await a;
    let bDone = false;
    const b = h.pool.acquire("b").then((u) => {
      bDone = true;
      return u;
    });
    await h.tick();
    expect(h.running.has("b")).toBe(false); // a still serves a request
    h.pool.release("a");
    await h.tick();
    expect(h.closed).toEqual(["a"]);
    h.pending.get("b")!.resolve();
    expect((await b).url).toBe("http://up/b");
    expect(bDone).toBe(true);
    expect(h.peak()).toBe(1);
  });

  it("fails the requests of a load that failed, and loads again on the next one", async () => {
    const h = harness(2);
    const a1 = h.pool.acquire("a");
    const a2 = h.pool.acquire("a");
    await h.tick();
    h.pending.get("a")!.reject(new Error("bad file"));
    await expect(a1).rejects.toThrow(/bad file/);
    await expect(a2).rejects.toThrow(/bad file/);
    expect(h.pool.list()[0]).toMatchObject({ state: "failed", error: "bad file" });
    const again = h.pool.acquire("a");
    await h.tick();
    h.pending.get("a")!.resolve();
    expect((await again).url).toBe("http://up/a");
  });

  it("unloads an idle model after keepAliveMs, and everything on close", async () => {
    const h = harness(3, 20);
    const a = h.pool.acquire("a");
    await h.tick();
    h.pending.get("a")!.resolve();
    await a;
    h.pool.release("a");
    await new Promise((r) => setTimeout(r, 60));
    expect(h.closed).toEqual(["a"]);
    const b = h.pool.acquire("b");
    await h.tick();
    h.pending.get("b")!.resolve();
    await b;
    await h.pool.close();
    expect(h.closed).toEqual(["a", "b"]);
    await expect(h.pool.acquire("c")).rejects.toMatchObject({ code: "CLOSED" });
  });

  it("refuses bad options and unknown models", async () => {
    const launch = async () => ({ url: "x", close: async () => {} });
    expect(() => new ModelPool({ models: [], maxLoaded: 1, keepAliveMs: 0, launch })).toThrow(
      /at least one model/,
    );
    expect(
      () => new ModelPool({ models: [{ id: "a", path: "p" }], maxLoaded: 0, keepAliveMs: 0, launch }),
    ).toThrow(/maxLoaded/);
    const twice = [
      { id: "a", path: "p" },
      { id: "a", path: "q" },
    ];
    expect(() => new ModelPool({ models: twice, maxLoaded: 1, keepAliveMs: 0, launch })).toThrow(
      /two models/,
    );
    const pool = new ModelPool({ models: [{ id: "a", path: "p" }], maxLoaded: 1, keepAliveMs: 0, launch });
    await expect(pool.acquire("b")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });
});
