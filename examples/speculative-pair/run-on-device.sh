#!/usr/bin/env bash
# On the GPU machine (../../../shared/device/README.md), from the repository root: trains the
# speculative-decoding target, a ~40M-parameter Qwen3 on the Brown corpus with the built-in 7M
# model's tokenizer (so the built-in model can draft for it), and converts it with minfer.
#
# Carry .device/brown.txt.xz (prepare-corpus.mjs, then xz), .device/builtin-vocab.json
# (vocab-from-gguf.mjs), .device/node.tar.xz and .device/cuda.tar.xz (scripts/device/prepare-cuda.sh:
# `minfer convert` runs from that bundle). Then:
#   mkdir -p .nd && tar -xJf .device/node.tar.xz -C .nd && tar -xJf .device/cuda.tar.xz -C .device && \
#   export PATH=$PWD/.nd/bin:$PATH && bash examples/speculative-pair/run-on-device.sh
# It writes /tmp/spec-pair/target-40m-{f16,q8_0}.gguf there (for runs in the same lease) and
# $OUT/pair/: train.log (with the check that the built-in model drafts for it), summary.json and the Q8_0 file in 15 MB parts (join them with
# `cat target-40m-q8_0.gguf.part-* > target-40m-q8_0.gguf`; the device returns files of 16 MiB at most).
# TRAIN_ARGS replaces the shape and schedule below; TIME_LIMIT bounds the training (default 300 s).
set -euo pipefail
out=${OUT:?set OUT to the folder that receives the results}/pair
work=/tmp/spec-pair
mkdir -p "$out" "$work"
xz -dc .device/brown.txt.xz >"$work/brown.txt"
# a copy-heavy prompt: a held-out document's first 1200 characters, then its first 200 again
python3 -c "import sys; d = [x.strip() for x in open(sys.argv[1]).read().split(chr(10) * 3) if x.strip()][25][:1200]; open(sys.argv[2], 'w').write(d + chr(10) * 2 + d[:200])" \
  "$work/brown.txt" "$work/copy-prompt.txt"
# 12 layers of width 512 (heads of 64, 8 query and 4 K/V heads), FFN 1536: about 40M parameters,
# 5.5x the built-in model's 7.3M.
PYTHONUNBUFFERED=1 python3 examples/train-default-model/train.py --corpus "$work/brown.txt" --out "$work/hf" \
  --tokenizer-from .device/builtin-vocab.json \
  ${TRAIN_ARGS:---hidden 512 --intermediate 1536 --layers 12 --heads 8 --kv-heads 4 --head-dim 64 --max-pos 2048 --seed 11 --schedules 1000} \
  --time-limit "${TIME_LIMIT:-300}" 2>&1 | tee "$out/train.log"
cp "$work/summary.json" "$out/" 2>/dev/null || true
minfer() { node .device/cuda/dist/bin.js "$@"; }
minfer convert "$work/hf" -o "$work/target-40m-f16.gguf" --type f16 --name "minfer speculative target 40M (Brown corpus)"
minfer convert "$work/hf" -o "$work/target-40m-q8_0.gguf" --type q8_0 --name "minfer speculative target 40M (Brown corpus)"
sha256sum "$work"/target-40m-*.gguf | tee -a "$out/train.log"
(cd "$work" && split -b 15M -d target-40m-q8_0.gguf "$out/target-40m-q8_0.gguf.part-")
# the built-in model must be able to draft for it (same vocabulary), and greedy output on the GPU must
# not change with speculation, by a draft model or by n-grams (token ids compared)
for spec in "" "-md packages/cli/models/minfer-default-7m-f16.gguf" "--spec-type ngram"; do
  echo "== -ngl all ${spec:-(no speculation)}" >>"$out/train.log"
  minfer run -m "$work/target-40m-f16.gguf" $spec -f "$work/copy-prompt.txt" -c 2048 -n 160 --temp 0 --ids -ngl all \
    >"$work/ids-${spec:0:4}.json" 2>>"$out/train.log" || echo "failed: $spec" >>"$out/train.log"
done 2>/dev/null
for f in "$work"/ids-*.json; do
  cmp -s "$f" "$work/ids-.json" && echo "$(basename "$f"): the same tokens" || echo "$(basename "$f"): DIFFERENT tokens"
done | tee -a "$out/train.log"
