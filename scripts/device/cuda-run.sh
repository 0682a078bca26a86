#!/usr/bin/env bash
# The GPU run (see ../shared/device/README.md): smoke test, op-conformance suite, compute-sanitizer
# memcheck over the suite, fidelity against the CPU backend, benchmarks of synthetic qwen2-7b files,
# the serving benchmark, a partial offload and a decode profile; each stage's output goes to $OUT.
#
# Here (build and pack; the bundle is ~25 MB, the tracked tree ~18 MB, so carry it compressed):
#   bash scripts/device/prepare-cuda.sh          (writes .device/cuda and .device/cuda.tar.xz; LEAN=1 for a call
#                                                 that also carries .device/llamacpp: under 64 MiB together)
# There (run tool, carry [".device/node.tar.xz", ".device/cuda.tar.xz"]):
#   mkdir -p .nd && tar -xJf .device/node.tar.xz -C .nd && tar -xJf .device/cuda.tar.xz -C .device && \
#   export PATH=$PWD/.nd/bin:$PATH && bash scripts/device/cuda-run.sh STAGE…
#
# DEADLINE=S: no stage starts, and no step runs, past S seconds from the start (the results are then
# still packed; give the device call's limit less the time to pack and return).
#
# Stages (in the order given; with none: smoke conformance memcheck fidelity bench):
#   presynth            start writing the BENCH_TYPES (or PRESYNTH_TYPES) qwen2-7b files in the background (first)
#   quants-selftest     the device dequantizers and IQ4/MXFP4 mat-vec parts against the CPU's code (nvcc there)
#   smoke               discovery, buffers, a kernel, a quantizing copy against the CPU byte for byte
#   conformance         the op suite on cuda:0 (OUT/conformance.json) and its NMSE against the CPU
#                       backend per case (OUT/vs-cpu.json)
#   conformance-tile    the same with the f32 prefill attention kernel (MINFER_CUDA_ATTN=tile)
#   conformance-vec     the same with the decode attention kernel (MINFER_CUDA_DECODE_ATTN=vec)
#   memcheck-vec        memcheck of the op suite with that kernel
#   conformance-noperq  the op suite with several queries' decode attention on the tile/mma kernels
#                       (MINFER_CUDA_ATTN_PER_QUERY=0); memcheck-noperq: the same under memcheck
#   conformance-env     the op suite with the kernel switches CONF_ENV (NAME=VALUE …); memcheck-env:
#                       the same under memcheck
#   conformance-busy    the op suite while another process keeps the GPU busy (PyTorch, BUSY_SECONDS)
#   memcheck            the op suite under compute-sanitizer --tool memcheck
#   memcheck-smoke      the smoke run (fused launches of stories260K and quantized files) under memcheck
#   wait-synth          waits until presynth has written every file
#   fidelity            greedy/teacher-forced agreement with the CPU (FIDELITY_PRESETS, default
#                       "tiny qwen2-0.5b", in FIDELITY_TYPES, and unless FIDELITY_DEFAULT=0 the trained
#                       default model F16/Q8_0/Q4_0/Q4_K), and stories260K against llama.cpp's
#                       continuation; fidelity-tile: the same with MINFER_CUDA_ATTN=tile (OUT/tile)
#   bench               minfer bench -p 512 -n 128 -ngl all per BENCH_TYPES (default "q4_k_m q4_0
#                       q8_0"), each also with MINFER_CUDA_ATTN=tile and (generation) with
#                       MINFER_CUDA_FUSE=0, MINFER_CUDA_PDL=0 and MINFER_CUDA_DECODE_ATTN=tile (BENCH_VARIANTS,
#                       default "tile nofuse nopdl dtile"; also "nowide": MINFER_CUDA_MV_WIDE=0, or any NAME=VALUE), and Q4_K_M at BENCH_CTX tokens of context (default
#                       4096; empty: skip)
#   serve               1/4/16 concurrent streams through `minfer serve -ngl all` (SERVE_TYPE)
#   serve-streams       minfer serve -np K at K streams beside bench -npl K (SERVE_NPL 16,64; SERVE_TYPE;
#                       SERVE_FLAGS: flags for minfer serve only); serve-streams-nooverlap: with
#                       --no-overlap-output
#   serve-noperq        serve with MINFER_CUDA_ATTN_PER_QUERY=0
#   split               -ngl 14 of 28 layers (CUDA and CPU in one graph)
#   ncu                 Nsight Compute metrics (speed of light, memory, occupancy) of NCU_KERNELS (a
#                       regex; default the quantized mat-vecs) in decode steps, when ncu is installed
#   ncu-step            the GPU time of every kernel in about two decode steps (PROFILE_TYPE), by ncu
#   nsys                Nsight Systems timeline of 2 x 32 decode steps (PROFILE_TYPE): kernel sums and
#                       the per-kernel trace as CSV, when nsys is installed
#   hf-train, hf-wait   a second trained checkpoint (train.py, HF_TRAIN_ARGS) in the background, packed
#                       into OUT/hf/hf.tar.part-NN; hf-wait waits for it
#   hf-archs            transformers' tiny checkpoints of issue 20's architectures (reference_archs.py),
#                       converted by minfer and run on the CPU and CUDA against transformers
#   hf-bert             transformers' tiny BERT-family checkpoints (reference_bert.py; sentence-transformers'
#                       pooling where installed), converted by minfer and run on the CPU and CUDA (issue 25)
#   nsys-pair           Nsight Systems timelines of decode of minfer and llama-bench on NSYS_FILE (issue 22)
#   spec-cpu, spec-cuda greedy ids with and without speculation on this host's CPU or the GPU (issue 26)
#   spec-invariance     spec-invariance.mjs of a synthetic qwen2-0.5b on CUDA and the CPU, with and without
#                       batchInvariant verifications (issue 26); with --accept on CUDA (every row of a verification)
#   spec-bench          minfer bench's speculative test of run-on-device.sh's pair (n-grams, draft model), -ngl all
#   ncu-pair            Nsight Compute's time of every kernel of ~2 decode steps of minfer and of llama-bench
#                       on one file (NCU_FILE or qwen2-7b PROFILE_TYPE; after llamacpp-build), no cache flushes
#   ncu-pair-batched    the same for batched decode: bench -npl NCU_NPL beside llama-batched-bench
#   ncu-mv-pair         Nsight Compute sections of the mat-vecs of an NCU_NPL (4)-sequence step, minfer's beside llama.cpp's
#   ncu-mmq-pair        Nsight Compute sections of the int8 products of an NCU_NPL (64)-sequence step, minfer's mmq_kernel
#                       beside llama.cpp's mul_mat_q
#   nsys-pp             Nsight Systems of prompt processing (bench -p 512 -n 0) of NSYS_FILE, and llama-bench's beside it
#   nsys-batched        Nsight Systems sums (API, OS runtime, kernels, copies) of bench -npl NSYS_NPL (64)
#   microbench          per-node GPU time of decode-shaped ops (norm, SWIGLU, mat-vecs, attention at
#                       depths 64/516/4096, each attention kernel), REPS copies per graph
#   llamacpp-build      llama.cpp built in the background (.device/llamacpp: scripts/device/prepare-llamacpp.sh)
#   llamacpp-files      qwen2-7b F16 (synth) quantized by llama-quantize to LLAMA_TYPES (q4_0 q4_k_m q8_0)
#   types               the built-in model in every weight type by llama-quantize (TYPES_LIST, TYPES_IMATRIX carried),
#                       minfer run -ngl all of each and its CPU/CUDA agreement (after llamacpp-build)
#   side-by-side        minfer bench / llama-bench and bench -npl / llama-batched-bench on those files,
#                       ROUNDS interleaved rounds (SBS_NPL: the batched benches' counts; SBS_GEN=0: those only;
#                       SBS_BATCHED=0: generation only)
#   ppl-llamacpp        minfer perplexity beside llama-perplexity on CUDA (PPL_TEXT)
#   spec-serve          minfer serve -np 8: 8 concurrent greedy streams the same with -md and n-grams as without
#   batched             minfer bench -npl 1,4,16,64 -npp 128 -ntg 128 (BATCH_TYPES else BENCH_TYPES, BATCH_NPL,
#                       BATCH_REPS), by default and with each of BATCH_VARIANTS (default MINFER_CUDA_MMQ=0)
#   ab                  generation of one file by default and with each of AB_VARIANTS, AB_ROUNDS interleaved rounds:
#                       every sample and each variant's median (AB_FILE, AB_ARGS; see the stage)
#   addon-ab            the bundle's addon against ALT_ADDON (xz, carried): tg128, bench -npl 4,64, mmq-bench
#   gemm-selftest       gemm_tc's stand-alone check and prefill benchmark (and GEMM_BASE's, see prepare-cuda.sh)
#   serve-nsys          an Nsight Systems timeline of minfer serve -np NSYS_NPL (64) at that many streams
#   serve-step          a step of B=SERVE_STEP_B (64) sequences with the server's context options one at a time
#   mmq-bench           GPU time and bandwidth of quantized products of 1..64 columns, the int8
#                       tensor-core kernel against MINFER_CUDA_MMQ=0 (MMQ_TYPES, MMQ_COLS, MMQ_VARIANTS; MMQ_SHAPES,
#                       e.g. output: the 152,064-row output matrix)
#   profile             per-op GPU time of a decode step, a 512-token batch and a step of 16
#                       sequences (PROFILE_TYPE)
# Wall time on the H200: synth qwen2-7b Q4_K_M ~235 s with 16 threads (Q4_0/Q8_0 ~40 s), each bench
# ~25 s, the op suite ~5 s, fidelity ~80-230 s. Files live for one call only; start a call that
# benches with `presynth` so the files are written while the other stages run, and keep
# PRESYNTH_THREADS at 8 or fewer: a bench that shares the host's cores with a synth measures low
# (a Q4_0 tg128 of 165 instead of 221). Two calls of under 10 minutes, e.g.
#   BENCH_TYPES="q4_0 q8_0" … cuda-run.sh presynth smoke conformance fidelity profile bench
#   BENCH_TYPES=q4_k_m SERVE_TYPE=q4_k_m … cuda-run.sh presynth serve bench
set -u
D=.device/cuda
# The run tool returns at most 8 files: every stage writes under $OUT/all, packed into
# $OUT/all.tar.gz at the end (run.log stays beside it).
FINAL=${OUT:-/tmp/minfer-out}
OUT=$FINAL/all
M=${MODELS_DIR:-/tmp/minfer-models}
mkdir -p "$OUT" "$M"
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(smoke conformance memcheck fidelity bench)
minfer() { node "$D/dist/bin.js" "$@"; }
# The packed bundle leaves out the built-in model (tracked, so in the working tree here too).
[ -e "$D/fixtures/minfer-default-7m-f16.gguf" ] || ln -sf "$PWD/packages/cli/models/minfer-default-7m-f16.gguf" "$D/fixtures/"
status=0
step() {
  local name=$1; shift
  local t0=$SECONDS
  echo "== $name: $*" | tee -a "$OUT/run.log"
  # a stage that hangs ends after STEP_TIMEOUT seconds (default 300), so the stages after it still run
  local cmd=("$@")
  [ "$1" = minfer ] && cmd=(node "$D/dist/bin.js" "${@:2}") # timeout runs programs, not shell functions
  # (DEADLINE, seconds from the start of the run: no step runs past it, so the results are packed)
  local to=${STEP_TIMEOUT:-300}
  if [ -n "${DEADLINE:-}" ]; then
    local left=$((DEADLINE - SECONDS))
    [ "$left" -lt "$to" ] && to=$left
    [ "$to" -lt 1 ] && to=1
  fi
  timeout -k 10 "$to" "${cmd[@]}" >"$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name: rc=$rc in $((SECONDS - t0)) s" | tee -a "$OUT/run.log"
  tail -n ${TAIL_LINES:-8} "$OUT/$name.log"
  [ $rc -ne 0 ] && status=1
  STEP_RC=$rc # (the step's own status, for a stage that acts on it; step itself returns 0)
  return 0
}
# The path of a synthetic model, written first if it is not there yet (waiting for a presynth
# that is writing it). Files are written under a temporary name and renamed when complete.
synth() { # preset type [arch]
  local f="$M/$1-$2.gguf"
  while [ -e "$f.busy" ]; do sleep 2; done
  if [ ! -f "$f" ]; then
    minfer gguf synth --arch "${3:-qwen2}" --preset "$1" --type "$2" --vocab "$D/fixtures/ggml-vocab-qwen2.gguf" \
      -o "$f.tmp" >/dev/null && mv "$f.tmp" "$f"
  fi
  echo "$f"
}
# Starts writing the qwen2-7b files (PRESYNTH_PRESET overrides) one after another in the background
# with PRESYNTH_THREADS (default 8) of the host's cores, so the slow Q4_K_M quantization overlaps
# the stages that run meanwhile; synth() waits for a file still being written.
presynth() {
  local preset=${PRESYNTH_PRESET:-qwen2-7b} todo=()
  for t in "$@"; do
    [ -f "$M/$preset-$t.gguf" ] && continue
    touch "$M/$preset-$t.gguf.busy"
    todo+=("$t")
  done
  (for t in "${todo[@]}"; do
    local f="$M/$preset-$t.gguf"
    minfer gguf synth --arch qwen2 --preset "$preset" --type "$t" --vocab "$D/fixtures/ggml-vocab-qwen2.gguf" \
      -t "${PRESYNTH_THREADS:-8}" -o "$f.tmp" >"$OUT/presynth-$t.log" 2>&1 && mv "$f.tmp" "$f"
    rm -f "$f.busy"
  done) &
}

nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
for s in "${stages[@]}"; do
  if [ -n "${DEADLINE:-}" ] && [ "$SECONDS" -ge "$DEADLINE" ]; then
    echo "== $s: skipped (DEADLINE $DEADLINE s passed)" | tee -a "$OUT/run.log"
    status=1
    continue
  fi
  case $s in
  presynth) presynth ${PRESYNTH_TYPES:-${BENCH_TYPES:-q4_k_m q4_0 q8_0}} ;;
  quants-selftest) # native/cuda/tests/quants_selftest.cu: every type's device dequantization and the
    # IQ4_NL / IQ4_XS / MXFP4 mat-vec parts against the CPU's code, bit for bit (needs nvcc there)
    step quants-selftest-build nvcc -std=c++17 -arch=sm_90 --expt-relaxed-constexpr -I native/common -I native/cuda \
      native/cuda/tests/quants_selftest.cu native/cpu/quants_iq.cpp native/cpu/quants_iq4.cpp native/cpu/quants_ternary.cpp \
      -o /tmp/minfer-quants-selftest &&
      step quants-selftest /tmp/minfer-quants-selftest ;;
  smoke) # fused launches checked on stories260K and on quantized files (Q8A and Q8K activations)
    step smoke node "$D/dist/cuda-smoke.js" "$OUT" "$(synth tiny q4_0)" "$(synth tiny q8_0)" "$(synth small q4_k)" ;;
  conformance) step conformance node "$D/dist/conformance.js" "$OUT" --vs-cpu --dump "→Q8_0 [256" ;;
  conformance-mmq) mkdir -p "$OUT/mmq" # every quantized product of 2..64 columns on the int8 tensor-core kernel
    step conformance-mmq env MINFER_CUDA_MMQ=2-64 node "$D/dist/conformance.js" "$OUT/mmq" --vs-cpu ;;
  memcheck-mmq) step memcheck-mmq env MINFER_CUDA_MMQ=2-64 compute-sanitizer --tool memcheck --error-exitcode 9 \
      --print-limit 20 node "$D/dist/conformance.js" ;;
  conformance-tile) mkdir -p "$OUT/tile"
    step conformance-tile env MINFER_CUDA_ATTN=tile node "$D/dist/conformance.js" "$OUT/tile" --vs-cpu ;;
  conformance-vec) mkdir -p "$OUT/vec"
    step conformance-vec env MINFER_CUDA_DECODE_ATTN=vec node "$D/dist/conformance.js" "$OUT/vec" --vs-cpu ;;
  conformance-noperq) mkdir -p "$OUT/noperq"
    step conformance-noperq env MINFER_CUDA_ATTN_PER_QUERY=0 node "$D/dist/conformance.js" "$OUT/noperq" --vs-cpu ;;
  memcheck-noperq) step memcheck-noperq env MINFER_CUDA_ATTN_PER_QUERY=0 compute-sanitizer --tool memcheck --error-exitcode 9 \
      --print-limit 20 node "$D/dist/conformance.js" ;;
  conformance-env) mkdir -p "$OUT/env" # the op suite with the kernel switches CONF_ENV (NAME=VALUE ...)
    step conformance-env env ${CONF_ENV:?CONF_ENV} node "$D/dist/conformance.js" "$OUT/env" --vs-cpu ;;
  memcheck-env) step memcheck-env env ${CONF_ENV:?CONF_ENV} compute-sanitizer --tool memcheck --error-exitcode 9 \
      --print-limit 20 node "$D/dist/conformance.js" ;;
  conformance-busy) mkdir -p "$OUT/busy" # the op suite while another process keeps the GPU and its copy
    # engines busy (BUSY_SECONDS of pinned host-to-device copies and matrix products in PyTorch)
    python3 -c "import sys, time, torch
x = torch.empty(64 << 20, dtype=torch.uint8).pin_memory(); y = torch.empty(64 << 20, dtype=torch.uint8, device='cuda')
a = torch.randn(4096, 4096, device='cuda'); t = time.time()
while time.time() - t < float(sys.argv[1]): y.copy_(x, non_blocking=True); a = a @ a; a /= a.norm()
torch.cuda.synchronize()" "${BUSY_SECONDS:-60}" >"$OUT/busy/load.log" 2>&1 &
    busy=$!
    sleep 5
    if kill -0 "$busy" 2>/dev/null; then
      step conformance-busy node "$D/dist/conformance.js" "$OUT/busy"
    else # no load, no test: say so and fail the run
      echo "== conformance-busy: the GPU load did not start (busy/load.log):" | tee -a "$OUT/run.log"
      tail -n 5 "$OUT/busy/load.log"
      status=1
    fi
    kill "$busy" 2>/dev/null; wait "$busy" 2>/dev/null ;;
  memcheck-vec) step memcheck-vec env MINFER_CUDA_DECODE_ATTN=vec compute-sanitizer --tool memcheck --error-exitcode 9 \
      --print-limit 20 node "$D/dist/conformance.js" ;;
  memcheck) step memcheck compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
      node "$D/dist/conformance.js" ;;
  memcheck-smoke) step memcheck-smoke compute-sanitizer --tool memcheck --error-exitcode 9 --print-limit 20 \
      node "$D/dist/cuda-smoke.js" "$OUT" "$(synth tiny q4_0)" "$(synth small q4_k)" ;;
  hf-train) # a second trained checkpoint for issue 21's fidelity (examples/train-default-model/train.py
    # with HF_TRAIN_ARGS; the corpus .device/brown.txt carried), in the background: float16
    # safetensors and the tokenizer packed into $FINAL/hf/hf.tar.part-NN (15 MB parts); hf-wait waits
    mkdir -p "$FINAL/hf"
    (python3 examples/train-default-model/train.py --corpus .device/brown.txt --out /tmp/minfer-hf2 \
      ${HF_TRAIN_ARGS:---hidden 384 --intermediate 1024 --layers 6 --heads 6 --kv-heads 2 --vocab 8192 --seed 7 --time-limit 150} \
      >"$OUT/hf-train.log" 2>&1 &&
      python3 -c "import sys,torch; from safetensors.torch import load_file, save_file; p=sys.argv[1]; t=load_file(p); save_file({k: v.half().contiguous() for k, v in t.items()}, p, metadata={'format': 'pt'})" \
        /tmp/minfer-hf2/model.safetensors >>"$OUT/hf-train.log" 2>&1 &&
      tar -cf - -C /tmp minfer-hf2 | split -b 15M -d - "$FINAL/hf/hf.tar.part-"
      echo "hf-train rc=$?" >>"$OUT/hf-train.log"; touch /tmp/minfer-hf2.done) & ;;
  hf-wait) while [ ! -e /tmp/minfer-hf2.done ]; do sleep 2; done; tail -n 12 "$OUT/hf-train.log" ;;
  wait-synth) # until every presynth file is written (benches after this share no cores with it)
    while ls "$M"/*.busy >/dev/null 2>&1; do sleep 2; done ;;
  fidelity | fidelity-tile) # fidelity-tile: prompt attention on the f32 tile kernel (MINFER_CUDA_ATTN=tile)
    files=()
    for p in ${FIDELITY_PRESETS-tiny qwen2-0.5b}; do
      types=${FIDELITY_TYPES:-f32 f16 q8_0 q4_0 q4_k}
      [ "$p" = tiny ] && types=${types/q4_k/} # rows of 64/128: no whole Q4_K blocks
      for t in $types; do files+=("$(synth "$p" "$t")"); done
    done
    # the trained default model (Qwen3 7M, shipped as F16) and its quantizations: real weights,
    # whose logits are not the near-ties of a random model (FIDELITY_DEFAULT=0: left out)
    if [ "${FIDELITY_DEFAULT:-1}" = 1 ]; then
      for t in q8_0 q4_0 q4_k; do
        f="$M/default-7m-$t.gguf"
        [ -f "$f" ] || minfer gguf quantize "$D/fixtures/minfer-default-7m-f16.gguf" "$f" "$t" >/dev/null
        files+=("$f")
      done
      files+=("$D/fixtures/minfer-default-7m-f16.gguf")
    fi
    dir=$OUT attn=${MINFER_CUDA_ATTN:-mma}
    [ "$s" = fidelity-tile ] && dir=$OUT/tile attn=tile && mkdir -p "$dir"
    step "$s" env MINFER_CUDA_ATTN="$attn" node "$D/dist/cuda-fidelity.js" "$dir" \
      --golden "$D/fixtures/stories260K.golden.json" "$D/fixtures/stories260K.gguf" "${files[@]}" ;;
  serve) # aggregate generation tok/s of 1, 4 and 16 concurrent streams, every layer on the GPU
    f=$(synth qwen2-7b "${SERVE_TYPE:-q4_k_m}")
    step serve node packages/server/bench/serve-bench.mjs --bin "$D/dist/bin.js" --ngl all -m "$f" \
      --skip-llama --streams 1,4,16 -n 64 -t 8 ;;
  serve-streams | serve-streams-nooverlap) # minfer serve -np K at K concurrent streams beside bench -npl K
    # (SERVE_NPL, default 16,64), the same file (SERVE_FILE, else the synthetic SERVE_TYPE) and flags,
    # SERVE_ROUNDS rounds; -nooverlap: the server without --overlap-output (each step's output delivered
    # before the next step is planned); SERVE_FLAGS: more flags for minfer serve only; SERVE_PROFILE=1:
    # the server's JavaScript CPU profile of each K (node --cpu-prof) into OUT/serve-prof, sampled every
    # SERVE_PROF_US µs when set (node's default: 1000)
    f=${SERVE_FILE:-$(synth qwen2-7b "${SERVE_TYPE:-q4_k_m}")}
    flags=${SERVE_FLAGS-}
    [ "$s" = serve-streams-nooverlap ] && flags="$flags --no-overlap-output"
    nflags=""
    [ "${SERVE_PROFILE:-0}" = 1 ] && mkdir -p "$OUT/serve-prof" && nflags="--serve-node-flag --cpu-prof --serve-node-flag --cpu-prof-dir=$OUT/serve-prof"
    [ -n "${SERVE_PROF_US:-}" ] && nflags="$nflags --serve-node-flag --cpu-prof-interval=$SERVE_PROF_US"
    TAIL_LINES=${TAIL_LINES:-20} step "$s" node packages/cli/bench/serve-streams.mjs -m "$f" -npl "${SERVE_NPL:-16,64}" \
      -npp 128 -ntg 128 --rounds "${SERVE_ROUNDS:-1}" --bin "$D/dist/bin.js" $nflags \
      $(for x in $flags; do printf -- '--serve-flag %s ' "$x"; done) -- -ngl all ;;
  serve-noperq) # the same with MINFER_CUDA_ATTN_PER_QUERY=0 (the child server inherits it)
    f=$(synth qwen2-7b "${SERVE_TYPE:-q4_k_m}")
    step serve-noperq env MINFER_CUDA_ATTN_PER_QUERY=0 node packages/server/bench/serve-bench.mjs --bin "$D/dist/bin.js" \
      --ngl all -m "$f" --skip-llama --streams 1,4,16 -n 64 -t 8 ;;
  split) # partial offload: half the layers on the GPU, the rest and the output on the CPU
    f=$(synth qwen2-7b "${SPLIT_TYPE:-q4_0}")
    step split minfer bench -m "$f" -p 64 -n 16 -r 1 -ngl 14 --verbose --json ;;
  ncu-mv-pair) # Nsight Compute's sections (speed of light, memory, occupancy, warp states, scheduler) of the
    # mat-vecs of a NCU_NPL-sequence decode step (default 4): minfer's mv_q_kernel (MINFER_CUDA_MMQ=0 so every
    # product of 2-8 columns is one) beside llama.cpp's mul_mat_vec_q (after llamacpp-build), NCU_COUNT (12)
    # launches from NCU_SKIP (200) of each, on one file (NCU_FILE or minfer's qwen2-7b PROFILE_TYPE)
    NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
    f=${NCU_FILE:-$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")}
    n=${NCU_NPL:-4}
    sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats
      --section WarpStateStats --section SchedulerStats)
    range=(--launch-skip "${NCU_SKIP:-200}" --launch-count "${NCU_COUNT:-12}")
    if [ -z "$NCU" ]; then
      echo "ncu: not installed here" | tee -a "$OUT/run.log"
    else
      step ncu-mv-minfer env MINFER_CUDA_GRAPHS=0 MINFER_CUDA_MMQ=0 "$NCU" --clock-control none --kernel-name regex:mv_q_kernel \
        "${range[@]}" "${sections[@]}" node "$D/dist/bin.js" bench -m "$f" -npl "$n" -npp 128 -ntg 16 -r 1 -ngl all
      while [ ! -f /tmp/llamacpp/build.done ] && pgrep -f "llamacpp/build.sh" >/dev/null; do sleep 5; done
      if [ -f /tmp/llamacpp/build.done ]; then
        step ncu-mv-llama "$NCU" --clock-control none --kernel-name regex:mul_mat_vec_q "${range[@]}" "${sections[@]}" \
          /tmp/llamacpp/build/bin/llama-batched-bench -m "$f" -c 4096 -b 2048 -ub 512 -npp 128 -ntg 16 -npl "$n" -ngl 99 -fa on
      else
        echo "ncu-mv-pair: no llama.cpp build in /tmp/llamacpp" | tee -a "$OUT/run.log"
        status=1
      fi
    fi ;;
  ncu-mmq-pair) # as ncu-mv-pair for the int8 products of an NCU_NPL-sequence step (default 64): minfer's
    # mmq_kernel beside llama.cpp's mul_mat_q, NCU_MMQ_COUNT (12) launches from NCU_MMQ_SKIP (600; past the prompts:
    # minfer's prompts take the f16 GEMM; llama.cpp's about 3200 launches of its 7 a layer, NCU_MMQ_LSKIP 4500). Its own
    # variables: ncu-pair-batched's NCU_SKIP / NCU_COUNT (thousands of launches) would profile none here, or
    # run past the step's limit with every section
    NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
    f=${NCU_FILE:-$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")}
    n=${NCU_NPL:-64}
    sections=(--section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats
      --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis --section InstructionStats)
    if [ -z "$NCU" ]; then
      echo "ncu: not installed here" | tee -a "$OUT/run.log"
    else
      step ncu-mmq-minfer env MINFER_CUDA_GRAPHS=0 "$NCU" --clock-control none --kernel-name regex:^mmq_kernel$ \
        --launch-skip "${NCU_MMQ_SKIP:-600}" --launch-count "${NCU_MMQ_COUNT:-12}" "${sections[@]}" \
        node "$D/dist/bin.js" bench -m "$f" -npl "$n" -npp 128 -ntg 16 -r 1 -ngl all
      while [ ! -f /tmp/llamacpp/build.done ] && pgrep -f "llamacpp/build.sh" >/dev/null; do sleep 5; done
      if [ -f /tmp/llamacpp/build.done ]; then
        step ncu-mmq-llama "$NCU" --clock-control none --kernel-name regex:^mul_mat_q$ --launch-skip "${NCU_MMQ_LSKIP:-4500}" \
          --launch-count "${NCU_MMQ_COUNT:-12}" "${sections[@]}" \
          /tmp/llamacpp/build/bin/llama-batched-bench -m "$f" -c 16384 -b 2048 -ub 512 -npp 128 -ntg 32 -npl "$n" -ngl 99 -fa on
      else
        echo "ncu-mmq-pair: no llama.cpp build in /tmp/llamacpp" | tee -a "$OUT/run.log"
        status=1
      fi
    fi ;;
  ncu)
    NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
    if [ -n "$NCU" ]; then
      # (NCU_EXTRA: more ncu flags, e.g. --kernel-name-base demangled to tell template arguments apart)
      step ncu env MINFER_CUDA_GRAPHS=0 "$NCU" --clock-control none ${NCU_EXTRA:-} --kernel-name "regex:${NCU_KERNELS:-mv_q}" --launch-skip "${NCU_SKIP:-120}" \
        --launch-count "${NCU_COUNT:-8}" ${NCU_SECTIONS:---section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy \
        --section LaunchStats} node "$D/dist/bin.js" bench -m "$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")" ${NCU_BENCH:--p 0 -n 4} -r 1 -ngl all
    else
      echo "ncu: not installed here" | tee -a "$OUT/run.log"
    fi ;;
  ncu-step) # the GPU time of every kernel of NCU_COUNT launches (default 700: about two decode steps)
    # from NCU_SKIP (default 1000) on, launched directly (no graph), as CSV
    NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
    if [ -n "$NCU" ]; then
      step ncu-step env MINFER_CUDA_GRAPHS=0 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv \
        --launch-skip "${NCU_SKIP:-1000}" --launch-count "${NCU_COUNT:-700}" \
        node "$D/dist/bin.js" bench -m "$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")" -p 0 -n 16 -r 1 -ngl all
    else
      echo "ncu: not installed here" | tee -a "$OUT/run.log"
    fi ;;
  nsys) # a timeline of decode steps (every kernel of the replayed CUDA graphs): per-kernel sums and
    # the trace as CSV (the report itself is left out, it is large)
    NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -n 1)
    if [ -n "$NSYS" ]; then
      f=$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")
      step nsys "$NSYS" profile --trace=cuda --cuda-graph-trace=node --force-overwrite true -o /tmp/minfer-nsys \
        node "$D/dist/bin.js" bench -m "$f" -p 0 -n 32 -r 1 -ngl all
      step nsys-stats "$NSYS" stats --force-export=true --report cuda_gpu_kern_sum,cuda_gpu_trace,cuda_api_sum --format csv \
        -o "$OUT/nsys" /tmp/minfer-nsys.nsys-rep
    else
      echo "nsys: not installed here" | tee -a "$OUT/run.log"
    fi ;;
  nsys-pp) # a timeline of prompt processing (bench -p 512 -n 0 -r NSYS_REPS, default 3) of NSYS_FILE (else
    # the synthetic PROFILE_TYPE): kernel sums, the trace, API and copy sums; with llama.cpp built
    # (llamacpp-build), llama-bench's same test on the same file beside it (OUT/nsyspp-llama*)
    NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -n 1)
    if [ -n "$NSYS" ]; then
      f=${NSYS_FILE:-$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")}
      step nsys-pp "$NSYS" profile --trace=cuda --force-overwrite true -o /tmp/minfer-nsyspp \
        node "$D/dist/bin.js" bench -m "$f" -p 512 -n 0 -r "${NSYS_REPS:-3}" -ngl all
      step nsys-pp-stats "$NSYS" stats --force-export=true --report cuda_gpu_kern_sum,cuda_gpu_trace,cuda_api_sum,cuda_gpu_mem_time_sum \
        --format csv -o "$OUT/nsyspp" /tmp/minfer-nsyspp.nsys-rep
      if [ -x /tmp/llamacpp/build/bin/llama-bench ]; then
        step nsys-pp-llama "$NSYS" profile --trace=cuda --force-overwrite true -o /tmp/llama-nsyspp \
          /tmp/llamacpp/build/bin/llama-bench -m "$f" -p 512 -n 0 -ngl 99 -fa 1 -r "${NSYS_REPS:-3}"
        step nsys-pp-llama-stats "$NSYS" stats --force-export=true --report cuda_gpu_kern_sum,cuda_gpu_trace,cuda_api_sum,cuda_gpu_mem_time_sum \
          --format csv -o "$OUT/nsyspp-llama" /tmp/llama-nsyspp.nsys-rep
      fi
    else
      echo "nsys: not installed here" | tee -a "$OUT/run.log"
    fi ;;
  nsys-batched) # a timeline of batched decode (bench -npl NSYS_NPL, default 64, 16 steps): the CUDA API
    # calls, the OS runtime calls, the kernels and the copies, summed
    NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -n 1)
    if [ -n "$NSYS" ]; then
      f=$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")
      step nsys-batched "$NSYS" profile --trace=cuda,osrt --cuda-graph-trace=node --force-overwrite true -o /tmp/minfer-nsysb \
        node "$D/dist/bin.js" bench -m "$f" -npl "${NSYS_NPL:-64}" -npp 128 -ntg 16 -r 1 -ngl all
      step nsys-batched-stats "$NSYS" stats --force-export=true --report cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,osrt_sum \
        --format csv -o "$OUT/nsysb" /tmp/minfer-nsysb.nsys-rep
    else
      echo "nsys: not installed here" | tee -a "$OUT/run.log"
    fi ;;
  ncu-pair) # the GPU time of every kernel of about two decode steps of llama-bench and of minfer on
    # one file (NCU_FILE, default minfer's qwen2-7b PROFILE_TYPE; after llamacpp-build), without
    # Nsight Compute's cache flushes (--cache-control none), as CSV: OUT/ncu-minfer.log, OUT/ncu-llama.log
    NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
    f=${NCU_FILE:-$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")}
    if [ -z "$NCU" ]; then
      echo "ncu: not installed here" | tee -a "$OUT/run.log"
    else
      step ncu-minfer env MINFER_CUDA_GRAPHS=0 "$NCU" --clock-control none --cache-control none \
        --metrics gpu__time_duration.sum --csv --launch-skip "${NCU_SKIP:-1000}" --launch-count "${NCU_COUNT:-700}" \
        node "$D/dist/bin.js" bench -m "$f" -p 0 -n 16 -r 1 -ngl all
      # (waits for a build in progress; without one, says so and fails the run)
      while [ ! -f /tmp/llamacpp/build.done ] && pgrep -f "llamacpp/build.sh" >/dev/null; do sleep 5; done
      if [ -f /tmp/llamacpp/build.done ]; then
        step ncu-llama "$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.sum --csv \
          --launch-skip "${NCU_SKIP:-1000}" --launch-count "${NCU_COUNT:-700}" \
          /tmp/llamacpp/build/bin/llama-bench -m "$f" -p 0 -n 16 -r 1 -ngl 99 -fa 1
      else
        echo "ncu-pair: no llama.cpp build in /tmp/llamacpp (run llamacpp-build first; see llamacpp-build.log)" | tee -a "$OUT/run.log"
        status=1
      fi
    fi ;;
  ncu-pair-batched) # as ncu-pair, for batched decode: minfer bench -npl NCU_NPL (default 4) beside
    # llama-batched-bench at the same count, NCU_COUNT launches from NCU_SKIP (default 4000: past the
    # prompt's micro-batches, inside the decode steps) of each; OUT/ncub-minfer.log, OUT/ncub-llama.log
    NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -n 1)
    f=${NCU_FILE:-$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")}
    n=${NCU_NPL:-4}
    ncu_args=(--clock-control none --cache-control none --metrics gpu__time_duration.sum --csv
      --launch-skip "${NCU_SKIP:-4000}" --launch-count "${NCU_COUNT:-1400}")
    if [ -z "$NCU" ]; then
      echo "ncu: not installed here" | tee -a "$OUT/run.log"
    else
      step ncub-minfer env MINFER_CUDA_GRAPHS=0 "$NCU" "${ncu_args[@]}" \
        node "$D/dist/bin.js" bench -m "$f" -npl "$n" -npp 128 -ntg 64 -r 1 -ngl all
      while [ ! -f /tmp/llamacpp/build.done ] && pgrep -f "llamacpp/build.sh" >/dev/null; do sleep 5; done
      if [ -f /tmp/llamacpp/build.done ]; then
        step ncub-llama "$NCU" "${ncu_args[@]}" /tmp/llamacpp/build/bin/llama-batched-bench -m "$f" -c 16384 -b 2048 \
          -ub 512 -npp 128 -ntg 64 -npl "$n" -ngl 99 -fa on
        # each side's kernels summed by name and grid (scripts/device/ncu-sum.py)
        for e in minfer llama; do TAIL_LINES=32 step "ncub-$e-sum" python3 scripts/device/ncu-sum.py "$OUT/ncub-$e.log"; done
      else
        echo "ncu-pair-batched: no llama.cpp build in /tmp/llamacpp" | tee -a "$OUT/run.log"
        status=1
      fi
    fi ;;
  microbench) step microbench node "$D/dist/cuda-microbench.js" "$OUT" ;;
  llamacpp-build) # llama.cpp for the side-by-side stages, in the background (about 6 minutes; carry
    # ../shared/device/llamacpp copied to .device/llamacpp); later stages wait for build.done. The
    # build lives only as long as the call that started it (2026-12-07: a call that ended 6 minutes
    # in left only the libraries): wait for it (llamacpp-files) in that same call; its files stay in
    # /tmp for the next call while the machine is warm
    (bash .device/llamacpp/build.sh /tmp/llamacpp >"$OUT/llamacpp-build.log" 2>&1) & ;;
  llamacpp-files) # qwen2-7b F16 from minfer's synth, quantized by llama-quantize (LLAMA_TYPES)
    f16=$(synth qwen2-7b f16)
    while [ ! -f /tmp/llamacpp/build.done ]; do sleep 5; done
    for t in ${LLAMA_TYPES:-q4_0 q4_k_m q8_0}; do
      [ -f "$M/lq-qwen2-7b-$t.gguf" ] && continue
      # (a quantize cut short by STEP_TIMEOUT or DEADLINE leaves its .tmp, never the file: 2026-12-07's
      # timed-out IQ4_XS quantize was moved into place while step returned 0)
      step "quantize-$t" /tmp/llamacpp/build/bin/llama-quantize "$f16" "$M/lq-qwen2-7b-$t.gguf.tmp" "${t^^}" 16
      [ "$STEP_RC" = 0 ] && mv "$M/lq-qwen2-7b-$t.gguf.tmp" "$M/lq-qwen2-7b-$t.gguf"
    done ;;
  types) # issue 22: the built-in model quantized by llama-quantize to every weight type (--pure, token
    # embeddings Q8_0; the i-quants with TYPES_IMATRIX, llama-imatrix's file of that model, carried; MXFP4
    # on every block's matrices through --tensor-type), then `minfer run -ngl all` of each (a weight kept on
    # the CPU is a failure) and its agreement with the CPU backend (cuda-fidelity, OUT/types)
    while [ ! -f /tmp/llamacpp/build.done ]; do sleep 5; done
    mkdir -p "$OUT/types"; tfiles=()
    for t in ${TYPES_LIST:-IQ1_S IQ1_M IQ2_XXS IQ2_XS IQ2_M IQ3_XXS IQ3_S IQ4_NL IQ4_XS TQ1_0 TQ2_0 MXFP4}; do
      f="$M/default-7m-lq-$t.gguf" ft=$t extra=(--imatrix "${TYPES_IMATRIX:?TYPES_IMATRIX}")
      [ "$t" = MXFP4 ] && ft=Q8_0 extra=(--tensor-type "blk=mxfp4")
      [ -f "$f" ] || step "lq-$t" /tmp/llamacpp/build/bin/llama-quantize --pure "${extra[@]}" --token-embedding-type q8_0 \
        "$D/fixtures/minfer-default-7m-f16.gguf" "$f" "$ft" 16
      step "run-$t" minfer run -m "$f" -ngl all -n 24 --temp 0 -p "Once upon a time"
      grep -q "stay on" "$OUT/run-$t.log" && { echo "run-$t: weights kept on the CPU" | tee -a "$OUT/run.log"; status=1; }
      tfiles+=("$f")
    done
    step types-fidelity node "$D/dist/cuda-fidelity.js" "$OUT/types" "${tfiles[@]}" ;;
  side-by-side) # minfer and llama.cpp on llama-quantize's files, the same tests, ROUNDS interleaved
    # rounds of one repetition each (take the medians): pp512/tg128 (Q4_K_M also at depth 4096) and
    # batched decode at 1/4/16/64 sequences (SBS_NPL: other counts; SBS_GEN=0: batched decode only)
    for r in $(seq 1 "${ROUNDS:-3}"); do
      for t in ${LLAMA_TYPES:-q4_0 q4_k_m q8_0}; do
        f="$M/lq-qwen2-7b-$t.gguf"
        if [ "${SBS_GEN:-1}" != 0 ]; then
          step "mb-$t-$r" minfer bench -m "$f" -p 512 -n 128 -ngl all -r 1 --json
          # MB_VARIANTS (NAME=VALUE kernel switches, space-separated): minfer's generation once more with each
          for v in ${MB_VARIANTS:-}; do
            step "mbv-$t-${v#MINFER_CUDA_}-$r" env "$v" node "$D/dist/bin.js" bench -m "$f" -p 0 -n 128 -ngl all -r 1 --json
          done
          step "lb-$t-$r" /tmp/llamacpp/build/bin/llama-bench -m "$f" -p 512 -n 128 -ngl 99 -fa 1 -r 1 -o json
          if [ "$t" = q4_k_m ]; then
            step "mb-$t-d4096-$r" minfer bench -m "$f" -p 512 -n 128 -d 4096 -ngl all -r 1 --json
            step "lb-$t-d4096-$r" /tmp/llamacpp/build/bin/llama-bench -m "$f" -p 512 -n 128 -d 4096 -ngl 99 -fa 1 -r 1 -o json
          fi
        fi
        [ "${SBS_BATCHED:-1}" = 0 ] && continue # SBS_BATCHED=0: generation only
        step "mbb-$t-$r" minfer bench -m "$f" -npl ${SBS_NPL:-1,4,16,64} -npp 128 -ntg 128 -ngl all -r 1
        # MBB_VARIANTS (as MB_VARIANTS, several joined by commas): minfer's batched decode once more with each
        for v in ${MBB_VARIANTS:-}; do
          IFS=, read -ra e <<<"$v"
          step "mbbv-$t-${v#MINFER_CUDA_}-$r" env "${e[@]}" node "$D/dist/bin.js" bench -m "$f" -npl ${MBB_NPL:-${SBS_NPL:-1,4,16,64}} \
            -npp 128 -ntg 128 -ngl all -r 1
        done
        step "lbb-$t-$r" /tmp/llamacpp/build/bin/llama-batched-bench -m "$f" -c 16384 -b 2048 -ub 512 -npp 128 -ntg 128 \
          -npl ${SBS_NPL:-1,4,16,64} -ngl 99 -fa on
      done
    done ;;
  nsys-pair) # issue 22: Nsight Systems timelines of decode (bench -p 0 -n 32: CUDA graphs, the GPU's own
    # clocks) of minfer and of llama-bench on NSYS_FILE (default llama-quantize's IQ4_XS qwen2-7b; after
    # llamacpp-files): per-kernel sums and every kernel's start and duration as CSV, OUT/nsys-{minfer,llama}_*
    NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -n 1)
    f=${NSYS_FILE:-$M/lq-qwen2-7b-iq4_xs.gguf}
    if [ -z "$NSYS" ]; then
      echo "nsys-pair: nsys not installed here" | tee -a "$OUT/run.log"
      status=1
    else
      step nsys-minfer "$NSYS" profile --trace=cuda --cuda-graph-trace=node --force-overwrite true -o /tmp/nsys-minfer \
        node "$D/dist/bin.js" bench -m "$f" -p 0 -n 32 -r 1 -ngl all
      step nsys-minfer-stats "$NSYS" stats --force-export=true --report cuda_gpu_kern_sum,cuda_gpu_trace --format csv \
        -o "$OUT/nsys-minfer" /tmp/nsys-minfer.nsys-rep
      while [ ! -f /tmp/llamacpp/build.done ] && pgrep -f "llamacpp/build.sh" >/dev/null; do sleep 5; done
      step nsys-llama "$NSYS" profile --trace=cuda --cuda-graph-trace=node --force-overwrite true -o /tmp/nsys-llama \
        /tmp/llamacpp/build/bin/llama-bench -m "$f" -p 0 -n 32 -r 1 -ngl 99 -fa 1
      step nsys-llama-stats "$NSYS" stats --force-export=true --report cuda_gpu_kern_sum,cuda_gpu_trace --format csv \
        -o "$OUT/nsys-llama" /tmp/nsys-llama.nsys-rep
    fi ;;
  spec-cpu | spec-cuda) # issue 26 on this host's CPU (AVX-512 where it has it: the panel GEMM takes
    # 8+ columns), or with every layer on the GPU (spec-cuda): greedy ids of a synthetic qwen2-0.5b
    # (SPEC_CPU_TYPE, default q8_0; random weights, so near-ties are common; SPEC_N tokens, default
    # 300: past the 256-cell window) without speculation, with itself as a draft model at a fixed
    # depth of 16 (17-token verifications) and of 4, and with n-grams; all must be equal
    # (OUT/spec-{cpu,cuda}-*.ids)
    f=$(synth qwen2-0.5b "${SPEC_CPU_TYPE:-q8_0}")
    p="The quick brown fox jumps over the lazy dog. The quick brown fox"
    dev="-t 8 -ngl 0"; [ "$s" = spec-cuda ] && dev="-ngl all"
    n=${SPEC_N:-300}
    step "$s-plain" sh -c "node $D/dist/bin.js run -m $f -p '$p' -n $n --temp 0 --ids $dev >$OUT/$s-plain.ids"
    step "$s-md" sh -c "node $D/dist/bin.js run -m $f -md $f --draft-fixed --draft-max 16 -p '$p' -n $n --temp 0 --ids $dev >$OUT/$s-md.ids"
    step "$s-md4" sh -c "node $D/dist/bin.js run -m $f -md $f --draft-fixed --draft-max 4 -p '$p' -n $n --temp 0 --ids $dev >$OUT/$s-md4.ids"
    step "$s-ngram" sh -c "node $D/dist/bin.js run -m $f --spec-type ngram -p '$p' -n $n --temp 0 --ids $dev >$OUT/$s-ngram.ids"
    for m in md md4 ngram; do
      if cmp -s "$OUT/$s-plain.ids" "$OUT/$s-$m.ids"; then echo "$s $m: identical to plain" | tee -a "$OUT/run.log"
      else echo "$s $m: DIFFERS from plain" | tee -a "$OUT/run.log"; status=1; fi
    done ;;
  spec-invariance) # issue 26: the largest logit difference a verification with rejected drafts leaves
    # at a later step (packages/cli/bench/spec-invariance.mjs) of a synthetic qwen2-0.5b (SPEC_CPU_TYPE,
    # default q8_0) on CUDA, as the speculator decodes (batchInvariant) and without it (--variant),
    # and on this host's CPU; 0 everywhere: greedy output with speculation is the output without
    f=$(synth qwen2-0.5b "${SPEC_CPU_TYPE:-q8_0}")
    echo "The quick brown fox jumps over the lazy dog. The quick brown fox" >/tmp/spec-prompt.txt
    step spec-inv-cuda node "$D/dist/spec-invariance.js" "$f" /tmp/spec-prompt.txt 40 2,20 1,8,16 -ngl all
    step spec-inv-cuda-variant node "$D/dist/spec-invariance.js" "$f" /tmp/spec-prompt.txt 40 2,20 1,8,16 -ngl all --variant
    # (--accept: the drafts are the greedy continuation, and every row of the verification is compared)
    step spec-inv-cuda-accept node "$D/dist/spec-invariance.js" "$f" /tmp/spec-prompt.txt 40 2,20 1,8,16 -ngl all --accept
    step spec-inv-cuda-accept-variant node "$D/dist/spec-invariance.js" "$f" /tmp/spec-prompt.txt 40 2 16 -ngl all --accept --variant
    # (the verification's queries and column chunks in one launch each: tuning.h invariant_batched)
    step spec-inv-cuda-batched env MINFER_CUDA_INV_BATCHED=1 node "$D/dist/spec-invariance.js" "$f" /tmp/spec-prompt.txt 40 2,20 1,8,16 -ngl all
    step spec-inv-cuda-accept-batched env MINFER_CUDA_INV_BATCHED=1 node "$D/dist/spec-invariance.js" "$f" /tmp/spec-prompt.txt 40 2,20 1,8,16 -ngl all --accept
    step spec-inv-cpu node "$D/dist/spec-invariance.js" "$f" /tmp/spec-prompt.txt 40 2,20 1,8,16 -t 8
    step spec-inv-cpu-variant node "$D/dist/spec-invariance.js" "$f" /tmp/spec-prompt.txt 40 2,20 1,8,16 -t 8 --variant ;;
  spec-bench) # issue 26: minfer bench's speculative test (plain and speculative t/s, acceptance, identity) of
    # SPEC_BENCH_TARGET (default run-on-device.sh's /tmp/spec-pair/target-40m-q8_0.gguf) with n-grams and, where
    # SPEC_BENCH_DRAFT exists (default its draft), a draft model, on SPEC_BENCH_PROMPT (its copy prompt), -ngl all
    tgt=${SPEC_BENCH_TARGET:-/tmp/spec-pair/target-40m-q8_0.gguf} dr=${SPEC_BENCH_DRAFT:-/tmp/spec-pair/draft-7m-f16.gguf}
    sp=${SPEC_BENCH_PROMPT:-/tmp/spec-pair/copy-prompt.txt}
    # (each also with MINFER_CUDA_INV_BATCHED=1: a verification's queries and column chunks in one launch each)
    for e in MINFER_CUDA_INV_BATCHED=0 MINFER_CUDA_INV_BATCHED=1; do
      TAIL_LINES=20 step "spec-bench-ngram-${e#*=}" env "$e" node "$D/dist/bin.js" bench -m "$tgt" --spec-type ngram \
        --spec-prompt-file "$sp" -n 128 -r 3 -ngl all
      [ -f "$dr" ] && TAIL_LINES=20 step "spec-bench-md-${e#*=}" env "$e" node "$D/dist/bin.js" bench -m "$tgt" -md "$dr" \
        --spec-prompt-file "$sp" -n 128 -r 3 -ngl all
    done ;;
  spec-serve) # issue 26: `minfer serve -ngl all -np 8 --batch-invariant`, 8 concurrent greedy streams
    # the same without speculation, with a draft model and with n-grams (SPEC_TARGET, SPEC_DRAFT: default
    # the built-in model drafting for itself; SPEC_PROMPT: a text file, default docs/SPECULATIVE.md;
    # SPEC_SERVE_FLAGS: other serve flags instead of --batch-invariant)
    step spec-serve node scripts/device/spec-serve-check.mjs "$D/dist/bin.js" \
      "${SPEC_TARGET:-$D/fixtures/minfer-default-7m-f16.gguf}" "${SPEC_DRAFT:-$D/fixtures/minfer-default-7m-f16.gguf}" \
      "${SPEC_PROMPT:-docs/SPECULATIVE.md}" -ngl all ${SPEC_SERVE_FLAGS---batch-invariant} ;;
  ppl-llamacpp) # issue 21's fidelity on CUDA: minfer perplexity beside llama-perplexity on the built-in
    # model or PPL_MODEL (scripts/fidelity/perplexity-vs-llamacpp.mjs; PPL_TEXT: the text file, carried)
    STEP_TIMEOUT=${STEP_TIMEOUT:-600} TAIL_LINES=40 step ppl-llamacpp env NGL=all THREADS=16 OUT=/tmp/minfer-ppl \
      MINFER_BIN="$D/dist/bin.js" MODEL="${PPL_MODEL:-$D/fixtures/minfer-default-7m-f16.gguf}" TEXT="${PPL_TEXT:?PPL_TEXT}" \
      node scripts/fidelity/perplexity-vs-llamacpp.mjs /tmp/llamacpp/build/bin ;;
  batched) # minfer bench -npl (llama-batched-bench's measure) on qwen2-7b files, by default and with
    # each of BATCH_VARIANTS (NAME=VALUE kernel switches, several joined by commas; default MINFER_CUDA_MMQ=0: no
    # int8 tensor-core products)
    for t in ${BATCH_TYPES:-${BENCH_TYPES:-q4_k_m q4_0 q8_0}}; do
      f=$(synth qwen2-7b "$t")
      TAIL_LINES=${TAIL_LINES:-8} step "batched-$t" minfer bench -m "$f" -npl ${BATCH_NPL:-1,4,16,64} -npp 128 -ntg 128 -ngl all -r ${BATCH_REPS:-1}
      for v in ${BATCH_VARIANTS-MINFER_CUDA_MMQ=0}; do
        IFS=, read -ra e <<<"$v"
        TAIL_LINES=${TAIL_LINES:-8} step "batched-$t-$v" env "${e[@]}" node "$D/dist/bin.js" bench -m "$f" \
          -npl ${BATCH_NPL:-1,4,16,64} -npp 128 -ntg 128 -ngl all -r ${BATCH_REPS:-1}
      done
    done ;;
  ab) # generation (bench -p 0 -n 128, AB_ARGS to change) of AB_FILE (else the synthetic PROFILE_TYPE) by default and
    # with each of AB_VARIANTS (NAME=VALUE kernel switches, several joined by commas), AB_ROUNDS interleaved rounds
    # (default 3) of one run each; prints every variant's samples and median t/s
    f=${AB_FILE:-$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")}
    : >"$OUT/ab.txt"
    for r in $(seq 1 "${AB_ROUNDS:-3}"); do
      for v in default ${AB_VARIANTS:-}; do
        e=(); [ "$v" != default ] && IFS=, read -ra e <<<"$v"
        # every test's t/s in the order bench prints them (pp then tg), joined by "/"
        ts=$(env "${e[@]}" node "$D/dist/bin.js" bench -m "$f" ${AB_ARGS:--p 0 -n 128} -ngl all -r 1 --json 2>>"$OUT/ab.log" |
          grep -E '"avg_ts"' | tr -dc '0-9.\n' | paste -sd/)
        echo "$v $ts" | tee -a "$OUT/ab.txt" >>"$OUT/run.log"
      done
    done
    for v in default ${AB_VARIANTS:-}; do # the median of each variant's rounds, per test
      echo "ab median: $v $(awk -v v="$v" '$1 == v {n = split($2, x, "/"); for (i = 1; i <= n; i++) print i, x[i]}' "$OUT/ab.txt" |
        sort -k1,1n -k2,2n | awk '{a[$1] = a[$1] " " $2; c[$1]++} END {for (i = 1; i in a; i++) {split(substr(a[i], 2), y, " "); printf "%s%s", (i > 1 ? "/" : ""), y[int((c[i] + 1) / 2)]}}') t/s" |
        tee -a "$OUT/run.log"
    done ;;
  addon-ab) # the bundle's addon against ALT_ADDON (an xz-compressed minfer_cuda.node, carried, e.g. built
    # from another commit with packages/backend-cuda/scripts/build-native.mjs), interleaved, AB_ROUNDS rounds
    # (default 3): tg128 and bench -npl 4,64 of the synthetic PROFILE_TYPE; then mmq-bench of each
    rm -rf .device/cuda-alt && cp -r "$D" .device/cuda-alt &&
      xz -dc "${ALT_ADDON:?ALT_ADDON}" >.device/cuda-alt/node_modules/@minfer/backend-cuda/build/minfer_cuda.node
    f=$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")
    for r in $(seq 1 "${AB_ROUNDS:-3}"); do
      order="$D .device/cuda-alt"
      [ $((r % 2)) = 0 ] && order=".device/cuda-alt $D" # rounds alternate which goes first
      for v in $order; do
        echo "$(basename "$v") tg128 $(node "$v/dist/bin.js" bench -m "$f" -p 0 -n 128 -ngl all -r 1 --json 2>>"$OUT/addon-ab.log" |
          grep -E '"avg_ts"' | tr -dc '0-9.')" | tee -a "$OUT/run.log"
        echo "$(basename "$v") npl 4,64 $(node "$v/dist/bin.js" bench -m "$f" -npl 4,64 -npp 128 -ntg 64 -ngl all -r 1 2>>"$OUT/addon-ab.log" |
          grep -E '^[|] +128' | awk -F'|' '{printf "%s:%s ", $4 + 0, $9 + 0}')" | tee -a "$OUT/run.log"
      done
    done
    for v in "$D" .device/cuda-alt; do
      TAIL_LINES=${TAIL_LINES:-40} step "mmq-bench-$(basename "$v")" node "$v/dist/cuda-mmq-bench.js" "$OUT" ${MMQ_TYPES:-Q4_0,Q8_0} ${MMQ_COLS:-1,4,8,64} default
    done ;;
  gemm-selftest) # gemm_tc's stand-alone check (NMSE of every dtype) and its prefill-shape benchmark, for
    # each binary prepare-cuda.sh put in $D/bin (gemm_tc, and gemm_tc_base with GEMM_BASE), the
    # benchmarks interleaved GEMM_ROUNDS rounds (default 2)
    for b in "$D"/bin/gemm_tc*; do step "check-$(basename "$b")" "$b"; done
    for r in $(seq 1 "${GEMM_ROUNDS:-2}"); do
      for b in "$D"/bin/gemm_tc*; do TAIL_LINES=${TAIL_LINES:-30} step "bench-$(basename "$b")-$r" "$b" bench; done
    done ;;
  serve-nsys) # an Nsight Systems timeline of minfer serve -np NSYS_NPL (64) under NSYS_NPL streams (serve-streams,
    # one round; the CUDA graphs as single ranges): the GPU's ranges per step (OUT/serve-nsys_cuda_gpu_trace.csv)
    # show whether the GPU idles between steps or runs longer steps, beside bench's (nsys-batched)
    NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -n 1)
    if [ -n "$NSYS" ]; then
      f=${SERVE_FILE:-$(synth qwen2-7b "${SERVE_TYPE:-q4_0}")}
      rm -f /tmp/minfer-serve-nsys.nsys-rep
      TAIL_LINES=${TAIL_LINES:-12} step serve-nsys node packages/cli/bench/serve-streams.mjs -m "$f" -npl "${NSYS_NPL:-64}" \
        -npp 128 -ntg 128 --rounds 1 --bin "$D/dist/bin.js" \
        --serve-wrap "$NSYS profile --trace=cuda,osrt --cuda-graph-trace=graph --sample=none --force-overwrite true -o /tmp/minfer-serve-nsys" \
        -- -ngl all
      step serve-nsys-stats "$NSYS" stats --force-export=true --report cuda_api_sum,osrt_sum,cuda_gpu_trace \
        --format csv -o "$OUT/serve-nsys" /tmp/minfer-serve-nsys.nsys-rep
    else
      echo "nsys: not installed here" | tee -a "$OUT/run.log"
    fi ;;
  serve-step) # why a step of minfer serve at B streams is slower than one of bench -npl B: the server's
    # context options one at a time (scripts/device/cuda-serve-step.ts), on the synthetic SERVE_TYPE
    f=$(synth qwen2-7b "${SERVE_TYPE:-q4_0}")
    TAIL_LINES=${TAIL_LINES:-12} step serve-step node "$D/dist/cuda-serve-step.js" "$OUT" "$f" ${SERVE_STEP_B:-64} 128 64 ;;
  mmq-bench) TAIL_LINES=${TAIL_LINES:-120} step mmq-bench node "$D/dist/cuda-mmq-bench.js" "$OUT" ${MMQ_TYPES:-Q4_0,Q4_K,Q6_K,Q8_0} ${MMQ_COLS:-1,2,4,8,16,32,64} ${MMQ_VARIANTS:-default,MINFER_CUDA_MMQ=0} ${MMQ_SHAPES:-} ;;
  hf-archs) # issue 20: transformers' tiny checkpoints of the new architectures, converted and run
    # by minfer on the CPU and on CUDA against transformers' logits and greedy tokens
    TAIL_LINES=1 step hf-reference python3 scripts/hf-fidelity/reference_archs.py /tmp/minfer-hf-ref 32
    TAIL_LINES=80 step hf-archs env MINFER_FIXTURES="$PWD/$D/fixtures" node "$D/dist/hf-archs.js" /tmp/minfer-hf-ref "$OUT" ;;
  hf-bert) # issue 25: tiny BERT-family checkpoints made by transformers (reference_bert.py), converted
    # and run by minfer on the CPU and CUDA against sentence-transformers' embeddings and a cross-encoder's logits
    rm -rf /tmp/minfer-hf-bert && mkdir -p /tmp/minfer-hf-bert
    step hf-bert-prep node "$D/dist/hf-bert.js" prep /tmp/minfer-hf-bert
    TAIL_LINES=8 step hf-bert-reference python3 scripts/hf-fidelity/reference_bert.py /tmp/minfer-hf-bert
    TAIL_LINES=20 step hf-bert node "$D/dist/hf-bert.js" compare /tmp/minfer-hf-bert "$OUT/hf-bert" ;;
  profile) # (PROFILE_DEPTH: also a prompt micro-batch and a decode step after that many tokens;
    # PROFILE_NSEQ: the B-sequence contexts hold that many sequences' regions, as bench -npl's does)
    step profile node "$D/dist/cuda-profile.js" "$OUT" "${PROFILE_FILE:-$(synth qwen2-7b "${PROFILE_TYPE:-q4_0}")}" \
      "${STREAMS:-16,64}" 128 "${PROFILE_DEPTH:-0}" "${PROFILE_NSEQ:-0}" ;;
  bench)
    for t in ${BENCH_TYPES:-q4_k_m q4_0 q8_0}; do
      f=$(synth qwen2-7b "$t")
      step "bench-$t" minfer bench -m "$f" -p 512 -n 128 -ngl all --json
      # the f32 tile attention kernel for prefill and decode (MINFER_CUDA_ATTN=tile), and decode
      # without fused launches (MINFER_CUDA_FUSE=0)
      for v in ${BENCH_VARIANTS-tile nofuse nopdl dtile}; do
        case $v in
        tile) step "bench-$t-tile" env MINFER_CUDA_ATTN=tile node "$D/dist/bin.js" bench -m "$f" -p 512 -n 128 -ngl all --json ;;
        nofuse) step "bench-$t-nofuse" env MINFER_CUDA_FUSE=0 node "$D/dist/bin.js" bench -m "$f" -p 0 -n 128 -ngl all --json ;;
        nopdl) step "bench-$t-nopdl" env MINFER_CUDA_PDL=0 node "$D/dist/bin.js" bench -m "$f" -p 0 -n 128 -ngl all --json ;;
        dtile) step "bench-$t-dtile" env MINFER_CUDA_DECODE_ATTN=tile node "$D/dist/bin.js" bench -m "$f" -p 0 -n 128 -ngl all --json ;;
        nowide) step "bench-$t-nowide" env MINFER_CUDA_MV_WIDE=0 node "$D/dist/bin.js" bench -m "$f" -p 0 -n 128 -ngl all --json ;;
        *=*) step "bench-$t-$v" env "$v" node "$D/dist/bin.js" bench -m "$f" -p 0 -n 128 -ngl all --json ;;  # NAME=VALUE
        esac
      done
      if [ "$t" = q4_k_m ] && [ -n "${BENCH_CTX-4096}" ]; then
        step "bench-$t-ctx${BENCH_CTX:-4096}" minfer bench -m "$f" -p 512 -n 128 -ngl all -d "${BENCH_CTX:-4096}" --json
        case " ${BENCH_VARIANTS-tile} " in *" tile "*)
          step "bench-$t-ctx${BENCH_CTX:-4096}-tile" env MINFER_CUDA_ATTN=tile node "$D/dist/bin.js" bench -m "$f" -p 512 -n 128 \
            -ngl all -d "${BENCH_CTX:-4096}" --json ;;
        esac
      fi
      # files stay for later stages (serve, profile)
    done ;;
  *) echo "unknown stage $s" ;;
  esac
done
for f in "$OUT"/bench-*.log; do # one line per benchmark: test, depth, tok/s
  [ -f "$f" ] && echo "$(basename "$f" .log): $(grep -E '"n_prompt"|"n_gen"|"n_depth"|"avg_ts"' "$f" | tr -d ' \n')" | tee -a "$OUT/run.log"
done
cp "$OUT/run.log" "$FINAL/run.log" 2>/dev/null
tar -czf "$FINAL/all.tar.gz" -C "$OUT" . && rm -rf "$OUT"
exit $status
