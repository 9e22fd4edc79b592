#!/usr/bin/env bash
# desktop-file-validate on the desktop entry and appstreamcli's validation on the metainfo: no error, no
# warning (info notes are printed, not failed). Usage: test_desktop_metadata.sh DESKTOP_FILE METAINFO_FILE
set -euo pipefail
for tool in desktop-file-validate appstreamcli; do
  command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (scripts/setup.sh test installs it)" >&2; exit 1; }
done
out=$(desktop-file-validate "$1" 2>&1) || { echo "$out"; exit 1; }
[ -z "$out" ] || { echo "$out"; echo "FAIL: desktop-file-validate has remarks on $1" >&2; exit 1; }
echo "desktop-file-validate: $1: no remark"
appstreamcli validate --no-net --explain "$2"
