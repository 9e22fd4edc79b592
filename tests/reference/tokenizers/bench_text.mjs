// Text for scripts/bench_tokenizer.sh: SIZE_MB of text taken from SOURCE (text found on the machine:
// licenses, documentation, Python sources, manual pages) from a seeded position on, with generated
// multi-script paragraphs (words of corpus.mjs's scripts in seeded random order) between its pieces.
//
//   node bench_text.mjs SOURCE OUTPUT SIZE_MB SEED
import { readFileSync, writeFileSync } from 'node:fs'
import { corpus } from './corpus.mjs'

const [source, output, sizeArg, seedArg] = process.argv.slice(2)
const target = Number(sizeArg) * 1e6
let seed = Number(seedArg) >>> 0
const random = () => {
  // mulberry32
  seed = (seed + 0x6d2b79f5) >>> 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const raw = readFileSync(source, 'utf8')
const words = corpus.split(/\s+/).filter((w) => w.length > 0 && /[^\x00-\x7f]/.test(w))
const paragraph = () => {
  const n = 20 + Math.floor(random() * 80)
  const out = []
  for (let i = 0; i < n; i++) out.push(words[Math.floor(random() * words.length)])
  return out.join(random() < 0.1 ? '  ' : ' ') + '\n\n'
}
const parts = []
let size = 0
let at = Math.floor(random() * raw.length)
while (size < target) {
  const take = 20000 + Math.floor(random() * 60000)
  let piece = raw.slice(at, at + take)
  at = (at + take) % raw.length
  piece += paragraph()
  parts.push(piece)
  size += Buffer.byteLength(piece, 'utf8')
}
let text = parts.join('')
// Cut to the size asked for, at a line end.
const buffer = Buffer.from(text, 'utf8')
const cut = buffer.lastIndexOf(0x0a, target)
writeFileSync(output, buffer.subarray(0, cut > 0 ? cut + 1 : target))
