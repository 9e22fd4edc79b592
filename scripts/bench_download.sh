#!/usr/bin/env bash
# `tunebench-cli download` over loopback against curl on the same file: throughput, peak resident memory,
# and the sha256 check's share. Serves one LFS file (default 2 GiB of random bytes) from the tests' loopback
# Hub (tests/hub/fake_hub.py: the file through a 302 to a second port, as the Hub's CDN) and prints one
# line per measure, the CPU named.
#   scripts/bench_download.sh [SIZE_MIB]      (needs build/bin/tunebench-cli, python3, curl, /usr/bin/time)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-2048}
cli=build/bin/tunebench-cli
[ -x "$cli" ] || { echo "bench_download.sh: build first (scripts/setup.sh build)" >&2; exit 1; }
work=$(mktemp -d)
server=
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

head -c "$((size_mib * 1024 * 1024))" /dev/urandom > "$work/blob.bin"
commit=3333333333333333333333333333333333333333
cat > "$work/repos.json" <<JSON
{"repos": [{"type": "model", "id": "bench/big", "commits": {"$commit": {"files": {
  "model.safetensors": {"file": "$work/blob.bin", "lfs": true}}}}, "refs": {"main": "$commit"}}]}
JSON
python3 tests/hub/fake_hub.py --repos "$work/repos.json" --port-file "$work/ports.json" &
server=$!
for _ in $(seq 100); do [ -f "$work/ports.json" ] && break; sleep 0.1; done
hub=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['hub'])" "$work/ports.json")
# The server hashes the file once, on first use: done before anything is timed.
curl -s -o /dev/null "http://127.0.0.1:$hub/api/models/bench/big/revision/main"

echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'), $(nproc) cores; file: $size_mib MiB"
# Three rounds, curl and tunebench alternating which goes first; each starts with the page cache's dirty
# pages written out (sync) and the other's copy deleted, so neither pays for the other's writeback.
url="http://127.0.0.1:$hub/bench/big/resolve/main/model.safetensors"
run_curl() {
  rm -f "$work/curl.out"; sync
  /usr/bin/time -f "%e %M" -a -o "$work/curl.time" curl -s -L -o "$work/curl.out" "$url"
}
run_ours() {
  rm -rf "$work/cache"; sync
  HF_ENDPOINT="http://127.0.0.1:$hub" HF_HOME="$work/home" HF_HUB_CACHE="$work/cache" \
    /usr/bin/time -f "%e %M" -a -o "$work/ours.time" "$cli" download bench/big > "$work/ours.json" 2>/dev/null
  cmp -s "$work/blob.bin" "$work/cache/models--bench--big/snapshots/$commit/model.safetensors" || { echo "bytes differ" >&2; exit 1; }
}
for round in 1 2 3; do
  if [ $((round % 2)) = 1 ]; then run_curl; run_ours; else run_ours; run_curl; fi
done
# The program's resident memory before any download: LibTorch's libraries, mapped at start.
/usr/bin/time -f "%M" -o "$work/idle.time" "$cli" --version > /dev/null
/usr/bin/time -f "%e %U %S" -o "$work/start.time" "$cli" --version > /dev/null
hash_s=$( { /usr/bin/time -f "%e" openssl dgst -sha256 "$work/blob.bin" > /dev/null; } 2>&1 )
python3 - "$size_mib" "$work" "$hash_s" <<'PY'
import statistics, sys
mib, work, hash_s = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
def rows(name):
    return [tuple(map(float, line.split())) for line in open(f"{work}/{name}.time") if line.strip()]
curl, ours = rows("curl"), rows("ours")
idle_kb = float(open(f"{work}/idle.time").read().split()[0])
start_s = float(open(f"{work}/start.time").read().split()[0])
curl_s, ours_s = statistics.median(r[0] for r in curl), statistics.median(r[0] for r in ours)
print(f"curl:        {curl_s:6.2f} s  {mib / curl_s:7.1f} MiB/s  peak RSS {max(r[1] for r in curl) / 1024:6.1f} MiB  (median of {len(curl)})")
print(f"tunebench:   {ours_s:6.2f} s  {mib / ours_s:7.1f} MiB/s  peak RSS {max(r[1] for r in ours) / 1024:6.1f} MiB  "
      f"({curl_s / ours_s * 100:.0f}% of curl's throughput; the sha256 check included; median of {len(ours)})")
print(f"  of which the program's start ({start_s:.2f} s) and its resident memory before downloading "
      f"({idle_kb / 1024:.1f} MiB: LibTorch's libraries); the download itself adds "
      f"{(max(r[1] for r in ours) - idle_kb) / 1024:.1f} MiB")
print(f"sha256 (OpenSSL, the library the check uses): {mib / hash_s:.0f} MiB/s")
PY
