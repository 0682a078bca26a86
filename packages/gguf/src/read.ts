import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
import { GgufError } from "./errors.js";
import { type GgufFile, type GgufPart, type GgufTensorInfo, parseHeader } from "./parse.js";
import { firstPartInfo, splitInfo, splitPartPaths } from "./split-names.js";

/** How much of a file is read first; more is read as the header needs it. */
const FIRST_READ = 1 << 20;

/** Errors from the operating system (ENOENT, EISDIR, …) become `IO_ERROR`; anything else is a defect and propagates. */
function isSystemError(e: unknown): e is NodeJS.ErrnoException {
  return e instanceof Error && typeof (e as NodeJS.ErrnoException).code === "string" && "syscall" in e;
}

function ioError(path: string, e: unknown): GgufError {
  const err = e as NodeJS.ErrnoException;
  return new GgufError("IO_ERROR", `cannot read ${path}: ${err.code ?? ""} ${err.message}`.trim(), {
    path,
    cause: e,
  });
}

/** Parses a GGUF held entirely in memory (a single file; a split part is parsed as itself). */
export function parseGguf(bytes: Uint8Array): GgufFile {
  return single(parseHeader(bytes, bytes.length, undefined, 0));
}

function single(part: GgufPart): GgufFile {
  return {
    version: part.version,
    metadata: part.metadata,
    tensors: part.tensors,
    alignment: part.alignment,
    parts: [part],
  };
}

/** Reads bytes [0, want) of an open file into a fresh buffer, synchronously. */
function readPrefixSync(fd: number, want: number): Uint8Array {
  const buf = new Uint8Array(want);
  let got = 0;
  while (got < want) {
    const n = readSync(fd, buf, got, want - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

/**
 * Parses the header of one file. The first megabyte is read up front (asynchronously when
 * `first` is given); a longer header (a 150k-token vocabulary) is read on as the parser reaches it.
 */
function parseOpenFile(fd: number, size: number, path: string, index: number, first?: Uint8Array): GgufPart {
  const bytes = first ?? readPrefixSync(fd, Math.min(size, FIRST_READ));
  return parseHeader(bytes, size, path, index, (end) => readPrefixSync(fd, end));
}

function parsePartSync(path: string, index: number): GgufPart {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (e) {
    throw ioError(path, e);
  }
  try {
    return parseOpenFile(fd, fstatSync(fd).size, path, index);
  } catch (e) {
    if (isSystemError(e)) throw ioError(path, e);
    throw e;
  } finally {
    closeSync(fd);
  }
}

async function parsePart(path: string, index: number): Promise<GgufPart> {
  let fh: FileHandle;
  try {
    fh = await open(path, "r");
  } catch (e) {
    throw ioError(path, e);
  }
  try {
    const size = (await fh.stat()).size;
    const want = Math.min(size, FIRST_READ);
    const first = new Uint8Array(want);
    let got = 0;
    while (got < want) {
      const { bytesRead } = await fh.read(first, got, want - got, got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    return parseOpenFile(fh.fd, size, path, index, first.subarray(0, got));
  } catch (e) {
    if (isSystemError(e)) throw ioError(path, e);
    throw e;
  } finally {
    await fh.close();
  }
}

/**
 * Reads the header of the GGUF at `path` (metadata and tensor infos; tensor data is not read).
 * When the file is the first part of a split model (`split.count` > 1), the other parts are read
 * too and the result presents all their tensors as one model.
 */
export async function readGguf(path: string): Promise<GgufFile> {
  const first = await parsePart(path, 0);
  const split = firstPartInfo(first, path);
  if (!split) return single(first);
  const paths = splitPartPaths(path, split.count);
  const parts = [first];
  for (let i = 1; i < split.count; i++) parts.push(await parsePart(paths[i]!, i));
  return combineParts(parts, split.tensorCount);
}

/** Synchronous {@link readGguf}. */
export function readGgufSync(path: string): GgufFile {
  const first = parsePartSync(path, 0);
  const split = firstPartInfo(first, path);
  if (!split) return single(first);
  const paths = splitPartPaths(path, split.count);
  const parts = [first];
  for (let i = 1; i < split.count; i++) parts.push(parsePartSync(paths[i]!, i));
  return combineParts(parts, split.tensorCount);
}

function combineParts(parts: GgufPart[], tensorCount: number): GgufFile {
  const count = parts.length;
  const tensors: GgufTensorInfo[] = [];
  const names = new Map<string, number>();
  for (const [i, p] of parts.entries()) {
    const info = splitInfo(p, p.path!);
    if (!info || info.index !== i || info.count !== count) {
      throw new GgufError(
        "BAD_SPLIT",
        `part ${i + 1} of ${count} has split.no=${info?.index ?? "absent"}, split.count=${info?.count ?? "absent"}; expected ${i} and ${count}`,
        { path: p.path },
      );
    }
    for (const t of p.tensors) {
      const other = names.get(t.name);
      if (other !== undefined) {
        throw new GgufError("DUPLICATE_TENSOR", `tensor "${t.name}" is in parts ${other + 1} and ${i + 1}`, {
          path: p.path,
          key: t.name,
        });
      }
      names.set(t.name, i);
      tensors.push(t);
    }
  }
  if (tensors.length !== tensorCount) {
    throw new GgufError(
      "BAD_SPLIT",
      `split.tensors.count says ${tensorCount} tensors but the ${count} parts hold ${tensors.length}`,
      { path: parts[0]!.path },
    );
  }
  const first = parts[0]!;
  return { version: first.version, metadata: first.metadata, tensors, alignment: first.alignment, parts };
}
