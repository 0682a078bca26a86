#!/usr/bin/env bash
# Builds everything the GPU run needs and packs it under .device/ (git-ignored): Node.js
# (../shared/device/prepare-node.sh, once), the workspace (turbo build, which builds the CUDA
# addon with this machine's nvcc for sm_90 + PTX), and the bundle of scripts/device/bundle-cuda.mjs,
# also as .device/cuda.tar.xz (what the device call carries; see cuda-run.sh).
set -eu
cd "$(dirname "$0")/../.."
[ -f .device/node.tar.xz ] || ../shared/device/prepare-node.sh
export TURBO_TELEMETRY_DISABLED=1
if [ "${LEAN:-0}" = 1 ]; then
  # LEAN=1 (below): the CUDA addon is built once, for sm_90 machine code only, as the package's own
  # build (the full sm_90 + PTX build would take another ~8 minutes on 2 cores only to be replaced),
  # then the other packages
  (cd packages/backend-cuda && node scripts/build-native.mjs --archs=90-real --work=/tmp/minfer-cuda-lean --strict &&
    npx tsup src/index.ts --format esm --dts --clean --target node20 --silent)
  npx turbo run build --output-logs=errors-only --filter='!@minfer/backend-cuda'
else
  npx turbo run build --output-logs=errors-only
fi
node scripts/device/bundle-cuda.mjs
# The stand-alone gemm_tc check and benchmark (native/cuda/ops/gemm_tc_selftest.cuh; the
# gemm-selftest stage), and with GEMM_BASE=COMMIT the same built from that commit's sources, so
# that one call measures the two side by side.
selftest() { # native-root out
  nvcc -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -I "$1/common" -x cu -DGEMM_TC_SELFTEST \
    "$1/cuda/ops/gemm_tc_selftest.cuh" -o "$2"
}
mkdir -p .device/cuda/bin
rm -f .device/cuda/bin/gemm_tc*
# (not for LEAN=1: its bundle leaves cuda/bin out)
[ "${LEAN:-0}" = 1 ] || selftest native .device/cuda/bin/gemm_tc
if [ -n "${GEMM_BASE:-}" ] && [ "${LEAN:-0}" != 1 ]; then
  base=$(mktemp -d)
  git archive "$GEMM_BASE" native | tar -x -C "$base"
  selftest "$base/native" .device/cuda/bin/gemm_tc_base
  rm -rf "$base"
fi
# LEAN=1: a smaller bundle for calls that also carry llama.cpp's sources (.device/llamacpp): the
# addon built for sm_90 machine code only (no PTX, which is about 5 MB of the compressed bundle),
# without the gemm_tc binaries, the vocabulary fixtures (tokenizer tests only) and stories260K (the
# smoke and fidelity stages; the side-by-side, batched and hf-bert stages do not read it) — with
# llama.cpp's sources and Node.js the carried tree is otherwise just over the 64 MiB (2026-12-05).
lean=()
if [ "${LEAN:-0}" = 1 ]; then
  # Node.js without its symbol table (99 -> 86 MB, 24.2 -> 21.9 MB packed): room for the bundle's
  # growth under the 64 MiB (a call of 2026-12-05 was refused at 63.2 MiB with the unstripped one).
  if [ ! .device/node.stripped -nt .device/node.tar.xz ]; then
    t=$(mktemp -d)
    tar -xJf .device/node.tar.xz -C "$t"
    strip "$t/bin/node"
    XZ_OPT=-9e tar -cJf .device/node.tar.xz -C "$t" bin
    rm -rf "$t"
    touch .device/node.stripped
  fi
  lean=(--exclude=cuda/bin --exclude=cuda/fixtures/vocab --exclude=cuda/fixtures/stories260K.gguf)
fi
# The bundle travels compressed (the addon's PTX and the fixtures compress well): the tracked tree
# plus what is carried must stay under the device tool's 64 MiB. The built-in model is tracked, so
# it is already in the working tree there: cuda-run.sh links it into the bundle's fixtures.
tar -cJf .device/cuda.tar.xz -C .device --exclude=cuda/fixtures/minfer-default-7m-f16.gguf "${lean[@]}" cuda
du -sh .device/cuda .device/cuda.tar.xz .device/node.tar.xz
