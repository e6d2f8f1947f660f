#!/usr/bin/env python3
"""fit_scaling.py - fits the planner's quality model (src/plan/quality.h) and
writes its coefficient files. Standard library only.

  scripts/fit_scaling.py --grid GRID.tsv [--grid MORE.tsv] --min-steps 20 \
      --law-out configs/scaling/transformer_law.conf \
      --runs '/work/main/runs/*/result.json' --hybrid-out configs/scaling/hybrid.conf

Transformer law: bpb = E + A / N^alpha + B / D^beta over the grid's runs
(N = params, from scripts/scaling_grid.sh's grid.tsv) and anchor runs (the
transformer part of hybrid runs' result.json), D the effective tokens: tokens
seen / (1 + batch / batch_crit), batch the tokens per step, batch_crit the
best of a list (or no batch term) by least squares. For
each (alpha, beta) on a grid the best non-negative E, A, B is a linear least-
squares problem (solved over every subset of the three, keeping the best
feasible); the best (alpha, beta) is refined on a finer grid. Uncertainty:
a bootstrap over runs (resampled with replacement, refitted on the coarse grid),
written as `boot =` lines; residual_sd is the fit's residual standard deviation.

Corrections (grid rows with a vocab or lr_mult column that differs from the
law's own, 4097 and 1; these rows stay out of the law's fit): the law counts
text, so a run of vocabulary V sees D = tokens x bytes_per_token(V) /
bytes_per_token(4097) of the law's tokens. Each such run's residual from the
law is taken less the residual of the same shape and length at the law's own
settings in the grid (when there is one), so that what is left is the
setting's effect and not the law's misfit at that shape: vocab.V.offset is
the mean of V's runs; the learning-rate term (b + b_steps log2(S / S_ref)) log2 m
+ c (log2 m)^2, S the run's optimizer steps, is fitted to the runs at multiplier
m by least squares (the best multiplier falls as runs get longer), and is
trusted only within the steps measured (lr_steps_min..lr_steps_max).

Shape term (--depth-grid: runs at the law's vocabulary and learning rate
that differ from a run of the same width and length at d_model / n_layers =
32, the law's grid's deepest aspect, in depth only; these rows stay out of
the law's fit): each run's residual from the law less its reference's, so
that the law's account of the parameters the depth adds is taken out and
what is left is the shape's effect, fitted as
(depth_b + depth_b_steps log2(S / 300)) x + depth_c x^2, x = log2(aspect / 32),
S the run's steps (deeper models gain on wider ones as runs get longer);
trusted within the aspects and depths measured, its steps clamped to those
measured.

Hybrid relation: from hybrid runs (result.json with val_bpb and
val_bpb_transformer, or the points --hybrid-points-out saved before):
hybrid = min(t, limit_K - slope * x - curve * x^2 - calibration_gain),
x = max(0, pivot - t); curve 0 (a line) unless --hybrid-curve, which fits
pivot, slope >= 0 and curve >= 0 by least squares for one memory order. The relation is of the linear mixture (val_bpb_linear when
a run has it: runs from before the calibration stage have only val_bpb,
which was that); calibration_gain is the median of val_bpb_linear - val_bpb
over the runs that have both (0 when none does).
slope from the runs with a working transformer (t < 2.5; one intercept per
memory order), limit_K at orders with a run whose transformer was useless
(t >= 2.5), pivot where the line meets that limit, the other orders' limits
from their intercepts at that pivot; residual_sd of the working runs around
it. Also the count memory's build seconds per million tokens and bytes per
token (medians per order), and memory.bin's write: seconds per GB and the
share of the steps' speed it takes while it runs (from metrics.jsonl).
"""
import argparse
import glob
import json
import math
import random
import statistics
import textwrap


def solve(rows, ys):
    """Least squares for a few unknowns by the normal equations (Gaussian elimination)."""
    k = len(rows[0])
    ata = [[sum(r[i] * r[j] for r in rows) for j in range(k)] for i in range(k)]
    aty = [sum(r[i] * y for r, y in zip(rows, ys)) for i in range(k)]
    for c in range(k):
        p = max(range(c, k), key=lambda r: abs(ata[r][c]))
        if abs(ata[p][c]) < 1e-300:
            return None
        ata[c], ata[p] = ata[p], ata[c]
        aty[c], aty[p] = aty[p], aty[c]
        for r in range(k):
            if r != c:
                f = ata[r][c] / ata[c][c]
                ata[r] = [a - f * b for a, b in zip(ata[r], ata[c])]
                aty[r] -= f * aty[c]
    return [aty[i] / ata[i][i] for i in range(k)]


SUBSETS = [s for s in range(1, 8)]


def fit_fixed(pts, alpha, beta):
    """Best E, A, B >= 0 for fixed exponents; returns (sse, E, A, B)."""
    feats = [(1.0, n ** -alpha, d ** -beta) for n, d, _ in pts]
    ys = [y for _, _, y in pts]
    best = None
    for s in SUBSETS:
        idx = [i for i in range(3) if s >> i & 1]
        if len(idx) > len(pts):
            continue
        x = solve([[f[i] for i in idx] for f in feats], ys)
        if x is None or min(x) < 0:
            continue
        c = [0.0, 0.0, 0.0]
        for i, v in zip(idx, x):
            c[i] = v
        sse = sum((c[0] + c[1] * f[1] + c[2] * f[2] - y) ** 2 for f, y in zip(feats, ys))
        if best is None or sse < best[0]:
            best = (sse, c[0], c[1], c[2])
    return best


def fit(pts, step=0.05, lo=0.05, hi=1.5, refine=True):
    grid = [lo + i * step for i in range(int((hi - lo) / step) + 1)]
    best = None
    for a in grid:
        for b in grid:
            r = fit_fixed(pts, a, b)
            if r and (best is None or r[0] < best[0]):
                best = (r[0], r[1], r[2], a, r[3], b)
    if refine and best:
        a0, b0 = best[3], best[5]
        for i in range(-10, 11):
            for j in range(-10, 11):
                a, b = a0 + i * step / 10, b0 + j * step / 10
                if a <= 0 or b <= 0:
                    continue
                r = fit_fixed(pts, a, b)
                if r and r[0] < best[0]:
                    best = (r[0], r[1], r[2], a, r[3], b)
    return best  # sse, E, A, alpha, B, beta


def tsv_rows(paths):
    """Each data row of tab-separated files with a header line, as a dict."""
    for path in paths:
        with open(path) as f:
            head = f.readline().rstrip("\n").split("\t")
            for line in f:
                yield dict(zip(head, line.rstrip("\n").split("\t")))


REF_VOCAB = 4097
REF_BYTES_PER_TOKEN = 3.2102   # the bundled corpus's training split at vocab 4097 (data/corpus/meta.json)
LR_STEPS_REF = 300             # the learning-rate term's slope in log2 steps is about this many


def is_ref(r):
    """A grid row at the law's own vocabulary and learning rate (rows of older grids have neither column)."""
    return int(r.get("vocab") or REF_VOCAB) == REF_VOCAB and float(r.get("lr_mult") or 1) == 1


def read_grid(paths, min_steps):
    return [(float(r["params"]), float(r["tokens"]), float(r["val_bpb"]), float(r["tokens"]) / int(r["steps"]))
            for r in tsv_rows(paths) if int(r["steps"]) >= min_steps and is_ref(r)]


def law_residual(r, coef, bc, ref_bpb):
    """A grid row's measured bpb less the law's (tokens counted as text at the law's vocabulary)."""
    E, A, alpha, B, beta = coef
    scale = float(r.get("bytes_per_token") or REF_BYTES_PER_TOKEN) / REF_BYTES_PER_TOKEN
    n, d, y = float(r["params"]), float(r["tokens"]) * scale, float(r["val_bpb"])
    (n, d, y), = effective([(n, d, y, d / int(r["steps"]))], bc, ref_bpb)
    return y - (E + A * n ** -alpha + B * d ** -beta)


def corrections(args, coef, bc, ref_bpb):
    """The vocabulary offsets and the learning-rate term, as law-file lines (see the docstring)."""
    rows = [r for r in tsv_rows(args.grid) if int(r["steps"]) >= args.min_steps]
    base = {(r["length"], r["d_model"], r["n_layers"]): r for r in rows if is_ref(r) and "length" in r}

    def residual(r):
        return law_residual(r, coef, bc, ref_bpb)

    def paired(r):
        """The run's residual less that of the same shape and length at the law's settings."""
        b0 = base.get((r.get("length"), r["d_model"], r["n_layers"]))
        return residual(r) - (residual(b0) if b0 else 0), b0 is not None

    lines, notes = ["vocab_ref = %d" % REF_VOCAB, "vocab.%d.bytes_per_token = %.4f" % (REF_VOCAB, REF_BYTES_PER_TOKEN),
                    "vocab.%d.offset = 0" % REF_VOCAB], []
    vocabs = sorted({int(r["vocab"]) for r in rows if r.get("vocab") and int(r["vocab"]) != REF_VOCAB})
    for v in vocabs:
        vr = [r for r in rows if r.get("vocab") and int(r["vocab"]) == v and float(r.get("lr_mult") or 1) == 1]
        pr = [paired(r) for r in vr]
        res = [x for x, _ in pr]
        sd = statistics.stdev(res) if len(res) > 1 else float("nan")
        lines += ["vocab.%d.bytes_per_token = %.4f" % (v, float(vr[0]["bytes_per_token"])),
                  "vocab.%d.offset = %.4f    # sd %.4f over the runs" % (v, statistics.mean(res), sd),
                  "vocab.%d.runs = %d" % (v, len(res))]
        notes += ["#   vocab %d: d%s l%s %s steps: residual %+.4f against vocab %d%s" % (
            v, r["d_model"], r["n_layers"], r["length"], x, REF_VOCAB, "" if ok else " (no pair: against the law)")
                  for r, (x, ok) in zip(vr, pr)]
    lr_rows = [r for r in rows if int(r.get("vocab") or REF_VOCAB) == REF_VOCAB and float(r.get("lr_mult") or 1) != 1]
    if lr_rows:
        pts = []
        for r in lr_rows:
            m = float(r["lr_mult"])
            delta, ok = paired(r)
            pts.append((math.log2(m), math.log2(int(r["steps"]) / LR_STEPS_REF), delta))
            notes.append("#   lr x %g: d%s l%s %s steps: residual %+.4f against x 1%s" % (
                m, r["d_model"], r["n_layers"], r["length"], delta, "" if ok else " (no pair: against the law)"))
        if len({x for x, _, _ in pts}) >= 2 and len({s for _, s, _ in pts}) >= 2 and len(pts) >= 4:
            b, bs, c = solve([[x, x * s, x * x] for x, s, _ in pts], [y for _, _, y in pts])
            fit = [b * x + bs * x * s + c * x * x for x, s, _ in pts]
            sd = math.sqrt(sum((y - f) ** 2 for (_, _, y), f in zip(pts, fit)) / max(1, len(pts) - 3))
            ms = [2 ** x for x, _, _ in pts] + [1]
            steps = [LR_STEPS_REF * 2 ** s for _, s, _ in pts]
            lines += ["lr_b = %.5f" % b, "lr_b_steps = %.5f    # per doubling of the steps from lr_steps_ref" % bs,
                      "lr_c = %.5f" % c, "lr_sd = %.4f    # the runs' residual sd around the term" % sd,
                      "lr_steps_ref = %g" % LR_STEPS_REF,
                      "lr_steps_min = %g" % min(steps), "lr_steps_max = %g" % max(steps),
                      "lr_mult_min = %g" % min(ms), "lr_mult_max = %g" % max(ms)]
    return lines, notes


DEPTH_ASPECT_REF = 32          # d_model / n_layers of the law's own grid at its deepest (d64 l2, d96 l3, d128 l4)
DEPTH_STEPS_REF = 300          # the shape term's slope in log2 steps is about this many
# One layer is not just a wide aspect: at 1200 steps d64 l1 lost 0.013 more to d64 l2 than d128 l2 (the
# same aspect) to d128 l4, and the 10-minute validations found one layer 0.02-0.04 behind two or three.
# The term is fitted on two layers and more, and the search keeps to them.
DEPTH_MIN_LAYERS = 2


def depth_term(args, coef, bc, ref_bpb):
    """The shape term from the depth grid (see the docstring), as law-file lines and notes."""
    rows = [r for r in tsv_rows(args.depth_grid) if int(r["steps"]) >= args.min_steps and is_ref(r)]
    aspect = {id(r): int(r["d_model"]) / int(r["n_layers"]) for r in rows}
    base = {(r["length"], r["d_model"]): r for r in rows if aspect[id(r)] == DEPTH_ASPECT_REF}
    pts, notes, used = [], [], []
    for r in rows:
        b = base.get((r["length"], r["d_model"]))
        if not b or b is r:
            continue
        x = math.log2(aspect[id(r)] / DEPTH_ASPECT_REF)
        delta = law_residual(r, coef, bc, ref_bpb) - law_residual(b, coef, bc, ref_bpb)
        kept = int(r["n_layers"]) >= DEPTH_MIN_LAYERS
        if kept:
            pts.append((x, math.log2(int(r["steps"]) / DEPTH_STEPS_REF), delta))
            used.append(r)
        notes.append("#   d%s l%s %s steps (aspect %.3g): %+.4f against l%s%s" % (
            r["d_model"], r["n_layers"], r["length"], aspect[id(r)], delta, b["n_layers"],
            "" if kept else " (one layer: kept out of the term)"))
    if len({x for x, _, _ in pts}) < 3:
        raise SystemExit("fit_scaling: the depth grid needs runs at 3 aspects or more paired with a d_model / "
                         "n_layers = %d run of the same width and length" % DEPTH_ASPECT_REF)
    lengths = {s for _, s, _ in pts}
    if len(lengths) >= 2:   # the slope's change with the steps, as the learning-rate term's
        b, bs, c = solve([[x, x * s, x * x] for x, s, _ in pts], [y for _, _, y in pts])
    else:
        (b, c), bs = solve([[x, x * x] for x, _, _ in pts], [y for _, _, y in pts]), 0.0
    fit = [(b + bs * s) * x + c * x * x for x, s, _ in pts]
    sd = math.sqrt(sum((y - f) ** 2 for (_, _, y), f in zip(pts, fit)) / max(1, len(pts) - 2 - (len(lengths) >= 2)))
    measured = [aspect[id(r)] for r in used] + [DEPTH_ASPECT_REF]
    steps = [int(r["steps"]) for r in used]
    lines = ["depth_b = %.5f" % b, "depth_b_steps = %.5f    # per doubling of the steps from depth_steps_ref" % bs,
             "depth_c = %.5f" % c, "depth_sd = %.4f    # the runs' residual sd around the term" % sd,
             "depth_aspect_ref = %g" % DEPTH_ASPECT_REF,
             "depth_aspect_min = %.6g" % min(measured), "depth_aspect_max = %.6g" % max(measured),
             "depth_layers_min = %d" % max(DEPTH_MIN_LAYERS, min(int(r["n_layers"]) for r in used + list(base.values()))),
             "depth_steps_ref = %g" % DEPTH_STEPS_REF,
             "depth_steps_min = %d" % min(steps), "depth_steps_max = %d" % max(steps)]

    def term(aspect, s):   # as src/plan/quality.c's quality_shape_term
        x, s = math.log2(aspect / DEPTH_ASPECT_REF), min(max(s, min(steps)), max(steps))
        return (b + bs * math.log2(s / DEPTH_STEPS_REF)) * x + c * x * x
    return lines, notes, term


FAMILY_STEPS_REF = 300         # the family term's slope in log2 steps is about this many
FAMILY_WIDTH_REF = 128        # the family term's width part is per doubling of d_model from this
LAW_CONTEXT = 256              # every run of the law's grids trains and reads context 256


def family_points(args):
    """The planner's family's runs read frozen on the full val set: (name, params, tokens, steps,
    d_model, n_layers, t) from --family-runs (result.json with FROZEN_READ beside it, the
    checkpoint's config for the shape) and --family-tsv (saved by --family-out)."""
    import os
    pts = []
    for pattern in args.family_runs:
        for path in sorted(glob.glob(pattern)):
            f = os.path.join(os.path.dirname(path), FROZEN_READ)
            if not os.path.exists(f):
                print("fit_scaling: %s: no %s, left out" % (path, FROZEN_READ))
                continue
            r = json.load(open(path))
            if int(r["steps"]) < args.min_steps:
                continue
            cfg = model_config(os.path.join(os.path.dirname(path), "model.safetensors"))
            pts.append((os.path.basename(os.path.dirname(path)), float(r["params"]), float(r["tokens"]),
                        int(r["steps"]), int(cfg["d_model"]), int(cfg["n_layers"]), float(json.load(open(f))["bpb"])))
    for r in tsv_rows(args.family_tsv):
        pts.append((r["run"], float(r["params"]), float(r["tokens"]), int(r["steps"]), int(r["d_model"]),
                    int(r["n_layers"]), float(r["val_bpb_frozen"])))
    if args.family_out:
        with open(args.family_out, "w") as f:
            f.write("run\tparams\ttokens\tsteps\td_model\tn_layers\tval_bpb_frozen\n")
            for p in pts:
                f.write("%s\t%.0f\t%.0f\t%d\t%d\t%d\t%.6f\n" % p)
    return pts


def model_config(path):
    """The model config a tempo .safetensors file holds in its metadata."""
    import struct
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
    return json.loads(head["__metadata__"]["config"])


def family_term(args, coef, bc, ref_bpb, depth):
    """The family term: the planner's models are cpu-default's (SwiGLU, QK-norm), the grids'
    cpu-transformer's (ReLU^2, no QK-norm), and the plan predicts the full val set where the
    grids read a slice: each family run's frozen read on the full val set less the law (and its
    shape term), fitted as b + b_steps log2(S / 300) over the runs' steps S, plus b_width
    log2(d_model / 128) with --family-width (d_model clamped to the widths measured)."""
    E, A, alpha, B, beta = coef
    pts, notes = [], []
    for name, n, d, steps, width, layers, y in family_points(args):
        # D_eff as the planner counts it (quality_tokens_effective: B_crit at the law's bpb of D)
        (_, de, _), = effective([(n, d, E + A * n ** -alpha + B * d ** -beta, d / steps)], bc, ref_bpb)
        law_y = E + A * n ** -alpha + B * de ** -beta + depth(width / layers, steps)
        pts.append((math.log2(steps / FAMILY_STEPS_REF), y - law_y, width))
        notes.append("#   %s: d%d l%d, %d steps: %.4f read frozen, the law %.4f: %+.4f" % (
            name, width, layers, steps, y, law_y, y - law_y))
    if len(pts) < 3 or len({s for s, _, _ in pts}) < 2:
        raise SystemExit("fit_scaling: the family term needs 3 runs or more at 2 lengths or more")
    if args.family_width and len({w for _, _, w in pts}) < 2:
        raise SystemExit("fit_scaling: --family-width needs the family's runs at 2 widths or more")
    wx = [math.log2(w / FAMILY_WIDTH_REF) if args.family_width else 0.0 for _, _, w in pts]
    if args.family_width:
        b, bs, bw = solve([[1.0, s, x] for (s, _, _), x in zip(pts, wx)], [y for _, y, _ in pts])
    else:
        (b, bs), bw = solve([[1.0, s] for s, _, _ in pts], [y for _, y, _ in pts]), 0.0
    fit = [b + bs * s + bw * x for (s, _, _), x in zip(pts, wx)]
    n_par = 3 if args.family_width else 2
    sd = math.sqrt(sum((y - f) ** 2 for (_, y, _), f in zip(pts, fit)) / max(1, len(pts) - n_par))
    steps = [FAMILY_STEPS_REF * 2 ** s for s, _, _ in pts]
    lines = ["family_b = %.5f" % b, "family_b_steps = %.5f    # per doubling of the steps from family_steps_ref" % bs,
             "family_sd = %.4f    # the runs' residual sd around the term" % sd,
             "family_steps_ref = %g" % FAMILY_STEPS_REF,
             "family_steps_min = %d" % round(min(steps)), "family_steps_max = %d" % round(max(steps))]
    if args.family_width:
        widths = [w for _, _, w in pts]
        lines += ["family_b_width = %.5f    # per doubling of d_model from family_width_ref" % bw,
                  "family_width_ref = %d" % FAMILY_WIDTH_REF,
                  "family_width_min = %d" % min(widths), "family_width_max = %d" % max(widths)]
    return lines, notes


def read_anchors(patterns):
    """Hybrid runs' transformer alone (full val set) as extra points."""
    pts = []
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            r = json.load(open(path))
            t = r.get("val_bpb_transformer")
            if t and t < 2.5 and r.get("params") and r.get("tokens") and r.get("steps"):
                pts.append((float(r["params"]), float(r["tokens"]), float(t), float(r["tokens"]) / r["steps"]))
    return pts


def read_anchor_tsv(paths):
    """Anchor points saved by --anchors-out (committed, so that the law refits without the runs)."""
    return [(float(r["params"]), float(r["tokens"]), float(r["val_bpb_transformer"]), float(r["batch_tokens"]))
            for r in tsv_rows(paths)]


# Critical batches tried (tokens per step); None: no batch term.
BATCH_CRITS = [None, 512, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 16384, 32768, 65536]


# The critical batch grows as the loss falls: B_crit ~ L^(-1/alpha_B), alpha_B ~ 0.21 (Kaplan et
# al. 2020, section 5.1); taken from that paper, not fitted (these runs span too little loss).
BATCH_CRIT_EXPONENT = 4.8


def effective(pts, bc, ref_bpb):
    """(N, D_eff, bpb) with D_eff = D / (1 + batch / B_crit) (McCandlish et al. 2018),
    B_crit = bc * (ref_bpb / bpb)^BATCH_CRIT_EXPONENT at the run's measured bpb."""
    if bc is None:
        return [(n, d, y) for n, d, y, b in pts]
    return [(n, d / (1 + b / (bc * (ref_bpb / y) ** BATCH_CRIT_EXPONENT)), y) for n, d, y, b in pts]


def law(args):
    pts = read_grid(args.grid, args.min_steps)
    anchors = read_anchors(args.anchor_runs) + read_anchor_tsv(args.anchor_tsv)
    if args.anchors_out:
        with open(args.anchors_out, "w") as f:
            f.write("params\ttokens\tval_bpb_transformer\tbatch_tokens\n")
            for n, d, y, b in anchors:
                f.write("%.0f\t%.0f\t%.6f\t%.0f\n" % (n, d, y, b))
    pts += anchors
    if len(pts) < 6:
        raise SystemExit("fit_scaling: %d runs with >= %d steps; need at least 6" % (len(pts), args.min_steps))
    ref_bpb = round(statistics.median(y for _, _, y, _ in pts), 2)
    best, bc = None, None
    for c in BATCH_CRITS:
        r = fit(effective(pts, c, ref_bpb))
        if r and (best is None or r[0] < best[0]):
            best, bc = r, c
    raw, pts = pts, effective(pts, bc, ref_bpb)
    sse, E, A, alpha, B, beta = best
    sd = math.sqrt(sse / max(1, len(pts) - 5 - (bc is not None)))
    rng = random.Random(1)
    boots = []
    for _ in range(args.boot):
        sample = [pts[rng.randrange(len(pts))] for _ in pts]
        if len({(n, d) for n, d, _ in sample}) < 4:
            continue
        r = fit(sample, step=0.05, refine=True)
        if r:
            boots.append(r)
    lines = [
        "# The transformer's quality law bpb = E + A / N^alpha + B / D^beta (N parameters, D tokens",
        "# seen), fitted by scripts/fit_scaling.py to %d runs of scripts/scaling_grid.sh (cpu-transformer's" % len(pts),
        "# optimizer and schedule, context 256, batch 16, vocab 4097; val bpb on the first 65,536 val",
        "# tokens). Grid files: %s; runs with fewer than %d steps left out." % (", ".join(args.grid), args.min_steps),
        "# Also %d anchor points: the transformer alone of hybrid runs (%s: 10-minute runs of" % (
            len(anchors), ", ".join(args.anchor_runs + args.anchor_tsv) or "none"),
        "# cpu-default's shape and `tempo plan --validate` runs; val bpb on the full val set).",
        "# D is the effective tokens D / (1 + batch / B_crit), batch the tokens per optimizer step",
        "# (tokens / steps of each run), B_crit = batch_crit (batch_crit_bpb / bpb)^batch_crit_exponent;",
        "# batch_crit chosen from %s by the least squares (absent: no" % [c for c in BATCH_CRITS if c],
        "# batch term fitted better), held fixed in the bootstrap; the exponent assumed (Kaplan et al.).",
        "# Uncertainty: %d bootstrap refits (resampled runs, the same exponent grid) as boot lines," % len(boots),
        "# and residual_sd, the fit's residual standard deviation (bpb).",
        "# Re-fit: python3 scripts/fit_scaling.py --grid %s --min-steps %d%s --law-out THIS_FILE"
        % (" --grid ".join(args.grid), args.min_steps,
           "".join(" --anchor-runs '%s'" % a for a in args.anchor_runs) +
           "".join(" --anchor-tsv %s" % a for a in args.anchor_tsv) +
           "".join(" --depth-grid %s" % a for a in args.depth_grid) +
           "".join(" --family-tsv %s" % a for a in dict.fromkeys(args.family_tsv + ([args.family_out] if args.family_out else []))) +
           (" --family-width" if args.family_width else "")),
        "E = %.6g" % E, "A = %.6g" % A, "alpha = %.4g" % alpha, "B = %.6g" % B, "beta = %.4g" % beta,
        "residual_sd = %.4g" % sd,
        "n_min = %.6g" % min(p[0] for p in pts), "n_max = %.6g" % max(p[0] for p in pts),
        "d_min = %.6g" % min(p[1] for p in pts), "d_max = %.6g" % max(p[1] for p in pts),
        "n_runs = %d" % len(pts),
    ]
    if bc is not None:
        lines.append("batch_crit = %g    # tokens per step, at batch_crit_bpb" % bc)
        lines.append("batch_crit_bpb = %g    # the median bpb of the runs" % ref_bpb)
        lines.append("batch_crit_exponent = %g    # Kaplan et al. 2020: B_crit ~ L^(-1/0.21); assumed" % BATCH_CRIT_EXPONENT)
    for key, i in (("E", 1), ("A", 2), ("alpha", 3), ("B", 4), ("beta", 5)):
        vals = sorted(b[i] for b in boots)
        if vals:
            lines.insert(7, "# %s: bootstrap 5-95 %% %.4g .. %.4g" % (key, vals[len(vals) // 20],
                                                                   vals[-1 - len(vals) // 20]))
    lines.append("# residuals (params, tokens seen, batch tokens, effective tokens, measured, fitted):")
    for (n, d, y), (_, seen, _, b) in zip(pts, raw):
        lines.append("#   %9.0f %10.0f %6.0f %10.0f %.4f %.4f" % (n, seen, b, d, y, E + A * n ** -alpha + B * d ** -beta))
    extra, notes = corrections(args, (E, A, alpha, B, beta), bc, ref_bpb)
    if len(extra) > 3 or any(k.startswith("lr_") for k in extra):
        lines.append("# corrections from the grid's other vocabularies and learning rates (residuals from the law):")
        lines += notes
        lines += extra
    depth = lambda aspect, steps: 0.0
    if args.depth_grid:
        extra, notes, depth = depth_term(args, (E, A, alpha, B, beta), bc, ref_bpb)
        lines.append("# the shape term from %s (each run against the d_model / n_layers = %d run of its width "
                     "and length; residuals from the law):" % (", ".join(args.depth_grid), DEPTH_ASPECT_REF))
        lines += notes
        lines += extra
    if args.family_runs or args.family_tsv:
        extra, notes = family_term(args, (E, A, alpha, B, beta), bc, ref_bpb, depth)
        lines.append("# the family term from %s (the planner's models are cpu-default's, SwiGLU and QK-norm, read "
                     "frozen on the full val set; the grids' are cpu-transformer's, ReLU^2 without QK-norm, on a "
                     "slice): each run against the law and its shape term:" % ", ".join(args.family_runs + args.family_tsv))
        lines += notes
        lines += extra
    lines.append("context = %d    # every run's: the law has no term for another" % LAW_CONTEXT)
    for b in boots:
        lines.append("boot = %.6g %.6g %.4g %.6g %.4g" % (b[1], b[2], b[3], b[4], b[5]))
    with open(args.law_out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("law: E %.4g A %.4g alpha %.4g B %.4g beta %.4g, residual sd %.4g over %d runs, %d boots"
          % (E, A, alpha, B, beta, sd, len(pts), len(boots)))


def save_drag(path, r):
    """The share of the steps' speed lost while memory.bin was written beside
    them: 1 - median(step_s after the write) / median(step_s during it), from
    metrics.jsonl beside result.json; None without 5 steps during the write and
    20 after (since the write bypasses the page cache it lasts 5-7 s, 8-14 steps)."""
    import os
    m = os.path.join(os.path.dirname(path), "metrics.jsonl")
    if not os.path.exists(m) or not r.get("memory_save_seconds"):
        return None
    t0, save = r["memory_seconds"], r["memory_save_seconds"]
    during, after = [], []
    for line in open(m):
        x = json.loads(line)
        if "step_s" in x and "elapsed_s" in x:
            (during if x["elapsed_s"] - t0 < save else after).append(x["step_s"])
    if len(during) < 5 or len(after) < 20:
        return None
    return 1 - statistics.median(after) / statistics.median(during)


FROZEN_READ = "eval-frozen.json"   # beside result.json: `tempo eval --no-memory --no-cache --no-adapt`'s line


def hybrid_runs(patterns, frozen=False):
    """(path, result) of the hybrid runs; with frozen, t (val_bpb_transformer) is the
    transformer read frozen (FROZEN_READ beside result.json; a run without one is left out)."""
    import os
    runs = []
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            r = json.load(open(path))
            if frozen:
                f = os.path.join(os.path.dirname(path), FROZEN_READ)
                if not os.path.exists(f):
                    print("fit_scaling: %s: no %s, left out" % (path, FROZEN_READ))
                    continue
                r["val_bpb_transformer"] = json.load(open(f))["bpb"]
            if r.get("memory_order") and r.get("val_bpb_transformer") and r.get("val_bpb"):
                runs.append((path, r))
    return runs


HYBRID_POINT_KEYS = ("memory_order", "val_bpb_transformer", "val_bpb_linear", "val_bpb")


def hybrid_points(args, runs):
    """The relation's runs plus the points of --hybrid-tsv (run, memory_order, t, linear mixture,
    mixture), as (name/result.json, result) pairs; written to --hybrid-points-out when given, so a
    refit needs no run folders."""
    runs = list(runs)
    for row in tsv_rows(args.hybrid_tsv):
        runs.append((row["run"] + "/result.json", {"memory_order": int(row["memory_order"]),
                                                   "val_bpb_transformer": float(row["val_bpb_transformer"]),
                                                   "val_bpb_linear": float(row["val_bpb_linear"]),
                                                   "val_bpb": float(row["val_bpb"])}))
    if args.hybrid_points_out:
        with open(args.hybrid_points_out, "w") as f:
            f.write("run\t" + "\t".join(HYBRID_POINT_KEYS) + "\n")
            for path, r in runs:
                f.write("%s\t%d\t%.6f\t%.6f\t%.6f\n" % (
                    path.split("/")[-2], r["memory_order"], r["val_bpb_transformer"],
                    r.get("val_bpb_linear") or r["val_bpb"], r["val_bpb"]))
    return runs


def fit_curve(working, limit):
    """pivot, slope >= 0, curve >= 0 of limit - h = slope x + curve x^2, x = pivot - t, least
    squares over a grid of pivots above every working t."""
    best = None
    t_max = max(t for t, _ in working)
    ys = [limit - h for _, h in working]
    for i in range(1, 1601):
        pivot = t_max + 0.001 * i
        xs = [pivot - t for t, _ in working]
        fits = []
        both = solve([[x, x * x] for x in xs], ys)
        if both and both[0] >= 0 and both[1] >= 0:
            fits.append(tuple(both))
        sxx = sum(x * x for x in xs)
        fits.append((max(0.0, sum(x * y for x, y in zip(xs, ys)) / sxx), 0.0))
        x4 = sum(x ** 4 for x in xs)
        fits.append((0.0, max(0.0, sum(x * x * y for x, y in zip(xs, ys)) / x4)))
        for sl, cu in fits:
            sse = sum((y - sl * x - cu * x * x) ** 2 for x, y in zip(xs, ys))
            if best is None or sse < best[0]:
                best = (sse, pivot, sl, cu)
    return best[1], best[2], best[3]


def measured_timings(timed):
    """The count memory's build and size per order, and memory.bin's write, as hybrid-file lines."""
    lines = []
    build, size = {}, {}
    for _, r in timed:
        o = r["memory_order"]
        if r.get("memory_seconds") and r.get("memory_tokens"):
            build.setdefault(o, []).append(r["memory_seconds"] / (r["memory_tokens"] / 1e6))
            size.setdefault(o, []).append(r["memory_bytes"] / r["memory_tokens"])
    lines.append("# count memory build on this 2-core machine, seconds per million training tokens")
    lines.append("# and bytes per token: medians of the runs' memory_seconds and memory_bytes / memory_tokens")
    for o in sorted(build):
        lines.append("build_s_per_mtok.%d = %.4f    # %d runs: %s" % (
            o, statistics.median(build[o]), len(build[o]), " ".join("%.3f" % v for v in sorted(build[o]))))
        lines.append("bytes_per_token.%d = %.2f" % (o, statistics.median(size[o])))
    saves = [r["memory_save_seconds"] / (r["memory_bytes"] / 1e9) for _, r in timed
             if r.get("memory_save_seconds") and r.get("memory_bytes")]
    drags = [d for d in (save_drag(p, r) for p, r in timed) if d is not None]
    if saves and drags:
        lines.append("# memory.bin's write beside the first steps: seconds per GB, and the share of the steps'")
        lines.append("# speed lost meanwhile (step_s in metrics.jsonl during against after the write): medians")
        lines.append("save_s_per_gb = %.3f    # %d runs: %.2f-%.2f" % (
            statistics.median(saves), len(saves), min(saves), max(saves)))
        lines.append("save_drag = %.3f    # %d runs: %.2f-%.2f" % (
            statistics.median(drags), len(drags), min(drags), max(drags)))
    return lines


def hybrid(args):
    runs = hybrid_points(args, hybrid_runs(args.runs, args.frozen_t))
    timing_runs = hybrid_runs(args.timing_runs)
    if not runs:
        raise SystemExit("fit_scaling: no hybrid runs in %s" % (args.runs + args.hybrid_tsv))
    def linear(r):   # the linear mixture's bpb (runs before the calibration stage: val_bpb)
        return r.get("val_bpb_linear") or r["val_bpb"]
    gains = [r["val_bpb_linear"] - r["val_bpb"] for _, r in runs if r.get("val_bpb_linear")]
    working = [(r["memory_order"], r["val_bpb_transformer"], linear(r)) for _, r in runs
               if r["val_bpb_transformer"] < 2.5]
    useless = [(r["memory_order"], linear(r)) for _, r in runs if r["val_bpb_transformer"] >= 2.5]
    orders = sorted({o for o, _, _ in working})
    limits = {}
    for o, h in useless:
        limits.setdefault(o, []).append(h)
    if not limits:
        raise SystemExit("fit_scaling: no run with a useless transformer: the limit is unknown")
    o0 = sorted(limits)[0]
    lim0 = statistics.median(limits[o0])
    curve = 0.0
    if args.hybrid_curve:
        if orders != [o0]:
            raise SystemExit("fit_scaling: --hybrid-curve fits one memory order; the runs have %s" % orders)
        pivot, slope, curve = fit_curve([(t, h) for _, t, h in working], lim0)
        icpt = {o0: lim0 - slope * pivot}
    else:
        # pooled slope with one intercept per order
        rows = [[1.0 if o == k else 0.0 for k in orders] + [t] for o, t, _ in working]
        x = solve(rows, [h for _, _, h in working])
        slope, icpt = x[-1], dict(zip(orders, x[:-1]))
        pivot = (lim0 - icpt[o0]) / slope
    def relation(o, t):
        lim = icpt[o] + slope * pivot
        x = max(0.0, pivot - t)
        return min(t, lim - slope * x - curve * x * x)
    res = [h - relation(o, t) for o, t, h in working if o in icpt]
    n_par = 3 if args.hybrid_curve else len(orders) + 1   # pivot, slope, curve; or an intercept per order and the slope
    res_sd = math.sqrt(sum(e * e for e in res) / max(1, len(res) - n_par))
    names = textwrap.wrap(", ".join(p.split("/")[-2] for p, _ in runs) + ".", 96)
    t_lo, t_hi = min(t for _, t, _ in working), max(t for _, t, _ in working)
    # with --hybrid-points-out every point is in that file: the refit reads it alone
    sources = ["--hybrid-tsv %s" % args.hybrid_points_out] if args.hybrid_points_out else \
        ["--runs '%s'" % g for g in args.runs] + ["--hybrid-tsv %s" % g for g in args.hybrid_tsv]
    refit = (["--frozen-t"] if args.frozen_t else []) + (["--hybrid-curve"] if args.hybrid_curve else []) + sources + \
        ["--timing-runs '%s'" % g for g in args.timing_runs] + \
        (["--keep-timings %s" % args.keep_timings] if args.keep_timings else [])
    lines = [
        "# The hybrid model's val bpb from its transformer's (src/plan/quality.h):",
        "#   hybrid = min(t, limit_K - slope * x - curve * x^2 - calibration_gain),  x = max(0, pivot - t),",
        "#   K the memory's order,",
        "# fitted by scripts/fit_scaling.py to %d runs (their folders below) on the full val set;" % len(runs),
        "# t: the transformer alone, %s:" % (
            "read frozen (%s beside each result.json), the mixture as the run read it" % FROZEN_READ
            if args.frozen_t else "as the run read it"),
    ] + ["#   " + n for n in names] + [
    ] + ([
        "# limit.%d: the run(s) whose transformer was useless (t >= 2.5); pivot, slope >= 0 and" % o0,
        "# curve >= 0 by least squares over the runs with a working transformer (t < 2.5): the",
        "# mixture gains more per bpb of transformer the better the transformer. The working",
        "# transformers' bpb span %.2f-%.2f; outside that span it is an extrapolation." % (t_lo, t_hi),
    ] if args.hybrid_curve else [
        "# slope: pooled over the runs with a working transformer (t < 2.5, an intercept per order);",
        "# limit.%d: the run(s) whose transformer was useless (t >= 2.5); the other orders' limits at" % o0,
        "# the same pivot. Crude: the working transformers' bpb span only %.2f-%.2f, so the relation" % (t_lo, t_hi),
        "# is a line through few points; outside that span it is an extrapolation.",
    ]) + [
        "# Caches and match models as in those runs (cache order 4-8).",
        "# Re-fit (one command): python3 scripts/fit_scaling.py \\",
    ] + ["#     %s \\" % a for a in refit] + ["#     --hybrid-out THIS_FILE"] + [
        "pivot = %.4f" % pivot,
        "slope = %.4f" % slope,
    ] + (["curve = %.4f" % curve] if args.hybrid_curve else []) + [
        "vocab = %d    # the runs' vocabulary: the planner plans hybrids only at it" % args.hybrid_vocab,
        "residual_sd = %.4f    # of the %d working runs around the relation" % (res_sd, len(res)),
        "calibration_gain = %.4f    # the calibration stage: median of val_bpb_linear - val_bpb over %d run(s)%s" % (
            statistics.median(gains) if gains else 0, len(gains),
            ": " + " ".join("%.4f" % g for g in sorted(gains)) if gains else ""),
    ]
    for o in orders:
        lines.append("limit.%d = %.4f" % (o, icpt[o] + slope * pivot))
    if args.keep_timings:   # the build and save figures of another hybrid file (measured on a quiet machine)
        keep, started = [], False
        for line in open(args.keep_timings):
            started = started or line.startswith("# count memory build")
            if started:
                keep.append(line.rstrip("\n"))
        if not any(k.startswith("build_s_per_mtok.") for k in keep):
            raise SystemExit("fit_scaling: %s: no build_s_per_mtok lines after '# count memory build'" % args.keep_timings)
        lines.append("# the timings below are kept from %s (--keep-timings), not from these runs:" % args.keep_timings)
        lines += keep
    else:
        lines += measured_timings(runs + timing_runs)
    with open(args.hybrid_out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("hybrid: slope %.4f curve %.4f pivot %.4f residual sd %.4f limits %s" % (
        slope, curve, pivot, res_sd, {o: round(icpt[o] + slope * pivot, 4) for o in orders}))
    for (o, t, h) in working:
        print("hybrid:   t %.4f mixture %.4f relation %.4f" % (t, h, relation(o, t)))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--grid", action="append", default=[])
    p.add_argument("--min-steps", type=int, default=20)
    p.add_argument("--depth-grid", action="append", default=[],
                   help="grid runs that differ in depth at fixed width: the shape term (kept out of the law's fit)")
    p.add_argument("--family-runs", action="append", default=[],
                   help="glob of result.json of the planner's family, read frozen (%s beside): the family term"
                   % FROZEN_READ)
    p.add_argument("--family-tsv", action="append", default=[], help="family points saved by --family-out")
    p.add_argument("--family-width", action="store_true",
                   help="fit the family term's width part too (per doubling of d_model from %d)" % FAMILY_WIDTH_REF)
    p.add_argument("--family-out", help="write the family points read from --family-runs/--family-tsv here")
    p.add_argument("--boot", type=int, default=100)
    p.add_argument("--anchor-runs", action="append", default=[],
                   help="glob of result.json whose val_bpb_transformer join the grid (repeatable)")
    p.add_argument("--anchor-tsv", action="append", default=[], help="anchor points saved by --anchors-out")
    p.add_argument("--anchors-out", help="write the anchor points read from --anchor-runs/--anchor-tsv here")
    p.add_argument("--law-out")
    p.add_argument("--runs", action="append", default=[], help="glob of hybrid runs' result.json (repeatable)")
    p.add_argument("--timing-runs", action="append", default=[],
                   help="glob of hybrid runs used for the build and save timings only (repeatable)")
    p.add_argument("--hybrid-out")
    p.add_argument("--hybrid-tsv", action="append", default=[],
                   help="the relation's points saved by --hybrid-points-out (no run folders needed)")
    p.add_argument("--hybrid-points-out", help="write the relation's points (runs and --hybrid-tsv) here")
    p.add_argument("--hybrid-curve", action="store_true",
                   help="fit the relation's curve (x^2 term) and pivot too, for one memory order")
    p.add_argument("--frozen-t", action="store_true",
                   help="the hybrid relation's t: the transformer read frozen (%s beside each result.json)" % FROZEN_READ)
    p.add_argument("--keep-timings", help="copy the build and save timings of this hybrid file instead of "
                   "measuring them from the runs (runs that shared the machine)")
    p.add_argument("--hybrid-vocab", type=int, default=REF_VOCAB, help="the hybrid runs' vocabulary")
    args = p.parse_args()
    if args.grid and args.law_out:
        law(args)
    if (args.runs or args.hybrid_tsv) and args.hybrid_out:
        hybrid(args)


if __name__ == "__main__":
    main()
