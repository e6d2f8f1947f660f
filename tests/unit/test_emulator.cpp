/* test_emulator.cpp - the CPU emulator (kernels/cuda/emulator.h) shows the
 * mistakes a kernel can make that a GPU punishes only sometimes: probe
 * kernels written here in the dialect (cuda_dialect.h, host mode), each in a
 * right and a wrong version, launched through the emulator's own registry.
 * The wrong ones: a read of another warp's write with no barrier between
 * them, a read of a cp.async copy before its wait covers it (or after a wait
 * that leaves its group pending), a read of a shared array the block never
 * wrote, a read of what another block of the same launch writes, and
 * (AddressSanitizer's build only) a read past a block's shared memory. The right ones give exact results; the wrong ones do not, on
 * every run (the emulator's order is fixed). C++: the probes are kernels. */
#include "kernels/cuda/cuda_dialect.h"
#include "kernels/cuda/emulator.h"

#include "child_stops.h"
#include "test.h"

#include "core/sanitizer.h"

#define PROBE_THREADS 64 /* two warps */

/* out[block][t] = the value thread t - 32 wrote (warp 1 reads warp 0's),
 * with or without the barrier between; with a warp shuffle between (each
 * warp meets itself, not the other warp: no barrier for the block) */
KERNEL probe_shared_read(float *out, int barrier, int shuffle)
{
    SHARED_ARRAY(float, buf, [PROBE_THREADS]);
    int t = threadIdx.x;
    buf[t] = (float)(t + 1);
    float lane = (float)(t & 31);
    if (shuffle)
        lane = tk_shfl_xor(lane, 1) - 1.0f + 2.0f * (float)(t & 1); /* its own lane again */
    if (barrier)
        SYNC();
    out[blockIdx.x * PROBE_THREADS + t] = t >= 32 ? buf[(int)lane] : 0.0f;
}

/* each thread copies 16 bytes of src into shared memory by cp.async and reads
 * them back after: mode 0 waits for all (right), 1 does not wait, 2 waits
 * with its only group allowed to stay pending (wait_group 1), 3 waits before
 * committing (a wait covers committed groups only) */
KERNEL probe_cp_async(float *out, const float *src, int mode)
{
    SHARED_ARRAY(float, buf, [PROBE_THREADS * 4]);
    int t = threadIdx.x;
    tk_cp_async16((bf16_t *)(buf + 4 * t), (const bf16_t *)(src + 4 * t));
    if (mode == 3)
        tk_cp_async_wait_all();
    tk_cp_async_commit();
    if (mode == 0)
        tk_cp_async_wait_all();
    else if (mode == 2)
        tk_cp_async_wait_1();
    SYNC();
    for (int i = 0; i < 4; i++)
        out[blockIdx.x * PROBE_THREADS * 4 + 4 * t + i] = buf[4 * t + i];
}

/* block 0 writes its shared array and every block reads it (a block that
 * relies on another's shared memory is wrong: each block has its own) */
KERNEL probe_unwritten(float *out, int all_write)
{
    SHARED_ARRAY(float, buf, [PROBE_THREADS]);
    int t = threadIdx.x;
    if (all_write || blockIdx.x == 0)
        buf[t] = (float)(t + 1);
    SYNC();
    out[blockIdx.x * PROBE_THREADS + t] = buf[t];
}

/* block 1 copies what block 0 wrote to global memory in the same launch
 * (blocks have no order on a GPU) */
KERNEL probe_other_block(float *flag, float *out)
{
    if (threadIdx.x == 0 && blockIdx.x == 0)
        flag[0] = 1.0f;
    if (threadIdx.x == 0 && blockIdx.x == 1)
        out[0] = flag[0];
}

/* reads buf[at] (at = PROBE_THREADS: one float past its shared array; out
 * of bounds in the sanitizers' build, as on a GPU) or dyn[at] (which = 1:
 * past the dynamic shared memory asked for, inside the allocation's
 * rounding to 64 bytes) */
KERNEL probe_overflow(float *out, int which, int at)
{
    SHARED_ARRAY(float, buf, [PROBE_THREADS]);
    DYNAMIC_SHARED(float, dyn);
    int t = threadIdx.x;
    buf[t] = 1.0f;
    dyn[t] = 1.0f;
    SYNC();
    if (t == 0)
        out[0] = which ? dyn[at] : buf[at];
}

/* declares more shared memory than a GPU has for a block's own arrays */
KERNEL probe_too_much_shared(float *out)
{
    SHARED_ARRAY(float, big, [13 * 1024]); /* 52 KiB */
    big[threadIdx.x] = 1.0f;
    out[threadIdx.x] = big[threadIdx.x];
}

static void register_probes(tk_emu_registry *r)
{
    EMU_KERNEL(probe_too_much_shared)
    EMU_KERNEL(probe_overflow)
    EMU_KERNEL(probe_other_block)
    EMU_KERNEL(probe_shared_read)
    EMU_KERNEL(probe_cp_async)
    EMU_KERNEL(probe_unwritten)
}

static tk_emu_registry *reg;

/* runs probe `name` over `blocks` blocks of PROBE_THREADS; 0 or -1 */
static int launch_smem(const char *name, int blocks, size_t shmem, void **args)
{
    unsigned grid[3] = {(unsigned)blocks, 1, 1}, block[3] = {PROBE_THREADS, 1, 1};
    char err[256];
    int rc = tk_emu_launch(reg, tk_emu_find(reg, name), grid, block, shmem, args, err, sizeof err);
    if (rc)
        fprintf(stderr, "  %s\n", err);
    return rc;
}

static int launch(const char *name, int blocks, void **args) { return launch_smem(name, blocks, 0, args); }

/* the elements of out [n] that differ from want (NaN differs) */
static int wrong(const float *out, const float *want, int n)
{
    int w = 0;
    for (int i = 0; i < n; i++)
        w += !(out[i] == want[i]);
    return w;
}

/* without the barrier, warp 1 reads before warp 0 wrote in every other
 * block (the reverse order), and reads the poison; a warp's own meeting (a
 * shuffle) between them does not hide it (each warp runs on alone) */
static void test_missing_barrier_shows(void)
{
    enum { B = 2, N = B * PROBE_THREADS };
    float out[N], want[N];
    for (int i = 0; i < N; i++) {
        int t = i % PROBE_THREADS;
        want[i] = t >= 32 ? (float)(t - 31) : 0.0f;
    }
    float *o = out;
    for (int shuffle = 0; shuffle < 2; shuffle++)
        for (int barrier = 1; barrier >= 0; barrier--) {
            void *a[] = {&o, &barrier, &shuffle};
            memset(out, 0, sizeof out);
            CHECK(launch("probe_shared_read", B, a) == 0);
            int w = wrong(out, want, N);
            CHECK_MSG(barrier ? w == 0 : w == 32, "barrier %d shuffle %d: %d of %d wrong", barrier, shuffle, w, N);
            /* the block that runs warp 0 first reads in time even without the barrier */
            CHECK(wrong(out, want, PROBE_THREADS) == 0 || wrong(out + PROBE_THREADS, want, PROBE_THREADS) == 0);
        }
}

static void test_cp_async_lands_at_its_wait(void)
{
    enum { B = 2, N = B * PROBE_THREADS * 4 };
    float src[PROBE_THREADS * 4] __attribute__((aligned(16))), out[N], want[N];
    for (int i = 0; i < PROBE_THREADS * 4; i++)
        src[i] = (float)i + 0.5f;
    for (int i = 0; i < N; i++)
        want[i] = src[i % (PROBE_THREADS * 4)];
    float *o = out, *s = src;
    for (int mode = 0; mode < 4; mode++) {
        void *a[] = {&o, &s, &mode};
        memset(out, 0, sizeof out);
        CHECK(launch("probe_cp_async", B, a) == 0);
        int w = wrong(out, want, N);
        CHECK_MSG(mode == 0 ? w == 0 : w == N, "mode %d: %d of %d wrong", mode, w, N);
    }
}

/* each block's shared memory starts poisoned: a block reading what only
 * another block wrote reads NaN, not the other's values */
static void test_shared_memory_is_each_blocks_own(void)
{
    enum { B = 3, N = B * PROBE_THREADS };
    float out[N], want[N];
    for (int i = 0; i < N; i++)
        want[i] = (float)(i % PROBE_THREADS + 1);
    float *o = out;
    for (int all = 1; all >= 0; all--) {
        void *a[] = {&o, &all};
        CHECK(launch("probe_unwritten", B, a) == 0);
        int w = wrong(out, want, N);
        CHECK_MSG(all ? w == 0 : w == N - PROBE_THREADS, "all_write %d: %d of %d wrong", all, w, N);
        if (!all)
            for (int i = PROBE_THREADS; i < N; i++)
                CHECK(isnan(out[i]));
    }
}

/* of two launches in a row, one runs its blocks last first: block 1 reads
 * before block 0 wrote */
static void test_block_order_alternates(void)
{
    /* and a launch of one block runs its warps last first in one of two launches in a row */
    enum { N = PROBE_THREADS };
    float want[N];
    for (int t = 0; t < N; t++)
        want[t] = t >= 32 ? (float)(t - 31) : 0.0f;
    int wrong_runs = 0;
    for (int i = 0; i < 2; i++) {
        float out[N], *o = out;
        int barrier = 0, shuffle = 0;
        void *a[] = {&o, &barrier, &shuffle};
        CHECK(launch("probe_shared_read", 1, a) == 0);
        wrong_runs += wrong(out, want, N) > 0;
    }
    CHECK_MSG(wrong_runs == 1, "%d of 2 one-block launches read too early", wrong_runs);
    float got[2];
    for (int i = 0; i < 2; i++) {
        float flag = 0, out = -1, *f = &flag, *o = &out;
        void *a[] = {&f, &o};
        CHECK(launch("probe_other_block", 2, a) == 0);
        got[i] = out;
    }
    CHECK_MSG((got[0] == 1 && got[1] == 0) || (got[0] == 0 && got[1] == 1), "block 1 read %g then %g", got[0],
              got[1]);
}

/* A probe launch for child_stops: one block of probe `name` with its
 * arguments and dynamic shared memory. */
struct probe_launch {
    const char *name;
    void **args;
    size_t shmem;
};

static void run_probe(void *ctx)
{
    const probe_launch *p = (const probe_launch *)ctx;
    launch_smem(p->name, 1, p->shmem, p->args);
}

/* Whether probe `name` (args a, shmem bytes of dynamic shared memory) stops
 * a child process; its stderr into buf. */
static int probe_stops(const char *name, void **a, size_t shmem, char *buf, size_t cap)
{
    probe_launch p = {name, a, shmem};
    return child_stops(run_probe, &p, buf, cap);
}

/* a kernel past the GPU's 48 KiB of declared shared memory (ptxas would
 * refuse it) stops the emulator with a line naming it */
static void test_too_much_shared_stops(void)
{
    float out[PROBE_THREADS], *o = out;
    void *a[] = {&o};
    char buf[4096];
    CHECK(probe_stops("probe_too_much_shared", a, 0, buf, sizeof buf));
    CHECK_MSG(strstr(buf, "probe_too_much_shared") && strstr(buf, "48 KiB"), "%.300s", buf);
}

#ifdef TEMPO_ASAN
/* the sanitizers' build: a read one float past a declared shared array
 * (UndefinedBehaviorSanitizer knows its type's bounds, AddressSanitizer the
 * arena's), or past the dynamic shared memory a launch asked for, stops the
 * process (run in a child, its report looked for) */
static void test_shared_overflow_stops_asan(void)
{
    for (int which = 0; which < 2; which++) {
        float out = 0, *o = &out;
        int w = which, at = PROBE_THREADS + which; /* dyn: PROBE_THREADS + 1 floats asked */
        void *a[] = {&o, &w, &at};
        char buf[4096];
        int stopped = probe_stops("probe_overflow", a, sizeof(float) * (PROBE_THREADS + 1), buf, sizeof buf);
        /* the declared array's type bounds it: UndefinedBehaviorSanitizer may see it first */
        CHECK_MSG(stopped && (strstr(buf, "AddressSanitizer") || strstr(buf, "out of bounds for type")),
                  "which %d: the overflow was not reported: %.300s", which, buf);
    }
}
#endif

int main(void)
{
    reg = tk_emu_registry_new();
    if (!reg) {
        fprintf(stderr, "test_emulator: out of memory\n");
        return 1;
    }
    register_probes(reg);
    RUN(test_missing_barrier_shows);
    RUN(test_cp_async_lands_at_its_wait);
    RUN(test_shared_memory_is_each_blocks_own);
    RUN(test_block_order_alternates);
    RUN(test_too_much_shared_stops);
#ifdef TEMPO_ASAN
    RUN(test_shared_overflow_stops_asan);
#endif
    tk_emu_registry_free(reg);
    return test_summary("test_emulator");
}
