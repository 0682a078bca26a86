#!/usr/bin/env bash
# Cross-compiles every CPU-backend source for AArch64 (NEON) and runs the NEON dot-product test
# under qemu. Needs Debian's g++-aarch64-linux-gnu (and qemu-user to run the test).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cpu="$here/.."
root="$cpu/../.."
out=$(mktemp -d)
CXX=${CXX:-aarch64-linux-gnu-g++}
napi=$(node -p "require.resolve('node-addon-api/package.json', {paths: ['$root/packages/backend-cpu']}).replace(/package.json$/, '')")
flags=(-std=c++17 -O2 -Wall -Wextra -I "$cpu/.." -I /usr/include/node -I "$napi" -DNAPI_VERSION=8 -DNAPI_DISABLE_CPP_EXCEPTIONS)
objs=()
for f in "$cpu"/*.cpp; do
  case "$f" in *_avx2.cpp | *_avx512.cpp) continue ;; esac
  o="$out/$(basename "${f%.cpp}").o"
  "$CXX" "${flags[@]}" -fPIC -c "$f" -o "$o"
  objs+=("$o")
done
echo "compiled ${#objs[@]} sources for aarch64"
"$CXX" "${flags[@]}" "$here/neon_test.cpp" "$out/quants.o" "$out/quants_neon.o" "$out/quants_k_neon.o" "$out/quants_iq_neon.o" \
  "$out/quants_iq.o" "$out/quants_iq4.o" \
  "$out/quants_ternary.o" -o "$out/neon_test" -static
if command -v qemu-aarch64 >/dev/null; then
  qemu-aarch64 "$out/neon_test"
else
  echo "qemu-aarch64 not found: NEON test compiled but not run"
fi
rm -rf "$out"
