import { describe, expect, it } from "vitest";
import { crc32, KvCache, KvCacheError, readSequenceState, STATE_MAGIC } from "./index.js";
import { prng, put, tokens } from "./test-helpers.js";

function sample(): KvCache {
  const kv = new KvCache({ nCtx: 32, nSeqMax: 3 });
  put(kv, tokens(0, 0, 6));
  kv.seqCp(0, 1, 0, 4);
  put(kv, tokens(1, 4, 9));
  put(kv, tokens(2, 0, 3));
  kv.seqRm(1, 2, 3);
  return kv;
}

describe("sequence state", () => {
  it("crc32 matches the standard check value", () => {
    expect(crc32(new TextEncoder().encode("123456789"))).toBe(0xcbf43926);
  });

  it("write → read round trip, and restore into another cache", () => {
    const kv = sample();
    const bytes = kv.writeSequence(1);
    expect(new DataView(bytes.buffer).getUint32(0, true)).toBe(STATE_MAGIC);
    const st = readSequenceState(bytes);
    expect(st.nCtx).toBe(32);
    const want: [number, number][] = [];
    for (let c = 0; c < 32; c++) if (kv.cells.has(c, 1)) want.push([c, kv.cells.pos(c)]);
    expect(Array.from(st.cells, (c, i) => [c, st.positions[i]!])).toEqual(want);
    expect(Array.from(st.positions).sort((a, b) => a - b)).toEqual([0, 1, 3, 4, 5, 6, 7, 8]);

    const other = new KvCache({ nCtx: 16, nSeqMax: 2 });
    put(other, tokens(0, 0, 3));
    const r = other.restoreSequence(bytes, 1);
    if (r.status !== "ok") throw new Error("no slot");
    expect(r.cells.length).toBe(st.positions.length);
    for (let i = 0; i < r.cells.length; i++) expect(other.cells.pos(r.cells[i]!)).toBe(st.positions[i]);
    expect(other.seqCount(1)).toBe(8);
    // Written again, the sequence has the same positions.
    expect(Array.from(readSequenceState(other.writeSequence(1)).positions)).toEqual(Array.from(st.positions));
    // An empty sequence round-trips too.
    expect(readSequenceState(new KvCache({ nCtx: 4 }).writeSequence(0)).positions.length).toBe(0);
  });

  it("refuses state that does not fit, a non-empty target, and pending shifts", () => {
    const kv = sample();
    const bytes = kv.writeSequence(0);
    expect(() => kv.readSequence(bytes, 0)).toThrow(
      expect.objectContaining({ code: "STATE_MISMATCH", argument: "seq" }),
    );
    expect(() => new KvCache({ nCtx: 4 }).readSequence(bytes, 0)).toThrow(
      expect.objectContaining({ code: "STATE_MISMATCH", argument: "bytes" }),
    );
    const full = new KvCache({ nCtx: 6, nSeqMax: 2 });
    put(full, tokens(1, 0, 3));
    expect(full.restoreSequence(bytes, 0)).toEqual({ status: "no-slot", needed: 6, free: 3 });
    kv.seqAdd(2, 0, -1, 2);
    expect(() => kv.writeSequence(2)).toThrow(expect.objectContaining({ code: "PENDING_SHIFT" }));
    kv.consumeShift();
    expect(readSequenceState(kv.writeSequence(2)).positions).toEqual(Int32Array.from([2, 3, 4]));
  });

  it("every truncation is STATE_TRUNCATED; trailing bytes are STATE_MALFORMED", () => {
    const bytes = sample().writeSequence(1);
    for (let n = 0; n < bytes.length; n++) {
      let err: unknown;
      try {
        readSequenceState(bytes.subarray(0, n));
      } catch (e) {
        err = e;
      }
      expect(err, `length ${n}`).toBeInstanceOf(KvCacheError);
      expect((err as KvCacheError).code, `length ${n}`).toBe("STATE_TRUNCATED");
    }
    const longer = new Uint8Array(bytes.length + 1);
    longer.set(bytes);
    expect(() => readSequenceState(longer)).toThrow(expect.objectContaining({ code: "STATE_MALFORMED" }));
    expect(() => readSequenceState([1, 2] as never)).toThrow(
      expect.objectContaining({ code: "STATE_MALFORMED" }),
    );
  });

  it("every single-byte mutation, and seeded random mutations, give a KvCacheError", () => {
    const bytes = sample().writeSequence(1);
    const codes = new Set<string>();
    const expectError = (b: Uint8Array, what: string) => {
      let err: unknown;
      try {
        readSequenceState(b);
      } catch (e) {
        err = e;
      }
      expect(err, what).toBeInstanceOf(KvCacheError);
      codes.add((err as KvCacheError).code);
    };
    for (let i = 0; i < bytes.length; i++) {
      for (const x of [0x01, 0x80, 0xff]) {
        const b = Uint8Array.from(bytes);
        b[i]! ^= x;
        expectError(b, `byte ${i} ^ ${x}`);
      }
    }
    const rnd = prng(0x6b76);
    for (let it = 0; it < 2000; it++) {
      const b = Uint8Array.from(bytes);
      const k = 1 + Math.floor(rnd() * 4);
      for (let j = 0; j < k; j++) b[Math.floor(rnd() * b.length)] = Math.floor(rnd() * 256);
      if (b.every((v, i) => v === bytes[i])) continue;
      const cut = rnd() < 0.3 ? Math.floor(rnd() * b.length) : b.length;
      expectError(b.subarray(0, cut), `iteration ${it}`);
    }
    expect([...codes].sort()).toEqual(
      expect.arrayContaining([
        "STATE_BAD_MAGIC",
        "STATE_UNSUPPORTED_VERSION",
        "STATE_CHECKSUM",
        "STATE_TRUNCATED",
      ]),
    );
  });

  it("well-formed but inconsistent state (a valid checksum) is STATE_MALFORMED", () => {
    const good = sample().writeSequence(1);
    const mutate = (f: (dv: DataView) => void) => {
      const b = Uint8Array.from(good);
      const dv = new DataView(b.buffer);
      f(dv);
      dv.setUint32(b.length - 4, crc32(b, b.length - 4), true);
      return b;
    };
    const malformed = expect.objectContaining({ code: "STATE_MALFORMED" });
    expect(() => readSequenceState(mutate((dv) => dv.setUint32(16, 99, true)))).toThrow(malformed); // cell ≥ nCtx
    expect(() => readSequenceState(mutate((dv) => dv.setUint32(24, 0, true)))).toThrow(malformed); // order
    expect(() => readSequenceState(mutate((dv) => dv.setInt32(20, -3, true)))).toThrow(malformed); // position
    expect(() => readSequenceState(mutate((dv) => dv.setUint32(8, 2, true)))).toThrow(malformed); // nCtx
  });
});
