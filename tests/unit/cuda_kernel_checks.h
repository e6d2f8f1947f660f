/* cuda_kernel_checks.h - every GPU kernel (kernels/cuda/gpu_ops.h,
 * gpu_gemm.h) against its CPU kernel (kernels/cpu) on random inputs, for
 * one opened gpu: test_cuda_kernels runs them on the CPU emulator,
 * test_cuda_device on a real GPU. Outputs are poisoned (NaN bytes) before
 * each launch, so an element a kernel fails to write shows as an error.
 * Errors are norm-wise, |out - ref| / |ref|: fp32 paths under 1e-5, bf16
 * paths (inputs rounded to bf16 first, the reference run on the rounded
 * values) under 1e-2; the AdamW and Muon updates and the embedding's
 * scatter bitwise. Each check prints one line "check NAME: err E (limit L)".
 * Test-only, header-only. */
#ifndef TEMPO_CUDA_KERNEL_CHECKS_H
#define TEMPO_CUDA_KERNEL_CHECKS_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rng.h"
#include "kernels/cpu/activation.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/optim_kernels.h"
#include "kernels/cpu/rmsnorm.h"
#include "kernels/cpu/rope.h"
#include "kernels/cuda/gpu.h"
#include "kernels/cuda/gpu_gemm.h"
#include "kernels/cuda/gpu_ops.h"
#include "test.h"

#define TOL_F32 1e-5
#define TOL_BF16 1e-2

static gpu *ck_gpu;
static uint64_t ck_seed = 1;

/* ---- host <-> device helpers ---- */

static uint16_t ck_bf16_bits(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

static float ck_bf16_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* x rounded to bf16 in place (so the CPU reference sees what the GPU sees) */
static void ck_round_bf16(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = ck_bf16_float(ck_bf16_bits(x[i]));
}

static float *ck_random(size_t n, float lo, float hi)
{
    rng_state r;
    rng_seed(&r, ck_seed++ * 0x9E3779B97F4A7C15ull);
    float *x = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        x[i] = lo + (hi - lo) * (float)rng_uniform(&r);
    return x;
}

static size_t ck_size(gpu_dtype t) { return t == GPU_BF16 ? 2 : 4; }

/* a device copy of x [n] as type t (bf16: rounded to nearest even; x itself
 * is left as it is, ck_round_bf16 gives a reference the same values) */
static gpu_ptr ck_up(const float *x, size_t n, gpu_dtype t)
{
    gpu_ptr p = 0;
    tempo_error e;
    if (gpu_alloc(ck_gpu, &p, (n ? n : 1) * ck_size(t), "a test buffer", &e)) {
        fprintf(stderr, "  %s\n", e.msg);
        return 0;
    }
    if (t == GPU_F32) {
        gpu_upload(ck_gpu, p, x, n * 4, &e);
    } else {
        uint16_t *b = malloc(2 * (n ? n : 1));
        for (size_t i = 0; i < n; i++)
            b[i] = ck_bf16_bits(x[i]);
        gpu_upload(ck_gpu, p, b, n * 2, &e);
        free(b);
    }
    return p;
}

static gpu_ptr ck_up_i32(const int32_t *x, size_t n)
{
    gpu_ptr p = 0;
    tempo_error e;
    if (gpu_alloc(ck_gpu, &p, (n ? n : 1) * 4, "a test buffer", &e) == 0)
        gpu_upload(ck_gpu, p, x, n * 4, &e);
    return p;
}

/* a poisoned (NaN) device buffer of n values of type t */
static gpu_ptr ck_poisoned(size_t n, gpu_dtype t)
{
    gpu_ptr p = 0;
    tempo_error e;
    if (gpu_alloc(ck_gpu, &p, (n ? n : 1) * ck_size(t), "a test buffer", &e))
        return 0;
    gpu_memset_async(ck_gpu, p, 0xff, (n ? n : 1) * ck_size(t));
    return p;
}

/* n values of type t from the device, as floats (malloc'd) */
static float *ck_down(gpu_ptr p, size_t n, gpu_dtype t)
{
    float *x = malloc(sizeof(float) * (n ? n : 1));
    tempo_error e;
    if (t == GPU_F32) {
        if (gpu_download(ck_gpu, x, p, n * 4, &e))
            fprintf(stderr, "  %s\n", e.msg);
    } else {
        uint16_t *b = malloc(2 * (n ? n : 1));
        if (gpu_download(ck_gpu, b, p, n * 2, &e))
            fprintf(stderr, "  %s\n", e.msg);
        for (size_t i = 0; i < n; i++)
            x[i] = ck_bf16_float(b[i]);
        free(b);
    }
    return x;
}

/* |out - ref| / |ref| norm-wise; infinity when out holds a non-finite value
 * that ref does not (an unwritten, poisoned element) */
static double ck_err(const float *out, const float *ref, size_t n)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(ref[i]) && !isfinite(out[i]))
            return INFINITY;
        double d = (double)out[i] - ref[i];
        num += d * d;
        den += (double)ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : sqrt(num);
}

static int ck_report(const char *name, double err, double limit)
{
    printf("check %-34s err %.3g (limit %.0e)%s\n", name, err, limit, err <= limit ? "" : "  FAIL");
    CHECK_MSG(err <= limit, "%s: %.3g", name, err);
    return err <= limit;
}

static int ck_sync(void)
{
    tempo_error e;
    if (gpu_sync(ck_gpu, &e)) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return -1;
    }
    return 0;
}

static double ck_tol(gpu_dtype t) { return t == GPU_BF16 ? TOL_BF16 : TOL_F32; }
static const char *ck_tname(gpu_dtype t) { return t == GPU_BF16 ? "bf16" : "f32"; }

/* ---- the checks ---- */

static void check_embedding(void)
{
    int N = 97, C = 80, V = 23;
    int32_t *tok = malloc(sizeof(int32_t) * N);
    for (int n = 0; n < N; n++)
        tok[n] = (int32_t)((n * 7 + n / 5) % V);
    float *emb = ck_random((size_t)V * C, -1, 1), *dout = ck_random((size_t)N * C, -1, 1);
    float *demb = ck_random((size_t)V * C, -1, 1);
    gpu_ptr d_tok = ck_up_i32(tok, N), d_emb = ck_up(emb, (size_t)V * C, GPU_F32);
    gpu_ptr d_out = ck_poisoned((size_t)N * C, GPU_F32);
    cuda_embedding_forward(ck_gpu, d_out, d_tok, d_emb, N, C);
    float *ref = malloc(sizeof(float) * N * C);
    embedding_forward(ref, tok, emb, N, C);
    float *got = ck_down(d_out, (size_t)N * C, GPU_F32);
    ck_report("embedding forward", ck_err(got, ref, (size_t)N * C), 0);
    /* backward: bitwise the CPU's order */
    int32_t *order = malloc(sizeof(int32_t) * N), *seg = malloc(sizeof(int32_t) * (N + 1));
    int32_t *segt = malloc(sizeof(int32_t) * N), *cnt = malloc(sizeof(int32_t) * V);
    int ns = cuda_embedding_segments(tok, N, V, order, seg, segt, cnt);
    gpu_ptr d_order = ck_up_i32(order, N), d_seg = ck_up_i32(seg, ns + 1), d_segt = ck_up_i32(segt, ns);
    gpu_ptr d_demb = ck_up(demb, (size_t)V * C, GPU_F32), d_dout = ck_up(dout, (size_t)N * C, GPU_F32);
    cuda_embedding_backward(ck_gpu, d_demb, d_order, d_seg, d_segt, ns, d_dout, C);
    embedding_backward(demb, tok, dout, N, C);
    float *gd = ck_down(d_demb, (size_t)V * C, GPU_F32);
    ck_report("embedding backward (bitwise)", memcmp(gd, demb, sizeof(float) * V * C) ? 1.0 : 0.0, 0);
    ck_sync();
    gpu_ptr ps[] = {d_tok, d_emb, d_out, d_order, d_seg, d_segt, d_demb, d_dout};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) gpu_free(ck_gpu, ps[i]);
    free(tok); free(emb); free(dout); free(demb); free(ref); free(got); free(order); free(seg); free(segt);
    free(cnt); free(gd);
}

static void check_rmsnorm_one(gpu_dtype tin, gpu_dtype tout, int N, int C)
{
    char name[64];
    float *x = ck_random((size_t)N * C, -2, 2), *w = ck_random((size_t)C, 0.5f, 1.5f);
    if (tin == GPU_BF16) ck_round_bf16(x, (size_t)N * C);
    gpu_ptr dx = ck_up(x, (size_t)N * C, tin), dw = ck_up(w, C, GPU_F32);
    gpu_ptr dy = ck_poisoned((size_t)N * C, tout), dr = ck_poisoned(N, GPU_F32);
    gpu_ptr dc = tin == GPU_F32 ? ck_poisoned((size_t)N * C, GPU_F32) : 0;
    cuda_rmsnorm_forward(ck_gpu, tin, tout, dy, dr, dc, dx, dw, N, C, 1e-5f);
    float *y = malloc(sizeof(float) * N * C), *r = malloc(sizeof(float) * N);
    rmsnorm_forward(y, r, x, w, N, C, 1e-5f);
    float *gy = ck_down(dy, (size_t)N * C, tout), *gr = ck_down(dr, N, GPU_F32);
    snprintf(name, sizeof name, "rmsnorm forward %s->%s %dx%d", ck_tname(tin), ck_tname(tout), N, C);
    ck_report(name, ck_err(gy, y, (size_t)N * C), ck_tol(tout));
    snprintf(name, sizeof name, "rmsnorm forward rstd %s", ck_tname(tin));
    ck_report(name, ck_err(gr, r, N), TOL_F32);
    if (dc) {
        float *gc = ck_down(dc, (size_t)N * C, GPU_F32);
        ck_report("rmsnorm forward copy", ck_err(gc, x, (size_t)N * C), 0);
        free(gc);
    }
    ck_sync();
    gpu_free(ck_gpu, dx); gpu_free(ck_gpu, dw); gpu_free(ck_gpu, dy); gpu_free(ck_gpu, dr); gpu_free(ck_gpu, dc);
    free(x); free(w); free(y); free(r); free(gy); free(gr);
}

static void check_rmsnorm_backward(gpu_dtype t, int N, int C, int accumulate)
{
    char name[64];
    size_t n = (size_t)N * C;
    float *x = ck_random(n, -2, 2), *w = ck_random(C, 0.5f, 1.5f), *dy = ck_random(n, -1, 1);
    float *dx0 = ck_random(n, -1, 1), *dw0 = ck_random(C, -1, 1), *rstd = malloc(sizeof(float) * N);
    if (t == GPU_BF16) {
        ck_round_bf16(x, n); ck_round_bf16(dy, n); ck_round_bf16(dx0, n);
    }
    float *tmp = malloc(sizeof(float) * n);
    rmsnorm_forward(tmp, rstd, x, w, N, C, 1e-5f);
    gpu_ptr d_x = ck_up(x, n, t), d_w = ck_up(w, C, GPU_F32), d_dy = ck_up(dy, n, t), d_r = ck_up(rstd, N, GPU_F32);
    gpu_ptr d_dx = accumulate ? ck_up(dx0, n, t) : ck_poisoned(n, t), d_dw = ck_up(dw0, C, GPU_F32);
    gpu_ptr part = ck_poisoned(cuda_rmsnorm_partial_floats(N, C), GPU_F32);
    gpu_ptr d_low = t == GPU_F32 ? ck_poisoned(n, GPU_BF16) : 0; /* fp32 dx's bf16 copy */
    cuda_rmsnorm_backward(ck_gpu, t, d_dx, d_dw, d_dy, d_x, d_w, d_r, N, C, accumulate, part, d_low);
    rmsnorm_backward(dx0, dw0, dy, x, w, rstd, N, C, accumulate);
    float *gdx = ck_down(d_dx, n, t), *gdw = ck_down(d_dw, C, GPU_F32);
    snprintf(name, sizeof name, "rmsnorm backward dx %s %dx%d%s", ck_tname(t), N, C, accumulate ? " +=" : "");
    ck_report(name, ck_err(gdx, dx0, n), ck_tol(t));
    if (d_low) {
        float *glow = ck_down(d_low, n, GPU_BF16);
        ck_round_bf16(gdx, n); /* the copy is the GPU's own dx rounded */
        snprintf(name, sizeof name, "rmsnorm backward dx's bf16 copy %dx%d", N, C);
        ck_report(name, ck_err(glow, gdx, n), 0);
        free(glow);
        gpu_free(ck_gpu, d_low);
    }
    snprintf(name, sizeof name, "rmsnorm backward dw %s %dx%d", ck_tname(t), N, C); /* fp32 sums of the same values */
    ck_report(name, ck_err(gdw, dw0, C), 1e-5);
    ck_sync();
    gpu_ptr ps[] = {d_x, d_w, d_dy, d_r, d_dx, d_dw, part};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) gpu_free(ck_gpu, ps[i]);
    free(x); free(w); free(dy); free(dx0); free(dw0); free(rstd); free(tmp); free(gdx); free(gdw);
}

/* RoPE over [B, T, H, D] at positions pos0.. against the CPU's (the tables
 * hold pos0 + T positions, as the inference engine's do) */
static void check_rope(gpu_dtype t, int B, int T, int D, int H, int pos0)
{
    int P = pos0 + T;
    size_t n = (size_t)B * T * H * D;
    float *cs = malloc(sizeof(float) * P * D / 2), *sn = malloc(sizeof(float) * P * D / 2);
    rope_table_init(cs, sn, P, D, 10000.0f);
    float *x = ck_random(n, -1, 1);
    if (t == GPU_BF16) ck_round_bf16(x, n);
    gpu_ptr d_x = ck_up(x, n, t), d_c = ck_up(cs, (size_t)P * D / 2, GPU_F32), d_s = ck_up(sn, (size_t)P * D / 2, GPU_F32);
    cuda_rope(ck_gpu, t, d_x, B, T, H, D, pos0, d_c, d_s, 0);
    float *ref = malloc(sizeof(float) * n);
    memcpy(ref, x, sizeof(float) * n);
    rope_forward(ref, B, T, H, D, pos0, cs, sn);
    float *got = ck_down(d_x, n, t);
    char name[64];
    snprintf(name, sizeof name, "rope forward %s B%d T%d D%d H%d at %d", ck_tname(t), B, T, D, H, pos0);
    ck_report(name, ck_err(got, ref, n), ck_tol(t));
    cuda_rope(ck_gpu, t, d_x, B, T, H, D, pos0, d_c, d_s, 1); /* and back */
    float *back = ck_down(d_x, n, t);
    rope_backward(got, B, T, H, D, pos0, cs, sn);
    snprintf(name, sizeof name, "rope backward %s B%d T%d D%d H%d at %d", ck_tname(t), B, T, D, H, pos0);
    ck_report(name, ck_err(back, got, n), ck_tol(t));
    ck_sync();
    gpu_free(ck_gpu, d_x); gpu_free(ck_gpu, d_c); gpu_free(ck_gpu, d_s);
    free(cs); free(sn); free(x); free(ref); free(got); free(back);
}

static void check_activations(gpu_dtype t)
{
    size_t n = 5003; /* 16-byte pieces and a tail */
    char name[64];
    float *h = ck_random(n, -3, 3), *u = ck_random(n, -2, 2), *da = ck_random(n, -1, 1);
    if (t == GPU_BF16) {
        ck_round_bf16(h, n); ck_round_bf16(u, n); ck_round_bf16(da, n);
    }
    gpu_ptr d_h = ck_up(h, n, t), d_u = ck_up(u, n, t), d_da = ck_up(da, n, t);
    gpu_ptr o1 = ck_poisoned(n, t), o2 = ck_poisoned(n, t);
    float *ref = malloc(sizeof(float) * n), *ref2 = malloc(sizeof(float) * n), *got;

    cuda_relu2_forward(ck_gpu, t, o1, d_h, n);
    act_relu2_forward(ref, h, n);
    got = ck_down(o1, n, t);
    snprintf(name, sizeof name, "relu2 forward %s", ck_tname(t));
    ck_report(name, ck_err(got, ref, n), ck_tol(t));
    free(got);

    cuda_relu2_backward(ck_gpu, t, o1, d_da, d_h, n);
    act_relu2_backward(ref, da, h, n);
    got = ck_down(o1, n, t);
    snprintf(name, sizeof name, "relu2 backward %s", ck_tname(t));
    ck_report(name, ck_err(got, ref, n), ck_tol(t));
    free(got);

    cuda_swiglu_forward(ck_gpu, t, o1, d_h, d_u, n);
    act_swiglu_forward(ref, h, u, n);
    got = ck_down(o1, n, t);
    snprintf(name, sizeof name, "swiglu forward %s", ck_tname(t));
    ck_report(name, ck_err(got, ref, n), ck_tol(t));
    free(got);

    gpu_memset_async(ck_gpu, o1, 0xff, n * ck_size(t));
    cuda_swiglu_backward(ck_gpu, t, o1, o2, d_da, d_h, d_u, n);
    act_swiglu_backward(ref, ref2, da, h, u, n);
    got = ck_down(o1, n, t);
    snprintf(name, sizeof name, "swiglu backward dg %s", ck_tname(t));
    ck_report(name, ck_err(got, ref, n), ck_tol(t));
    free(got);
    got = ck_down(o2, n, t);
    snprintf(name, sizeof name, "swiglu backward du %s", ck_tname(t));
    ck_report(name, ck_err(got, ref2, n), ck_tol(t));
    free(got);
    ck_sync();
    gpu_free(ck_gpu, d_h); gpu_free(ck_gpu, d_u); gpu_free(ck_gpu, d_da); gpu_free(ck_gpu, o1); gpu_free(ck_gpu, o2);
    free(h); free(u); free(da); free(ref); free(ref2);
}

static void check_attention(gpu_dtype t, int B, int T, int H, int Hkv, int D)
{
    char name[96];
    tempo_error e;
    if (cuda_attention_prepare(ck_gpu, D, &e)) {
        fprintf(stderr, "  %s\n", e.msg);
        CHECK(0);
        return;
    }
    size_t nq = (size_t)B * T * H * D, nk = (size_t)B * T * Hkv * D, nl = (size_t)B * H * T;
    float *q = ck_random(nq, -1, 1), *k = ck_random(nk, -1, 1), *v = ck_random(nk, -1, 1);
    float *dout = ck_random(nq, -1, 1);
    if (t == GPU_BF16) {
        ck_round_bf16(q, nq); ck_round_bf16(k, nk); ck_round_bf16(v, nk); ck_round_bf16(dout, nq);
    }
    float *o = malloc(sizeof(float) * nq), *lse = malloc(sizeof(float) * nl);
    attention_forward(o, lse, q, k, v, B, T, H, Hkv, D);
    gpu_ptr d_q = ck_up(q, nq, t), d_k = ck_up(k, nk, t), d_v = ck_up(v, nk, t), d_do = ck_up(dout, nq, t);
    gpu_ptr d_o = ck_poisoned(nq, t), d_l = ck_poisoned(nl, GPU_F32);
    cuda_attention_forward(ck_gpu, t, d_o, d_l, d_q, d_k, d_v, B, T, H, Hkv, D);
    float *go = ck_down(d_o, nq, t), *gl = ck_down(d_l, nl, GPU_F32);
    snprintf(name, sizeof name, "attention forward %s T%d H%d/%d D%d", ck_tname(t), T, H, Hkv, D);
    ck_report(name, ck_err(go, o, nq), ck_tol(t));
    snprintf(name, sizeof name, "attention lse %s T%d D%d", ck_tname(t), T, D);
    ck_report(name, ck_err(gl, lse, nl), ck_tol(t) / 10);
    /* backward from the CPU's own o and lse (rounded as the GPU stores them) */
    if (t == GPU_BF16) ck_round_bf16(o, nq);
    gpu_ptr d_o2 = ck_up(o, nq, t), d_l2 = ck_up(lse, nl, GPU_F32);
    float *dq = malloc(sizeof(float) * nq), *dk = malloc(sizeof(float) * nk), *dv = malloc(sizeof(float) * nk);
    attention_backward(dq, dk, dv, dout, q, k, v, o, lse, B, T, H, Hkv, D);
    gpu_ptr d_dq = ck_poisoned(nq, t), d_dk = ck_poisoned(nk, t), d_dv = ck_poisoned(nk, t);
    gpu_ptr delta = ck_poisoned(nl, GPU_F32);
    cuda_attention_backward(ck_gpu, t, d_dq, d_dk, d_dv, d_do, d_q, d_k, d_v, d_o2, d_l2, B, T, H, Hkv, D, delta);
    float *gq = ck_down(d_dq, nq, t), *gk = ck_down(d_dk, nk, t), *gv = ck_down(d_dv, nk, t);
    snprintf(name, sizeof name, "attention backward dq %s T%d D%d", ck_tname(t), T, D);
    ck_report(name, ck_err(gq, dq, nq), ck_tol(t));
    snprintf(name, sizeof name, "attention backward dk %s T%d D%d", ck_tname(t), T, D);
    ck_report(name, ck_err(gk, dk, nk), ck_tol(t));
    snprintf(name, sizeof name, "attention backward dv %s T%d D%d", ck_tname(t), T, D);
    ck_report(name, ck_err(gv, dv, nk), ck_tol(t));
    /* delta [B, H, T] = sum_d dout o per row, of the values the GPU holds: fp32 sums in another order */
    float *gd = ck_down(delta, nl, GPU_F32), *rd = malloc(sizeof(float) * nl);
    for (int b = 0; b < B; b++)
        for (int tt = 0; tt < T; tt++)
            for (int h = 0; h < H; h++) {
                double acc = 0;
                size_t at = (((size_t)b * T + tt) * H + h) * D;
                for (int d = 0; d < D; d++)
                    acc += (double)dout[at + d] * o[at + d];
                rd[((size_t)b * H + h) * T + tt] = (float)acc;
            }
    snprintf(name, sizeof name, "attention delta %s T%d D%d", ck_tname(t), T, D);
    ck_report(name, ck_err(gd, rd, nl), 1e-5);
    free(gd); free(rd);
    ck_sync();
    gpu_ptr ps[] = {d_q, d_k, d_v, d_do, d_o, d_l, d_o2, d_l2, d_dq, d_dk, d_dv, delta};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) gpu_free(ck_gpu, ps[i]);
    free(q); free(k); free(v); free(dout); free(o); free(lse); free(dq); free(dk); free(dv);
    free(go); free(gl); free(gq); free(gk); free(gv);
}

/* An inference step's attention against a key/value cache of two
 * sequences: rows at assorted positions of either (the first key alone, the
 * last one, a group of heads sharing a kv head), each head of each row
 * against attention_head_forward with one query row. */
static void check_attention_decode(int H, int Hkv, int D, int cap)
{
    enum { N = 6 };
    const int slot[N] = {0, 1, 0, 1, 1, 0};
    const int32_t pos[N] = {0, 5, cap - 1, cap - 2, 1, cap / 2};
    int kd = Hkv * D;
    size_t per_slot = (size_t)cap * kd, nk = 2 * per_slot, nq = (size_t)N * H * D;
    float *k = ck_random(nk, -1, 1), *v = ck_random(nk, -1, 1), *q = ck_random(nq, -1, 1);
    float *o = malloc(sizeof(float) * nq), lse;
    long long off[N];
    for (int r = 0; r < N; r++) {
        off[r] = (long long)(slot[r] * per_slot);
        for (int h = 0; h < H; h++) {
            size_t qo = ((size_t)r * H + h) * D, ko = (size_t)off[r] + (size_t)(h / (H / Hkv)) * D;
            attention_head_forward(o + qo, &lse, q + qo, k + ko, v + ko, H * D, kd, 1, pos[r] + 1, D,
                                   1.0f / sqrtf((float)D));
        }
    }
    gpu_ptr d_k = ck_up(k, nk, GPU_F32), d_v = ck_up(v, nk, GPU_F32), d_q = ck_up(q, nq, GPU_F32);
    gpu_ptr d_o = ck_poisoned(nq, GPU_F32), d_pos = ck_up_i32(pos, N), d_off = 0;
    tempo_error e;
    CHECK(gpu_alloc(ck_gpu, &d_off, sizeof off, "kv_off", &e) == 0 &&
          gpu_upload(ck_gpu, d_off, off, sizeof off, &e) == 0);
    cuda_attention_decode(ck_gpu, d_o, d_q, d_k, d_v, d_off, d_pos, N, H, Hkv, D, kd);
    float *go = ck_down(d_o, nq, GPU_F32);
    char name[96];
    snprintf(name, sizeof name, "attention decode H%d/%d D%d over %d positions", H, Hkv, D, cap);
    ck_report(name, ck_err(go, o, nq), TOL_F32);
    ck_sync();
    gpu_ptr ps[] = {d_k, d_v, d_q, d_o, d_pos, d_off};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) gpu_free(ck_gpu, ps[i]);
    free(k); free(v); free(q); free(o); free(go);
}

/* the head's row pass against lm_head.h's row math in double */
static void check_cross_entropy(gpu_dtype t, float cap, int eval, float beta, int V)
{
    int R = 9;
    size_t n = (size_t)R * V;
    float *z = ck_random(n, -4, 4), *mixb = ck_random(R, 0.01f, 0.5f);
    int32_t tgt[9];
    for (int r = 0; r < R; r++) tgt[r] = (r * 37 + 11) % V;
    float *loss = malloc(sizeof(float) * R), *top = malloc(sizeof(float) * R), *dz = malloc(sizeof(float) * n);
    float *lnorm = malloc(sizeof(float) * R);
    int32_t topid[9];
    float scale = 0.125f, mix_a = 0.6f;
    for (int r = 0; r < R; r++) {
        const float *zr = z + (size_t)r * V;
        double mx = -INFINITY, s = 0;
        int arg = 0;
        double *zc = malloc(sizeof(double) * V);
        for (int v = 0; v < V; v++) {
            zc[v] = cap > 0 ? cap * tanh(zr[v] / cap) : zr[v];
            if (zc[v] > mx) { mx = zc[v]; arg = v; }
        }
        for (int v = 0; v < V; v++) s += exp(zc[v] - mx);
        double lse = mx + log(s);
        loss[r] = (float)(lse - zc[tgt[r]]);
        top[r] = (float)(mx - lse);
        topid[r] = arg;
        double s2 = 0;
        for (int v = 0; v < V; v++) s2 += exp(beta * (zc[v] - lse));
        lnorm[r] = beta == 1.0f ? 0.0f : (float)(-log(s2));
        double sc = scale;
        if (!eval) {
            double ap = mix_a * exp(zc[tgt[r]] - lse);
            sc *= ap / (ap + mixb[r]);
        }
        for (int v = 0; v < V; v++) {
            double d = exp(zc[v] - lse) - (v == tgt[r]);
            if (cap > 0) d *= 1 - (zc[v] / cap) * (zc[v] / cap);
            dz[(size_t)r * V + v] = (float)(d * sc);
        }
        free(zc);
    }
    gpu_ptr d_z = ck_up(z, n, GPU_F32), d_t = ck_up_i32(tgt, R), d_mix = ck_up(mixb, R, GPU_F32);
    gpu_ptr d_loss = ck_poisoned(R, GPU_F32), d_top = ck_poisoned(R, GPU_F32), d_id = ck_poisoned(R, GPU_F32);
    gpu_ptr d_ln = ck_poisoned(R, GPU_F32), d_dz = eval ? 0 : ck_poisoned(n, t);
    cuda_cross_entropy_rows(ck_gpu, t, d_z, d_t, d_loss, d_top, eval ? d_id : 0, eval ? d_ln : 0, beta, d_dz,
                            eval ? 0 : d_mix, mix_a, R, V, cap, scale);
    float *gl = ck_down(d_loss, R, GPU_F32), *gt = ck_down(d_top, R, GPU_F32);
    char name[96];
    snprintf(name, sizeof name, "cross-entropy loss %s V %d cap %g%s", ck_tname(t), V, cap, eval ? " eval" : "");
    ck_report(name, ck_err(gl, loss, R), TOL_F32);
    snprintf(name, sizeof name, "cross-entropy top_logprob V %d cap %g", V, cap);
    ck_report(name, ck_err(gt, top, R), TOL_F32);
    if (eval) {
        int32_t gid[9];
        tempo_error e;
        gpu_download(ck_gpu, gid, d_id, sizeof gid, &e);
        ck_report("cross-entropy top id", memcmp(gid, topid, sizeof gid) ? 1.0 : 0.0, 0);
        float *gn = ck_down(d_ln, R, GPU_F32);
        snprintf(name, sizeof name, "cross-entropy log_norm V %d beta %g", V, beta);
        ck_report(name, ck_err(gn, lnorm, R), TOL_F32);
        free(gn);
    } else {
        float *gd = ck_down(d_dz, n, t);
        snprintf(name, sizeof name, "cross-entropy dz (mixture) %s V %d cap %g", ck_tname(t), V, cap);
        ck_report(name, ck_err(gd, dz, n), ck_tol(t));
        free(gd);
    }
    ck_sync();
    gpu_ptr ps[] = {d_z, d_t, d_mix, d_loss, d_top, d_id, d_ln, d_dz};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) gpu_free(ck_gpu, ps[i]);
    free(z); free(mixb); free(loss); free(top); free(dz); free(lnorm); free(gl); free(gt);
}

/* AdamW over several tensors of one buffer in one launch, each group its own
 * rates, against optim_kernel_adamw tensor by tensor (bitwise); the gaps
 * between the tensors stay as they were */
static void check_adamw(void)
{
    enum { NT = 5 };
    size_t numel[NT] = {3001, 1, 40000, 17, 700}, gap = 13, total = gap;
    int32_t group[NT] = {0, 2, 3, 1, 2};
    long long offs[NT], nl[NT];
    for (int t = 0; t < NT; t++) {
        offs[t] = (long long)total;
        nl[t] = (long long)numel[t];
        total += numel[t] + gap;
    }
    float *p = ck_random(total, -1, 1), *g = ck_random(total, -1, 1), *m = ck_random(total, -0.1f, 0.1f);
    float *v = ck_random(total, 0, 0.01f);
    float step[4] = {3e-3f / 0.19f, 1e-3f / 0.19f, 5e-3f / 0.19f, 2e-3f / 0.19f};
    float decay[4] = {1.0f, 1.0f - 1e-3f * 0.1f, 1.0f, 1.0f - 2e-3f * 0.1f};
    optim_adamw_coeffs c = {.beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .inv_bc2 = 1.0f / 0.0975f, .gscale = 0.7f};
    gpu_ptr dp = ck_up(p, total, GPU_F32), dg = ck_up(g, total, GPU_F32), dm = ck_up(m, total, GPU_F32);
    gpu_ptr dv = ck_up(v, total, GPU_F32), doffs = 0, dnum = 0, dgrp = ck_up_i32(group, NT);
    tempo_error e;
    gpu_alloc(ck_gpu, &doffs, sizeof offs, "offsets", &e);
    gpu_alloc(ck_gpu, &dnum, sizeof nl, "sizes", &e);
    gpu_upload(ck_gpu, doffs, offs, sizeof offs, &e);
    gpu_upload(ck_gpu, dnum, nl, sizeof nl, &e);
    cuda_adamw_tensors(ck_gpu, dp, dg, dm, dv, doffs, dnum, dgrp, NT, 40000, &c, step, decay);
    for (int t = 0; t < NT; t++) {
        optim_adamw_coeffs k = c;
        k.step = step[group[t]];
        k.decay = decay[group[t]];
        size_t o = (size_t)offs[t];
        optim_kernel_adamw(p + o, g + o, m + o, v + o, numel[t], &k);
    }
    float *gp = ck_down(dp, total, GPU_F32), *gm = ck_down(dm, total, GPU_F32), *gv = ck_down(dv, total, GPU_F32);
    int same = !memcmp(gp, p, total * 4) && !memcmp(gm, m, total * 4) && !memcmp(gv, v, total * 4);
    ck_report("adamw, 5 tensors in 4 groups (bitwise)", same ? 0.0 : ck_err(gp, p, total) + 1e-30, 0);
    ck_sync();
    gpu_ptr ps[] = {dp, dg, dm, dv, doffs, dnum, dgrp};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) gpu_free(ck_gpu, ps[i]);
    free(p); free(g); free(m); free(v); free(gp); free(gm); free(gv);
}

/* Muon's three batched launches (gpu_ops.h) against optimizer.c's formulas:
 * count rows x cols matrices at offsets with gaps between them (the gaps
 * must stay as they were), more values than one momentum chunk, shapes off
 * the transposing tile's 32 */
static void check_muon_batch(gpu_dtype t, int rows, int cols, int count)
{
    size_t rc = (size_t)rows * cols, gap = 37, total = (size_t)count * (rc + gap) + gap;
    float mu = 0.95f, gs = 0.8f, step = 0.02f, decay = 0.999f;
    float *p = ck_random(total, -1, 1), *g = ck_random(total, -1, 1), *buf = ck_random(total, -0.1f, 0.1f);
    float *upd = ck_random(total, -1, 1); /* the gaps' values; the matrices' are overwritten */
    long long offs[8];
    for (int k = 0; k < count; k++) offs[k] = (long long)(gap + (size_t)k * (rc + gap));
    gpu_ptr dp = ck_up(p, total, GPU_F32), dg = ck_up(g, total, GPU_F32), db = ck_up(buf, total, GPU_F32);
    gpu_ptr du = ck_up(upd, total, GPU_F32), doffs = 0, dsum = 0;
    gpu_ptr part = ck_poisoned(cuda_muon_partials(rc, count) * 2, GPU_F32);
    tempo_error e;
    gpu_alloc(ck_gpu, &doffs, sizeof offs, "offsets", &e);
    gpu_upload(ck_gpu, doffs, offs, sizeof offs, &e);
    gpu_alloc(ck_gpu, &dsum, sizeof(double) * (size_t)count, "sums", &e);
    /* 1. momentum, update and its sums of squares */
    cuda_muon_momentum_sumsq(ck_gpu, dsum, part, db, du, dg, doffs, count, rc, mu, gs);
    double ref_sum[8] = {0}, got_sum[8];
    for (int k = 0; k < count; k++)
        for (size_t f = 0; f < rc; f++) {
            size_t i = (size_t)offs[k] + f;
            float gi = g[i] * gs;
            buf[i] = mu * buf[i] + gi;
            upd[i] = gi + mu * buf[i];
            ref_sum[k] += (double)upd[i] * upd[i];
        }
    float *gb = ck_down(db, total, GPU_F32), *gu = ck_down(du, total, GPU_F32);
    gpu_download(ck_gpu, got_sum, dsum, sizeof(double) * (size_t)count, &e);
    char name[96];
    snprintf(name, sizeof name, "muon momentum %dx%d x%d (bitwise)", rows, cols, count);
    ck_report(name, memcmp(gb, buf, total * 4) || memcmp(gu, upd, total * 4) ? 1.0 : 0.0, 0);
    double serr = 0;
    for (int k = 0; k < count; k++) serr = fmax(serr, fabs(got_sum[k] - ref_sum[k]) / ref_sum[k]);
    snprintf(name, sizeof name, "muon update's sums of squares %dx%d", rows, cols);
    ck_report(name, serr, 1e-12);
    /* 2. the gather: X [count][rows * cols] scaled, transposed when rows > cols */
    int tr = rows > cols;
    gpu_ptr dX = ck_poisoned((size_t)count * rc, t);
    cuda_ns_gather(ck_gpu, t, dX, du, doffs, count, rows, cols, dsum);
    float *X = malloc(sizeof(float) * (size_t)count * rc);
    for (int k = 0; k < count; k++) {
        float inv = (float)(1.0 / (sqrt(got_sum[k]) + 1e-7));
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) {
                size_t at = tr ? (size_t)j * rows + i : (size_t)i * cols + j;
                X[(size_t)k * rc + at] = upd[(size_t)offs[k] + (size_t)i * cols + j] * inv;
            }
    }
    if (t == GPU_BF16) ck_round_bf16(X, (size_t)count * rc);
    float *gX = ck_down(dX, (size_t)count * rc, t);
    snprintf(name, sizeof name, "muon gather %s %dx%d%s (exact)", ck_tname(t), rows, cols, tr ? " transposed" : "");
    ck_report(name, ck_err(gX, X, (size_t)count * rc), 0);
    /* 3. the step from a result X' (fresh values of type t) */
    float *Y = ck_random((size_t)count * rc, -1, 1);
    if (t == GPU_BF16) ck_round_bf16(Y, (size_t)count * rc);
    gpu_ptr dY = ck_up(Y, (size_t)count * rc, t);
    cuda_muon_apply(ck_gpu, t, dp, du, dY, doffs, count, rows, cols, step, decay);
    for (int k = 0; k < count; k++)
        for (int i = 0; i < rows; i++)
            for (int j = 0; j < cols; j++) {
                size_t at = tr ? (size_t)j * rows + i : (size_t)i * cols + j;
                size_t pi = (size_t)offs[k] + (size_t)i * cols + j;
                p[pi] = p[pi] * decay - step * Y[(size_t)k * rc + at];
                upd[pi] = 0;
            }
    float *gp = ck_down(dp, total, GPU_F32), *gz = ck_down(du, total, GPU_F32);
    snprintf(name, sizeof name, "muon step %s %dx%d (bitwise, update zeroed)", ck_tname(t), rows, cols);
    ck_report(name, memcmp(gp, p, total * 4) || memcmp(gz, upd, total * 4) ? 1.0 : 0.0, 0);
    ck_sync();
    gpu_ptr ps[] = {dp, dg, db, du, doffs, dsum, part, dX, dY};
    for (size_t i = 0; i < sizeof ps / sizeof *ps; i++) gpu_free(ck_gpu, ps[i]);
    free(p); free(g); free(buf); free(upd); free(gb); free(gu); free(X); free(gX); free(Y); free(gp); free(gz);
}

/* sums of n values: more than 32 partial sums past 524,288 (the finish's lanes loop) */
static void check_big_sum(size_t n)
{
    float *x = ck_random(n, -1, 1);
    gpu_ptr dx = ck_up(x, n, GPU_F32), part = ck_poisoned(cuda_sum_partials(n) * 2, GPU_F32), out = 0;
    tempo_error e;
    gpu_alloc(ck_gpu, &out, sizeof(double), "sum", &e);
    cuda_sum(ck_gpu, out, part, dx, n, 1);
    double got = NAN, ref = optim_kernel_sum_squares(x, n);
    gpu_download(ck_gpu, &got, out, sizeof got, &e);
    char name[80];
    snprintf(name, sizeof name, "sum of squares of %zu (double)", n);
    ck_report(name, fabs(got - ref) / ref, 1e-12);
    ck_sync();
    gpu_free(ck_gpu, dx); gpu_free(ck_gpu, part); gpu_free(ck_gpu, out);
    free(x);
}

static void check_sums(void)
{
    size_t n = 40000;
    check_big_sum(16384 * 40 + 5);
    float *x = ck_random(n, -1, 1);
    gpu_ptr dx = ck_up(x, n, GPU_F32), out = ck_poisoned(1, GPU_F32), part = ck_poisoned(cuda_sum_partials(n) * 2, GPU_F32);
    gpu_free(ck_gpu, out);
    tempo_error e;
    gpu_alloc(ck_gpu, &out, sizeof(double), "sum", &e);
    cuda_sum(ck_gpu, out, part, dx, n, 1);
    double got = NAN, ref = optim_kernel_sum_squares(x, n);
    gpu_download(ck_gpu, &got, out, sizeof got, &e);
    ck_report("sum of squares (double)", fabs(got - ref) / ref, 1e-12);
    cuda_sum(ck_gpu, out, part, dx, n, 0);
    gpu_download(ck_gpu, &got, out, sizeof got, &e);
    double s = 0;
    for (size_t i = 0; i < n; i++) s += x[i];
    ck_report("sum (double)", fabs(got - s) / fabs(s), 1e-10);
    /* scale and the bf16 conversion */
    cuda_scale(ck_gpu, dx, n, 0.5f);
    float *gx = ck_down(dx, n, GPU_F32), *half = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) half[i] = x[i] * 0.5f;
    ck_report("scale", ck_err(gx, half, n), 0);
    gpu_ptr db = ck_poisoned(n, GPU_BF16);
    cuda_convert_bf16(ck_gpu, db, dx, n);
    float *gb = ck_down(db, n, GPU_BF16);
    ck_round_bf16(half, n);
    ck_report("convert to bf16 (round to nearest even)", ck_err(gb, half, n), 0);
    /* a tail past the pieces of 8, and buffers not 16-byte aligned (one value in): the value-by-value path */
    for (int shift = 0; shift < 2; shift++) {
        size_t m = n - 5 - (size_t)shift;
        gpu_ptr db2 = ck_poisoned(n, GPU_BF16);
        cuda_convert_bf16(ck_gpu, db2 + 2 * (size_t)shift, dx + 4 * (size_t)shift, m);
        float *g2 = ck_down(db2, n, GPU_BF16);
        char name[80];
        snprintf(name, sizeof name, "convert to bf16, %zu values from %d", m, shift);
        ck_report(name, ck_err(g2 + shift, half + shift, m), 0);
        CHECK(isnan(g2[shift + m])); /* nothing written past the end */
        gpu_free(ck_gpu, db2);
        free(g2);
    }
    ck_sync();
    gpu_free(ck_gpu, dx); gpu_free(ck_gpu, out); gpu_free(ck_gpu, part); gpu_free(ck_gpu, db);
    free(x); free(gx); free(half); free(gb);
}

static void check_gemm(gpu_dtype t, int ta, int tb, int M, int N, int K, float beta, int separate_d)
{
    size_t na = (size_t)M * K, nb = (size_t)K * N, nc = (size_t)M * N;
    float *A = ck_random(na, -1, 1), *B = ck_random(nb, -1, 1), *C = ck_random(nc, -1, 1);
    if (t == GPU_BF16) {
        ck_round_bf16(A, na); ck_round_bf16(B, nb);
    }
    int lda = ta ? M : K, ldb = tb ? K : N;
    gpu_ptr dA = ck_up(A, na, t), dB = ck_up(B, nb, t), dC = ck_up(C, nc, GPU_F32);
    gpu_ptr dD = separate_d ? ck_poisoned(nc, GPU_F32) : dC;
    gpu_mat mA = {dA, t, lda}, mB = {dB, t, ldb}, mC = {dC, GPU_F32, N};
    gpu_gemm_d(ck_gpu, ta, tb, M, N, K, 0.75f, mA, mB, beta, mC, dD, GPU_MATH_F32);
    float *ref = malloc(sizeof(float) * nc);
    memcpy(ref, C, sizeof(float) * nc);
    gemm_f32(ta, tb, M, N, K, A, lda, B, ldb, 0.0f, ref, N);
    for (size_t i = 0; i < nc; i++) ref[i] = 0.75f * ref[i] + beta * C[i];
    float *got = ck_down(dD, nc, GPU_F32);
    char name[96];
    snprintf(name, sizeof name, "gemm %s ta%d tb%d %dx%dx%d beta %g%s", ck_tname(t), ta, tb, M, N, K, beta,
             separate_d ? " D" : "");
    ck_report(name, ck_err(got, ref, nc), ck_tol(t));
    ck_sync();
    gpu_free(ck_gpu, dA); gpu_free(ck_gpu, dB); gpu_free(ck_gpu, dC);
    if (separate_d) gpu_free(ck_gpu, dD);
    free(A); free(B); free(C); free(ref); free(got);
}

/* Every check, at shapes small enough for the emulator and uneven enough to
 * hit every edge (partial tiles, GQA, head dims below each variant). */
static inline void run_kernel_checks(gpu *g)
{
    ck_gpu = g;
    const char *s = getenv("TEMPO_TEST_SEED");
    ck_seed = s && *s ? strtoull(s, NULL, 10) : 1;
    check_embedding();
    for (int t = 0; t < 2; t++) {
        gpu_dtype dt = (gpu_dtype)t;
        check_rmsnorm_one(GPU_F32, dt, 37, 96);
        check_rmsnorm_one(GPU_F32, dt, 21, 90); /* a width not a multiple of 4: the plain path */
        check_rmsnorm_one(GPU_F32, dt, 9, 1020); /* the row in registers, its last piece partial */
        check_rmsnorm_one(GPU_F32, dt, 9, 1028); /* past the registers: two reads */
        if (dt == GPU_BF16) check_rmsnorm_one(GPU_BF16, GPU_BF16, 37, 64);
        check_rmsnorm_backward(dt, 150, 72, 0);
        check_rmsnorm_backward(dt, 150, 72, 1);
        check_rmsnorm_backward(dt, 40, 30, 1);
        check_rmsnorm_backward(dt, 2500, 40, 1); /* 79 runs of rows: the gain's reduce loops */
        check_rmsnorm_backward(dt, 45, 3076, 1); /* past the one-pass kernel's shared memory: two passes */
        check_rmsnorm_backward(dt, 45, 3072, 0); /* the one pass's widest rows */
        check_rmsnorm_backward(dt, 70, 1020, 1); /* eight pieces a lane, the last partial */
        check_rope(dt, 2, 37, 16, 3, 0);
        check_rope(dt, 2, 37, 10, 3, 0); /* D/2 odd: one pair per thread */
        check_rope(dt, 2, 37, 128, 9, 5); /* 288 threads' work: a block's threads loop; positions from 5 */
        check_rope(dt, 65537, 1, 2, 1, 3); /* more sequences than a grid's y extent: two launches */
        check_activations(dt);
        check_attention(dt, 2, 70, 4, 2, 16);
        check_attention(dt, 1, 130, 2, 2, 64);
        check_attention(dt, 1, 40, 2, 1, 80);
        check_attention(dt, 1, 33, 2, 1, 12); /* a head dim not a multiple of 8: no 16-byte copies */
        check_cross_entropy(dt, 0, 0, 1, 300);
        check_cross_entropy(dt, 15, 0, 1, 300);
        check_cross_entropy(dt, 15, 0, 1, 5000); /* the row in registers, 160 threads */
        check_cross_entropy(dt, 15, 0, 1, 20000); /* past the registers: three passes */
        check_cross_entropy(dt, 0, 0, 1, 8192); /* the registers' largest row */
        check_cross_entropy(dt, 0, 0, 1, 8193);
        check_gemm(dt, 0, 1, 33, 40, 48, 0, 0);
        check_gemm(dt, 0, 0, 33, 40, 48, 1, 0);
        check_gemm(dt, 1, 0, 24, 40, 57, 1, 0);
        check_gemm(dt, 1, 1, 17, 9, 31, 0.5f, 1);
    }
    check_attention_decode(4, 2, 16, 40);
    check_attention_decode(2, 2, 64, 300); /* more keys than threads */
    check_attention_decode(3, 1, 12, 9);
    check_cross_entropy(GPU_F32, 0, 1, 1.15f, 300);
    check_cross_entropy(GPU_F32, 0, 1, 1.0f, 300);
    check_cross_entropy(GPU_F32, 15, 1, 1.15f, 5000);
    check_cross_entropy(GPU_F32, 15, 1, 1.15f, 20000);
    check_adamw();
    for (int k = 0; k < 2; k++) {
        gpu_dtype dt = k ? GPU_BF16 : GPU_F32;
        check_muon_batch(dt, 100, 67, 3); /* transposed; two momentum chunks a matrix */
        check_muon_batch(dt, 67, 100, 3);
        check_muon_batch(dt, 32, 32, 2);  /* whole tiles, one chunk */
    }
    check_muon_batch(GPU_F32, 300, 40, 1);
    check_muon_batch(GPU_F32, 300, 500, 2); /* 37 chunks a matrix: the finish's lanes loop */
    check_sums();
}

#endif
