#!/usr/bin/env python3
"""Independent reference for full_finetune_single_device: trains a Hugging Face layout checkpoint
with PyTorch's own AdamW on tunebench's synthetic dataset and prints the loss of every optimizer step.

  train_reference.py CKPT_DIR '{"epochs":2,"steps":2,"batch_size":2,"grad_accum":1,"seq_len":12,
                                "num_samples":8,"seed":0,"lr":1e-3,"weight_decay":0.01,"clip":0}'

The synthetic tokens follow tunebench's documented formula (splitmix64 per sample index with
rejection sampling); the batches are read in order (shuffle off), drop_last as torchtune. The loss of
a step is the sum of next-token cross entropies over its micro-batches divided by their tokens.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_llama_reference as ref  # noqa: E402

M64 = (1 << 64) - 1


def splitmix64(state):
    state = (state + 0x9E3779B97F4A7C15) & M64
    z = state
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return state, z ^ (z >> 31)


def synthetic_sample(seed, index, seq_len, vocab):
    state = seed ^ ((0xD1B54A32D192ED03 * (index + 1)) & M64)
    limit = M64 - (M64 % vocab)
    out = []
    while len(out) < seq_len:
        state, r = splitmix64(state)
        if r < limit:
            out.append(r % vocab)
    return out


def main(argv):
    torch.set_num_threads(1)
    folder, p = argv[1], json.loads(argv[2])
    cfg, w = ref.read_checkpoint(folder)
    params = {k: v.float().clone().requires_grad_(True) for k, v in w.items()}
    opt = torch.optim.AdamW([params[k] for k in sorted(params)], lr=p["lr"], weight_decay=p["weight_decay"])
    V = cfg["vocab_size"]
    samples = [synthetic_sample(p["seed"], i, p["seq_len"], V) for i in range(p["num_samples"])]
    batches = [samples[i:i + p["batch_size"]] for i in range(0, len(samples) - p["batch_size"] + 1, p["batch_size"])]
    losses = []
    for _ in range(p["epochs"]):
        for step in range(p["steps"]):
            total, tokens = 0.0, 0
            for micro in batches[step * p["grad_accum"]:(step + 1) * p["grad_accum"]]:
                t = torch.tensor(micro, dtype=torch.int64)
                logits = ref.hf_llama_logits(cfg, params, t, torch.float32)
                loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), t[:, 1:].reshape(-1),
                                                         reduction="sum")
                loss.backward()
                total += loss.item()
                tokens += t[:, 1:].numel()
            for q in params.values():
                q.grad /= tokens
            if p["clip"] > 0:
                torch.nn.utils.clip_grad_norm_(list(params.values()), p["clip"])
            opt.step()
            opt.zero_grad()
            losses.append(total / tokens)
    print(json.dumps({"losses": losses}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
