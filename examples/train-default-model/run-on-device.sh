#!/usr/bin/env bash
# Runs on the GPU machine (see ../../../shared/device/README.md), from the repository root:
#
#   examples/train-default-model/run-on-device.sh check   # environment + a 60-step smoke run
#   examples/train-default-model/run-on-device.sh         # the real training (stops by itself)
#
# It needs the corpus at .device/brown.txt (written here by prepare-corpus.mjs; carried with
# `carry: [".device/brown.txt"]`) and writes to $OUT: model/ (the Hugging Face checkpoint),
# train.log and summary.json.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
corpus=${CORPUS:-.device/brown.txt}
out=${OUT:?set OUT to the folder that receives the results}
mode=${1:-train}

{
  echo "== $(date -u +%FT%TZ) $mode on $(hostname)"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  python3 -c "import sys, torch, transformers, tokenizers, safetensors; print('python', sys.version.split()[0], '| torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available(), '| transformers', transformers.__version__, '| tokenizers', tokenizers.__version__, '| safetensors', safetensors.__version__); from transformers import Qwen3Config, Qwen3ForCausalLM; print('Qwen3ForCausalLM ok')"
  ls -l "$corpus"
} 2>&1 | tee "$out/env.log"
set -o pipefail

if [ "$mode" = check ]; then
  python3 "$here/train.py" --corpus "$corpus" --out "$out/smoke/model" --schedules 60 --time-limit 60 \
    2>&1 | tee "$out/smoke.log"
  rm -f "$out/smoke/model/model.safetensors"
else
  # SCHEDULES=500,1000,2000,3000 repeats the sweep that chose the default of 1000 steps.
  python3 "$here/train.py" --corpus "$corpus" --out "$out/model" --time-limit "${TIME_LIMIT:-420}" \
    --schedules "${SCHEDULES:-1000}" 2>&1 | tee "$out/train.log"
  # Files come back from the GPU machine at 16 MiB at most: the 29 MB float32 weights travel in
  # two parts (join them with `cat model.safetensors.0* > model.safetensors`).
  (cd "$out/model" && sha256sum model.safetensors | tee -a "$out/train.log" &&
    split -b 15M -d model.safetensors model.safetensors. && rm model.safetensors)
  cat "$out/env.log" "$out/train.log" > "$out/train.log.tmp" && mv "$out/train.log.tmp" "$out/train.log"
  rm "$out/env.log"
fi
