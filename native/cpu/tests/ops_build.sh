#!/usr/bin/env bash
# Builds and runs the standalone kernel tests (ops_*_test.cpp) with g++ directly.
#   native/cpu/tests/ops_build.sh [test-name ...]     (default: all)
# Objects go to $OPS_BUILD (default: a fresh temporary directory). Links the real registry.cpp and
# (the op table is native/common/op_info.h); quants*.cpp when they compile (Q8_0 tests need them), else the Q8_0 tests are skipped.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cpu="$here/.."
out="${OPS_BUILD:-$(mktemp -d /tmp/minfer-ops-tests.XXXXXX)}"
mkdir -p "$out"
CXX="${CXX:-g++}"
FLAGS="-std=c++17 -O2 -g -Wall -Wextra -Wno-unused-parameter ${EXTRA_FLAGS:-}"
AVX2="-mavx2 -mfma -mf16c"
AVX512="-mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq -mavx512vnni -Wno-maybe-uninitialized -Wno-uninitialized"
objs=()
build() {  # src flags
  local o="$out/$(basename "$1" .cpp).o"
  $CXX $FLAGS $2 -c "$1" -o "$o"
  objs+=("$o")
}
for f in elementwise norm rope softmax attention copy sort registry; do build "$cpu/$f.cpp" ""; done
for f in elementwise norm attention; do
  build "$cpu/${f}_avx2.cpp" "$AVX2"
  build "$cpu/${f}_avx512.cpp" "$AVX512"
done
build "$here/ops_stubs.cpp" ""
quants=()
if $CXX $FLAGS -c "$cpu/quants.cpp" -o "$out/quants.o" 2>/dev/null &&
   $CXX $FLAGS $AVX2 -c "$cpu/quants_avx2.cpp" -o "$out/quants_avx2.o" 2>/dev/null &&
   $CXX $FLAGS $AVX512 -c "$cpu/quants_avx512.cpp" -o "$out/quants_avx512.o" 2>/dev/null &&
   $CXX $FLAGS -c "$cpu/quants_iq.cpp" -o "$out/quants_iq.o" 2>/dev/null &&
   $CXX $FLAGS -c "$cpu/quants_iq4.cpp" -o "$out/quants_iq4.o" 2>/dev/null &&
   $CXX $FLAGS $AVX2 -c "$cpu/quants_iq4_avx2.cpp" -o "$out/quants_iq4_avx2.o" 2>/dev/null &&
   $CXX $FLAGS $AVX512 -c "$cpu/quants_iq4_avx512.cpp" -o "$out/quants_iq4_avx512.o" 2>/dev/null &&
   $CXX $FLAGS $AVX2 -c "$cpu/quants_iq23_avx2.cpp" -o "$out/quants_iq23_avx2.o" 2>/dev/null &&
   $CXX $FLAGS $AVX512 -c "$cpu/quants_iq23_avx512.cpp" -o "$out/quants_iq23_avx512.o" 2>/dev/null &&
   $CXX $FLAGS $AVX2 -c "$cpu/quants_iq1t_avx2.cpp" -o "$out/quants_iq1t_avx2.o" 2>/dev/null &&
   $CXX $FLAGS $AVX512 -c "$cpu/quants_iq1t_avx512.cpp" -o "$out/quants_iq1t_avx512.o" 2>/dev/null &&
   $CXX $FLAGS -c "$cpu/quants_ternary.cpp" -o "$out/quants_ternary.o" 2>/dev/null; then
  quants=("$out/quants.o" "$out/quants_avx2.o" "$out/quants_avx512.o" "$out/quants_iq.o" "$out/quants_iq4.o"
    "$out/quants_iq4_avx2.o" "$out/quants_iq4_avx512.o" "$out/quants_iq23_avx2.o" "$out/quants_iq23_avx512.o"
    "$out/quants_iq1t_avx2.o" "$out/quants_iq1t_avx512.o" "$out/quants_ternary.o")
else
  echo "quants*.cpp did not compile: linking the Q8_0 stand-in (tests/ops_quants_fallback.cpp)"
  $CXX $FLAGS -c "$here/ops_quants_fallback.cpp" -o "$out/quants_fallback.o"
  quants=("$out/quants_fallback.o")
fi
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then tests=(elementwise rope attention copy_sort); fi
status=0
for t in "${tests[@]}"; do
  $CXX $FLAGS "$here/ops_${t}_test.cpp" "${objs[@]}" "${quants[@]}" -lpthread -o "$out/ops_${t}_test"
  "$out/ops_${t}_test" || status=1
done
exit $status
