#!/usr/bin/env bash
# On the GPU machine (../../../shared/device/README.md), from the repository root: trains the
# speculative-decoding pair on the Brown corpus with the built-in 7M model's tokenizer — a ~40M
# Qwen3 target and a draft of the built-in model's shape — and converts both with minfer.
#
# Carry .device/brown.txt.xz (prepare-corpus.mjs, then xz), .device/builtin-vocab.json
# (vocab-from-gguf.mjs), .device/node.tar.xz and .device/cuda.tar.xz (scripts/device/prepare-cuda.sh:
# `minfer convert` runs from that bundle). Then:
#   mkdir -p .nd && tar -xJf .device/node.tar.xz -C .nd && tar -xJf .device/cuda.tar.xz -C .device && \
#   export PATH=$PWD/.nd/bin:$PATH && bash examples/speculative-pair/run-on-device.sh
# COPY_FRACTION (default 0.5): the share of each training batch made of copy examples (train.py
# --copy-fraction), so both models learn to continue a passage seen in their context (0: plain
# language modelling, the run of 2026-12-07 that showed no speedup). DRAFT=0: the target only (the
# built-in model then drafts).
# It writes /tmp/spec-pair/{target-40m-f16,target-40m-q8_0,draft-7m-f16}.gguf and copy-prompt.txt
# there (for runs in the same lease) and $OUT/pair/: logs.tar.gz (training logs, summaries, the
# greedy check) and the Q8_0 target and the draft in parts of 16 MB (join them with `cat NAME.part-* > NAME`; the device
# returns files of 16 MiB at most). TRAIN_ARGS replaces the target's shape and schedule,
# TIME_LIMIT bounds its training (default 200 s), DRAFT_TIME_LIMIT the draft's (default 100 s).
# PHASE=train: only the training (no bundle needed, so a call can carry llama.cpp's sources instead,
# the carried tree being limited to 64 MiB); PHASE=convert: the rest, from a PHASE=train of the same
# lease (its checkpoints in /tmp/spec-pair).
set -euo pipefail
out=${OUT:?set OUT to the folder that receives the results}/pair
work=/tmp/spec-pair
mkdir -p "$out" "$work"
phase=${PHASE:-all}
[ "$phase" = convert ] || xz -dc .device/brown.txt.xz >"$work/brown.txt"
# a copy-heavy prompt: a held-out document's first 1200 characters, then its first 200 again
[ "$phase" = convert ] || python3 -c "import sys; d = [x.strip() for x in open(sys.argv[1]).read().split(chr(10) * 3) if x.strip()][25][:1200]; open(sys.argv[2], 'w').write(d + chr(10) * 2 + d[:200])" \
  "$work/brown.txt" "$work/copy-prompt.txt"
copy=(--copy-fraction "${COPY_FRACTION:-0.5}")
train() { # name time-limit shape…
  local name=$1 limit=$2
  shift 2
  [ "$phase" = convert ] && return
  PYTHONUNBUFFERED=1 python3 examples/train-default-model/train.py --corpus "$work/brown.txt" --out "$work/$name-hf" \
    --tokenizer-from .device/builtin-vocab.json "${copy[@]}" --time-limit "$limit" "$@" 2>&1 | tee "$work/$name-train.log"
  cp "$work/summary.json" "$work/$name-summary.json"
}
# 12 layers of width 512 (heads of 64, 8 query and 4 K/V heads), FFN 1536: about 40M parameters,
# 5.5x the built-in model's 7.3M.
# shellcheck disable=SC2086
train target "${TIME_LIMIT:-200}" \
  ${TRAIN_ARGS:---hidden 512 --intermediate 1536 --layers 12 --heads 8 --kv-heads 4 --head-dim 64 --max-pos 2048 --seed 11 --schedules 1000}
if [ "$phase" = train ]; then
  [ "${DRAFT:-1}" != 0 ] && train draft "${DRAFT_TIME_LIMIT:-100}" --max-pos 2048 --seed 12 --schedules 1000
  exit 0
fi
files=(target-40m-f16 target-40m-q8_0)
minfer() { node .device/cuda/dist/bin.js "$@"; }
minfer convert "$work/target-hf" -o "$work/target-40m-f16.gguf" --type f16 --name "minfer speculative target 40M (Brown corpus)"
minfer convert "$work/target-hf" -o "$work/target-40m-q8_0.gguf" --type q8_0 --name "minfer speculative target 40M (Brown corpus)"
draft=packages/cli/models/minfer-default-7m-f16.gguf
if [ "${DRAFT:-1}" != 0 ]; then
  # the built-in model's shape (train.py's defaults), trained the same way as the target
  train draft "${DRAFT_TIME_LIMIT:-100}" --max-pos 2048 --seed 12 --schedules 1000 # (same in PHASE=train)
  minfer convert "$work/draft-hf" -o "$work/draft-7m-f16.gguf" --type f16 --name "minfer speculative draft 7M (Brown corpus)"
  draft=$work/draft-7m-f16.gguf
  files+=(draft-7m-f16)
fi
log=$work/check.log
(cd "$work" && sha256sum "${files[@]/%/.gguf}") | tee -a "$log"
# the draft must be able to draft for the target (same vocabulary), and greedy output on the GPU must
# not change with speculation, by a draft model or by n-grams (token ids compared)
for spec in "" "-md $draft" "--spec-type ngram"; do
  echo "== -ngl all ${spec:-(no speculation)}" >>"$log"
  minfer run -m "$work/target-40m-f16.gguf" $spec -f "$work/copy-prompt.txt" -c 2048 -n 160 --temp 0 --ids -ngl all \
    >"$work/ids-${spec:0:4}.json" 2>>"$log" || echo "failed: $spec" >>"$log"
done
for f in "$work"/ids-*.json; do
  cmp -s "$f" "$work/ids-.json" && echo "$(basename "$f"): the same tokens" || echo "$(basename "$f"): DIFFERENT tokens"
done | tee -a "$log"
tar -czf "$out/logs.tar.gz" -C "$work" check.log target-train.log target-summary.json copy-prompt.txt \
  $([ "${DRAFT:-1}" != 0 ] && echo draft-train.log draft-summary.json)
for f in target-40m-q8_0 draft-7m-f16; do
  if [ -f "$work/$f.gguf" ]; then (cd "$work" && split -b 16000000 -d "$f.gguf" "$out/$f.gguf.part-"); fi
done
