#!/usr/bin/env bash
# The CUDA prebuilt as a user installs it, against the same package built from its own shipped
# sources, on the GPU machine (see ../shared/device/README.md). Both come from one `npm i minfer`
# made here from the local registry (scripts/install-test/run.mjs --only a --keep), packed by
# scripts/device/prepare-install.sh into .device/gpu-install.tar.xz; the built-in model is taken
# from this checkout (it is in the tracked tree, so it is not carried twice).
#
# There (run tool, carry [".device/node.tar.xz", ".device/gpu-install.tar.xz"]):
#   mkdir -p .nd && tar -xJf .device/node.tar.xz -C .nd && export PATH=$PWD/.nd/bin:$PATH && \
#   BENCH_TYPE=q4_0 bash scripts/device/install-bench.sh
# Writes to $OUT: devices.txt (minfer devices of each install), source-build.log, synth.log,
# bench-<install>-<n>.json (minfer bench -m qwen2-7b-$BENCH_TYPE.gguf -p 512 -n 128 -ngl all -r 3
# --json, the two installs interleaved ROUNDS times).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
W=/tmp/minfer-install-bench
rm -rf "$W" && mkdir -p "$W/prebuilt"
tar -xJf .device/gpu-install.tar.xz -C "$W/prebuilt"
cp packages/cli/models/minfer-default-7m-f16.gguf "$W/prebuilt/node_modules/minfer/models/"
cp -a "$W/prebuilt" "$W/source"
bin() { echo "$W/$1/node_modules/minfer/dist/bin.js"; }
# The from-source install: the CUDA backend's own build script over the sources in its tarball
# (in an installed package it builds for this machine's GPU), which its loader then prefers.
( cd "$W/source/node_modules/@minfer/backend-cuda" && time npm_config_nodedir="$W/source/node-headers" node scripts/build-native.mjs ) >"$OUT/source-build.log" 2>&1
echo "source build rc=$?"; tail -n 3 "$OUT/source-build.log"
for i in prebuilt source; do
  echo "== $i" >>"$OUT/devices.txt"
  node "$(bin $i)" devices --verbose >>"$OUT/devices.txt" 2>&1
done
grep -E "^(cpu|cuda) |cuda:0|native addon" "$OUT/devices.txt"
T=${BENCH_TYPE:-q4_0}
F=/tmp/qwen2-7b-$T.gguf
( time node "$(bin prebuilt)" gguf synth --arch qwen2 --preset qwen2-7b --type "$T" \
  --vocab "$W/prebuilt/ggml-vocab-qwen2.gguf" -o "$F" ) >"$OUT/synth.log" 2>&1
echo "synth rc=$?"; tail -n 3 "$OUT/synth.log"
for r in $(seq 1 "${ROUNDS:-2}"); do
  for i in prebuilt source; do
    node "$(bin $i)" bench -m "$F" -p 512 -n 128 -ngl all -r 3 --json >"$OUT/bench-$i-$r.json" 2>"$OUT/bench-$i-$r.err"
    echo "bench $i round $r rc=$?: $(tr -d '\n ' <"$OUT/bench-$i-$r.json" | head -c 600)"
  done
done
