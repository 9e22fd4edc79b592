#!/usr/bin/env python3
"""Independent reference for tunebench's Llama checkpoint path.

Writes tiny Llama checkpoints in the Hugging Face layout (config.json + safetensors written with
struct + json, HF key names, HF's rotate-half rotary convention) and computes, with its own plain
torch implementation of the Hugging Face Llama forward pass, the mean next-token cross entropy on
stored tokens. Needs only python3 and torch (no transformers, no safetensors package).

  hf_llama_reference.py make OUT_DIR      write the variants below into OUT_DIR/<variant>/
  hf_llama_reference.py eval CKPT_DIR TOKENS_JSON   print {"loss": ...} computed in fp32
  hf_llama_reference.py make-vocab OUT_DIR VOCAB    the fp32_gqa and bf16_gqa variants with VOCAB tokens
  hf_llama_reference.py eval-text CKPT_DIR TOKENIZER_MODEL TEXT_FILE MAX_SEQ_LEN
      what `tunebench-cli eval` must print for a text_completion_dataset: each line is a document,
      BOS + ids + EOS, cut to MAX_SEQ_LEN - 1 tokens (torchtune's text completion rule), scored one
      document at a time (no padding exists here); prints {"loss", "perplexity", "tokens"}
  hf_llama_reference.py greedy CKPT_DIR TOKENIZER_MODEL PROMPT N
      greedy decoding without a KV cache (the full sequence re-run for every token) from BOS + PROMPT,
      stopping before EOS; prints {"tokens": [...]} (the new tokens only)
  hf_llama_reference.py greedy-ids CKPT_DIR IDS_JSON N STOP_ID...
      the same from prompt ids given as a JSON list (a chat template's rendering), stopping before any
      STOP_ID

Each variant folder holds the checkpoint plus tokens.json, expected.json and logits.safetensors.
"""
import json
import math
import os
import struct
import sys

import torch

ST_DTYPES = {torch.float32: ("F32", 4), torch.bfloat16: ("BF16", 2), torch.float16: ("F16", 2)}
ST_NAMES = {"F32": torch.float32, "BF16": torch.bfloat16, "F16": torch.float16, "I64": torch.int64}
HF_DTYPE = {torch.float32: "float32", torch.bfloat16: "bfloat16"}


# ---------------------------------------------------------------- safetensors, by hand
def tensor_bytes(t):
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def write_safetensors(path, tensors):
    header = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name in sorted(tensors):
        t = tensors[name]
        data = tensor_bytes(t)
        header[name] = {"dtype": ST_DTYPES[t.dtype][0], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        dtype = ST_NAMES[e["dtype"]]
        chunk = bytearray(data[b:end])
        t = torch.frombuffer(chunk, dtype=dtype) if chunk else torch.empty(0, dtype=dtype)
        out[name] = t.reshape(e["shape"]).clone()
    return out


def read_checkpoint(folder):
    index = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(index):
        with open(index) as f:
            files = sorted(set(json.load(f)["weight_map"].values()))
    else:
        files = ["model.safetensors"]
    weights = {}
    for name in files:
        weights.update(read_safetensors(os.path.join(folder, name)))
    with open(os.path.join(folder, "config.json")) as f:
        return json.load(f), weights


# ---------------------------------------------------------------- the Hugging Face Llama forward
def inv_frequencies(cfg):
    hd = cfg["hidden_size"] // cfg["num_attention_heads"]
    inv = 1.0 / (cfg.get("rope_theta", 10000.0) ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    rs = cfg.get("rope_scaling")
    if rs and rs.get("rope_type", rs.get("type")) == "llama3":
        factor, low, high = rs["factor"], rs["low_freq_factor"], rs["high_freq_factor"]
        old = rs["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv
        scaled = torch.where(wavelen > low_wavelen, inv / factor, inv)
        smooth = (old / wavelen - low) / (high - low)
        blended = (1 - smooth) * scaled / factor + smooth * scaled
        medium = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
        inv = torch.where(medium, blended, scaled)
    return inv


def rms_norm(x, weight, eps):
    dtype = x.dtype
    xf = x.float()
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return weight * xf.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def hf_llama_logits(cfg, w, tokens, dtype):
    w = {k: v.to(dtype) for k, v in w.items()}
    B, T = tokens.shape
    D, H = cfg["hidden_size"], cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads", H)
    hd, eps = D // H, cfg["rms_norm_eps"]
    freqs = torch.outer(torch.arange(T).float(), inv_frequencies(cfg))
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)
    causal = torch.full((T, T), torch.finfo(dtype).min, dtype=dtype).triu(1)
    h = w["model.embed_tokens.weight"][tokens]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        x = rms_norm(h, w[p + "input_layernorm.weight"], eps)
        q = (x @ w[p + "self_attn.q_proj.weight"].T).view(B, T, H, hd).transpose(1, 2)
        k = (x @ w[p + "self_attn.k_proj.weight"].T).view(B, T, KV, hd).transpose(1, 2)
        v = (x @ w[p + "self_attn.v_proj.weight"].T).view(B, T, KV, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k[:, :, None].expand(B, KV, H // KV, T, hd).reshape(B, H, T, hd)
        v = v[:, :, None].expand(B, KV, H // KV, T, hd).reshape(B, H, T, hd)
        scores = q @ k.transpose(2, 3) / math.sqrt(hd) + causal
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(dtype)
        attn = (probs @ v).transpose(1, 2).reshape(B, T, D)
        h = h + attn @ w[p + "self_attn.o_proj.weight"].T
        x = rms_norm(h, w[p + "post_attention_layernorm.weight"], eps)
        gate = torch.nn.functional.silu(x @ w[p + "mlp.gate_proj.weight"].T)
        h = h + (gate * (x @ w[p + "mlp.up_proj.weight"].T)) @ w[p + "mlp.down_proj.weight"].T
    h = rms_norm(h, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return h @ head.T


def next_token_loss(logits, tokens):
    V = logits.shape[-1]
    return torch.nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, V), tokens[:, 1:].reshape(-1)).item()


# ---------------------------------------------------------------- the variants
VARIANTS = {
    # GQA (4 query heads on 2 kv heads), non-default rope_theta, fp32, one file.
    "fp32_gqa": dict(dtype=torch.float32, shards=1, kv=2, theta=31337.0, tied=False, scaling=None, seed=1),
    # The same architecture in bf16, sharded in three files with an index.
    "bf16_gqa": dict(dtype=torch.bfloat16, shards=3, kv=2, theta=31337.0, tied=False, scaling=None, seed=2),
    # One kv head, Llama 3.1 rope scaling, tied embeddings (no lm_head in the file), fp32.
    "fp32_scaled_tied": dict(dtype=torch.float32, shards=1, kv=1, theta=500000.0, tied=True,
                             scaling=dict(rope_type="llama3", factor=8.0, low_freq_factor=1.0,
                                          high_freq_factor=4.0, original_max_position_embeddings=16),
                             seed=3),
}


def make_variant(folder, spec, vocab=96):
    torch.manual_seed(spec["seed"])
    V, D, H, L, I, T, B = vocab, 32, 4, 2, 48, 12, 2
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": D,
           "intermediate_size": I, "num_attention_heads": H, "num_key_value_heads": spec["kv"],
           "num_hidden_layers": L, "vocab_size": V, "max_position_embeddings": 64, "rms_norm_eps": 1e-5,
           "rope_theta": spec["theta"], "rope_scaling": spec["scaling"], "tie_word_embeddings": spec["tied"],
           "hidden_act": "silu", "attention_bias": False, "torch_dtype": HF_DTYPE[spec["dtype"]]}
    hd, kv_dim = D // H, spec["kv"] * (D // H)
    shapes = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,)}
    if not spec["tied"]:
        shapes["lm_head.weight"] = (V, D)
    for i in range(L):
        p = "model.layers.%d." % i
        shapes.update({p + "self_attn.q_proj.weight": (D, D), p + "self_attn.k_proj.weight": (kv_dim, D),
                       p + "self_attn.v_proj.weight": (kv_dim, D), p + "self_attn.o_proj.weight": (D, D),
                       p + "mlp.gate_proj.weight": (I, D), p + "mlp.up_proj.weight": (I, D),
                       p + "mlp.down_proj.weight": (D, I), p + "input_layernorm.weight": (D,),
                       p + "post_attention_layernorm.weight": (D,)})
    w = {}
    for name in sorted(shapes):
        shape = shapes[name]
        # Norm weights near 1 but distinct; matrices large enough that attention is far from uniform.
        t = 1.0 + 0.2 * torch.randn(shape) if len(shape) == 1 else 0.3 * torch.randn(shape)
        w[name] = t.to(spec["dtype"])
    tokens = torch.randint(0, V, (B, T), dtype=torch.int64)

    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    names = sorted(w)
    if spec["shards"] == 1:
        write_safetensors(os.path.join(folder, "model.safetensors"), w)
    else:
        n = spec["shards"]
        weight_map, total = {}, 0
        for s in range(n):
            fname = "model-%05d-of-%05d.safetensors" % (s + 1, n)
            part = {k: w[k] for k in names[s::n]}
            write_safetensors(os.path.join(folder, fname), part)
            for k, t in part.items():
                weight_map[k] = fname
                total += t.numel() * t.element_size()
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)

    with torch.no_grad():
        logits = hf_llama_logits(cfg, w, tokens, spec["dtype"])
        logits32 = hf_llama_logits(cfg, w, tokens, torch.float32)
    expected = {"loss": next_token_loss(logits, tokens), "loss_fp32_compute": next_token_loss(logits32, tokens),
                "dtype": HF_DTYPE[spec["dtype"]], "positions": B * (T - 1)}
    with open(os.path.join(folder, "tokens.json"), "w") as f:
        json.dump({"tokens": tokens.tolist()}, f)
    with open(os.path.join(folder, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2)
    write_safetensors(os.path.join(folder, "logits.safetensors"), {"logits_fp32_compute": logits32.float()})


def sentencepiece(model_path):
    import sentencepiece as spm
    return spm.SentencePieceProcessor(model_file=model_path)


def eval_text(folder, tokenizer_path, text_path, max_seq_len):
    cfg, w = read_checkpoint(folder)
    sp = sentencepiece(tokenizer_path)
    total, positions = 0.0, 0
    with open(text_path, encoding="utf-8") as f:
        documents = [line.rstrip("\n") for line in f if line.strip()]
    for doc in documents:
        ids = ([sp.bos_id()] + sp.encode(doc) + [sp.eos_id()])[: max_seq_len - 1]
        if len(ids) < 2:
            continue
        tokens = torch.tensor([ids], dtype=torch.int64)
        logits = hf_llama_logits(cfg, w, tokens, torch.float32)[0, :-1]
        total += torch.nn.functional.cross_entropy(logits, tokens[0, 1:], reduction="sum").item()
        positions += len(ids) - 1
    loss = total / positions
    return {"loss": loss, "perplexity": math.exp(loss), "tokens": positions, "documents": len(documents)}


def greedy_ids(folder, ids, n, stop_ids):
    cfg, w = read_checkpoint(folder)
    ids = list(ids)
    new = []
    for _ in range(n):
        logits = hf_llama_logits(cfg, w, torch.tensor([ids], dtype=torch.int64), torch.float32)[0, -1]
        nxt = int(logits.argmax())
        if nxt in stop_ids:
            break
        ids.append(nxt)
        new.append(nxt)
    return {"tokens": new, "prompt_tokens": len(ids) - len(new)}


def greedy(folder, tokenizer_path, prompt, n):
    sp = sentencepiece(tokenizer_path)
    return greedy_ids(folder, [sp.bos_id()] + sp.encode(prompt), n, {sp.eos_id()})


def main(argv):
    torch.set_num_threads(1)
    if len(argv) == 3 and argv[1] == "make":
        for name, spec in VARIANTS.items():
            make_variant(os.path.join(argv[2], name), spec)
        print(json.dumps({"variants": sorted(VARIANTS)}))
        return 0
    if len(argv) == 4 and argv[1] == "eval":
        cfg, w = read_checkpoint(argv[2])
        with open(argv[3]) as f:
            tokens = torch.tensor(json.load(f)["tokens"], dtype=torch.int64)
        with torch.no_grad():
            loss = next_token_loss(hf_llama_logits(cfg, w, tokens, torch.float32), tokens)
        print(json.dumps({"loss": loss}))
        return 0
    if len(argv) == 4 and argv[1] == "make-vocab":
        for name in ("fp32_gqa", "bf16_gqa"):
            make_variant(os.path.join(argv[2], name), VARIANTS[name], vocab=int(argv[3]))
        print(json.dumps({"variants": ["bf16_gqa", "fp32_gqa"]}))
        return 0
    with torch.no_grad():
        if len(argv) == 6 and argv[1] == "eval-text":
            print(json.dumps(eval_text(argv[2], argv[3], argv[4], int(argv[5]))))
            return 0
        if len(argv) >= 6 and argv[1] == "greedy-ids":
            with open(argv[3]) as f:
                ids = json.load(f)
            print(json.dumps(greedy_ids(argv[2], ids, int(argv[4]), {int(a) for a in argv[5:]})))
            return 0
        if len(argv) == 6 and argv[1] == "greedy":
            print(json.dumps(greedy(argv[2], argv[3], argv[4], int(argv[5]))))
            return 0
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
