// Reads the ELF header of a binary, to check that a prebuilt addon is a shared object for the
// machine its platform package names (x86-64 or AArch64) before it is copied or packed.
import { closeSync, openSync, readSync } from "node:fs";

/** e_machine values of the platforms there are prebuilt packages for, by Node's process.arch. */
export const ELF_MACHINES = { x64: 62, arm64: 183 };

/** { machine, type } of a 64-bit little-endian ELF file, or { error } saying why it is not one. */
export function readElfHeader(path) {
  const head = Buffer.alloc(20);
  let fd;
  try {
    fd = openSync(path, "r");
    readSync(fd, head, 0, head.length, 0);
  } catch (e) {
    return { error: `${path} cannot be read (${e.code ?? e.message})` };
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
  if (head.readUInt32BE(0) !== 0x7f454c46) return { error: `${path} is not an ELF file` };
  if (head[4] !== 2 || head[5] !== 1) return { error: `${path} is not a 64-bit little-endian ELF file` };
  return { type: head.readUInt16LE(16), machine: head.readUInt16LE(18) };
}

/** Why path is not an ELF shared object for arch (x64 | arm64), or undefined when it is. */
export function elfProblem(path, arch) {
  const h = readElfHeader(path);
  if (h.error) return h.error;
  const want = ELF_MACHINES[arch];
  if (want === undefined)
    return `no ELF machine known for ${arch} (known: ${Object.keys(ELF_MACHINES).join(", ")})`;
  if (h.type !== 3) return `${path} is an ELF file of type ${h.type}, not a shared object (3)`;
  if (h.machine !== want) return `${path} is built for ELF machine ${h.machine}, not ${arch} (${want})`;
  return undefined;
}

/** The [offset, size] of a named section of a 64-bit little-endian ELF image, or undefined. */
export function elfSection(image, name) {
  const shoff = Number(image.readBigUInt64LE(0x28));
  const entsize = image.readUInt16LE(0x3a);
  const count = image.readUInt16LE(0x3c);
  const header = (i) => {
    const o = shoff + i * entsize;
    return {
      name: image.readUInt32LE(o),
      offset: Number(image.readBigUInt64LE(o + 0x18)),
      size: Number(image.readBigUInt64LE(o + 0x20)),
    };
  };
  const names = header(image.readUInt16LE(0x3e));
  for (let i = 0; i < count; i++) {
    const h = header(i);
    const start = names.offset + h.name;
    if (image.toString("latin1", start, image.indexOf(0, start)) === name) return [h.offset, h.size];
  }
  return undefined;
}
