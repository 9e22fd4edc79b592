#!/usr/bin/env bash
# Build-time figures of a revision, measured in a temporary clone so the working tree is untouched:
#   from_scratch_s   scripts/setup.sh build in a fresh clone (packages already installed)
#   touch_compile_s  rebuild after touching recipes/compile/gemm.cpp
#   touch_data_s     rebuild after touching recipes/data/json_rows.cpp
#   touch_ui_s       rebuild after touching ui/RunsPanel.cpp
#   new_source_s     rebuild after adding a new source file to recipes/data/
#   tests_s          the whole CTest suite (ctest -j$jobs)
# Usage: scripts/bench_build.sh [REV]   (default HEAD; SKIP_TESTS=1 leaves the suite out)
# The last line is one JSON object. Build times are wall-clock on a shared machine: compare two
# revisions measured one after the other, not figures from different days.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
rev=${1:-HEAD}
jobs=${TUNEBENCH_JOBS:-$(nproc)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$src" "$work/tb"
cd "$work/tb"
git checkout -q "$rev"
export TUNEBENCH_JOBS=$jobs

seconds() {  # runs "$@" quietly, prints its wall time in seconds; a failure stops the script
  local start end
  start=$(date +%s.%N)
  if ! "$@" >"$work/log" 2>&1; then
    tail -40 "$work/log" >&2
    echo "failed: $*" >&2
    exit 1
  fi
  end=$(date +%s.%N)
  awk -v s="$start" -v e="$end" 'BEGIN { printf "%.1f\n", e - s }'
}
rebuild() { cmake --build build -j "$jobs"; }

from_scratch=$(seconds scripts/setup.sh build)
echo "from scratch: ${from_scratch}s" >&2
touch recipes/compile/gemm.cpp
touch_compile=$(seconds rebuild)
echo "touch compile/gemm.cpp: ${touch_compile}s" >&2
touch recipes/data/json_rows.cpp
touch_data=$(seconds rebuild)
echo "touch data/json_rows.cpp: ${touch_data}s" >&2
touch ui/RunsPanel.cpp
touch_ui=$(seconds rebuild)
echo "touch ui/RunsPanel.cpp: ${touch_ui}s" >&2
printf '// bench_build.sh probe\nnamespace tb::data { int bench_build_probe() { return 1; } }\n' \
  >recipes/data/bench_build_probe.cpp
new_source=$(seconds rebuild)
echo "new source file: ${new_source}s" >&2
tests=null
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  tests=$(seconds sh -c "cd build && ctest -j $jobs --timeout 1200")
  echo "test suite: ${tests}s" >&2
fi
printf '{"rev":"%s","jobs":%s,"from_scratch_s":%s,"touch_compile_s":%s,"touch_data_s":%s,"touch_ui_s":%s,"new_source_s":%s,"tests_s":%s}\n' \
  "$(git rev-parse --short HEAD)" "$jobs" "$from_scratch" "$touch_compile" "$touch_data" "$touch_ui" "$new_source" "$tests"
