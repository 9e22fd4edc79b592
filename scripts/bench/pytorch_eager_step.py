#!/usr/bin/env python3
"""PyTorch's own eager training step, the baseline of `tunebench-cli bench step`: the same Llama
shape (the Hugging Face formulation in tests/reference/hf_llama_reference.py, composed of plain
torch ops), seeded random weights and token ids, sum-of-token cross entropy normalised by the
tokens, torch.optim.AdamW. Prints the median step time and tokens/s over the measured steps as the
last line, one JSON object.

  pytorch_eager_step.py --preset stories15m --batch 4 --seq 256 --threads 2 --steps 10 --warmup 2
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "reference"))
import hf_llama_reference as ref  # noqa: E402

# llama2.c's presets, as tunebench's llama2_stories* builders define them.
PRESETS = {
    "stories15m": dict(vocab_size=32000, num_hidden_layers=6, num_attention_heads=6, num_key_value_heads=6,
                       hidden_size=288, intermediate_size=768),
    "stories110m": dict(vocab_size=32000, num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=12,
                        hidden_size=768, intermediate_size=2048),
}


def random_weights(cfg, gen):
    D, V, I = cfg["hidden_size"], cfg["vocab_size"], cfg["intermediate_size"]
    kv = D // cfg["num_attention_heads"] * cfg["num_key_value_heads"]
    shapes = {"model.embed_tokens.weight": (V, D), "model.norm.weight": (D,)}
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        shapes.update({p + "self_attn.q_proj.weight": (D, D), p + "self_attn.k_proj.weight": (kv, D),
                       p + "self_attn.v_proj.weight": (kv, D), p + "self_attn.o_proj.weight": (D, D),
                       p + "mlp.gate_proj.weight": (I, D), p + "mlp.up_proj.weight": (I, D),
                       p + "mlp.down_proj.weight": (D, I),
                       p + "input_layernorm.weight": (D,), p + "post_attention_layernorm.weight": (D,)})
    w = {}
    for name, shape in shapes.items():
        t = torch.ones(shape) if len(shape) == 1 else torch.randn(shape, generator=gen) * 0.02
        w[name] = t.requires_grad_(True)
    return w


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--preset", default="stories15m", choices=sorted(PRESETS))
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--dtype", default="fp32", choices=["fp32", "bf16"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    dtype = torch.float32 if args.dtype == "fp32" else torch.bfloat16
    cfg = dict(PRESETS[args.preset], rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=True)
    gen = torch.Generator().manual_seed(0)
    w = random_weights(cfg, gen)
    w = {k: (v.detach().to(dtype).requires_grad_(True)) for k, v in w.items()}
    opt = torch.optim.AdamW(list(w.values()), lr=2e-5, weight_decay=0.01)
    times = []
    tokens = args.batch * (args.seq - 1)
    for step in range(args.warmup + args.steps):
        ids = torch.randint(0, cfg["vocab_size"], (args.batch, args.seq), generator=gen)
        start = time.perf_counter()
        logits = ref.hf_llama_logits(cfg, w, ids, dtype)
        V = logits.shape[-1]
        loss = torch.nn.functional.cross_entropy(logits[:, :-1].float().reshape(-1, V), ids[:, 1:].reshape(-1),
                                                 reduction="sum")
        loss.backward()
        for p in w.values():
            p.grad.mul_(1.0 / tokens)
        opt.step()
        opt.zero_grad(set_to_none=True)  # as tunebench drops its gradients (PyTorch 2's default)
        times.append(time.perf_counter() - start)
        print("step %d: %.3f s, loss %.4f" % (step + 1, times[-1], loss.item() / tokens), file=sys.stderr)
    steady = times[args.warmup:]
    med = statistics.median(steady)
    print(json.dumps({"torch": torch.__version__, "preset": args.preset, "batch": args.batch, "seq": args.seq,
                      "threads": torch.get_num_threads(), "dtype": args.dtype, "steps": args.steps,
                      "first_step_s": times[0], "median_step_s": med, "tokens_per_step": tokens,
                      "tokens_per_s": tokens / med}))


if __name__ == "__main__":
    main()
