import { readFileSync, statSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import { backend, type CpuRuntime } from "./index.js";
import { storiesPath } from "./test-helpers.js";

const rt = (await backend.devices()[0]!.init({ threads: 2 })) as CpuRuntime;
afterAll(() => rt.dispose());

describe("buffers", () => {
  it("allocates zero-filled memory, writes and reads it back", async () => {
    const b = rt.allocate(1000, "t");
    expect(b.size).toBe(1000);
    expect(b.device).toBe("cpu");
    expect(b.label).toBe("t");
    expect(await rt.read(b, 0, 1000)).toEqual(new Uint8Array(1000));
    await rt.write(b, 8, new Float32Array([1.5, -2]));
    const back = await rt.read(b, 8, 8);
    expect(Array.from(new Float32Array(back.buffer, back.byteOffset, 2))).toEqual([1.5, -2]);
    // A view into a larger ArrayBuffer writes only its own bytes.
    const big = new Uint8Array([9, 9, 1, 2, 3, 9]);
    await rt.write(b, 0, big.subarray(2, 5));
    expect(Array.from(await rt.read(b, 0, 4))).toEqual([1, 2, 3, 0]);
    b.dispose();
  });

  it("reads into a caller's array (a view of its first bytes) and refuses one too small", async () => {
    const b = rt.allocate(64, "t");
    await rt.write(
      b,
      16,
      Uint8Array.from({ length: 32 }, (_, i) => i + 1),
    );
    const into = new Uint8Array(40).fill(0xee);
    const got = await rt.read(b, 16, 32, into.subarray(4));
    expect(got.buffer).toBe(into.buffer);
    expect(got.byteOffset).toBe(4);
    expect(Array.from(got)).toEqual(Array.from({ length: 32 }, (_, i) => i + 1));
    expect(Array.from(into.subarray(0, 4))).toEqual([0xee, 0xee, 0xee, 0xee]); // outside the view: untouched
    expect(into[36]).toBe(0xee);
    await expect(rt.read(b, 0, 32, new Uint8Array(31))).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    b.dispose();
  });

  it("allocates large (mapped) and empty buffers", async () => {
    const big = rt.allocate(8 << 20, "big");
    const tail = await rt.read(big, (8 << 20) - 16, 16);
    expect(tail).toEqual(new Uint8Array(16));
    big.dispose();
    const empty = rt.allocate(0, "empty");
    expect(empty.size).toBe(0);
    expect(await rt.read(empty, 0, 0)).toHaveLength(0);
    empty.dispose();
  });

  it("refuses ranges outside the buffer and bad sizes", async () => {
    const b = rt.allocate(16, "t");
    await expect(rt.write(b, 12, new Uint8Array(8))).rejects.toMatchObject({ code: "OUT_OF_RANGE" });
    await expect(rt.read(b, 17, 0)).rejects.toMatchObject({ code: "OUT_OF_RANGE" });
    await expect(rt.read(b, -1, 1)).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    expect(() => rt.allocate(-5, "x")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    expect(() => rt.allocate(1.5, "x")).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    b.dispose();
  });

  it("throws DISPOSED on use after dispose; a second dispose does nothing", async () => {
    const b = rt.allocate(16, "t");
    b.dispose();
    expect(b.disposed).toBe(true);
    b.dispose();
    await expect(rt.read(b, 0, 4)).rejects.toMatchObject({ code: "DISPOSED" });
    await expect(rt.write(b, 0, new Uint8Array(4))).rejects.toMatchObject({ code: "DISPOSED" });
  });

  it("refuses a buffer of another runtime", async () => {
    const other = (await backend.devices()[0]!.init({ threads: 1 })) as CpuRuntime;
    const b = other.allocate(16, "theirs");
    await expect(rt.read(b, 0, 4)).rejects.toMatchObject({ code: "WRONG_DEVICE" });
    other.dispose();
    expect(b.disposed).toBe(true);
  });

  it("maps a file range in place with the exact bytes (unaligned offset)", async () => {
    const path = storiesPath();
    const file = readFileSync(path);
    const offset = 4097 + 13;
    const length = Math.min(100_000, statSync(path).size - offset);
    const m = await rt.mapFile(path, offset, length, "weights");
    expect(m.size).toBe(length);
    expect(m.readOnly).toBe(true);
    expect(Buffer.from(await rt.read(m, 0, length)).equals(file.subarray(offset, offset + length))).toBe(
      true,
    );
    expect(
      Buffer.from(await rt.read(m, length - 7, 7)).equals(
        file.subarray(offset + length - 7, offset + length),
      ),
    ).toBe(true);
    await expect(rt.write(m, 0, new Uint8Array(1))).rejects.toMatchObject({ code: "READ_ONLY" });
    m.dispose();
    await expect(rt.read(m, 0, 1)).rejects.toMatchObject({ code: "DISPOSED" });
  });

  it("refuses a range past the end of the file and a missing file", async () => {
    const path = storiesPath();
    const size = statSync(path).size;
    await expect(rt.mapFile(path, size - 10, 11, "x")).rejects.toMatchObject({ code: "OUT_OF_RANGE" });
    await expect(rt.mapFile(`${path}.missing`, 0, 1, "x")).rejects.toMatchObject({ code: "IO_ERROR" });
  });
});
