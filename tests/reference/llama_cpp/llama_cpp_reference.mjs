// llama.cpp's view of a GGUF file, through the prebuilt CPU llama.cpp that node-llama-cpp ships: the
// independent consumer our `export gguf` is checked against.
//
//   node llama_cpp_reference.mjs REQUEST.json
// REQUEST: {"model": "m.gguf", "lora": "adapter.gguf" (optional), "texts": ["..."], "prompt": "...",
//           "max_new_tokens": N, "sequences": [[ids...]] (optional)}
// Prints one JSON line:
//   {"metadata": {key: value} (scalars only), "texts": [{"ids": [...]}] (no BOS/EOS added),
//    "loss": mean next-token cross entropy over BOS + ids + EOS of every text (nats), or over the given
//    "sequences" as they are when there are any, "positions": n,
//    "continuation": {"ids": [...], "text": "..."} greedy (arg max) from BOS + prompt, stopping at EOS}
import {readFileSync} from "node:fs";
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const request = JSON.parse(readFileSync(process.argv[2], "utf8"));
const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath: request.model});
const context = await model.createContext({
  contextSize: request.context_size ?? 512,
  ...(request.lora ? {lora: {adapters: [{filePath: request.lora}]}} : {}),
});
const sequence = context.getSequence();
const bos = model.tokens.bos, eos = model.tokens.eos;

// The probability llama.cpp gives each next token of `tokens` (one evaluation of the whole sequence).
async function nextTokenProbabilities(tokens) {
  await sequence.clearHistory();
  const items = tokens.map((t, i) => (i < tokens.length - 1 ? [t, {generateNext: {probabilities: true}}] : t));
  const out = await sequence.controlledEvaluate(items);
  const probs = [];
  for (let i = 0; i + 1 < tokens.length; ++i) probs.push(out[i].next.probabilities.get(tokens[i + 1]) ?? 0);
  return probs;
}

const texts = [];
let nll = 0, positions = 0;
const scored = [];
for (const text of request.texts ?? []) {
  const ids = Array.from(model.tokenize(text, false));
  texts.push({ids});
  scored.push([bos, ...ids, eos]);
}
for (const sequence of request.sequences ?? scored) {
  for (const p of await nextTokenProbabilities(sequence)) {
    nll -= Math.log(p);
    ++positions;
  }
}

let continuation = null;
if (request.prompt !== undefined) {
  await sequence.clearHistory();
  const prompt = [bos, ...Array.from(model.tokenize(request.prompt, false))];
  const ids = [];
  let feed = prompt;
  for (let step = 0; step < (request.max_new_tokens ?? 16); ++step) {
    const items = feed.map((t, i) => (i === feed.length - 1 ? [t, {generateNext: {probabilities: true}}] : t));
    const out = await sequence.controlledEvaluate(items);
    const [best] = out[feed.length - 1].next.probabilities.entries().next().value;
    if (best === eos) break;
    ids.push(best);
    feed = [best];
  }
  continuation = {ids, text: model.detokenize(ids)};
}

const metadata = {};
for (const [key, value] of Object.entries(flatten(model.fileInfo.metadata)))
  if (typeof value !== "object") metadata[key] = value;
console.log(JSON.stringify({metadata, texts, loss: positions ? nll / positions : null, positions, continuation}));

function flatten(object, prefix = "", out = {}) {
  for (const [k, v] of Object.entries(object ?? {})) {
    if (v && typeof v === "object" && !Array.isArray(v)) flatten(v, prefix + k + ".", out);
    else out[prefix + k] = v;
  }
  return out;
}
