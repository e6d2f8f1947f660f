#!/usr/bin/env python3
"""torch_reference_cuda.py - the PyTorch side of `tempo bench train --device cuda --vs-torch`.

Trains the same model shape as a tempo preset in PyTorch on the GPU, eager mode
(no torch.compile), mixed precision as practitioners run it: fp32 master weights,
torch.autocast to bf16 for the products, F.scaled_dot_product_attention (the fused
flash kernel) for causal attention, the fused AdamW. Random tokens, the same batch
and context; prints one JSON line with its tokens/s so that tempo prints the ratio
measured in the same run.

The model mirrors tempo's: token embedding, n_layers pre-norm blocks (RMSNorm ->
causal attention with RoPE and optional QK-norm -> residual; RMSNorm -> ReLU^2 or
SwiGLU MLP -> residual), final RMSNorm, tied (or untied) head, no biases,
cross-entropy. The optimizer is AdamW for every tensor (tempo's presets use Muon
for the hidden matrices, which costs tempo's step its Newton-Schulz products: this
side does a little less work per step).

Usage: torch_reference_cuda.py --d-model 768 --n-layers 12 --n-heads 12 --d-ff 3072
         --context 1024 --batch 16 --vocab 8192 [--mlp relu2|swiglu] [--untied]
         [--qk-norm] [--steps 10] [--warmup 3] [--dtype bf16|fp32]
Figures only; nothing here passes or fails."""
import argparse
import json
import sys
import time


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for k in ("--d-model", "--n-layers", "--n-heads", "--d-ff", "--context", "--batch", "--vocab"):
        ap.add_argument(k, type=int, required=True)
    ap.add_argument("--mlp", choices=["relu2", "swiglu"], default="relu2")
    ap.add_argument("--untied", action="store_true")
    ap.add_argument("--qk-norm", action="store_true")
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    a = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        print("torch_reference_cuda.py: PyTorch is not installed", file=sys.stderr)
        return 3
    if not torch.cuda.is_available():
        print("torch_reference_cuda.py: PyTorch sees no GPU", file=sys.stderr)
        return 3
    dev = torch.device("cuda")
    torch.manual_seed(1)
    torch.backends.cuda.matmul.allow_tf32 = False
    C, H, T, V = a.d_model, a.n_heads, a.context, a.vocab
    D = C // H
    inv = 1.0 / (10000.0 ** (torch.arange(0, D, 2, dtype=torch.float32, device=dev) / D))
    ang = torch.arange(T, dtype=torch.float32, device=dev)[:, None] * inv[None, :]
    cos, sin = ang.cos(), ang.sin()

    def rmsnorm(x, w):
        return F.rms_norm(x, (x.shape[-1],), w, 1e-5)

    def rope(x):  # x [B, H, T, D], half-split pairs (i, i + D/2) as tempo
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        c, s = cos[: x.shape[2]].to(x.dtype), sin[: x.shape[2]].to(x.dtype)
        return torch.cat((x1 * c - x2 * s, x1 * s + x2 * c), dim=-1)

    class Block(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.n1 = torch.nn.Parameter(torch.ones(C))
            self.n2 = torch.nn.Parameter(torch.ones(C))
            self.qn = torch.nn.Parameter(torch.ones(D)) if a.qk_norm else None
            self.kn = torch.nn.Parameter(torch.ones(D)) if a.qk_norm else None
            self.wq = torch.nn.Linear(C, C, bias=False)
            self.wk = torch.nn.Linear(C, C, bias=False)
            self.wv = torch.nn.Linear(C, C, bias=False)
            self.wo = torch.nn.Linear(C, C, bias=False)
            self.up = torch.nn.Linear(C, a.d_ff, bias=False)
            self.gate = torch.nn.Linear(C, a.d_ff, bias=False) if a.mlp == "swiglu" else None
            self.down = torch.nn.Linear(a.d_ff, C, bias=False)

        def forward(self, x):
            B = x.shape[0]
            n = rmsnorm(x, self.n1)
            q = self.wq(n).view(B, T, H, D)
            k = self.wk(n).view(B, T, H, D)
            if self.qn is not None:
                q, k = rmsnorm(q, self.qn), rmsnorm(k, self.kn)
            q, k = rope(q.transpose(1, 2)), rope(k.transpose(1, 2))
            v = self.wv(n).view(B, T, H, D).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.wo(y.transpose(1, 2).reshape(B, T, C))
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
            logits = F.linear(x, w)
            return F.cross_entropy(logits.float().view(-1, V), tgt.view(-1))

    model = GPT().to(dev)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.normal_(0.0, 0.02)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0, fused=True)
    amp = torch.autocast("cuda", dtype=torch.bfloat16, enabled=a.dtype == "bf16")

    def step():
        idx = torch.randint(0, V, (a.batch, T), device=dev)
        tgt = torch.randint(0, V, (a.batch, T), device=dev)
        with amp:
            loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    torch.cuda.synchronize()
    dt = (time.perf_counter() - t0) / a.steps
    print(json.dumps({
        "bench": "torch_reference_cuda", "torch": torch.__version__, "gpu": torch.cuda.get_device_name(),
        "dtype": a.dtype, "params": sum(p.numel() for p in model.parameters()),
        "step_ms": round(dt * 1e3, 2), "tokens_per_s": round(a.batch * T / dt, 1),
        "loss_last": round(loss.item(), 4),
        "max_memory_gb": round(torch.cuda.max_memory_allocated() / 1e9, 2),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
