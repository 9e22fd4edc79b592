// Trains a byte-level BPE with Qwen2's tokenizer.json pipeline (NFC, Split with Qwen's regex, ByteLevel)
// on a text file and writes its tokenizer.json, for scripts/bench_tokenizer.sh.
//
//   node train_bpe.mjs CORPUS_TXT VOCAB_SIZE OUTPUT_JSON
//
// The words are counted by Hugging Face tokenizers itself (its NFC normalizer and pre-tokenizer, through
// the Node binding). The merges are learnt here, because the binding's Tokenizer.train() always uses the
// default BpeTrainer (30,000 tokens) and exposes no trainer options: the classic algorithm, the most
// frequent pair first (ties: the pair of smaller ids), counts updated incrementally. Deterministic.
import { readFileSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { Tokenizer } = require('tokenizers')

const QWEN_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
const SPECIALS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']

const [corpusPath, vocabSizeArg, outputPath] = process.argv.slice(2)
if (!corpusPath || !vocabSizeArg || !outputPath) {
  console.error('usage: node train_bpe.mjs CORPUS_TXT VOCAB_SIZE OUTPUT_JSON')
  process.exit(2)
}
const targetVocab = Number(vocabSizeArg) - SPECIALS.length

const byteLevel = (addPrefixSpace, trimOffsets, useRegex) => ({
  type: 'ByteLevel',
  add_prefix_space: addPrefixSpace,
  trim_offsets: trimOffsets,
  use_regex: useRegex,
})
const pipeline = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: [],
  normalizer: { type: 'NFC' },
  pre_tokenizer: {
    type: 'Sequence',
    pretokenizers: [
      { type: 'Split', pattern: { Regex: QWEN_REGEX }, behavior: 'Isolated', invert: false },
      byteLevel(false, false, false),
    ],
  },
  post_processor: byteLevel(false, false, false),
  decoder: byteLevel(false, false, false),
  model: {
    type: 'BPE',
    dropout: null,
    unk_token: null,
    continuing_subword_prefix: '',
    end_of_word_suffix: '',
    fuse_unk: false,
    byte_fallback: false,
    ignore_merges: false,
    vocab: {},
    merges: [],
  },
}

// ---- words, counted through tokenizers' own normalizer and pre-tokenizer --------------------------------
const reference = Tokenizer.fromString(JSON.stringify(pipeline))
const normalizer = reference.getNormalizer()
const preTokenizer = reference.getPreTokenizer()
const text = readFileSync(corpusPath, 'utf8')
const wordCounts = new Map()
const CHUNK = 1 << 16
for (let start = 0; start < text.length; ) {
  let end = Math.min(text.length, start + CHUNK)
  const newline = text.indexOf('\n', end)
  end = newline < 0 ? text.length : newline + 1
  for (const [word] of preTokenizer.preTokenizeString(normalizer.normalizeString(text.slice(start, end)))) {
    wordCounts.set(word, (wordCounts.get(word) || 0) + 1)
  }
  start = end
}
console.error(`${wordCounts.size} distinct words`)

// ---- the alphabet: the 256 byte-level characters ----------------------------------------------------------
const alphabet = []
{
  const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
  let next = 256
  for (let b = 0; b < 256; b++) alphabet.push(String.fromCodePoint(printable(b) ? b : next++))
}
const tokens = [...alphabet]
const idOf = new Map(tokens.map((t, i) => [t, i]))

const words = []
const counts = []
for (const [word, count] of [...wordCounts.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
  const symbols = []
  for (const ch of word) symbols.push(idOf.get(ch))
  words.push(symbols)
  counts.push(count)
}

// ---- pair counts, where each pair occurs, and a max-heap of (count, pair) ---------------------------------
const SHIFT = 2 ** 20
const key = (a, b) => a * SHIFT + b
const pairCount = new Map()
const pairWords = new Map()
const addPair = (k, w, c) => {
  pairCount.set(k, (pairCount.get(k) || 0) + c)
  let list = pairWords.get(k)
  if (!list) pairWords.set(k, (list = []))
  list.push(w)
}
for (let w = 0; w < words.length; w++) {
  const s = words[w]
  for (let i = 0; i + 1 < s.length; i++) addPair(key(s[i], s[i + 1]), w, counts[w])
}

// Binary heap ordered by count (high first), then key (low first); stale entries are skipped on pop.
const heapCount = []
const heapKey = []
const above = (i, j) => heapCount[i] > heapCount[j] || (heapCount[i] === heapCount[j] && heapKey[i] < heapKey[j])
const swap = (i, j) => {
  ;[heapCount[i], heapCount[j]] = [heapCount[j], heapCount[i]]
  ;[heapKey[i], heapKey[j]] = [heapKey[j], heapKey[i]]
}
const push = (c, k) => {
  heapCount.push(c)
  heapKey.push(k)
  for (let i = heapCount.length - 1; i > 0; ) {
    const p = (i - 1) >> 1
    if (!above(i, p)) break
    swap(i, p)
    i = p
  }
}
const pop = () => {
  const c = heapCount[0]
  const k = heapKey[0]
  const lastC = heapCount.pop()
  const lastK = heapKey.pop()
  if (heapCount.length > 0) {
    heapCount[0] = lastC
    heapKey[0] = lastK
    for (let i = 0; ; ) {
      const l = 2 * i + 1
      const r = l + 1
      let best = i
      if (l < heapCount.length && above(l, best)) best = l
      if (r < heapCount.length && above(r, best)) best = r
      if (best === i) break
      swap(i, best)
      i = best
    }
  }
  return [c, k]
}
for (const [k, c] of pairCount) push(c, k)

// ---- merges ---------------------------------------------------------------------------------------------
const merges = []
const seen = new Int32Array(words.length).fill(-1)
const touched = new Set()
while (tokens.length < targetVocab && heapCount.length > 0) {
  const [c, k] = pop()
  const current = pairCount.get(k) || 0
  if (current !== c) {
    if (current > 0) push(current, k)
    continue
  }
  if (c < 1) break
  const a = Math.floor(k / SHIFT)
  const b = k % SHIFT
  const merged = tokens[a] + tokens[b]
  let id = idOf.get(merged)
  if (id === undefined) {
    id = tokens.length
    tokens.push(merged)
    idOf.set(merged, id)
  }
  merges.push([tokens[a], tokens[b]])
  touched.clear()
  const stamp = merges.length
  for (const w of pairWords.get(k)) {
    if (seen[w] === stamp) continue
    seen[w] = stamp
    const s = words[w]
    const n = counts[w]
    const out = []
    for (let i = 0; i < s.length; i++) {
      if (i + 1 < s.length && s[i] === a && s[i + 1] === b) {
        out.push(id)
        i++
      } else {
        out.push(s[i])
      }
    }
    // The word's pairs before and after, as a change of counts.
    const delta = new Map()
    for (let i = 0; i + 1 < s.length; i++) delta.set(key(s[i], s[i + 1]), (delta.get(key(s[i], s[i + 1])) || 0) - n)
    for (let i = 0; i + 1 < out.length; i++) delta.set(key(out[i], out[i + 1]), (delta.get(key(out[i], out[i + 1])) || 0) + n)
    for (const [t, d] of delta) {
      if (d === 0 || t === k) continue
      if (d > 0) {
        addPair(t, w, d)
      } else {
        pairCount.set(t, pairCount.get(t) + d)
      }
      touched.add(t)
    }
    words[w] = out
  }
  pairCount.delete(k)
  pairWords.delete(k)
  for (const t of touched) {
    const cnt = pairCount.get(t) || 0
    if (cnt > 0) push(cnt, t)
  }
  if (merges.length % 10000 === 0) console.error(`${merges.length} merges, vocabulary ${tokens.length}`)
}

// ---- tokenizer.json ---------------------------------------------------------------------------------------
const vocab = {}
tokens.forEach((t, i) => (vocab[t] = i))
pipeline.model.vocab = vocab
pipeline.model.merges = merges
pipeline.added_tokens = SPECIALS.map((content, i) => ({
  id: tokens.length + i,
  content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special: true,
}))
writeFileSync(outputPath, JSON.stringify(pipeline))
Tokenizer.fromFile(outputPath) // the reference reads it
console.error(`${outputPath}: ${tokens.length + SPECIALS.length} tokens, ${merges.length} merges`)
