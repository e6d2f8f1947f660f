#!/usr/bin/env python3
"""torch_reference.py - the PyTorch side of `tempo bench train --vs-torch`.

Trains the same model shape as a tempo preset in PyTorch (fp32, CPU, the
given thread count) on random tokens and prints one JSON line with its
tokens/s, so that tempo can print the ratio measured in the same run.

The model mirrors tempo's: token embedding, n_layers pre-norm blocks
(RMSNorm -> causal multi-head attention with RoPE -> residual; RMSNorm ->
ReLU^2 or SwiGLU MLP -> residual), final RMSNorm, tied (or untied) head,
no biases, cross-entropy. Attention is the plain masked softmax (PyTorch 1.13,
Debian's, has no fused attention on CPU). The optimizer is AdamW for every
tensor: PyTorch has no Muon, whose Newton-Schulz GEMMs tempo's step also pays
for, so this side does slightly less work per step.

Usage: torch_reference.py --d-model 192 --n-layers 4 --n-heads 3 --d-ff 768
         --context 256 --batch 16 --vocab 4097 [--mlp relu2|swiglu] [--untied]
         [--threads 2] [--steps 5] [--warmup 1]
Figures only; nothing here passes or fails."""
import argparse
import json
import math
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--d-model", type=int, required=True)
    ap.add_argument("--n-layers", type=int, required=True)
    ap.add_argument("--n-heads", type=int, required=True)
    ap.add_argument("--d-ff", type=int, required=True)
    ap.add_argument("--context", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--mlp", choices=["relu2", "swiglu"], default="relu2")
    ap.add_argument("--untied", action="store_true")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch_reference.py: PyTorch is not installed (apt-get install python3-torch)",
              file=sys.stderr)
        return 3
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    C, H, T, V = a.d_model, a.n_heads, a.context, a.vocab
    D = C // H

    def rmsnorm(x, w):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * w

    inv = 1.0 / (10000.0 ** (torch.arange(0, D, 2, dtype=torch.float32) / D))
    ang = torch.arange(T, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()

    def rope(x):  # x [B, H, T, D], pairs (2i, 2i+1)
        x1, x2 = x[..., 0::2], x[..., 1::2]
        c, s = cos[: x.shape[2]], sin[: x.shape[2]]
        return torch.stack((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1).flatten(-2)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.n1 = torch.nn.Parameter(torch.ones(C))
            self.n2 = torch.nn.Parameter(torch.ones(C))
            self.wq = torch.nn.Linear(C, C, bias=False)
            self.wk = torch.nn.Linear(C, C, bias=False)
            self.wv = torch.nn.Linear(C, C, bias=False)
            self.wo = torch.nn.Linear(C, C, bias=False)
            self.up = torch.nn.Linear(C, a.d_ff, bias=False)
            self.gate = torch.nn.Linear(C, a.d_ff, bias=False) if a.mlp == "swiglu" else None
            self.down = torch.nn.Linear(a.d_ff, C, bias=False)
            self.register_buffer("mask", torch.full((T, T), float("-inf")).triu(1))

        def forward(self, x):
            B = x.shape[0]
            n = rmsnorm(x, self.n1)
            q = rope(self.wq(n).view(B, T, H, D).transpose(1, 2))
            k = rope(self.wk(n).view(B, T, H, D).transpose(1, 2))
            v = self.wv(n).view(B, T, H, D).transpose(1, 2)
            att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(D) + self.mask, dim=-1)
            y = (att @ v).transpose(1, 2).reshape(B, T, C)
            x = x + self.wo(y)
            n = rmsnorm(x, self.n2)
            h = self.up(n)
            h = F.silu(self.gate(n)) * h if self.gate is not None else F.relu(h).square()
            return x + self.down(h)

    class GPT(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = torch.nn.Embedding(V, C)
            self.blocks = torch.nn.ModuleList([Block() for _ in range(a.n_layers)])
            self.nf = torch.nn.Parameter(torch.ones(C))
            self.head = torch.nn.Linear(C, V, bias=False) if a.untied else None

        def forward(self, idx, tgt):
            x = self.emb(idx)
            for b in self.blocks:
                x = b(x)
            x = rmsnorm(x, self.nf)
            w = self.head.weight if self.head is not None else self.emb.weight
            return F.cross_entropy((x @ w.t()).view(-1, V), tgt.view(-1))

    model = GPT()
    with torch.no_grad():  # tempo's initial scale, so the loss starts near log V
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.02)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)

    def step():
        idx = torch.randint(0, V, (a.batch, T))
        tgt = torch.randint(0, V, (a.batch, T))
        loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    dt = (time.perf_counter() - t0) / a.steps
    print(json.dumps({
        "bench": "torch_reference", "torch": torch.__version__, "threads": a.threads,
        "params": sum(p.numel() for p in model.parameters()),
        "step_s": round(dt, 4), "tokens_per_s": round(a.batch * T / dt, 1),
        "loss_last": round(loss, 4),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
