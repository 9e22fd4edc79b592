#!/usr/bin/env bash
# Parquet reading speed: `tunebench-cli bench read` (Tunebench's reader, every row of every column turned
# into a dataset row) against DuckDB reading the same file (every string column's bytes summed, so each
# value is decoded), on one thread each and on DuckDB's default threads. Writes an instruction-shaped
# table of about SIZE_MB of text (default 1024; the files are smaller: its repeated hashes compress) with
# DuckDB, once per codec (snappy, zstd), and prints one line per measure, the CPU named. Needs build/bin/tunebench-cli and tests/reference/parquet_js (scripts/setup.sh test).
#   scripts/bench_parquet.sh [SIZE_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
size_mb=${1:-1024}
cli=build/bin/tunebench-cli
ref=tests/reference/parquet_js
[ -x "$cli" ] || { echo "bench_parquet.sh: build first (scripts/setup.sh build)" >&2; exit 1; }
[ -f "$ref/node_modules/@duckdb/node-api/package.json" ] || { echo "bench_parquet.sh: scripts/setup.sh test installs DuckDB's Node package" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores; file: about $size_mb MB"

# About 470 bytes a row before compression (random hex, so it compresses little, as text barely does).
rows=$((size_mb * 1000000 / 470))
(cd "$ref" && node --input-type=module -e "
import { DuckDBInstance } from '@duckdb/node-api';
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();
await con.run(\"CREATE TABLE t AS SELECT i AS id, 'Instruction ' || i || ': ' || repeat(md5(i::VARCHAR), 4) AS instruction, \" +
              \"CASE WHEN i % 3 = 0 THEN '' ELSE repeat(md5((i * 7)::VARCHAR), 2) END AS input, \" +
              \"repeat(md5((i * 13)::VARCHAR), 8) AS output FROM range($rows) r(i)\");
for (const codec of ['snappy', 'zstd'])
  await con.run(\`COPY t TO '$work/\${codec}.parquet' (FORMAT parquet, COMPRESSION \${codec})\`);
")

for codec in snappy zstd; do
  file="$work/$codec.parquet"
  mb=$(python3 -c "import os,sys; print(round(os.path.getsize(sys.argv[1]) / 1e6))" "$file")
  ours=$("$cli" bench read --source parquet --data-files "$file" --runs 3)
  duck=$(cd "$ref" && node --input-type=module -e "
import { DuckDBInstance } from '@duckdb/node-api';
const out = {};
for (const threads of [1, 0]) {
  const db = await DuckDBInstance.create(':memory:');
  const con = await db.connect();
  if (threads) await con.run('SET threads = ' + threads);
  const q = \"SELECT count(*), sum(length(instruction) + length(input) + length(output)) FROM read_parquet('$file')\";
  await con.run(q);  // warm-up
  const times = [];
  for (let i = 0; i < 3; ++i) { const t = performance.now(); await (await con.run(q)).getRows(); times.push((performance.now() - t) / 1000); }
  times.sort((a, b) => a - b);
  out[threads ? 'one' : 'all'] = times[1];
}
console.log(JSON.stringify(out));
")
  python3 - "$codec" "$mb" "$ours" "$duck" <<'PY'
import json, sys
codec, mb, ours, duck = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), json.loads(sys.argv[4])
rows = ours["rows"]
print(f"{codec:6s} {mb} MB, {rows} rows:")
print(f"  tunebench (1 thread):  {ours['median_s']:7.2f} s  {rows / ours['median_s']:10.0f} rows/s  {ours['mb_per_s']:7.1f} MB/s  peak RSS {ours['peak_rss_mb']:.0f} MiB")
for key, name in (("one", "DuckDB (1 thread): "), ("all", "DuckDB (all threads):")):
    s = duck[key]
    print(f"  {name} {s:7.2f} s  {rows / s:10.0f} rows/s  {mb / s:7.1f} MB/s   (tunebench takes {ours['median_s'] / s:.1f}x its time)")
PY
done
