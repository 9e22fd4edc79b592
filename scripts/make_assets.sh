#!/usr/bin/env bash
# Regenerates the bundled assets under resources/ (they are committed: builds and CI never train).
#   resources/corpus/tunebench_stories.txt   synthetic pretraining text, one document a line
#   resources/datasets/tiny_instruct.json    Alpaca-format instruct rows (capitals, reversing words, sums)
#   resources/tokenizer/tokenizer.model      SentencePiece BPE, Llama 2 style, trained on the two above
# Needs python3 (standard library only) and spm_train (Debian package `sentencepiece`).
# Deterministic: the text comes from a seeded PRNG and spm_train runs single-threaded on fixed input,
# so running it again gives byte-identical files.
set -euo pipefail
cd "$(dirname "$0")/.."

seed=${TUNEBENCH_ASSET_SEED:-20240611}
vocab_size=2048  # the most pieces the corpus supports is ~2200; byte fallback covers any other text

command -v spm_train >/dev/null || { echo "spm_train not found: apt-get install sentencepiece" >&2; exit 1; }
python=$(command -v python3)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p resources/corpus resources/datasets resources/tokenizer

"$python" scripts/assets/generate_text.py --seed "$seed" --documents 1900 --rows 2100 \
  --corpus resources/corpus/tunebench_stories.txt \
  --instruct resources/datasets/tiny_instruct.json \
  --spm-text "$work/spm_text.txt"

# Llama 2's settings: BPE, byte fallback, digits split, no normalization, dummy prefix, unk=0 bos=1
# eos=2 and no pad piece. Relative file names, because the model records its training options.
(
  cd "$work"
  spm_train --input=spm_text.txt --model_prefix=tokenizer --model_type=bpe --vocab_size="$vocab_size" \
    --character_coverage=1.0 --byte_fallback=true --split_digits=true --allow_whitespace_only_pieces=true \
    --normalization_rule_name=identity --remove_extra_whitespaces=false --add_dummy_prefix=true \
    --unk_id=0 --bos_id=1 --eos_id=2 --pad_id=-1 --num_threads=1 --max_sentence_length=16384 \
    --minloglevel=2
)
cp "$work/tokenizer.model" resources/tokenizer/tokenizer.model

for f in resources/corpus/tunebench_stories.txt resources/datasets/tiny_instruct.json \
         resources/tokenizer/tokenizer.model; do
  printf '%8d bytes  %s\n' "$(stat -c %s "$f")" "$f"
done
