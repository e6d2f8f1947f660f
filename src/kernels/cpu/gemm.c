/* gemm.c - fp32 GEMM (see gemm.h): the reference triple loop, the blocking
 * derived from the caches, and the BLIS-style loops around the micro-kernel
 * with their OpenMP work split. Packing lives in gemm_pack.c, the
 * micro-kernels in gemm_kernel_*.c.
 *
 * On AVX-512 (cfg->direct_a), a block's whole 24-row groups skip the A
 * packing: their tiles read op(A) where it is stored (gemm_kernel.h), each
 * group across all of the item's B micro-panels before the next, whose
 * lines are prefetched meanwhile; only the ragged last rows are packed. With
 * K or N of d_model = 128 the packing cost a tenth of a product's time (a
 * 24 x 128 panel copied and transposed for 8 micro-tiles' use); measured on
 * cpu-default's GEMMs at 1 thread, flop-weighted 187 -> 206 GFLOP/s (eight
 * alternations). Not where a row stride maps the rows to a few cache sets
 * (direct_a_spreads): there the packed copy reads faster.
 *
 * Loop nest, per call (threads share one team):
 *   for jc in N by nc:                      B panel columns
 *     for kb0 in K by kb:                   B panel depth (kb x nc sized for L3)
 *       pack op(B)[kb0.., jc..] -> bpack    (omp for static over 32-row units;
 *                                           skipped when B comes packed: gemm_packed_b)
 *       for item (mb, nb):                  (omp for dynamic: blocks of C)
 *         for pc in the panel by kc:        depth slice, sized for L1
 *           pack op(A)[ic.., pc..] -> apack (per thread, MC x KC, sized for L2)
 *           for jr in the item's columns by NR, ir in its rows by MR:
 *             micro-kernel(kc, A panel, B panel) -> C tile
 * Items split C over both M (MC blocks) and N (chunks of the panel) so that
 * skinny shapes still give every thread work. Where C is short or square,
 * each thread owns a column chunk instead and packs its B itself, slice by
 * slice (own_b_run, plan_items says why). Who computes an item never
 * changes its sums, so the dynamic split keeps results deterministic. */
#include "kernels/cpu/gemm.h"

#include <omp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/gemm_kernel.h"
#include "kernels/cpu/gemm_pack.h"

/* Below this many multiply-adds per thread, a second thread costs more to
 * wake than it saves. AVX2: ~20 us of work at the 1-thread peak; measured
 * at 2 threads on 192x192x192: 86 GFLOP/s at 1 << 22 (one thread), 101-111
 * at 1 << 20 (two). AVX-512 on 512-bit FMA units (cfg->wide_fma) does a
 * thread's share in half the time, while waking the other thread costs the
 * same (a passive libgomp worker: 32-40 us a region on this paravirtualised
 * host): 4 x as many. Measured on Zen 5, 2 threads against 1: 128x128x128
 * 113-118 against 153-165 GFLOP/s, 128x352x128 113 against 150, 512x512x512
 * 199-243 against 167-175. On Zen 4 (zmm FMAs on 256-bit pipes) the AVX2
 * figure holds: Muon's 128-wide products 104-105 GFLOP/s on one thread,
 * 124-193 on two. */
#define GEMM_MIN_FMAS_PER_THREAD (1L << 20)
#define GEMM_MIN_FMAS_PER_THREAD_AVX512 (1L << 22)
/* Aim for this many items per thread so the dynamic split can even out a
 * core slowed by other processes. */
#define GEMM_ITEMS_PER_THREAD 4
/* Items are not split below this many micro-panels (96 rows, 256 columns)
 * to make more of them, and never below GEMM_MIN_BLOCK_PANELS. Measured on
 * 256x256x8192 (dW) at 2 threads: 2 items of 132 rows 131-138 GFLOP/s,
 * 8 items of 36 rows 77-92 (each item streams the whole B panel). */
#define GEMM_ITEM_MIN_PANELS 16
#define GEMM_MIN_BLOCK_PANELS 4
/* Rows of a B slice per packing work unit (a multiple of 8, the transpose). */
#define GEMM_PACK_B_ROWS 32

static inline int ceil_div(long a, long b) { return (int)((a + b - 1) / b); }
static inline int min_int(int a, int b) { return a < b ? a : b; }
static inline int max_int(int a, int b) { return a > b ? a : b; }

static inline float at(const float *X, int ld, int trans, int r, int c)
{
    return trans ? X[(size_t)c * ld + r] : X[(size_t)r * ld + c];
}

void gemm_f32_ref(int trans_a, int trans_b, int M, int N, int K,
                  const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = 0;
            for (int k = 0; k < K; k++)
                s += at(A, lda, trans_a, i, k) * at(B, ldb, trans_b, k, j);
            float *c = &C[(size_t)i * ldc + j];
            *c = beta != 0 ? beta * *c + s : s;
        }
}

void gemm_config_from_cpu(gemm_config *cfg, const cpu_info *ci, cpu_kernel_path path)
{
    const long fsize = (long)sizeof(float);
    cfg->path = path;
    long kc = (long)(ci->l1d_bytes * GEMM_L1_SHARE_B) / (GEMM_NR * fsize);
    kc = kc / 8 * 8;
    kc = kc < 16 ? 16 : kc > 1024 ? 1024 : kc;
    long mc = (long)(ci->l2_bytes * GEMM_L2_SHARE_A) / (kc * fsize);
    mc = mc / GEMM_MR * GEMM_MR;
    mc = mc < GEMM_MR ? GEMM_MR : mc > 1 << 16 ? 1 << 16 : mc;
    long nc = (long)(ci->l3_bytes * GEMM_L3_SHARE_B) / (kc * fsize);
    nc = nc / GEMM_NR * GEMM_NR;
    nc = nc < GEMM_NR ? GEMM_NR : nc > 1 << 20 ? 1 << 20 : nc;
    cfg->kc = cfg->kc_fp32 = (int)kc;
    cfg->mc = (int)mc;
    cfg->nc = (int)nc;
    cfg->b_panel_bytes = nc * kc * fsize;
    cfg->direct_a = path == CPU_KERNELS_AVX512;
    cfg->own_b = 1;
    cfg->wide_fma = path == CPU_KERNELS_AVX512 && ci->fma512_full;
    cfg->can_bf16 = cpu_kernel_path_bf16(ci, path);
    cfg->bf16 = 0;
}

int gemm_config_set_bf16(gemm_config *cfg, int on, tempo_error *err)
{
    if (on && !cfg->can_bf16)
        return tempo_fail(err, "gemm: bf16 products need AVX-512 BF16 and the avx512 kernel path (this "
                               "CPU or TEMPO_KERNELS gives %s%s)",
                          cpu_kernel_path_name(cfg->path),
                          cfg->path == CPU_KERNELS_AVX512 ? " without BF16" : "");
    if ((on != 0) != cfg->bf16) {
        cfg->bf16 = on != 0;
        /* twice as deep a slice in the same bytes: half the passes over C per product
         * (1024^3 on one Zen 4 thread: 149 -> 183 GFLOP/s) */
        cfg->kc = cfg->bf16 ? min_int(2 * cfg->kc_fp32, 1024) : cfg->kc_fp32;
    }
    return 0;
}

void gemm_config_init(gemm_config *cfg)
{
    cpu_info ci;
    cpu_info_query(&ci);
    gemm_config_from_cpu(cfg, &ci, cpu_kernel_path_select(&ci));
}

typedef void (*gemm_pack_a_fn)(int, const float *, int, int, int, int, int, float *);
typedef void (*gemm_wide_fn)(int, const float *, long, const float *, float *, long, int);
typedef void (*gemm_pack_b_fn)(int, const float *, int, int, int, int, int, int, int, float *);

/* Everything one call's threads share; read-only once the team starts
 * (the packed buffers are written only under the work split). */
typedef struct {
    gemm_microkernel_fn kernel;
    int wide;          /* AVX-512: full 16-column micro-tiles go 4 or 2 A micro-panels at a time */
    gemm_wide_fn wide24, wide12;   /* those tiles' kernels (fp32 or bf16) */
    int direct_a;      /* AVX-512: whole 24-row groups of op(A) read in place, not packed */
    gemm_pack_a_fn pack_a;
    gemm_pack_b_fn pack_b;
    int trans_a, trans_b, M, N, K;
    const float *A, *B;
    int lda, ldb, ldc;
    float *C;
    int store_first;   /* beta == 0: the first K slice overwrites C */
    int kc, nc, mc;    /* this call's slice depth, panel width, block rows */
    int kb;            /* depth of a packed B panel: a multiple of kc */
    int m_blocks, nw;  /* row blocks; columns per item (multiple of GEMM_NR) */
    int own_b;         /* thread t packs and multiplies column chunk t alone (own_b_run) */
    float *bpack;      /* kb x nc, shared: kb / kc slices of kc x nc */
    const float *bprepacked;  /* or all of op(B) packed (gemm_packed_b), kb = K */
    float *apack;      /* per thread: apack_stride floats each */
    size_t apack_stride;
} gemm_job;

/* The valid rows x cols of a full tile (GEMM_NR floats a row) into C. */
static void put_tile(float *c, long ldc, const float *tile, int rows, int cols, int accumulate)
{
    for (int i = 0; i < rows; i++) {
        float *ci = c + (size_t)i * ldc;
        const float *ti = tile + i * GEMM_NR;
        if (accumulate)
            for (int q = 0; q < cols; q++)
                ci[q] += ti[q];
        else
            for (int q = 0; q < cols; q++)
                ci[q] = ti[q];
    }
}

/* The micro-panels of a 16-column micro-tile 4 or 2 at a time with the
 * AVX-512 kernels, a last 7 to 11 rows (two panels, the second zero-padded
 * by the packing) through a 12-row scratch tile; returns the rows done (at
 * most 6 are left, for the 6 x 16 kernel). */
static int wide_rows(const gemm_job *j, int kcur, const float *ap, const float *b, float *c,
                     long ldc, int mcur, int accumulate)
{
    long a_panel = (long)GEMM_MR * kcur;
    int ir = 0;
    for (; ir + 4 * GEMM_MR <= mcur; ir += 4 * GEMM_MR)
        j->wide24(kcur, ap + (size_t)ir * kcur, a_panel, b, c + (size_t)ir * ldc, ldc, accumulate);
    if (ir + 2 * GEMM_MR <= mcur) {
        j->wide12(kcur, ap + (size_t)ir * kcur, a_panel, b, c + (size_t)ir * ldc, ldc, accumulate);
        ir += 2 * GEMM_MR;
    }
    if (mcur - ir > GEMM_MR) {
        float tile[2 * GEMM_MR * GEMM_NR] __attribute__((aligned(64)));
        j->wide12(kcur, ap + (size_t)ir * kcur, a_panel, b, tile, GEMM_NR, 0);
        put_tile(c + (size_t)ir * ldc, ldc, tile, mcur - ir, GEMM_NR, accumulate);
        ir = mcur;
    }
    return ir;
}

/* C's 24 rows from op(A)'s row `row` (read in place, depth pc..pc+kcur) by
 * the B micro-panel b, cols of its 16 columns valid. */
static void direct_tile(const gemm_job *j, int row, int pc, int kcur, const float *b, float *c,
                        int cols, int accumulate)
{
    enum { ROWS = 4 * GEMM_MR };
    float tile[ROWS * GEMM_NR] __attribute__((aligned(64)));
    float *dst = cols == GEMM_NR ? c : tile;
    long ldd = cols == GEMM_NR ? j->ldc : GEMM_NR;
    int acc = cols == GEMM_NR ? accumulate : 0;
    if (j->trans_a)
        gemm_kernel_avx512_24x16_cols(kcur, j->A + (size_t)pc * j->lda + row, j->lda, b, dst, ldd,
                                      acc);
    else
        gemm_kernel_avx512_24x16_rows(kcur, j->A + (size_t)row * j->lda + pc, j->lda, b, dst, ldd,
                                      acc);
    if (cols < GEMM_NR)
        put_tile(c, j->ldc, tile, ROWS, cols, accumulate);
}

/* Ask for the lines of op(A)'s 24 rows from `row` at depth pc..pc+kcur
 * (the next direct tile's, read in place) to be brought into L2. */
static void prefetch_direct(const gemm_job *j, int row, int pc, int kcur)
{
    if (j->trans_a) {
        for (int k = 0; k < kcur; k++)
            __builtin_prefetch(j->A + (size_t)(pc + k) * j->lda + row + 4 * GEMM_MR - 1, 0, 2);
        return;
    }
    for (int r = 0; r < 4 * GEMM_MR; r++) {
        const float *a = j->A + (size_t)(row + r) * j->lda + pc;
        for (int k = 0; k < kcur; k += 16)
            __builtin_prefetch(a + k, 0, 2);
    }
}

/* C[ic.., jcol..] (mcur x wcur) op= op(A) x packed B columns: the first mdir
 * rows with A read in place, 24 rows across every B micro-panel before the
 * next 24 (the A rows stay in L1, the next ones prefetched meanwhile); the
 * rest from the packed A block ap (which starts at row ic + mdir), each B
 * micro-panel across every row. */
static void gemm_block(const gemm_job *j, const float *ap, const float *bp, int ic, int mcur,
                       int mdir, int jcol, int wcur, int pc, int kcur, int accumulate)
{
    float *cb = j->C + (size_t)ic * j->ldc + jcol;
    for (int ir = 0; ir < mdir; ir += 4 * GEMM_MR) {
        if (ir + 4 * GEMM_MR < mdir)
            prefetch_direct(j, ic + ir + 4 * GEMM_MR, pc, kcur);
        for (int jr = 0; jr < wcur; jr += GEMM_NR)
            direct_tile(j, ic + ir, pc, kcur, bp + (size_t)jr * kcur, cb + (size_t)ir * j->ldc + jr,
                        min_int(GEMM_NR, wcur - jr), accumulate);
    }
    if (mdir == mcur)
        return;
    for (int jr = 0; jr < wcur; jr += GEMM_NR) {
        int cols = min_int(GEMM_NR, wcur - jr);
        const float *b = bp + (size_t)jr * kcur;
        int ir0 = mdir;
        if (j->wide && cols == GEMM_NR)
            ir0 += wide_rows(j, kcur, ap, b, cb + (size_t)mdir * j->ldc + jr, j->ldc, mcur - mdir,
                             accumulate);
        for (int ir = ir0; ir < mcur; ir += GEMM_MR) {
            int rows = min_int(GEMM_MR, mcur - ir);
            const float *a = ap + (size_t)(ir - mdir) * kcur;
            float *c = cb + (size_t)ir * j->ldc + jr;
            if (rows == GEMM_MR && cols == GEMM_NR) {
                j->kernel(kcur, a, b, c, j->ldc, accumulate);
                continue;
            }
            /* Edge tile: full tile into a scratch, then the valid part. */
            float tile[GEMM_MR * GEMM_NR] __attribute__((aligned(64)));
            j->kernel(kcur, a, b, tile, GEMM_NR, 0);
            put_tile(c, j->ldc, tile, rows, cols, accumulate);
        }
    }
}

/* Floats of one packed B slice for a panel of ncur columns. */
static size_t slice_floats(int kc, int ncur)
{
    return (size_t)kc * ceil_div(ncur, GEMM_NR) * GEMM_NR;
}

/* Unit q of packing rows [kb0, kb0 + kb) of op(B)'s columns [jc, jc + ncur)
 * into dst, as slices of kc: GEMM_PACK_B_ROWS rows of one slice, read along
 * the stored rows (gemm_pack.h). */
static void pack_b_unit(const gemm_job *j, int kb0, int jc, int ncur, int q)
{
    int units = ceil_div(j->kc, GEMM_PACK_B_ROWS);
    int sl = q / units, k_lo = (q % units) * GEMM_PACK_B_ROWS;
    int pc = kb0 + sl * j->kc, kcur = min_int(j->kc, j->K - pc);
    if (k_lo < kcur)
        j->pack_b(j->trans_b, j->B, j->ldb, pc, kcur, k_lo, min_int(kcur, k_lo + GEMM_PACK_B_ROWS),
                  jc, ncur, j->bpack + sl * slice_floats(j->kc, ncur));
}

/* Item it (a row block by a column chunk) of the B panel bp: every slice's
 * A block packed and multiplied, in order of depth. */
static void run_item(const gemm_job *j, float *ap, const float *bp, int jc, int ncur, int kb0,
                     int it)
{
    size_t sf = slice_floats(j->kc, ncur);
    int n_chunks = ceil_div(ncur, j->nw);
    int n_slices = ceil_div(min_int(j->kb, j->K - kb0), j->kc);
    int mb = it / n_chunks, nb = it % n_chunks;
    int ic = mb * j->mc, mcur = min_int(j->mc, j->M - ic);
    int j0 = nb * j->nw, wcur = min_int(j->nw, ncur - j0);
    int mdir = j->direct_a ? mcur / (4 * GEMM_MR) * (4 * GEMM_MR) : 0;
    for (int sl = 0; sl < n_slices; sl++) {
        int pc = kb0 + sl * j->kc, kcur = min_int(j->kc, j->K - pc);
        if (mcur > mdir)
            j->pack_a(j->trans_a, j->A, j->lda, ic + mdir, mcur - mdir, pc, kcur, ap);
        gemm_block(j, ap, bp + sl * sf + (size_t)j0 * kcur, ic, mcur, mdir, jc + j0, wcur, pc,
                   kcur, !(j->store_first && pc == 0));
    }
}

/* The team's split when each thread owns a column chunk of C (j->own_b):
 * thread t packs chunk t of every B slice itself, just before multiplying
 * it by every row block, so no packed line moves between the cores and no
 * barrier waits. Each C element still sums the slices in order, so the
 * bits are those of the shared split. */
static void own_b_run(const gemm_job *j, float *ap)
{
    int t = omp_get_thread_num();
    float *bp = j->bpack + (size_t)t * j->nw * j->kc;
    for (int jc = 0; jc < j->N; jc += j->nc) {
        int ncur = min_int(j->nc, j->N - jc), j0 = t * j->nw;
        if (j0 >= ncur)
            continue;
        int wcur = min_int(j->nw, ncur - j0);
        for (int pc = 0; pc < j->K; pc += j->kc) {
            int kcur = min_int(j->kc, j->K - pc);
            j->pack_b(j->trans_b, j->B, j->ldb, pc, kcur, 0, kcur, jc + j0, wcur, bp);
            for (int ic = 0; ic < j->M; ic += j->mc) {
                int mcur = min_int(j->mc, j->M - ic);
                int mdir = j->direct_a ? mcur / (4 * GEMM_MR) * (4 * GEMM_MR) : 0;
                if (mcur > mdir)
                    j->pack_a(j->trans_a, j->A, j->lda, ic + mdir, mcur - mdir, pc, kcur, ap);
                gemm_block(j, ap, bp, ic, mcur, mdir, jc + j0, wcur, pc, kcur,
                           !(j->store_first && pc == 0));
            }
        }
    }
}

/* The whole product over the B panels. With team set, run by every thread
 * of a team that does only this (orphaned worksharing): two barriers per B
 * panel (after packing it, before repacking it); with kb deep panels that
 * is usually two per call, so a thread the OS preempts holds the other up at
 * most twice, not twice per KC slice. Without, by the calling thread alone
 * in plain loops (the same order): no team, so no barrier, and no nested
 * region when called inside a parallel region (libgomp wakes the futex at
 * every barrier and team end, a system call, even in a team of one). */
static void gemm_run(const gemm_job *j, int team)
{
    float *ap = j->apack + (size_t)(team ? omp_get_thread_num() : 0) * j->apack_stride;
    if (team && j->own_b) {
        own_b_run(j, ap);
        return;
    }
    for (int jc = 0; jc < j->N; jc += j->nc) {
        int ncur = min_int(j->nc, j->N - jc);
        int items = j->m_blocks * ceil_div(ncur, j->nw);
        for (int kb0 = 0; kb0 < j->K; kb0 += j->kb) {
            const float *bp = j->bprepacked ? j->bprepacked + (size_t)(jc / j->nc) * j->kb * j->nc
                                            : j->bpack;
            int units = j->bprepacked ? 0
                                      : ceil_div(min_int(j->kb, j->K - kb0), j->kc) *
                                            ceil_div(j->kc, GEMM_PACK_B_ROWS);
            if (!team) {
                for (int q = 0; q < units; q++)
                    pack_b_unit(j, kb0, jc, ncur, q);
                for (int it = 0; it < items; it++)
                    run_item(j, ap, bp, jc, ncur, kb0, it);
                continue;
            }
            if (units > 0) {
#pragma omp for schedule(static)
                for (int q = 0; q < units; q++)
                    pack_b_unit(j, kb0, jc, ncur, q);
                /* (implicit barrier: the B panel is complete) */
            }
#pragma omp for schedule(dynamic, 1)
            for (int it = 0; it < items; it++)
                run_item(j, ap, bp, jc, ncur, kb0, it);
            /* (implicit barrier: nobody still reads the B panel) */
        }
    }
}

/* C = beta * C for the cases the blocked loops do not cover. */
static void scale_c(int M, int N, float beta, float *C, int ldc)
{
    for (int i = 0; i < M; i++) {
        float *ci = C + (size_t)i * ldc;
        if (beta == 0)
            memset(ci, 0, (size_t)N * sizeof *ci);
        else
            for (int q = 0; q < N; q++)
                ci[q] *= beta;
    }
}

/* The slice depth and panel width for op(B) of K x N: K in n_k slices of
 * nearly equal depth (a multiple of 8), N in panels of nearly equal width.
 * Only these fix the summation order. */
static void plan_b(const gemm_config *cfg, int N, int K, int *kc, int *nc, int *n_k)
{
    *n_k = ceil_div(K, cfg->kc);
    *kc = min_int(cfg->kc, ceil_div(ceil_div(K, *n_k), 8) * 8);
    int n_j = ceil_div(N, cfg->nc);
    *nc = ceil_div(ceil_div(N, n_j), GEMM_NR) * GEMM_NR;
}

/* Threads a call made now may use: its own team from serial code, the
 * calling thread alone inside any parallel region. */
static int threads_available(void)
{
    return omp_get_level() > 0 ? 1 : omp_get_max_threads();
}

/* Thread count (at most nt) and the items (blocks of C) for j's M and nc,
 * or the column chunks each thread owns (allow_own_b: B is still to be
 * packed); returns the thread count. */
static int plan_items(gemm_job *j, const gemm_config *cfg, int nt, int allow_own_b)
{
    long fmas = (long)j->M * j->N * j->K;
    long min_fmas = j->wide && cfg->wide_fma ? GEMM_MIN_FMAS_PER_THREAD_AVX512 : GEMM_MIN_FMAS_PER_THREAD;
    if (fmas / min_fmas < nt)
        nt = max_int(1, (int)(fmas / min_fmas));
    /* Split M into blocks of <= MC rows; when that gives too few items for
     * the dynamic split, first smaller row blocks, then column chunks, but
     * not below GEMM_ITEM_MIN_PANELS either way (a thinner item re-reads the
     * B panel, a narrower one re-packs its A block, too often); only if the
     * threads would still idle, down to GEMM_MIN_BLOCK_PANELS. */
    int target = nt > 1 ? GEMM_ITEMS_PER_THREAD * nt : 1;
    int m_panels = ceil_div(j->M, GEMM_MR), n_panels = ceil_div(j->nc, GEMM_NR);
    /* A short or square C (N at least a quarter of M): each thread owns a
     * column chunk and packs its B itself (own_b_run). Shared, every thread
     * would read the B lines the other packed, modified lines that move
     * between the L2s, where owning costs only each thread reading all of
     * op(A), lines both L2s hold unmodified. Measured at 2 threads, three
     * alternations (bench kernels --kernel gemm): cpu-default's dW of wq
     * 128x128x4096 211-226 -> 261-325 GFLOP/s, the head's logits
     * 256x4097x128 295-315 -> 350-372, cpu-d512 flop-weighted 348-363 ->
     * 379-390; tall products such as the head's dW 4097x128x256 keep the
     * shared split (no gain owned). */
    j->own_b = 0;
    if (nt > 1 && cfg->own_b && allow_own_b && 4L * j->N >= j->M && n_panels >= nt) {
        j->own_b = 1;
        j->mc = min_int(cfg->mc, m_panels * GEMM_MR);
        j->m_blocks = ceil_div(j->M, j->mc);
        j->nw = ceil_div(n_panels, nt) * GEMM_NR;
        return nt;
    }
    int m_blocks = ceil_div(m_panels, cfg->mc / GEMM_MR), n_chunks = 1;
    if (m_blocks < target)
        m_blocks = max_int(m_blocks, min_int(target, m_panels / GEMM_ITEM_MIN_PANELS));
    if (m_blocks < target)
        n_chunks = max_int(1, min_int(ceil_div(target, m_blocks), n_panels / GEMM_ITEM_MIN_PANELS));
    if (m_blocks * n_chunks < nt) {
        m_blocks = max_int(m_blocks, min_int(nt, m_panels / GEMM_MIN_BLOCK_PANELS));
        if (m_blocks * n_chunks < nt)
            n_chunks = max_int(n_chunks, min_int(ceil_div(nt, m_blocks),
                                                 n_panels / GEMM_MIN_BLOCK_PANELS));
    }
    /* Fewer items than the dynamic split can even out, in a count the
     * threads cannot share (3 on 2 threads: one idles a third of the call):
     * more row blocks, up to a multiple of nt, while they stay
     * GEMM_MIN_BLOCK_PANELS deep. */
    int items = m_blocks * n_chunks;
    if (nt > 1 && items < GEMM_ITEMS_PER_THREAD * nt && items % nt) {
        int mb = ceil_div(ceil_div(items, nt) * nt, n_chunks);
        if (m_panels / mb >= GEMM_MIN_BLOCK_PANELS)
            m_blocks = mb;
    }
    int block_panels = ceil_div(m_panels, m_blocks);
    /* The AVX-512 kernel takes 4 micro-panels at a time: blocks a multiple
     * of 4 deep where that keeps their number. */
    if (j->wide && ceil_div(m_panels, (block_panels + 3) / 4 * 4) == ceil_div(m_panels, block_panels))
        block_panels = (block_panels + 3) / 4 * 4;
    j->mc = block_panels * GEMM_MR;
    j->m_blocks = ceil_div(j->M, j->mc);
    j->nw = ceil_div(n_panels, n_chunks) * GEMM_NR;
    return min_int(nt, j->m_blocks * ceil_div(j->nc, j->nw));
}

/* Start the team and run j, or run it on the calling thread alone. */
static void run_team(const gemm_job *j, int nt)
{
    if (nt > 1) {
#pragma omp parallel num_threads(nt)
        gemm_run(j, 1);
    } else {
        gemm_run(j, 0);
    }
}

/* beta other than 0/1 and K == 0 become a scaling of C; returns 1 when
 * nothing is left to do, else sets *beta to 0 or 1. */
static int prologue(int M, int N, int K, float *beta, float *C, int ldc)
{
    if (M <= 0 || N <= 0)
        return 1;
    if (K <= 0 || (*beta != 0 && *beta != 1)) {
        scale_c(M, N, *beta, C, ldc);
        if (K <= 0)
            return 1;
        *beta = 1;
    }
    return 0;
}

/* Whether op(A) read in place keeps its lines spread over the cache sets:
 * with trans_a == 0 the 24 rows of a tile are read side by side (their
 * first lines should fall in different sets of a 4 KiB L1 way), with
 * trans_a == 1 up to 384 rows of the block follow each other lda apart
 * (their lines should not pile into few sets of a 64 KiB L2 way). A row
 * stride that is a multiple of a large power of two maps them all to a
 * few sets, and the packed copy is then the faster read. */
static int direct_a_spreads(int trans_a, int lda)
{
    enum { LINE = 64 };
    int rows = trans_a ? 384 : 4 * GEMM_MR, sets = trans_a ? 1024 : 64, max_share = trans_a ? 8 : 4;
    unsigned char count[1024] = {0};
    for (int r = 0; r < rows; r++) {
        size_t line = (size_t)r * (size_t)lda * sizeof(float) / LINE;
        if (++count[line % (size_t)sets] > max_share)
            return 0;
    }
    return 1;
}

/* bf16: the bf16 mode's packings and kernels (cfg allows it); otherwise
 * fp32 on cfg's path. */
static void job_init(gemm_job *j, const gemm_config *cfg, int bf16, int trans_a, int trans_b,
                     int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                     float beta, float *C, int ldc)
{
    int avx2 = cfg->path >= CPU_KERNELS_AVX2;
    bf16 = bf16 && cfg->can_bf16;
    *j = (gemm_job){
        .kernel = bf16 ? gemm_kernel_bf16_6x16 : avx2 ? gemm_kernel_avx2_6x16 : gemm_kernel_portable_6x16,
        .wide = cfg->path == CPU_KERNELS_AVX512,
        .wide24 = bf16 ? gemm_kernel_bf16_24x16 : gemm_kernel_avx512_24x16,
        .wide12 = bf16 ? gemm_kernel_bf16_12x16 : gemm_kernel_avx512_12x16,
        .direct_a = !bf16 && cfg->direct_a && cfg->path == CPU_KERNELS_AVX512 &&
                    direct_a_spreads(trans_a, lda),
        .pack_a = bf16 ? gemm_pack_a_bf16 : avx2 ? gemm_pack_a_avx2 : gemm_pack_a,
        .pack_b = bf16 ? gemm_pack_b_bf16 : avx2 ? gemm_pack_b_avx2 : gemm_pack_b,
        .trans_a = trans_a, .trans_b = trans_b, .M = M, .N = N, .K = K,
        .A = A, .B = B, .lda = lda, .ldb = ldb, .ldc = ldc, .C = C,
        .store_first = beta == 0,
    };
}

/* Floats of the packing buffers of a planned job on nt threads (sets
 * j->apack_stride). */
static size_t job_floats(gemm_job *j, int nt, size_t b_floats)
{
    j->apack_stride = ((size_t)j->kc * j->mc + 15) / 16 * 16;
    return b_floats + (size_t)nt * j->apack_stride;
}

/* The packing buffers of a planned job, from the caller's workspace when
 * there is one (grown if too small), else from a per-call allocation
 * (*owned set: free it after). NULL when out of memory. */
static float *job_buffers(gemm_job *j, int nt, size_t b_floats, gemm_context *ctx, float **owned)
{
    size_t floats = job_floats(j, nt, b_floats);
    float *buf;
    *owned = NULL;
    if (ctx && ctx->work_floats >= floats) {
        buf = ctx->work;
    } else if (ctx) {
        free(ctx->work);
        ctx->work = aligned_alloc(64, floats * sizeof(float));
        ctx->work_floats = ctx->work ? floats : 0;
        buf = ctx->work;
    } else {
        buf = *owned = aligned_alloc(64, floats * sizeof(float));
    }
    if (buf) {
        j->bpack = buf;
        j->apack = buf + b_floats;
    }
    return buf;
}

/* The blocking of an M x N x K product on at most `avail` threads: sets j's
 * kc, nc, kb, mc, m_blocks, nw and *b_floats (the shared B panel); returns
 * the thread count. Depends on the shape, cfg and avail only. */
static int plan_job(gemm_job *j, const gemm_config *cfg, int avail, size_t *b_floats)
{
    int n_k;
    plan_b(cfg, j->N, j->K, &j->kc, &j->nc, &n_k);
    /* As many slices per packed B panel as its share of L3 holds. */
    long kb_slices = cfg->b_panel_bytes / ((long)j->nc * j->kc * (long)sizeof(float));
    j->kb = (int)(kb_slices < 1 ? 1 : kb_slices < n_k ? kb_slices : n_k) * j->kc;
    *b_floats = ((size_t)j->kb * j->nc + 15) / 16 * 16;
    int nt = plan_items(j, cfg, avail, 1);
    if (j->own_b && *b_floats < (size_t)nt * j->nw * j->kc)
        *b_floats = (size_t)nt * j->nw * j->kc;
    return nt;
}

static void gemm_blocked(const gemm_config *cfg, gemm_context *ctx, int trans_a, int trans_b,
                         int M, int N, int K, const float *A, int lda, const float *B, int ldb,
                         float beta, float *C, int ldc)
{
    if (prologue(M, N, K, &beta, C, ldc))
        return;
    gemm_job j;
    job_init(&j, cfg, cfg->bf16, trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
    size_t b_floats;
    int nt = plan_job(&j, cfg, threads_available(), &b_floats);
    float *owned;
    if (!job_buffers(&j, nt, b_floats, ctx, &owned)) {
        /* Out of memory for a few MiB: still give the right answer, slowly. */
        gemm_f32_ref(trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
        return;
    }
    run_team(&j, nt);
    free(owned);
}

/* plan_job for a shape alone (no operands): what gemm_f32_with would plan
 * for an M x N x K product (M, N, K >= 1) with `threads` available. */
static int plan_shape(gemm_job *j, const gemm_config *cfg, int M, int N, int K, int threads,
                      size_t *b_floats)
{
    *j = (gemm_job){.M = M, .N = N, .K = K, .wide = cfg->path == CPU_KERNELS_AVX512};
    return plan_job(j, cfg, threads > 0 ? threads : 1, b_floats);
}

int gemm_split(const gemm_config *cfg, int M, int N, int K, int threads, int *owns_b)
{
    *owns_b = 0;
    if (M <= 0 || N <= 0 || K <= 0)
        return 1;
    gemm_job j;
    size_t b_floats;
    int nt = plan_shape(&j, cfg, M, N, K, threads, &b_floats);
    *owns_b = j.own_b;   /* set only for a team (plan_items) */
    return nt;
}

void gemm_f32_with(const gemm_config *cfg, int trans_a, int trans_b, int M, int N, int K,
                   const float *A, int lda, const float *B, int ldb,
                   float beta, float *C, int ldc)
{
    gemm_blocked(cfg, NULL, trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

void gemm_context_init(gemm_context *ctx)
{
    gemm_config_init(&ctx->cfg);
    ctx->work = NULL;
    ctx->work_floats = 0;
}

void gemm_context_free(gemm_context *ctx)
{
    free(ctx->work);
    ctx->work = NULL;
    ctx->work_floats = 0;
}

gemm_context *gemm_context_array_new(int n, const gemm_config *cfg)
{
    gemm_context *a = calloc((size_t)(n > 0 ? n : 1), sizeof *a);
    if (!a)
        return NULL;
    gemm_config c;
    if (cfg)
        c = *cfg;
    else
        gemm_config_init(&c);
    for (int t = 0; t < n; t++)
        a[t].cfg = c;
    return a;
}

int gemm_context_reserve(gemm_context *ctx, int M, int N, int K, int threads)
{
    if (M <= 0 || N <= 0 || K <= 0)
        return 0;
    gemm_job j;
    size_t b_floats;
    int nt = plan_shape(&j, &ctx->cfg, M, N, K, threads, &b_floats);
    size_t floats = job_floats(&j, nt, b_floats);
    if (ctx->work_floats >= floats)
        return 0;
    float *w = aligned_alloc(64, floats * sizeof(float));
    if (!w)
        return -1;
    free(ctx->work);
    ctx->work = w;
    ctx->work_floats = floats;
    return 0;
}

void gemm_context_array_free(gemm_context *a, int n)
{
    if (!a)
        return;
    for (int t = 0; t < n; t++)
        gemm_context_free(&a[t]);
    free(a);
}

void gemm_f32_ctx(gemm_context *ctx, int trans_a, int trans_b, int M, int N, int K,
                  const float *A, int lda, const float *B, int ldb,
                  float beta, float *C, int ldc)
{
    gemm_blocked(&ctx->cfg, ctx, trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
}

/* ---- op(B) packed once, multiplied many times ---- */

int gemm_packed_b_reserve(gemm_packed_b *pb, const gemm_config *cfg, int trans_b, int K, int N,
                          tempo_error *err)
{
    if (K < 1 || N < 1)
        return tempo_fail(err, "gemm: packing a %d x %d matrix", K, N);
    int kc, nc, n_k;
    plan_b(cfg, N, K, &kc, &nc, &n_k);
    int n_j = ceil_div(N, nc);
    size_t floats = (size_t)n_j * n_k * kc * nc;
    if (!pb->data || pb->floats < floats) {
        free(pb->data);
        pb->floats = 0;
        pb->data = aligned_alloc(64, (floats * sizeof(float) + 63) / 64 * 64);
        if (!pb->data)
            return tempo_fail(err, "gemm: packing %d x %d: out of memory", K, N);
        pb->floats = floats;
    }
    pb->trans_b = trans_b;
    pb->K = K;
    pb->N = N;
    pb->kc = kc;
    pb->nc = nc;
    pb->bf16 = cfg->bf16 && cfg->can_bf16;
    return 0;
}

/* pb's panels from B: with team set, the units of each shared by the
 * threads of the team the caller is in (orphaned worksharing, a barrier
 * after each panel); without, all by the calling thread in plain loops
 * (never a worksharing loop, which would bind to a caller's team). */
static void packed_b_fill(const gemm_packed_b *pb, const gemm_config *cfg, const float *B, int ldb,
                          int team)
{
    int K = pb->K, N = pb->N, kc = pb->kc, nc = pb->nc, n_k = ceil_div(K, kc);
    gemm_job j = {
        .pack_b = pb->bf16 ? gemm_pack_b_bf16 : cfg->path >= CPU_KERNELS_AVX2 ? gemm_pack_b_avx2 : gemm_pack_b,
        .trans_b = pb->trans_b, .B = B, .ldb = ldb, .K = K, .kc = kc,
    };
    int units = n_k * ceil_div(kc, GEMM_PACK_B_ROWS);
    for (int jc = 0; jc < N; jc += nc) {
        j.bpack = pb->data + (size_t)(jc / nc) * n_k * kc * nc;
        if (!team) {
            for (int q = 0; q < units; q++)
                pack_b_unit(&j, 0, jc, min_int(nc, N - jc), q);
            continue;
        }
#pragma omp for schedule(static)
        for (int q = 0; q < units; q++)
            pack_b_unit(&j, 0, jc, min_int(nc, N - jc), q);
    }
}

void gemm_packed_b_fill_team(const gemm_packed_b *pb, const gemm_config *cfg, const float *B, int ldb)
{
    packed_b_fill(pb, cfg, B, ldb, 1);
}

int gemm_packed_b_pack(gemm_packed_b *pb, const gemm_config *cfg, int trans_b, int K, int N,
                       const float *B, int ldb, tempo_error *err)
{
    if (gemm_packed_b_reserve(pb, cfg, trans_b, K, N, err))
        return -1;
    int nt = threads_available();
    if (nt > 1) {
#pragma omp parallel num_threads(nt)
        packed_b_fill(pb, cfg, B, ldb, 1);
    } else {
        packed_b_fill(pb, cfg, B, ldb, 0);
    }
    return 0;
}

void gemm_packed_b_free(gemm_packed_b *pb)
{
    free(pb->data);
    pb->data = NULL;
    pb->floats = 0;
}

static void packed_b_run(const gemm_config *cfg, gemm_context *ctx, int trans_a, int M,
                         const float *A, int lda, const gemm_packed_b *pb, float beta, float *C,
                         int ldc)
{
    int N = pb->N, K = pb->K;
    if (prologue(M, N, K, &beta, C, ldc))
        return;
    gemm_job j;
    job_init(&j, cfg, pb->bf16, trans_a, pb->trans_b, M, N, K, A, lda, NULL, 0, beta, C, ldc);
    j.kc = pb->kc;
    j.nc = pb->nc;
    j.kb = ceil_div(K, pb->kc) * pb->kc;
    int nt = plan_items(&j, cfg, threads_available(), 0);   /* B comes packed: nothing to own */
    float *owned;
    if (job_buffers(&j, nt, 0, ctx, &owned)) {
        j.bprepacked = pb->data;
        run_team(&j, nt);
        free(owned);
        return;
    }
    /* Out of memory for a few hundred KiB: one thread, one A panel at a
     * time from the stack (kc <= 1024), same sums. */
    float panel[GEMM_MR * 1024] __attribute__((aligned(64)));
    j.mc = GEMM_MR;
    j.m_blocks = ceil_div(M, GEMM_MR);
    j.nw = j.nc;
    j.apack = panel;
    j.apack_stride = 0;
    j.bprepacked = pb->data;
    run_team(&j, 1);
}

void gemm_f32_packed_b(const gemm_config *cfg, int trans_a, int M, const float *A, int lda,
                       const gemm_packed_b *pb, float beta, float *C, int ldc)
{
    packed_b_run(cfg, NULL, trans_a, M, A, lda, pb, beta, C, ldc);
}

void gemm_f32_packed_b_ctx(gemm_context *ctx, int trans_a, int M, const float *A, int lda,
                           const gemm_packed_b *pb, float beta, float *C, int ldc)
{
    packed_b_run(&ctx->cfg, ctx, trans_a, M, A, lda, pb, beta, C, ldc);
}

void gemm_f32(int trans_a, int trans_b, int M, int N, int K,
              const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc)
{
    gemm_config cfg;
    gemm_config_init(&cfg);
    gemm_f32_with(&cfg, trans_a, trans_b, M, N, K, A, lda, B, ldb, beta, C, ldc);
}
