/**
 * Where the header fields of a well-formed GGUF (v2/v3) are: the positions of its counts, value
 * types, tensor shapes, types and offsets, for mutations that patch bytes after encoding.
 */

const SCALAR_SIZE = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 };
const STRING = 8;
const ARRAY = 9;
/** String lengths recorded per string array (its first few items): enough to mutate, cheap to walk. */
const ITEMS_RECORDED = 3;

/**
 * Walks the header of `bytes` (as @minfer/gguf writes it) and returns the byte positions of:
 * `counts` (u64: tensor and KV counts, array lengths), `strings` (u64 string lengths),
 * `valueTypes` (u32), `nDims` (u32), `dims` (u64), `tensorTypes` (u32), `offsets` (u64); and
 * `end`, where the tensor infos end.
 */
export function ggufFields(bytes) {
  const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const f = {
    counts: [],
    strings: [],
    valueTypes: [],
    nDims: [],
    dims: [],
    tensorTypes: [],
    offsets: [],
    end: 0,
  };
  let p = 8;
  const u64 = () => {
    const n = Number(v.getBigUint64(p, true));
    p += 8;
    return n;
  };
  const string = (record) => {
    if (record) f.strings.push(p);
    const n = u64();
    p += n;
  };
  const value = (type, record) => {
    if (type === STRING) return string(record);
    if (type === ARRAY) {
      f.valueTypes.push(p);
      const item = v.getUint32(p, true);
      p += 4;
      f.counts.push(p);
      const n = u64();
      if (item !== STRING && item !== ARRAY) {
        p += n * SCALAR_SIZE[item];
        return;
      }
      for (let i = 0; i < n; i++) value(item, record && i < ITEMS_RECORDED);
      return;
    }
    p += SCALAR_SIZE[type];
  };
  f.counts.push(p);
  const nTensors = u64();
  f.counts.push(p);
  const nKv = u64();
  for (let i = 0; i < nKv; i++) {
    string(true);
    f.valueTypes.push(p);
    const type = v.getUint32(p, true);
    p += 4;
    value(type, true);
  }
  for (let i = 0; i < nTensors; i++) {
    string(true);
    f.nDims.push(p);
    const n = v.getUint32(p, true);
    p += 4;
    for (let d = 0; d < n; d++) {
      f.dims.push(p);
      p += 8;
    }
    f.tensorTypes.push(p);
    p += 4;
    f.offsets.push(p);
    p += 8;
  }
  f.end = p;
  return f;
}
