#!/usr/bin/env bash
# The test suite under AddressSanitizer and UndefinedBehaviorSanitizer: a second build in build-asan/
# (RelWithDebInfo, -fsanitize=address,undefined), then CTest on it. LibTorch itself is not instrumented:
# its allocations are still checked (ASan replaces malloc), its code is not. Leak reports are off
# (LibTorch and Qt keep process-lifetime allocations); UBSan's vptr check is off (LibTorch's headers hold
# classes without the RTTI it needs). The SentencePiece shim is the one part left uninstrumented: ASan
# refuses the RTLD_DEEPBIND it is normally loaded with, so here it gets a link namespace of its own
# (data/sentencepiece_library.cpp), where a second sanitizer runtime could not start; so no sanitizer
# flag goes to the shared-library link (the shim is the only shared library the build makes).
# -O1 -g1 (line tables only): the reports keep file:line, the LibTorch-heavy units compile much faster.
#   scripts/sanitize.sh [CTEST_ARGS...]   default: every test but the two that run whole models for minutes
# Run scripts/setup.sh test once first (packages, the reference helpers).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${TUNEBENCH_JOBS:-$(nproc)}
san="-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DCMAKE_SHARED_LINKER_FLAGS="" >/dev/null
cmake --build build-asan -j "$jobs"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0:abort_on_error=1:detect_odr_violation=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd build-asan
if [ $# -gt 0 ]; then
  exec ctest --output-on-failure -j "$jobs" --timeout 2400 "$@"
fi
exec ctest --output-on-failure -j "$jobs" --timeout 2400 -E '^(test_gguf_llama_cpp|torchtune_config_runs)$'
