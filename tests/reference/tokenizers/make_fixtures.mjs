// Builds tests/data/tokenizers/<family>/tokenizer.json: for each model family, a small tokenizer.json
// with the pipeline structure of that family's published file (normalizer, pre-tokenizer, model flags,
// post-processor, decoder, added tokens and their flags) and a vocabulary trained here, with Hugging
// Face tokenizers' own BPE trainer (the Node binding's Tokenizer.train), on corpus.mjs.
//
//   node make_fixtures.mjs [OUTPUT_DIR]     (default: tests/data/tokenizers of this repository)
//
// Deterministic: the same corpus and library version give the same files.
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { corpus } from './corpus.mjs'

const require = createRequire(import.meta.url)
const { Tokenizer } = require('tokenizers')

const here = dirname(fileURLToPath(import.meta.url))
const outputDir = process.argv[2] || join(here, '..', '..', 'data', 'tokenizers')
const MAX_MERGES = 2500

// The split regexes of the published files.
const LLAMA3_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
const QWEN_REGEX =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
const O200K_REGEX = [
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?",
  '\\p{N}{1,3}',
  ' ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*',
  '\\s*[\\r\\n]+',
  '\\s+(?!\\S)',
  '\\s+',
].join('|')

const byteLevel = (addPrefixSpace, trimOffsets, useRegex) => ({
  type: 'ByteLevel',
  add_prefix_space: addPrefixSpace,
  trim_offsets: trimOffsets,
  use_regex: useRegex,
})
const split = (regex) => ({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false })
const template = (bos, id) => ({
  type: 'TemplateProcessing',
  single: [{ SpecialToken: { id: bos, type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
  pair: [
    { SpecialToken: { id: bos, type_id: 0 } },
    { Sequence: { id: 'A', type_id: 0 } },
    { SpecialToken: { id: bos, type_id: 1 } },
    { Sequence: { id: 'B', type_id: 1 } },
  ],
  special_tokens: { [bos]: { id: bos, ids: [id], tokens: [bos] } },
})
const sentencePieceDecoder = (strip) => ({
  type: 'Sequence',
  decoders: [
    { type: 'Replace', pattern: { String: '\u2581' }, content: ' ' },
    { type: 'ByteFallback' },
    { type: 'Fuse' },
    ...(strip ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
  ],
})
const token = (content, flags = {}) => ({
  content,
  single_word: false,
  lstrip: false,
  rstrip: false,
  normalized: false,
  special: true,
  ...flags,
})

// Each family: the pipeline of its published tokenizer.json, the model flags, and its added tokens.
// `placement`: "after" puts the added tokens after the trained vocabulary (ids continue it), "before"
// puts them (and, with byte_fallback, the 256 <0xXX> tokens) first, as SentencePiece conversions do.
const families = {
  // meta-llama/Meta-Llama-3-8B: Split(cl100k-style regex) + ByteLevel, ignore_merges, BOS template.
  llama3: {
    normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [split(LLAMA3_REGEX), byteLevel(false, true, false)] },
    post_processor: {
      type: 'Sequence',
      processors: [byteLevel(true, false, true), template('<|begin_of_text|>', null)],
    },
    decoder: byteLevel(true, true, true),
    model: { ignore_merges: true },
    byteLevel: true,
    placement: 'after',
    bos: '<|begin_of_text|>',
    added: [
      token('<|begin_of_text|>'),
      token('<|end_of_text|>'),
      token('<|reserved_special_token_0|>'),
      token('<|reserved_special_token_1|>'),
      token('<|finetune_right_pad_id|>'),
      token('<|step_id|>'),
      token('<|start_header_id|>'),
      token('<|end_header_id|>'),
      token('<|eom_id|>'),
      token('<|eot_id|>'),
      token('<|python_tag|>'),
      token('<|reserved_special_token_2|>'),
    ],
  },
  // Qwen/Qwen2.5 and Qwen3: NFC, Split(Qwen regex: single digits) + ByteLevel, empty prefix/suffix strings,
  // chat and tool tokens (the tool, fim and think tokens are not special).
  qwen: {
    normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [split(QWEN_REGEX), byteLevel(false, false, false)] },
    post_processor: byteLevel(false, false, false),
    decoder: byteLevel(false, false, false),
    model: { continuing_subword_prefix: '', end_of_word_suffix: '' },
    byteLevel: true,
    placement: 'after',
    added: [
      token('<|endoftext|>'),
      token('<|im_start|>'),
      token('<|im_end|>'),
      token('<|object_ref_start|>'),
      token('<|object_ref_end|>'),
      token('<|box_start|>'),
      token('<|box_end|>'),
      token('<|vision_pad|>'),
      token('<tool_call>', { special: false }),
      token('</tool_call>', { special: false }),
      token('<|fim_prefix|>', { special: false }),
      token('<|fim_middle|>', { special: false }),
      token('<|fim_suffix|>', { special: false }),
      token('<|repo_name|>', { special: false }),
      token('<|file_sep|>', { special: false }),
      token('<tool_response>', { special: false }),
      token('</tool_response>', { special: false }),
      token('<think>', { special: false }),
      token('</think>', { special: false }),
    ],
  },
  // google/gemma-3: spaces replaced by ▁ (normalizer), Split(" ", MergedWithPrevious), byte_fallback and
  // fuse_unk BPE, <bos> template, Replace/ByteFallback/Fuse decoder; the control tokens are in the
  // vocabulary, and there are non-special added tokens too.
  gemma: {
    normalizer: { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' },
    pre_tokenizer: { type: 'Split', pattern: { String: ' ' }, behavior: 'MergedWithPrevious', invert: false },
    post_processor: template('<bos>', null),
    decoder: sentencePieceDecoder(false),
    model: { unk_token: '<unk>', fuse_unk: true, byte_fallback: true },
    byteFallback: true,
    placement: 'before',
    bos: '<bos>',
    added: [
      token('<pad>'),
      token('<eos>'),
      token('<bos>'),
      token('<unk>'),
      token('<mask>', { special: false }),
      token('[multimodal]'),
      token('<unused0>', { special: false }),
      token('<unused1>', { special: false }),
      token('<start_of_turn>'),
      token('<end_of_turn>'),
      token('<start_of_image>'),
      token('<table>', { special: false }),
      token('\t\t', { special: false }),
      token('\n\n\n', { special: false }),
    ],
  },
  // microsoft/Phi-3-mini: Llama-2-style SentencePiece conversion (Prepend ▁ + Replace " " normalizers, no
  // pre-tokenizer), byte_fallback and fuse_unk, Strip in the decoder; chat tokens with rstrip.
  phi3: {
    normalizer: {
      type: 'Sequence',
      normalizers: [
        { type: 'Prepend', prepend: '\u2581' },
        { type: 'Replace', pattern: { String: ' ' }, content: '\u2581' },
      ],
    },
    pre_tokenizer: null,
    post_processor: template('<s>', null),
    decoder: sentencePieceDecoder(true),
    model: { unk_token: '<unk>', fuse_unk: true, byte_fallback: true },
    byteFallback: true,
    placement: 'before',
    bos: '<s>',
    added: [
      token('<unk>'),
      token('<s>'),
      token('</s>', { rstrip: true }),
    ],
    addedAfter: [
      token('<|endoftext|>'),
      token('<|assistant|>', { rstrip: true }),
      token('<|placeholder1|>', { rstrip: true }),
      token('<|placeholder2|>', { rstrip: true, lstrip: true }),
      token('<|system|>', { rstrip: true }),
      token('<|end|>', { rstrip: true }),
      token('<|placeholder5|>', { rstrip: true }),
      token('<|user|>', { rstrip: true }),
    ],
  },
  // microsoft/phi-4: tiktoken cl100k's regex, byte-level, a ByteLevel post-processor that trims offsets.
  phi4: {
    normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [split(LLAMA3_REGEX), byteLevel(false, true, false)] },
    post_processor: byteLevel(false, true, false),
    decoder: byteLevel(false, true, false),
    model: {},
    byteLevel: true,
    placement: 'after',
    added: [
      token('<|endoftext|>'),
      token('<|fim_prefix|>'),
      token('<|fim_middle|>'),
      token('<|fim_suffix|>'),
      token('<|im_start|>'),
      token('<|im_end|>'),
      token('<|im_sep|>'),
      token('<|dummy_0|>'),
    ],
  },
  // microsoft/Phi-4-mini: tiktoken o200k's regex (case-aware words, contractions attached), byte-level.
  phi4_mini: {
    normalizer: null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [split(O200K_REGEX), byteLevel(false, false, false)] },
    post_processor: byteLevel(false, false, false),
    decoder: byteLevel(false, false, false),
    model: {},
    byteLevel: true,
    placement: 'after',
    added: [
      token('<|endoftext|>'),
      token('<|system|>'),
      token('<|end|>'),
      token('<|user|>'),
      token('<|assistant|>'),
      token('<|tool|>'),
      token('<|/tool|>'),
      token('<|tool_call|>'),
    ],
  },
  // HuggingFaceTB/SmolLM2: Digits(individual) then GPT-2's ByteLevel regex; special tokens first in the
  // vocabulary.
  smollm2: {
    normalizer: null,
    pre_tokenizer: {
      type: 'Sequence',
      pretokenizers: [{ type: 'Digits', individual_digits: true }, byteLevel(false, true, true)],
    },
    post_processor: byteLevel(true, false, true),
    decoder: byteLevel(true, true, true),
    model: {},
    byteLevel: true,
    placement: 'before',
    added: [
      token('<|endoftext|>'),
      token('<|im_start|>'),
      token('<|im_end|>'),
      token('<repo_name>'),
      token('<reponame>'),
      token('<file_sep>'),
      token('<filename>'),
      token('<gh_stars>'),
      token('<issue_start>'),
      token('<jupyter_code>'),
    ],
  },
  // mistralai/Mistral-7B-v0.3 (legacy: false): no normalizer, Metaspace(prepend_scheme first, split false),
  // byte_fallback, control tokens; a Metaspace decoder.
  mistral: {
    normalizer: null,
    pre_tokenizer: { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false },
    post_processor: template('<s>', null),
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
      ],
    },
    model: { unk_token: '<unk>', fuse_unk: true, byte_fallback: true },
    byteFallback: true,
    placement: 'before',
    bos: '<s>',
    added: [
      token('<unk>'),
      token('<s>'),
      token('</s>'),
      token('[INST]'),
      token('[/INST]'),
      token('[TOOL_CALLS]'),
      token('[AVAILABLE_TOOLS]'),
      token('[/AVAILABLE_TOOLS]'),
    ],
  },
}

const byteAlphabet = (() => {
  const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff)
  const out = []
  let next = 256
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(printable(b) ? b : next++))
  return out
})()
const byteTokens = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)

function skeleton(f) {
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [],
    normalizer: f.normalizer,
    pre_tokenizer: f.pre_tokenizer,
    post_processor: null,
    decoder: f.decoder,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      ...f.model,
      vocab: {},
      merges: [],
    },
  }
}

// Trains the family's pipeline on the corpus with tokenizers' BPE trainer; returns [vocab tokens in id
// order, merges as [a, b]].
function train(f, corpusFile, workDir) {
  const tokenizer = Tokenizer.fromString(JSON.stringify(skeleton(f)))
  tokenizer.train([corpusFile])
  const saved = join(workDir, 'trained.json')
  tokenizer.save(saved)
  const model = JSON.parse(readFileSync(saved, 'utf8')).model
  const tokens = Object.entries(model.vocab)
    .sort((a, b) => a[1] - b[1])
    .map(([t]) => t)
  const merges = model.merges.map((m) => (typeof m === 'string' ? m.split(' ') : m))
  return [tokens, merges]
}

function build(name, f, corpusFile, workDir) {
  const [trained, allMerges] = train(f, corpusFile, workDir)
  // Keep the first merges (a valid, smaller BPE): the single characters and what those merges make.
  const merges = allMerges.slice(0, MAX_MERGES)
  const made = new Set(merges.map(([a, b]) => a + b))
  const pieces = trained.filter((t) => [...t].length === 1 || made.has(t))
  const vocabOrder = []
  const seen = new Set()
  const push = (t) => {
    if (!seen.has(t)) {
      seen.add(t)
      vocabOrder.push(t)
    }
  }
  if (f.placement === 'before') {
    for (const t of f.added) push(t.content)
    if (f.byteFallback) for (const t of byteTokens) push(t)
  }
  if (f.byteLevel) for (const c of byteAlphabet) push(c)
  for (const t of pieces) push(t)
  const vocab = {}
  vocabOrder.forEach((t, i) => (vocab[t] = i))
  // Added tokens: "before" ones are vocabulary entries; the others continue the ids after it.
  let nextId = vocabOrder.length
  const addedTokens = []
  const addedList = f.placement === 'before' ? [...f.added, ...(f.addedAfter || [])] : f.added
  for (const t of addedList) {
    const id = t.content in vocab ? vocab[t.content] : nextId++
    addedTokens.push({ id, ...t })
  }
  const idOf = (content) => addedTokens.find((t) => t.content === content).id
  let postProcessor = f.post_processor
  const fixTemplate = (p) => {
    if (p && p.type === 'TemplateProcessing') {
      for (const [name, entry] of Object.entries(p.special_tokens)) entry.ids = [idOf(name)]
    }
    if (p && p.type === 'Sequence') p.processors.forEach(fixTemplate)
  }
  postProcessor = JSON.parse(JSON.stringify(postProcessor))
  fixTemplate(postProcessor)
  const file = skeleton(f)
  file.added_tokens = addedTokens
  file.post_processor = postProcessor
  file.model.vocab = vocab
  file.model.merges = merges
  const dir = join(outputDir, name)
  mkdirSync(dir, { recursive: true })
  const text = JSON.stringify(file, null, 1) + '\n'
  writeFileSync(join(dir, 'tokenizer.json'), text)
  // The reference reads it back (a file it refuses would be useless).
  const check = Tokenizer.fromFile(join(dir, 'tokenizer.json'))
  console.log(
    `${name}: ${Object.keys(vocab).length} tokens, ${merges.length} merges (of ${allMerges.length}), ` +
      `${addedTokens.length} added, ${(text.length / 1024).toFixed(0)} KiB, vocab size ${check.getVocabSize(true)}`,
  )
}

const workDir = mkdtempSync(join(tmpdir(), 'tunebench-fixtures-'))
try {
  const corpusFile = join(workDir, 'corpus.txt')
  writeFileSync(corpusFile, corpus)
  for (const [name, f] of Object.entries(families)) build(name, f, corpusFile, workDir)
} finally {
  rmSync(workDir, { recursive: true, force: true })
}
