/* gemm.h - fp32 matrix multiply, the one interface every backend implements.
 *
 *   C[M,N] = beta * C + op(A)[M,K] * op(B)[K,N]      (all row-major)
 *
 * op(X) = X when trans_x == 0, X^T when trans_x == 1. When trans_a == 0, A is
 * stored M x K with row stride lda; when 1, it is stored K x M. Likewise B is
 * K x N (trans_b == 0) or N x K (trans_b == 1). beta is 0 (overwrite; C's old
 * contents may be garbage, even NaN) or 1 (accumulate, e.g. weight gradients).
 * Threads: gemm_f32 uses the OpenMP team (all threads) when called from serial
 * code; called inside a parallel region (any, even a team of one) it runs on
 * the calling thread, so callers may share independent GEMMs among threads.
 * Results are deterministic for a given thread count. */
#ifndef TEMPO_GEMM_H
#define TEMPO_GEMM_H

#include <stddef.h>

#include "core/cpu_info.h"
#include "core/error.h"

void gemm_f32(int trans_a, int trans_b, int M, int N, int K,
              const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc);

/* The plain triple loop, the reference that tests compare against. */
void gemm_f32_ref(int trans_a, int trans_b, int M, int N, int K,
                  const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc);

/* ---- The blocked implementation behind gemm_f32, with its configuration. ----
 *
 * BLIS-style: each NC-column panel of op(B) is packed once (shared by the
 * threads; where C is short or square, each thread packs the columns it
 * owns), as deep in K as its L3 share allows (in KC-deep slices), then
 * blocks of MC rows of op(A) are packed per thread, slice by slice, and
 * multiplied micro-tile by micro-tile (GEMM_MR x GEMM_NR = 6 x 16,
 * kernels/cpu/gemm_kernel.h).
 *
 * Determinism: each C element is summed over k in KC slices in increasing
 * order, each slice in increasing k inside the micro-kernel. Only KC (from the
 * L1 size and K) shapes that order, never the thread count or which thread
 * takes which block, so results are bitwise identical for any thread count
 * (stronger than the promise above) on a given kernel path. The AVX2 path
 * fuses multiply-adds and the portable one does not, so the two paths differ
 * in the last bits; the AVX-512 path runs 24 x 16 and 12 x 16 tiles (4 or 2
 * micro-panels at once) with the AVX2 kernel's sums, so it gives the AVX2
 * path's bits.
 *
 * Cost of the convenience entry point: gemm_f32 calls gemm_config_init on every
 * call (~0.14 ms here: sysfs reads are slow in this VM) and allocates its
 * packing buffers per call (the B panel, up to GEMM_L3_SHARE_B of L3, plus
 * MC x KC per thread); hot callers hold a gemm_context (config + reused
 * workspace) and call gemm_f32_ctx: no query, no allocation, no page faults
 * in steady state. */
typedef struct {
    cpu_kernel_path path;  /* which micro-kernels (avx512: the AVX2 ones and the wide tiles) */
    int kc;   /* depth of a packed slice: a KC x GEMM_NR B micro-panel fills
                 GEMM_L1_SHARE_B of L1d and is reused from L1 by every A panel;
                 in the bf16 mode twice kc_fp32 (up to 1024): a word holds two k,
                 so the slice takes the same bytes */
    int kc_fp32;   /* kc of the fp32 mode (gemm_config_from_cpu) */
    int mc;   /* rows per packed A block: MC x KC fills GEMM_L2_SHARE_A of L2 */
    int nc;   /* columns per packed B panel: KC x NC fills GEMM_L3_SHARE_B of L3 */
    long b_panel_bytes;  /* that share: a call packs as many KC slices of its
                            (possibly narrower) B panel at once as fit in it */
    int direct_a;  /* avx512 only: 24-row tiles read op(A) where it is stored
                      instead of from a packed copy, wherever its row stride
                      spreads the rows over the cache sets (the same bits; set
                      by gemm_config_from_cpu, cleared to test the packed path) */
    int own_b;     /* a team may split C by columns alone, each thread packing
                      its own columns of B (the same bits; set by
                      gemm_config_from_cpu, cleared to test the shared split) */
    int wide_fma;  /* path avx512 on 512-bit FMA units (cpu_info.fma512_full): a thread's
                      share takes half the time, so a second thread pays off only
                      from 4 x as many multiply-adds; the split only, never the bits */
    int can_bf16;  /* the CPU has AVX-512 BF16 and path is avx512 (gemm_config_from_cpu) */
    int bf16;      /* the bf16 mode (gemm_config_set_bf16): operands rounded to
                      bfloat16 as they are packed (to nearest even, denormals
                      to zero), products summed in fp32 by vdpbf16ps, two per
                      instruction. Deterministic as the fp32 mode (the sums
                      follow the KC slices, each slice's pairs in order), but
                      not its bits: about 3 significant digits per operand.
                      A gemm_packed_b takes the mode of the config it is
                      reserved with. 0 by default */
} gemm_config;

/* Shares of each cache level the blocking is sized to (the rest holds the
 * other operand's stream and C). */
#define GEMM_L1_SHARE_B 0.5
#define GEMM_L2_SHARE_A 0.5
#define GEMM_L3_SHARE_B 0.25

/* Derive the blocking from ci's cache sizes, for the given kernel path.
 * kc is a multiple of 8 in [16, 1024], mc a multiple of GEMM_MR >= GEMM_MR,
 * nc a multiple of GEMM_NR >= GEMM_NR. */
void gemm_config_from_cpu(gemm_config *cfg, const cpu_info *ci, cpu_kernel_path path);

/* Turn cfg's bf16 mode on or off: fails, naming why, where the CPU or the
 * kernel path cannot (cfg->can_bf16 == 0). */
int gemm_config_set_bf16(gemm_config *cfg, int on, tempo_error *err);

/* cpu_info_query + cpu_kernel_path_select (TEMPO_KERNELS) + gemm_config_from_cpu. */
void gemm_config_init(gemm_config *cfg);

/* How gemm_f32_with(cfg, ...) splits an M x N x K product when `threads`
 * threads are available: returns the threads it uses (fewer when the
 * product is too small to pay for waking another), and sets *owns_b when
 * each thread owns a column chunk of C and packs its own part of B
 * (cfg->own_b) rather than sharing one packed B. For tests and benches. */
int gemm_split(const gemm_config *cfg, int M, int N, int K, int threads, int *owns_b);

/* gemm_f32 with an explicit configuration (same contract as gemm_f32).
 * cfg is only read: one config may be shared by any number of threads.
 * Allocates its packing buffers per call (see gemm_context). */
void gemm_f32_with(const gemm_config *cfg, int trans_a, int trans_b, int M, int N, int K,
                   const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc);

/* A config plus a packing workspace that grows to the largest product and is
 * reused: what a hot caller (the trainer) holds. A fresh multi-MiB buffer
 * per call costs a page fault per 4 KiB (glibc returns large blocks to the
 * OS): ~2,000 faults, 1-2 ms, for the 8 MiB B panel of a 256x256x8192
 * weight gradient. One context must not serve two calls at the same time
 * (use one per thread that calls GEMMs concurrently). */
typedef struct {
    gemm_config cfg;
    float *work;          /* 64-byte aligned, NULL until first use */
    size_t work_floats;   /* its capacity */
} gemm_context;

/* gemm_config_init (~0.14 ms here) and an empty workspace. */
void gemm_context_init(gemm_context *ctx);
void gemm_context_free(gemm_context *ctx);

/* n contexts for n threads that run GEMMs side by side, with empty
 * workspaces: configured from cfg when given (e.g. to match packings made
 * with it), else by one gemm_config_init for all. NULL when out of memory.
 * Free with gemm_context_array_free (NULL is fine). */
gemm_context *gemm_context_array_new(int n, const gemm_config *cfg);
void gemm_context_array_free(gemm_context *a, int n);

/* Grow ctx's workspace (never shrink it) so that gemm_f32_ctx of an
 * M x N x K product (either trans_a, trans_b) allocates nothing when called
 * with `threads` threads available: omp_get_max_threads() from serial code,
 * 1 inside a parallel region. For callers whose contexts meet products in an
 * order decided at run time (a dynamic schedule), so that the first call is
 * not the one that grows it. Returns 0, or -1 when out of memory (ctx is
 * left as it was). */
int gemm_context_reserve(gemm_context *ctx, int M, int N, int K, int threads);

/* gemm_f32 through ctx (same contract; bitwise the result of gemm_f32_with
 * with ctx->cfg): no allocation once the workspace is large enough. */
void gemm_f32_ctx(gemm_context *ctx, int trans_a, int trans_b, int M, int N, int K,
                  const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc);

/* ---- op(B) packed once, multiplied by many A ----
 * For a B used in many products (the output head's weights across token
 * chunks, weights during inference): pack once, then each product skips
 * packing B and its barrier. Results are bitwise those of gemm_f32_with with
 * the same config and trans_b. The packed copy is not updated when B changes:
 * pack again (no allocation when the size did not grow). */
typedef struct {
    int trans_b, K, N;   /* op(B) is K x N */
    int kc, nc;          /* the slicing it was packed with */
    int bf16;            /* packed for the bf16 mode (the config's, at reserve) */
    float *data;         /* NULL until packed; owned */
    size_t floats;       /* capacity of data */
} gemm_packed_b;

/* Pack op(B) (K x N; stored as in gemm_f32) into pb, which starts zeroed
 * ({0}) or holds an earlier packing. Uses the OpenMP team like gemm_f32.
 * Fails only on K or N < 1 or out of memory. */
int gemm_packed_b_pack(gemm_packed_b *pb, const gemm_config *cfg, int trans_b, int K, int N,
                       const float *B, int ldb, tempo_error *err);
void gemm_packed_b_free(gemm_packed_b *pb);

/* gemm_packed_b_pack in two halves, for a team that packs B and then uses
 * it in one parallel region: reserve (from serial code: sizes pb for op(B)
 * of K x N and records the slicing), then every thread of the innermost
 * team calls fill_team with the same arguments (a worksharing loop: never
 * from threads that each pack their own B); it returns when the whole
 * packing is done (the team's barrier). The same packing as
 * gemm_packed_b_pack. */
int gemm_packed_b_reserve(gemm_packed_b *pb, const gemm_config *cfg, int trans_b, int K, int N,
                          tempo_error *err);
void gemm_packed_b_fill_team(const gemm_packed_b *pb, const gemm_config *cfg, const float *B, int ldb);

/* C[M, pb->N] = beta * C + op(A)[M, pb->K] * op(B), op(B) from pb; cfg as
 * given to gemm_packed_b_pack (its path and mc are used; the slicing is
 * pb's). Allocates the A blocks per call (~0.5 MiB at 2 threads). */
void gemm_f32_packed_b(const gemm_config *cfg, int trans_a, int M, const float *A, int lda,
                       const gemm_packed_b *pb, float beta, float *C, int ldc);
/* The same with ctx's config and reused workspace (no allocation). */
void gemm_f32_packed_b_ctx(gemm_context *ctx, int trans_a, int M, const float *A, int lda,
                           const gemm_packed_b *pb, float beta, float *C, int ldc);

#endif
