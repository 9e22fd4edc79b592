// The independent reference for recipes/text: Hugging Face tokenizers (its Rust core, through the
// official Node binding) on a tokenizer.json and a list of texts.
//
//   node tokenizers_reference.mjs TOKENIZER_JSON TEXTS_JSON
//
// TEXTS_JSON is a JSON list of strings. Prints one JSON object: {"results": [...]}, for each text
//   ids / offsets                 encode(text, add_special_tokens=false)
//   ids_special / offsets_special encode(text, add_special_tokens=true)
//   decoded / decoded_keep        decode(ids_special, skip_special_tokens=true / false)
//   decoded_plain                 decode(ids, skip_special_tokens=true)
// Offsets are byte offsets into the UTF-8 text: the binding reports them in characters (Unicode scalar
// values, tokenizers' encode_char_offsets), converted here.
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)
const { Tokenizer } = require('tokenizers')

// Byte offset of each character index (one past the end included).
function charToByte(text) {
  const table = [0]
  let bytes = 0
  for (const ch of text) {
    bytes += Buffer.byteLength(ch, 'utf8')
    table.push(bytes)
  }
  return table
}

function toBytes(offsets, table) {
  return offsets.map(([start, end]) => {
    if (start >= table.length || end >= table.length) {
      throw new Error(`offset (${start}, ${end}) outside a text of ${table.length - 1} characters`)
    }
    return [table[start], table[end]]
  })
}

const [tokenizerPath, textsPath] = process.argv.slice(2)
if (!tokenizerPath || !textsPath) {
  console.error('usage: node tokenizers_reference.mjs TOKENIZER_JSON TEXTS_JSON')
  process.exit(2)
}
const tokenizer = Tokenizer.fromFile(tokenizerPath)
const texts = JSON.parse(readFileSync(textsPath, 'utf8'))
const results = []
for (const text of texts) {
  const table = charToByte(text)
  const plain = await tokenizer.encode(text, null, { addSpecialTokens: false })
  const special = await tokenizer.encode(text, null, { addSpecialTokens: true })
  const idsSpecial = special.getIds()
  results.push({
    ids: plain.getIds(),
    offsets: toBytes(plain.getOffsets(), table),
    ids_special: idsSpecial,
    offsets_special: toBytes(special.getOffsets(), table),
    decoded: await tokenizer.decode(idsSpecial, true),
    decoded_keep: await tokenizer.decode(idsSpecial, false),
    decoded_plain: await tokenizer.decode(plain.getIds(), true),
  })
}
process.stdout.write(JSON.stringify({ results }) + '\n')
