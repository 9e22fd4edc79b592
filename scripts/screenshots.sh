#!/usr/bin/env bash
# Real-window check: starts build/bin/tunebench under Xvfb on the embedded default twice: a few steps
# eager, then the same setup with compile on (so the Live tab shows the warm-up and the compile tile, and
# Runs compares the two), stops (saving a checkpoint), asks that checkpoint and its base model a question
# in the Chat tab, and saves screenshots of each tab, and of the Live tab at 1024x640, to docs/screenshots/.
#   scripts/screenshots.sh [steps]      default 16 steps
# Needs the xvfb package (xvfb-run) and a build in build/. Run from anywhere; it works in the repo root.
set -euo pipefail
cd "$(dirname "$0")/.."

steps=${1:-16}
app=${TUNEBENCH_APP:-build/bin/tunebench}
out=docs/screenshots
[ -x "$app" ] || { echo "screenshots.sh: $app not found: build first (scripts/setup.sh build)" >&2; exit 1; }
command -v xvfb-run >/dev/null || { echo "screenshots.sh: xvfb-run not found: apt-get install xvfb xauth" >&2; exit 1; }
mkdir -p "$out"

# A scratch settings folder: the screenshots show the embedded default, not this user's last setup.
settings=$(mktemp -d)
trap 'rm -rf "$settings"' EXIT
export XDG_CONFIG_HOME="$settings"
export XDG_CACHE_HOME="$settings"  # no compile plan from an earlier run: the warm-up is the real one
export XDG_DATA_HOME="$settings/share"  # the runs go where a user's would, not the user's own

# A fresh output folder (relative, as a bundled config's: under the data folder above): the Checkpoints and
# Runs tabs show these runs only.
run_dir=screenshots

echo "==> $app --default --autostart --quit-after-steps $steps compile=false output_dir=$run_dir (under Xvfb)"
timeout 900 xvfb-run -a -s "-screen 0 2000x1200x24" \
  "$app" --default --autostart --quit-after-steps "$steps" compile=false output_dir="$run_dir"
prompt="What is the capital of France?"
echo "==> $app --default --autostart --quit-after-steps $steps --screenshot $out/tunebench.png --chat-prompt '$prompt' compile=true output_dir=$run_dir (under Xvfb)"
timeout 900 xvfb-run -a -s "-screen 0 2000x1200x24" \
  "$app" --default --autostart --quit-after-steps "$steps" --screenshot "$out/tunebench.png" --chat-prompt "$prompt" \
  compile=true output_dir="$run_dir"
ls -l "$out"/tunebench*.png
