#!/usr/bin/env bash
# Packs what scripts/device/install-bench.sh needs: Node.js (../shared/device/prepare-node.sh) and
# one `npm i minfer` from the local registry of the install test (its scenario a, kept), without
# the built-in model (the run takes it from the checkout), with the qwen2 vocabulary for synth and
# Node's headers (for the from-source build there).
#   bash scripts/device/prepare-install.sh
set -eu
cd "$(dirname "$0")/../.."
[ -f .device/node.tar.xz ] || ../shared/device/prepare-node.sh
log=$(mktemp)
node scripts/install-test/run.mjs --only a --keep --prebuilds cpu-x64 | tee "$log"
kept=$(sed -n 's/^install-test: kept //p' "$log")
[ -d "$kept/scenario-a/node_modules/@minfer/backend-cuda-linux-x64-gnu" ] || { echo "no CUDA prebuilt installed in $kept"; exit 1; }
fixtures=${MINFER_FIXTURES:-../shared/fixtures}
cp "$fixtures/vocab/ggml-vocab-qwen2.gguf" "$kept/scenario-a/"
# The from-source build there needs the headers of the Node.js that runs it (node.tar.xz has only bin/node).
headers="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")/include/node"
[ -f "$headers/node_api.h" ] || { echo "no Node.js headers at $headers"; exit 1; }
mkdir -p "$kept/scenario-a/node-headers/include" && cp -r "$headers" "$kept/scenario-a/node-headers/include/"
tar -C "$kept/scenario-a" --exclude='node_modules/minfer/models/*.gguf' -cf - . | xz -T0 -3 >.device/gpu-install.tar.xz
rm -rf "$kept"
du -sh .device/node.tar.xz .device/gpu-install.tar.xz
