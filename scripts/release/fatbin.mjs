// Lists what a CUDA addon's fat binary holds, without the CUDA toolkit's cuobjdump: the
// .nv_fatbin section is a run of fat binaries (one per translation unit), each a 16-byte header
// (magic 0xBA55ED50, u16 version, u16 header size, u64 payload size) and entries (u16 kind:
// 1 = PTX, 2 = SASS ELF; u32 header size at 4; u32 padded payload size at 8; u32 architecture
// at 28, e.g. 90 for sm_90 / compute_90).
import { readFileSync } from "node:fs";
import { elfSection } from "./elf.mjs";

const MAGIC = 0xba55ed50;

/** { units, sass: { sm_80: n, … }, ptx: { compute_90: n, … } } of an addon, or { error }. */
export function fatbinContents(path) {
  const image = readFileSync(path);
  const section = elfSection(image, ".nv_fatbin");
  if (!section) return { error: `${path} has no .nv_fatbin section (no device code)` };
  const [start, size] = section;
  const sass = {};
  const ptx = {};
  let units = 0;
  let p = start;
  while (p + 16 <= start + size) {
    if (image.readUInt32LE(p) !== MAGIC) {
      p += 8; // fat binaries are 8-byte aligned; padding between them
      continue;
    }
    units++;
    const end = p + image.readUInt16LE(p + 6) + Number(image.readBigUInt64LE(p + 8));
    for (let q = p + image.readUInt16LE(p + 6); q < end; ) {
      const kind = image.readUInt16LE(q);
      const arch = image.readUInt32LE(q + 28);
      if (kind === 2) sass[`sm_${arch}`] = (sass[`sm_${arch}`] ?? 0) + 1;
      else if (kind === 1) ptx[`compute_${arch}`] = (ptx[`compute_${arch}`] ?? 0) + 1;
      q += image.readUInt32LE(q + 4) + image.readUInt32LE(q + 8);
    }
    p = end;
  }
  return { units, size, sass, ptx };
}

/** Why the addon lacks SASS or PTX that a CMake architecture list ("80-real;90-virtual") asks for. */
export function fatbinProblem(path, archs) {
  const c = fatbinContents(path);
  if (c.error) return c.error;
  const lacking = archs.split(";").flatMap((a) => {
    const [n, kind] = a.split("-");
    const key = kind === "virtual" ? `compute_${n}` : `sm_${n}`;
    const have = (kind === "virtual" ? c.ptx : c.sass)[key] ?? 0;
    return have === c.units ? [] : [`${key} (${have} of ${c.units} translation units)`];
  });
  return lacking.length > 0 ? `${path} lacks ${lacking.join(", ")}` : undefined;
}
