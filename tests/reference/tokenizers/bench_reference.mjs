// Times Hugging Face tokenizers (the Node binding) encoding a text file, for scripts/bench_tokenizer.sh.
//
//   TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 node bench_reference.mjs TOKENIZER_JSON TEXT [RUNS]
//
// Prints one JSON line per way of calling it, each the median of RUNS timed runs after a warm-up:
//   whole  - encode(text) once: what `tunebench-cli bench tokenize` does. The binding only offers
//            encode with character offsets, so this includes tokenizers' byte-to-character offset map.
//   chunks - encodeBatch of the text cut after line ends into 64 KiB parts (one thread with the settings
//            above), where that map costs less.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { Tokenizer } = require('tokenizers')

const [tokenizerPath, textPath, runsArg] = process.argv.slice(2)
const runs = Number(runsArg || 5)
const tokenizer = Tokenizer.fromFile(tokenizerPath)
const text = readFileSync(textPath, 'utf8')
const bytes = Buffer.byteLength(text, 'utf8')

const chunks = []
for (let start = 0; start < text.length; ) {
  let end = Math.min(text.length, start + 65536)
  const newline = text.indexOf('\n', end)
  end = newline < 0 ? text.length : newline + 1
  chunks.push(text.slice(start, end))
  start = end
}

const ways = {
  whole: async () => (await tokenizer.encode(text, null, { addSpecialTokens: false })).getLength(),
  chunks: async () => {
    const encodings = await tokenizer.encodeBatch(chunks, { addSpecialTokens: false })
    return encodings.reduce((n, e) => n + e.getLength(), 0)
  },
}

for (const [name, run] of Object.entries(ways)) {
  let tokens = await run() // warm-up
  const seconds = []
  for (let r = 0; r < runs; r++) {
    const start = process.hrtime.bigint()
    tokens = await run()
    seconds.push(Number(process.hrtime.bigint() - start) / 1e9)
  }
  seconds.sort((a, b) => a - b)
  const median = seconds[Math.floor(seconds.length / 2)]
  console.log(
    JSON.stringify({
      bench: 'tokenize-reference',
      way: name,
      bytes,
      tokens,
      runs,
      median_s: median,
      mb_per_s: bytes / 1e6 / median,
    }),
  )
}
