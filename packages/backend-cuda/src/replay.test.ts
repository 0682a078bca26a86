import type { Device } from "@minfer/ir";
import { describe, expect, it } from "vitest";
import type { NativeAddon, NativeBuffer, NativeExecutor } from "./native.js";
import { CudaRuntime } from "./runtime.js";

// CudaRuntime.executeWithIo's JavaScript side, against a stand-in addon (no device needed): when
// the addon replays a step on the calling thread, the runtime polls it to its end and returns views
// of the caller's arrays; when it declines, the runtime writes, executes and reads one after
// another; a failed replay rejects with its code and the next step runs; steps never overlap.

interface Fake {
  readonly addon: NativeAddon;
  readonly log: string[];
  /** pollReplay answers: false while running; true when done; an Error to throw. */
  polls: (boolean | Error)[];
  accept: boolean;
  inFlight: number;
  maxInFlight: number;
}

function fakeAddon(): Fake {
  const f: Fake = { log: [], polls: [], accept: true, inFlight: 0, maxInFlight: 0, addon: undefined! };
  const handle = (name: string) => ({ name }) as unknown as NativeBuffer;
  const bufName = (b: NativeBuffer) => (b as unknown as { name: string }).name;
  const addon: Partial<NativeAddon> = {
    alloc: (_d, bytes) => handle(`b${bytes}`),
    free: () => {},
    createExecutor: () => ({}) as NativeExecutor,
    executorStats: () => ({
      graphsCached: 0,
      graphReplays: 0,
      graphCaptures: 0,
      threadReplays: 0,
      graphFailures: 0,
      fusedRuns: 0,
    }),
    write: (b, offset, data) => {
      f.log.push(`write ${bufName(b)}@${offset}:${data.byteLength}`);
    },
    read: (b, offset, length, into) => {
      f.log.push(`read ${bufName(b)}@${offset}:${length}`);
      const out = into ? into.subarray(0, length) : new Uint8Array(length);
      out.fill(7);
      return out;
    },
    execute: async (_e, program, _b, _p, id) => {
      f.inFlight++;
      f.maxInFlight = Math.max(f.maxInFlight, f.inFlight);
      f.log.push(`execute ${program.byteLength} id ${id}`);
      await new Promise((r) => setTimeout(r, 1));
      f.inFlight--;
      return { graph: "replayed" as const };
    },
    launchReplay: (_e, id, length, _b, uploads, downloads) => {
      if (!f.accept || f.inFlight > 0) return false;
      f.inFlight++;
      f.maxInFlight = Math.max(f.maxInFlight, f.inFlight);
      f.log.push(`launch id ${id} ${length} up ${uploads.length} down ${downloads.length}`);
      for (const d of downloads) d[3].subarray(0, d[2]).fill(9);
      return true;
    },
    pollReplay: () => {
      const next = f.polls.shift() ?? true;
      if (next instanceof Error) {
        f.inFlight--;
        throw next;
      }
      if (next) f.inFlight--;
      return next;
    },
  };
  (f as { addon: NativeAddon }).addon = addon as NativeAddon;
  return f;
}

const device = { name: "cuda:0" } as Device;

describe("CudaRuntime.executeWithIo (a stand-in addon)", () => {
  it("polls a replayed step to its end and returns views of the caller's arrays", async () => {
    const f = fakeAddon();
    const rt = new CudaRuntime(device, f.addon, 0, true);
    const a = rt.allocate(64, "a");
    const program = new Uint8Array(40);
    const into = new Uint8Array(32);
    f.polls = [false, false, true];
    const [out] = await rt.executeWithIo(
      program,
      [a],
      [{ buffer: a, offset: 8, data: new Int32Array(2) }],
      [{ buffer: a, offset: 0, length: 16, into }],
    );
    expect(f.log).toEqual(["launch id 1 40 up 1 down 1"]);
    expect(f.polls).toEqual([]); // polled until it said done
    expect(out!.buffer).toBe(into.buffer);
    expect(out!.length).toBe(16);
    expect([...out!]).toEqual(new Array(16).fill(9));
    // the same program array keeps its id; another array gets another
    await rt.executeWithIo(program, [a], [], [{ buffer: a, offset: 0, length: 4, into }]);
    await rt.executeWithIo(new Uint8Array(40), [a], [], [{ buffer: a, offset: 0, length: 4, into }]);
    expect(f.log.slice(1)).toEqual(["launch id 1 40 up 0 down 1", "launch id 2 40 up 0 down 1"]);
  });

  it("writes, executes and reads one after another when the step is not replayed here", async () => {
    const f = fakeAddon();
    f.accept = false;
    const rt = new CudaRuntime(device, f.addon, 0, true);
    const a = rt.allocate(64, "a");
    const into = new Uint8Array(16);
    const program = new Uint8Array(12);
    const data = new Float32Array(2);
    const [out] = await rt.executeWithIo(
      program,
      [a],
      [{ buffer: a, offset: 4, data }],
      [{ buffer: a, offset: 0, length: 16, into }],
    );
    expect(f.log).toEqual(["write b64@4:8", "execute 12 id 1", "read b64@0:16"]);
    expect(out!.buffer).toBe(into.buffer);
    // a read without a host array of its own, and MINFER_CUDA_POLL=0 (replayOnThread false): the same
    f.accept = true;
    f.log.length = 0;
    await rt.executeWithIo(program, [a], [], [{ buffer: a, offset: 0, length: 8 }]);
    const off = new CudaRuntime(device, f.addon, 0, true, {}, { replayOnThread: false });
    await off.executeWithIo(
      program,
      [off.allocate(64, "c")],
      [],
      [{ buffer: a, offset: 0, length: 8, into }],
    );
    expect(f.log).toEqual(["execute 12 id 1", "read b64@0:8", "execute 12 id 1", "read b64@0:8"]);
  });

  it("rejects a failed replay with its code, and runs the next step", async () => {
    const f = fakeAddon();
    const rt = new CudaRuntime(device, f.addon, 0, true);
    const a = rt.allocate(64, "a");
    const into = new Uint8Array(16);
    const bad = Object.assign(
      new Error("node 3 (GET_ROWS): an index read from an input is out of range (99)"),
      {
        code: "OUT_OF_RANGE",
      },
    );
    f.polls = [false, bad];
    const step = () =>
      rt.executeWithIo(new Uint8Array(8), [a], [], [{ buffer: a, offset: 0, length: 16, into }]);
    await expect(step()).rejects.toMatchObject({
      code: "OUT_OF_RANGE",
      message: expect.stringMatching(/cuda:0: execute: node 3 \(GET_ROWS\)/),
    });
    f.polls = [true];
    await expect(step()).resolves.toHaveLength(1);
  });

  it("never has two steps in flight", async () => {
    const f = fakeAddon();
    const rt = new CudaRuntime(device, f.addon, 0, true);
    const a = rt.allocate(64, "a");
    const into = new Uint8Array(16);
    f.polls = [false, false, false, true, false, true];
    const p = new Uint8Array(8);
    await Promise.all([
      rt.executeWithIo(p, [a], [], [{ buffer: a, offset: 0, length: 16, into }]),
      rt.executeWithIo(p, [a], [], [{ buffer: a, offset: 0, length: 16, into }]),
      rt.execute(p, [a]),
    ]);
    expect(f.maxInFlight).toBe(1);
    expect(f.log).toEqual(["launch id 1 8 up 0 down 1", "launch id 1 8 up 0 down 1", "execute 8 id 1"]);
  });

  it("times the JavaScript thread around replayed steps with MINFER_CUDA_STEP_TIMES", async () => {
    const f = fakeAddon();
    // each replayed step runs 3 ms: pollReplay says done once that much has passed since its launch
    let launchedAt = 0;
    const launch = f.addon.launchReplay;
    (f.addon as { launchReplay: NativeAddon["launchReplay"] }).launchReplay = (...a) => {
      launchedAt = performance.now();
      return launch(...a);
    };
    let polls = 0;
    (f.addon as { pollReplay: NativeAddon["pollReplay"] }).pollReplay = () => {
      polls++;
      const done = performance.now() - launchedAt >= 3;
      if (done) f.inFlight--;
      return done;
    };
    const rt = new CudaRuntime(device, f.addon, 0, true, { stepTimes: true });
    const a = rt.allocate(64, "a");
    const into = new Uint8Array(16);
    const step = () =>
      rt.executeWithIo(new Uint8Array(8), [a], [], [{ buffer: a, offset: 0, length: 16, into }]);
    expect(rt.replayHostTimes()).toMatchObject({ replays: 0, polls: 0, betweens: 0 });
    await step();
    await new Promise((r) => setTimeout(r, 5)); // the caller's own work between two steps
    await step();
    await step();
    f.accept = false; // a step the addon does not replay is not counted, nor the gap after it
    await rt.executeWithIo(new Uint8Array(8), [a], [], [{ buffer: a, offset: 0, length: 16, into }]);
    f.accept = true;
    await step();
    const t = rt.replayHostTimes()!;
    expect(t.replays).toBe(4);
    expect(t.polls).toBe(polls);
    expect(t.betweens).toBe(2);
    expect(t.betweenMs).toBeGreaterThanOrEqual(4);
    expect(t.waitMs).toBeGreaterThanOrEqual(4 * 3 - 0.5);
    for (const k of ["prepMs", "launchMs", "resumeMs"] as const) expect(t[k]).toBeGreaterThanOrEqual(0);
    // off by default
    expect(new CudaRuntime(device, f.addon, 0, true).replayHostTimes()).toBeUndefined();
  });
});
