#!/usr/bin/env bash
# Tokenizer encoding speed, ours against Hugging Face tokenizers, on one thread each, in one sitting:
#   1. a ~150k-token byte-level BPE with Qwen2's tokenizer.json pipeline (NFC, Qwen's split regex,
#      ByteLevel), trained on text found on this machine (licenses, /usr/share/doc, Python's standard
#      library, manual pages) plus generated multi-script text (tests/reference/tokenizers/train_bpe.mjs);
#   2. a 10 MB text from the same kinds of sources (another part of them, other generated paragraphs);
#   3. `tunebench-cli bench tokenize` (median MB/s after a warm-up) and the reference's encode of the same
#      text through its Node binding (tests/reference/tokenizers/bench_reference.mjs).
# Nothing here is committed: everything is made under $WORK_DIR (default build/bench_tokenizer) and reused.
#   scripts/bench_tokenizer.sh            BUILD_DIR=build VOCAB_SIZE=150000 TEXT_MB=10 CORPUS_MB=40 RUNS=5
set -euo pipefail
cd "$(dirname "$0")/.."

build=${BUILD_DIR:-build}
work=${WORK_DIR:-$build/bench_tokenizer}
vocab_size=${VOCAB_SIZE:-150000}
text_mb=${TEXT_MB:-10}
corpus_mb=${CORPUS_MB:-40}
runs=${RUNS:-5}
reference=tests/reference/tokenizers
mkdir -p "$work"

step() { printf '==> %s\n' "$*" >&2; }

if [ ! -f "$reference/node_modules/tokenizers/package.json" ]; then
  step "installing the tokenizers reference (npm ci)"
  (cd "$reference" && npm ci --no-audit --no-fund)
fi

step "building tunebench-cli in $build"
[ -f "$build/CMakeCache.txt" ] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >&2
cmake --build "$build" --target tunebench-cli -j "${TUNEBENCH_JOBS:-$(nproc)}" >&2

# The machine's text, in a fixed order, as valid UTF-8.
if [ ! -s "$work/sources.txt" ]; then
  step "collecting text from this machine"
  {
    # (an unreadable file or a missing folder only means less text: no error ends the script here)
    find /usr/share/common-licenses -type f | sort | xargs cat || true
    find /usr/share/doc -type f \( -name '*.txt' -o -name 'README*' -o -name 'NEWS*' -o -name 'copyright' \) \
      ! -name '*.gz' | sort | xargs cat || true
    find /usr/lib/python3* -name '*.py' -size -200k | sort | head -4000 | xargs cat || true
    find /usr/share/man/man1 /usr/share/man/man3 -name '*.gz' | sort | head -2000 | xargs zcat || true
  } 2>/dev/null | iconv -f UTF-8 -t UTF-8 -c | tr -d '\000' > "$work/sources.txt"
fi
[ -s "$work/corpus.txt" ] || node "$reference/bench_text.mjs" "$work/sources.txt" "$work/corpus.txt" "$corpus_mb" 1
[ -s "$work/text.txt" ] || node "$reference/bench_text.mjs" "$work/sources.txt" "$work/text.txt" "$text_mb" 2

tokenizer="$work/qwen2_bpe_${vocab_size}.json"
if [ ! -s "$tokenizer" ]; then
  step "training a $vocab_size-token byte-level BPE (Qwen2 pipeline) on $corpus_mb MB"
  node "$reference/train_bpe.mjs" "$work/corpus.txt" "$vocab_size" "$tokenizer"
fi

step "ours: tunebench-cli bench tokenize (1 thread)"
ours=$("$build/bin/tunebench-cli" bench tokenize --tokenizer "$tokenizer" --file "$work/text.txt" --threads 1 --runs "$runs")
echo "$ours"
step "reference: Hugging Face tokenizers through its Node binding (1 thread)"
theirs=$(TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 node "$reference/bench_reference.mjs" "$tokenizer" "$work/text.txt" "$runs")
echo "$theirs"
node -e '
const ours = JSON.parse(process.argv[1]);
const theirs = process.argv[2].trim().split("\n").map((l) => JSON.parse(l));
const vocab = Object.keys(JSON.parse(require("fs").readFileSync(process.argv[3], "utf8")).model.vocab).length;
console.log(`vocabulary ${vocab} tokens, text ${(ours.bytes / 1e6).toFixed(1)} MB, 1 thread`);
console.log(`ours       ${ours.mb_per_s.toFixed(2)} MB/s (${ours.tokens} tokens, fast path: ${ours.fast_path})`);
for (const t of theirs) console.log(`tokenizers ${t.mb_per_s.toFixed(2)} MB/s (${t.way}, ${t.tokens} tokens)`);
' "$ours" "$theirs" "$tokenizer"
