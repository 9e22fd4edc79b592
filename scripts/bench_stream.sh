#!/usr/bin/env bash
# A large dataset streamed through `tunebench-cli data preview`: ROWS rows (default 10,000,000) of about
# ROW_BYTES bytes of text each (default 500: about 5 GB) as JSON Lines, read and tokenized as a
# text_completion_dataset with the bundled tiny tokenizer (tokenizer.max_seq_len MAX_SEQ_LEN, default
# 128). Prints the CPU, the file's size, the seconds to the first samples on stdout, the whole pass
# (rows/s), the samples' tokens, and the peak resident memory (the kernel's count) beside the file's size
# and beside what the samples take (8 bytes a token). Needs build/bin/tunebench-cli.
#   scripts/bench_stream.sh [ROWS] [ROW_BYTES] [MAX_SEQ_LEN]
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${1:-10000000}
row_bytes=${2:-500}
max_seq_len=${3:-128}
cli=build/bin/tunebench-cli
[ -x "$cli" ] || { echo "bench_stream.sh: build first (scripts/setup.sh build)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores"
python3 - "$cli" "$work/rows.jsonl" "$rows" "$row_bytes" "$max_seq_len" <<'PY'
import json, os, random, subprocess, sys, time
cli, path, rows, row_bytes, max_seq_len = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
# 4096 distinct texts of words, cycled with the row number in front: text as varied as needed for the
# tokenizer's work, written at disk speed.
rng = random.Random(0)
words = "the of and to in a is that for it as was with be by on not he this are or his from at which but have an they you were her she there one all we their".split()
texts = []
for _ in range(4096):
    t = []
    while sum(len(w) + 1 for w in t) < row_bytes:
        t.append(rng.choice(words))
    texts.append(" ".join(t))
with open(path, "w") as f:
    chunk = []
    for i in range(rows):
        chunk.append(json.dumps({"text": f"{i}: {texts[i % 4096]}"}))
        if len(chunk) == 100000:
            f.write("\n".join(chunk) + "\n")
            chunk = []
    if chunk:
        f.write("\n".join(chunk) + "\n")
size = os.path.getsize(path)
print(f"file: {rows:,} rows, {size / 1e9:.2f} GB of JSON Lines")
cmd = [cli, "data", "preview", "--config", "tiny/eval_stories", "-n", "1", "dataset.source=json", f"dataset.data_files={path}",
       "dataset.column=text", f"tokenizer.max_seq_len={max_seq_len}"]
start = time.monotonic()
p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
first = None
out = []
for line in p.stdout:
    if first is None:
        first = time.monotonic() - start
    out.append(line)
_, status, usage = os.wait4(p.pid, 0)
total = time.monotonic() - start
if status != 0:
    sys.exit("data preview failed: " + "".join(out[-5:]))
counts = [l for l in out if l.startswith("every row: ") or l.startswith("samples ")][-1]
tokens = int(counts.split("tokens ")[1].split(" ")[0])
peak = usage.ru_maxrss * 1024
print(f"first samples after {first:.2f} s; every row in {total:.1f} s: {rows / total:,.0f} rows/s, {size / 1e6 / total:.1f} MB/s")
print(f"samples: {tokens:,} tokens ({tokens * 8 / 1e9:.2f} GB at 8 bytes a token)")
print(f"peak resident memory: {peak / 1e9:.2f} GB ({peak / size:.2f}x the file)")
PY
