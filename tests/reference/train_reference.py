#!/usr/bin/env python3
"""Independent reference for full_finetune_single_device: trains a Hugging Face layout checkpoint
with PyTorch's own AdamW on tunebench's synthetic dataset and prints the loss of every optimizer step.

  train_reference.py CKPT_DIR '{"epochs":2,"steps":2,"batch_size":2,"grad_accum":1,"seq_len":12,
                                "num_samples":8,"seed":0,"lr":1e-3,"weight_decay":0.01,"clip":0}'

With "adapter": ADAPTER_DIR (a PEFT adapter folder: adapter_model.safetensors + adapter_config.json)
it is the reference for lora_finetune_single_device instead: the base weights stay frozen, each
adapted weight is W + lora_alpha / r * B @ A in Hugging Face's layout, and only A and B train.

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


def read_peft_adapter(folder):
    """PEFT's files, read by hand: tensors under HF module names, and alpha / r."""
    with open(os.path.join(folder, "adapter_config.json")) as f:
        config = json.load(f)
    assert config["peft_type"] == "LORA" and config["bias"] == "none", config
    prefix = "base_model.model."
    tensors = ref.read_safetensors(os.path.join(folder, "adapter_model.safetensors"))
    adapter = {}
    for name, t in tensors.items():
        assert name.startswith(prefix), name
        adapter[name[len(prefix):]] = t.float().clone().requires_grad_(True)
    return adapter, config["lora_alpha"] / config["r"]


def lora_pairs(adapter):
    """{"model.layers.0.self_attn.q_proj": (A, B)} from "...q_proj.lora_A.weight" and "...lora_B.weight"."""
    pairs = {}
    for name in adapter:
        if name.endswith(".lora_A.weight"):
            module = name[:-len(".lora_A.weight")]
            pairs[module] = (adapter[name], adapter[module + ".lora_B.weight"])
    return pairs


def main(argv):
    torch.set_num_threads(1)
    folder, p = argv[1], json.loads(argv[2])
    cfg, w = ref.read_checkpoint(folder)
    if "adapter" in p:
        base = {k: v.float() for k, v in w.items()}
        adapter, scale = read_peft_adapter(p["adapter"])
        trained = list(adapter.values())

        def weights():
            eff = dict(base)
            for module, (a, b) in lora_pairs(adapter).items():
                eff[module + ".weight"] = base[module + ".weight"] + scale * (b @ a)
            return eff
    else:
        params = {k: v.float().clone().requires_grad_(True) for k, v in w.items()}
        trained = [params[k] for k in sorted(params)]

        def weights():
            return params
    opt = torch.optim.AdamW(trained, lr=p["lr"], weight_decay=p["weight_decay"])
    V = cfg["vocab_size"]
    samples = [synthetic_sample(p["seed"], i, p["seq_len"], V) for i in range(p["num_samples"])]
    batches = [samples[i:i + p["batch_size"]] for i in range(0, len(samples) - p["batch_size"] + 1, p["batch_size"])]
    losses = []
    for _ in range(p["epochs"]):
        for step in range(p["steps"]):
            total, tokens = 0.0, 0
            for micro in batches[step * p["grad_accum"]:(step + 1) * p["grad_accum"]]:
                t = torch.tensor(micro, dtype=torch.int64)
                logits = ref.hf_llama_logits(cfg, weights(), t, torch.float32)
                loss = torch.nn.functional.cross_entropy(logits[:, :-1].reshape(-1, V), t[:, 1:].reshape(-1),
                                                         reduction="sum")
                loss.backward()
                total += loss.item()
                tokens += t[:, 1:].numel()
            for q in trained:
                q.grad /= tokens
            if p["clip"] > 0:
                torch.nn.utils.clip_grad_norm_(trained, p["clip"])
            opt.step()
            opt.zero_grad()
            losses.append(total / tokens)
    print(json.dumps({"losses": losses}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
