#!/usr/bin/env python3
"""Independent reference for training/adamw8bit: bitsandbytes' 8-bit AdamW re-implemented in numpy
float32 from bitsandbytes' definitions (bitsandbytes >= 0.44: functional.create_dynamic_map,
Optimizer2State.init_state / update_step, and the CUDA kernels kOptimizerStatic8bit2StateBlockwise
(quantize_2D) and kOptimizer32bit2State for ADAM), one whole block of elements at a time.

  adamw8bit_reference.py CASE_DIR

CASE_DIR/case.json: {"lrs": [lr per step], "betas": [b1, b2], "eps": e, "weight_decay": wd,
  "min_8bit_size": n, "bf16": bool, "numels": [n per parameter], "block_size": 256,
  "map": "dynamic" | "linear"}   (block_size and map other than 256 / dynamic: negative controls)
CASE_DIR/p{i}.bin: parameter i (float32, or bf16 bits as uint16); g{i}_{t}.bin: its gradient at step t
(0-based, same dtype); x.bin (optional): float32 values to quantize with both maps.
Writes ref_p{i}.bin, ref_s1_{i}.bin, ref_s2_{i}.bin (uint8 codes, or float32 moments below
min_8bit_size), ref_a1_{i}.bin, ref_a2_{i}.bin (float32 absmax per block), ref_map_{signed,unsigned}.bin
and ref_q_{signed,unsigned}.bin (uint8 codes of x); prints one JSON line of sanity counts.

Arithmetic: every operation in float32 as the kernels write it (no fused multiply-add; division and
sqrt correctly rounded where CUDA has __fdividef; beta**t computed in double and rounded to float32
where CUDA has __powf).
"""
import json
import math
import os
import sys

import numpy as np
import torch

F32 = np.float32


def dynamic_map(signed):
    """create_dynamic_map(signed, max_exponent_bits=7, total_bits=8): for each decimal exponent
    e = -6..0, the midpoints of an evenly spaced grid on [0.1, 1] times 10**e (grids of 2**k + 1
    points for signed, 2**(k+1) + 1 for unsigned, k = e + 6; signed adds the negatives), plus 0 and 1.
    The grid and midpoints are torch float32 ops, as in bitsandbytes."""
    values = []
    for k in range(7):
        points = 2 ** k + 1 if signed else 2 ** (k + 1) + 1
        grid = torch.linspace(0.1, 1, points, dtype=torch.float32)
        mid = (grid[:-1] + grid[1:]) / 2.0
        scale = 10 ** (k - 6)
        values += (scale * mid).tolist()
        if signed:
            values += (-scale * mid).tolist()
    values += [0.0, 1.0]
    assert len(values) == 256
    return np.array(sorted(values), dtype=F32)


def linear_map(signed):
    return np.linspace(-1.0 if signed else 0.0, 1.0, 256).astype(F32)


def quantize(code, x, signed):
    """quantize_2D: binary search from index 127 with steps 64..1, remembering the last index passed
    on each side (initially 0 / 255 with values -1 (or 0) / 1); then the nearer neighbour by midpoint."""
    x = x.astype(F32)
    pivot = np.full(x.shape, 127, dtype=np.int64)
    lo_i = np.zeros(x.shape, dtype=np.int64)
    hi_i = np.full(x.shape, 255, dtype=np.int64)
    lo = np.full(x.shape, -1.0 if signed else 0.0, dtype=F32)
    hi = np.ones(x.shape, dtype=F32)
    val = code[pivot]
    for step in (64, 32, 16, 8, 4, 2, 1):
        above = x > val
        lo_i = np.where(above, pivot, lo_i)
        lo = np.where(above, val, lo)
        hi_i = np.where(above, hi_i, pivot)
        hi = np.where(above, hi, val)
        pivot = np.where(above, pivot + step, pivot - step)
        val = code[pivot]
    above = x > val
    up = np.where(x > (hi + val) * F32(0.5), hi_i, pivot)
    down = np.where(x < (lo + val) * F32(0.5), lo_i, pivot)
    return np.where(above, up, down).astype(np.uint8)


def constants(lr, beta1, beta2, eps, wd, step):
    lr, beta1, beta2, eps, wd = F32(lr), F32(beta1), F32(beta2), F32(eps), F32(wd)
    # beta**t of the float32 beta, in double and rounded once (numpy's float32 power rounds as it multiplies).
    c1 = F32(1) - F32(float(beta1) ** step)
    c2 = np.sqrt(F32(1) - F32(float(beta2) ** step))
    return dict(beta1=beta1, beta2=beta2, step_size=(-lr * c2) / c1, eps_c2=c2 * eps,
                decay=F32(1) - lr * wd, decays=wd > 0)


def round_to(values, bf16):
    if not bf16:
        return values.astype(F32)
    return torch.from_numpy(values.astype(F32)).to(torch.bfloat16).to(torch.float32).numpy()


def apply_update(p, m1, m2, k, bf16):
    """Adam step with the unquantized new moments, then decoupled decay of the updated weight."""
    p = round_to(p + k["step_size"] * (m1 / (np.sqrt(m2) + k["eps_c2"])), bf16)
    if k["decays"]:
        p = round_to(p * k["decay"], bf16)
    return p


def step_8bit(p, g, st, k, maps, block, bf16):
    n = p.size
    blocks = -(-n // block)
    pad = blocks * block - n
    # Lanes past the end load code 128 (state1), code 0 (state2) and a zero gradient, as the kernel.
    G = np.concatenate([g, np.zeros(pad, F32)]).reshape(blocks, block)
    C1 = np.concatenate([st["s1"], np.full(pad, 128, np.uint8)]).reshape(blocks, block)
    C2 = np.concatenate([st["s2"], np.zeros(pad, np.uint8)]).reshape(blocks, block)
    finite = np.isfinite(G)
    b1, b2 = k["beta1"], k["beta2"]
    m2 = maps[1][C2] * st["a2"][:, None] * b2 + (F32(1) - b2) * G * G
    m1 = maps[0][C1] * st["a1"][:, None] * b1 + (F32(1) - b1) * G
    m1 = np.where(finite, m1, F32(0)).astype(F32)
    m2 = np.where(finite, m2, F32(0)).astype(F32)
    a1 = np.abs(m1).max(axis=1).astype(F32)
    a2 = np.abs(m2).max(axis=1).astype(F32)

    flat1, flat2 = m1.reshape(-1)[:n], m2.reshape(-1)[:n]
    ok = finite.reshape(-1)[:n]
    p = np.where(ok, apply_update(p, flat1, flat2, k, bf16), p).astype(F32)

    x1 = (m1 / a1[:, None]).reshape(-1)[:n]
    x2 = (m2 / a2[:, None]).reshape(-1)[:n]
    q1 = quantize(maps[0], x1, True).astype(np.int64)
    # A first moment keeps its sign: a code of the other sign moves one step toward it (mod 256).
    flipped = np.signbit(maps[0][q1]) != np.signbit(flat1)
    q1 = np.where(flipped, np.where(flat1 > 0, q1 + 1, q1 - 1), q1) & 0xFF
    st.update(s1=q1.astype(np.uint8), s2=quantize(maps[1], x2, False), a1=a1, a2=a2)
    return p


def step_32bit(p, g, st, k, bf16):
    b1, b2 = k["beta1"], k["beta2"]
    st["s1"] = (st["s1"] * b1 + (F32(1) - b1) * g).astype(F32)
    st["s2"] = (st["s2"] * b2 + (F32(1) - b2) * (g * g)).astype(F32)
    return apply_update(p, st["s1"], st["s2"], k, bf16)


def read(path, bf16):
    if bf16:
        bits = np.fromfile(path, dtype=np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32)
    return np.fromfile(path, dtype=F32)


def write(path, values, bf16=False):
    if bf16:
        values = torch.from_numpy(values.astype(F32)).to(torch.bfloat16).view(torch.int16).numpy()
    values.tofile(path)


def main():
    folder = sys.argv[1]
    with open(os.path.join(folder, "case.json")) as f:
        case = json.load(f)
    bf16, block = case["bf16"], case.get("block_size", 256)
    make_map = linear_map if case.get("map", "dynamic") == "linear" else dynamic_map
    maps = (make_map(True), make_map(False))
    np.seterr(all="ignore")  # 0/0 of an all-zero block and inf*inf of a bad gradient, as the kernel

    for i, n in enumerate(case["numels"]):
        p = read(os.path.join(folder, f"p{i}.bin"), bf16)
        eight_bit = n >= case["min_8bit_size"]
        if eight_bit:
            blocks = -(-n // block)
            st = dict(s1=np.zeros(n, np.uint8), s2=np.zeros(n, np.uint8),
                      a1=np.zeros(blocks, F32), a2=np.zeros(blocks, F32))
        else:
            st = dict(s1=np.zeros(n, F32), s2=np.zeros(n, F32))
        for t, lr in enumerate(case["lrs"]):
            g = read(os.path.join(folder, f"g{i}_{t}.bin"), bf16)
            k = constants(lr, case["betas"][0], case["betas"][1], case["eps"], case["weight_decay"], t + 1)
            p = step_8bit(p, g, st, k, maps, block, bf16) if eight_bit else step_32bit(p, g, st, k, bf16)
        write(os.path.join(folder, f"ref_p{i}.bin"), p, bf16)
        write(os.path.join(folder, f"ref_s1_{i}.bin"), st["s1"])
        write(os.path.join(folder, f"ref_s2_{i}.bin"), st["s2"])
        if eight_bit:
            write(os.path.join(folder, f"ref_a1_{i}.bin"), st["a1"])
            write(os.path.join(folder, f"ref_a2_{i}.bin"), st["a2"])

    # The maps, and codes of given values; each code is checked against the nearest map entry.
    not_nearest = {}
    x_path = os.path.join(folder, "x.bin")
    x = np.fromfile(x_path, dtype=F32) if os.path.exists(x_path) else np.zeros(0, F32)
    for signed, name in ((True, "signed"), (False, "unsigned")):
        write(os.path.join(folder, f"ref_map_{name}.bin"), maps[0 if signed else 1])
        inside = x if signed else np.abs(x)
        codes = quantize(maps[0 if signed else 1], inside, signed)
        write(os.path.join(folder, f"ref_q_{name}.bin"), codes)
        dist = np.abs(maps[0 if signed else 1][None, :].astype(np.float64) - inside[:, None].astype(np.float64))
        chosen = dist[np.arange(len(inside)), codes]
        # A value halfway between two codes may go either way: allow two float32 ulps of it.
        slack = 2.0 * np.spacing(np.abs(inside)).astype(np.float64)
        not_nearest[name] = int(np.sum(chosen > dist.min(axis=1) + slack))
    print(json.dumps({"not_nearest": not_nearest, "map_signed_127": float(maps[0][127]),
                      "map_signed_max_negative": float(maps[0][0])}))


if __name__ == "__main__":
    main()
