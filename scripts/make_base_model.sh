#!/usr/bin/env bash
# Pre-trains the small base model of the embedded default with our own recipe on the bundled corpus
# (configs/tiny/pretrain_base.yaml) and copies the final checkpoint's model files to
# resources/base_model/. Deterministic for a given build and thread count; takes a few minutes on
# two cores. The result is committed so that nothing trains at build or test time.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x build/bin/tunebench-cli ] || scripts/setup.sh build
rm -rf build/pretrain_base
build/bin/tunebench-cli run full_finetune_single_device --config configs/tiny/pretrain_base.yaml "$@"
last=$(ls -d build/pretrain_base/epoch_* | sort -V | tail -1)
rm -rf resources/base_model && mkdir -p resources/base_model
cp "$last"/config.json resources/base_model/
# A single shard is renamed to the plain single-file name Hugging Face also reads.
cp "$last"/model-00001-of-00001.safetensors resources/base_model/model.safetensors
echo "base model written to resources/base_model/ from $last"
