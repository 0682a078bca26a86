#!/usr/bin/env bash
# Writes .device/llamacpp/ (git-ignored): llama.cpp's source from ../shared/device/llamacpp, trimmed
# to what builds its CPU and CUDA tools (4.2 MB instead of 8.3: with Node.js and the lean CUDA bundle
# the carried tree stays under the device tool's 64 MiB), and a build.sh that builds, beside
# ../shared's tools, the examples issue 26 compares with (llama-completion, llama-speculative-simple).
# cuda-run.sh's llamacpp-build stage runs it there.
set -euo pipefail
cd "$(dirname "$0")/../.."
src=../shared/device/llamacpp/llama.cpp-src.tar.xz
out=.device/llamacpp
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xJf "$src" -C "$tmp"
# the web UI, the server (LLAMA_BUILD_SERVER=OFF below), docs, benches and Python packages are not
# built; nor are the ggml backends other than the CPU's and CUDA's (vendor/cpp-httplib stays:
# common links it)
rm -rf "$tmp"/{benches,gguf-py,docs} "$tmp"/tools/{ui,server,cli}
for d in "$tmp"/ggml/src/ggml-*/; do
  case $d in */ggml-cpu/ | */ggml-cuda/) ;; *) rm -rf "$d" ;; esac
done
mkdir -p "$out"
XZ_OPT=-9e tar -cJf "$out/llama.cpp-src.tar.xz" -C "$tmp" .
cat >"$out/build.sh" <<'EOF'
#!/usr/bin/env bash
# Builds the trimmed llama.cpp beside this script for sm_90 with CUDA (scripts/device/prepare-llamacpp.sh).
set -eu
here=$(cd "$(dirname "$0")" && pwd); dst=${1:-/tmp/llamacpp}; jobs=${JOBS:-14}
mkdir -p "$dst" && cd "$dst"
[ -f CMakeLists.txt ] || tar -xJf "$here/llama.cpp-src.tar.xz"
cmake -B build -G Ninja -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
  -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=ON > cmake.log 2>&1
ninja -C build -j "$jobs" llama-bench llama-batched-bench llama-quantize llama-perplexity llama-completion \
  llama-speculative-simple > build.log 2>&1
touch build.done
echo "llama.cpp built in $dst/build/bin"
EOF
chmod +x "$out/build.sh"
du -sh "$out"/*
