#!/usr/bin/env bash
# Builds everything the GPU run needs and packs it under .device/ (git-ignored): Node.js
# (../shared/device/prepare-node.sh, once), the workspace (turbo build, which builds the CUDA
# addon with this machine's nvcc for sm_90 + PTX), and the bundle of scripts/device/bundle-cuda.mjs,
# also as .device/cuda.tar.xz (what the device call carries; see cuda-run.sh).
set -eu
cd "$(dirname "$0")/../.."
[ -f .device/node.tar.xz ] || ../shared/device/prepare-node.sh
export TURBO_TELEMETRY_DISABLED=1
npx turbo run build --output-logs=errors-only
node scripts/device/bundle-cuda.mjs
# The bundle travels compressed (the addon's PTX and the fixtures compress well): the tracked tree
# plus what is carried must stay under the device tool's 64 MiB. The built-in model is tracked, so
# it is already in the working tree there: cuda-run.sh links it into the bundle's fixtures.
tar -cJf .device/cuda.tar.xz -C .device --exclude=cuda/fixtures/minfer-default-7m-f16.gguf cuda
du -sh .device/cuda .device/cuda.tar.xz .device/node.tar.xz
