/* emulator.cpp - the CPU emulator of tempo's CUDA kernels (see emulator.h).
 * Host C++ only; the kernels themselves come from the .cu files compiled in
 * host mode (cuda_dialect.h), each of which registers its kernels here.
 *
 * A launch runs on the calling thread, block after block (every other
 * launch last block first). Each CUDA thread of a block is a fiber with its
 * own stack; a small scheduler runs one warp at a time, resuming its lanes
 * in turn and releasing the warp's own barriers (shuffles, mma, ldmatrix)
 * as they fill, until every lane waits at the block's barrier or has
 * finished, then the next warp (run_block: every other block in the
 * reverse order, a launch's first block too in every other launch), then
 * releases the block's barrier. Shared memory (the
 * launch's dynamic bytes, the declared arrays' arena) is poisoned at every
 * block; cp.async copies wait in their thread's queue for a wait that
 * covers them. A switch is a dozen instructions of x86-64 assembly
 * (tk_emu_switch: callee-saved registers and the stack pointer; no system
 * call, nothing a sanitizer intercepts), so a block costs microseconds, not
 * thread creations.
 * Under AddressSanitizer the switches are announced to it (the fiber
 * annotations of sanitizer/common_interface_defs.h). A barrier that can
 * never be released (a thread returning before a barrier its block still
 * waits at) is reported as an error naming the kernel. */
#include "kernels/cuda/cuda_dialect.h"
#include "kernels/cuda/emulator.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sanitizer.h"
#ifdef TEMPO_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

#if !defined(__x86_64__)
#error "the GPU emulator switches fibers with x86-64 assembly; port tk_emu_switch for this architecture"
#endif

/* tk_emu_switch(&save, to): pushes the callee-saved registers, stores the
 * stack pointer in *save, loads `to` and pops the registers saved there
 * (System V x86-64). A new fiber's stack is laid out to "return" into
 * fiber_entry. */
extern "C" void tk_emu_switch(void **save_sp, void *new_sp);
__asm__(".text\n"
        ".globl tk_emu_switch\n"
        ".hidden tk_emu_switch\n"
        ".type tk_emu_switch,@function\n"
        "tk_emu_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size tk_emu_switch, .-tk_emu_switch\n"
        ".section .note.GNU-stack,\"\",@progbits\n"
        ".text\n");

thread_local tk_dim3 threadIdx, blockIdx, blockDim, gridDim;

#define EMU_FILES(X) X(embedding) X(rmsnorm) X(rope) X(activation) X(attention) X(attention_mma) X(attention_decode) X(cross_entropy) X(optim)
#define DECLARE(f) extern "C" void tk_emu_register_##f(tk_emu_registry *r);
EMU_FILES(DECLARE)

#ifdef TEMPO_ASAN
#define FIBER_STACK (64u << 10)
#else
#define FIBER_STACK (64u << 10)
#endif

enum { F_NEW, F_RUNNABLE, F_BLOCK_BAR, F_WARP_BAR, F_DONE };

/* a cp.async copy issued and not landed yet: its bytes (read when issued)
 * and its commit group */
struct pending_copy {
    void *dst;
    unsigned char bytes[16];
    int group;
};

struct fiber {
    void *sp;        /* saved stack pointer while away */
    char *stack;
    int state;
    tk_dim3 tid;
    void *asan_fake; /* AddressSanitizer's fake stack of this fiber while away */
    pending_copy *copies; /* its cp.async copies not landed yet, in issue order */
    int n_copies, cap_copies;
    int group;            /* its open cp.async group: those before it are committed */
};

/* A block's own shared arrays (SHARED_ARRAY, SHARED_VAR): the GPU's 48 KiB of
 * static shared memory, as many declarations as a kernel may have. */
#define EMU_STATIC_SHARED_BYTES (48u << 10)
#define EMU_STATIC_SHARED_DECLS 32

struct tk_emu_registry {
    struct entry {
        char name[64];
        tk_emu_trampoline fn;
        int max_threads; /* its launch bounds' block (0: the GPU's 1,024) */
        int n_args;
        const unsigned char *arg_sizes; /* each parameter's bytes */
    } *e;
    int n, cap, oom;
    fiber *fibers; /* grown to the largest block launched */
    int n_fibers;
    unsigned long long launches; /* so far: every other launch runs its blocks last first */
};

void tk_emu_add(tk_emu_registry *r, const char *name, tk_emu_trampoline fn, int max_threads, int n_args,
                const unsigned char *arg_sizes)
{
    if (r->n == r->cap) {
        int cap = r->cap ? 2 * r->cap : 64;
        void *p = realloc(r->e, sizeof *r->e * (size_t)cap);
        if (!p) {
            r->oom = 1;
            return;
        }
        r->e = (tk_emu_registry::entry *)p;
        r->cap = cap;
    }
    snprintf(r->e[r->n].name, sizeof r->e[r->n].name, "%s", name);
    r->e[r->n].fn = fn;
    r->e[r->n].max_threads = max_threads;
    r->e[r->n].n_args = n_args;
    r->e[r->n].arg_sizes = arg_sizes;
    r->n++;
}

extern "C" tk_emu_registry *tk_emu_registry_new(void)
{
    tk_emu_registry *r = (tk_emu_registry *)calloc(1, sizeof *r);
    if (!r)
        return NULL;
#define REGISTER(f) tk_emu_register_##f(r);
    EMU_FILES(REGISTER)
    if (r->oom) {
        tk_emu_registry_free(r);
        return NULL;
    }
    return r;
}

extern "C" void tk_emu_registry_free(tk_emu_registry *r)
{
    if (!r)
        return;
    for (int i = 0; i < r->n_fibers; i++) {
        free(r->fibers[i].stack);
        free(r->fibers[i].copies);
    }
    free(r->fibers);
    free(r->e);
    free(r);
}

extern "C" int tk_emu_find(const tk_emu_registry *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->e[i].name, name))
            return i;
    return -1;
}

/* ---- the running launch (one at a time: see launch_lock) ---- */

struct launch {
    const char *name; /* the kernel's */
    tk_emu_trampoline fn;
    void **args;
    tk_dim3 grid, block, cur;
    fiber *f;
    int nt, current;
    int reverse;    /* this block's warps and lanes run last first (every other block) */
    void *sched_sp;
    float *xf;      /* [nt] shuffle slots */
    double *xd;
    unsigned *ma, *mb; /* [nt][4], [nt][2]: mma fragments */
    const unsigned short **rows; /* [nt]: ldmatrix row addresses */
    float *mc;         /* [nt][4] */
    unsigned char *dyn;
    size_t dyn_bytes;
    unsigned char *stat;   /* EMU_STATIC_SHARED_BYTES: the declarations' memory */
    const void *stat_key[EMU_STATIC_SHARED_DECLS];
    size_t stat_off[EMU_STATIC_SHARED_DECLS], stat_size[EMU_STATIC_SHARED_DECLS], stat_used;
    int n_stat;
    const void *misaligned; /* the first misaligned vector access, and its width */
    int misaligned_bytes;
    /* the scheduler's stack, for AddressSanitizer's switch annotations */
    void *sched_fake;
    const void *sched_bottom;
    size_t sched_size;
};

/* the launch in progress (launches are serialised by launch_lock) */
static launch *cur_launch;

/* announce a switch to AddressSanitizer (nothing without it) */
static inline void asan_leave(void **fake, const void *bottom, size_t size)
{
#ifdef TEMPO_ASAN
    __sanitizer_start_switch_fiber(fake, bottom, size);
#else
    (void)fake; (void)bottom; (void)size;
#endif
}

static inline void asan_arrive(void *fake, const void **bottom, size_t *size)
{
#ifdef TEMPO_ASAN
    __sanitizer_finish_switch_fiber(fake, bottom, size);
#else
    (void)fake; (void)bottom; (void)size;
#endif
}

/* from a fiber back to the scheduler, waiting in state st */
static void fiber_yield(int st)
{
    launch *l = cur_launch;
    fiber *f = &l->f[l->current];
    f->state = st;
    asan_leave(st == F_DONE ? NULL : &f->asan_fake, l->sched_bottom, l->sched_size);
    tk_emu_switch(&f->sp, l->sched_sp);
    asan_arrive(f->asan_fake, &l->sched_bottom, &l->sched_size);
    /* resumed: the scheduler set threadIdx, blockIdx */
}

static void __attribute__((noreturn)) fiber_entry(void)
{
    launch *l = cur_launch;
    asan_arrive(NULL, &l->sched_bottom, &l->sched_size);
    l->fn(l->args);
    fiber_yield(F_DONE);
    abort(); /* a finished fiber is never resumed */
}

/* runs fiber i until it waits or finishes */
static void run_fiber(launch *l, int i)
{
    fiber *f = &l->f[i];
    l->current = i;
    threadIdx = f->tid;
    blockIdx = l->cur;
    if (f->state == F_NEW) {
#ifdef TEMPO_ASAN
        ASAN_UNPOISON_MEMORY_REGION(f->stack, FIBER_STACK); /* what an earlier fiber left poisoned */
#endif
        uintptr_t *sp = (uintptr_t *)(f->stack + FIBER_STACK - 64); /* 16-byte aligned */
        *--sp = 0;                           /* fiber_entry's (never used) return address */
        *--sp = (uintptr_t)fiber_entry;      /* where tk_emu_switch's ret goes */
        for (int k = 0; k < 6; k++)
            *--sp = 0;                       /* rbp rbx r12..r15 */
        f->sp = sp;
        f->state = F_RUNNABLE;
    }
    asan_leave(&l->sched_fake, f->stack, FIBER_STACK);
    tk_emu_switch(&l->sched_sp, f->sp);
    asan_arrive(l->sched_fake, NULL, NULL);
}

void tk_emu_syncthreads(void) { fiber_yield(F_BLOCK_BAR); }

void *tk_emu_dynamic_shared(void) { return cur_launch->dyn; }

/* The memory of the shared declaration `key` (its address) in this launch:
 * carved from the launch's arena on first use, poisoned with the rest of
 * the arena at the start of every block (tk_emu_launch). A kernel past the
 * GPU's 48 KiB does not compile for one (ptxas fails it); here it stops the
 * process, naming the kernel, as nothing can carry on from it. */
void *tk_emu_static_shared(const void *key, size_t bytes)
{
    launch *l = cur_launch;
    for (int i = 0; i < l->n_stat; i++)
        if (l->stat_key[i] == key)
            return l->stat + l->stat_off[i];
    size_t off = (l->stat_used + 15) / 16 * 16;
    if (l->n_stat == EMU_STATIC_SHARED_DECLS || bytes > EMU_STATIC_SHARED_BYTES - off) {
        fprintf(stderr, "emulator: %s declares more than %u bytes of shared memory or more than %d shared arrays "
                "(the GPU's limit: 48 KiB)\n", l->name, EMU_STATIC_SHARED_BYTES, EMU_STATIC_SHARED_DECLS);
        abort();
    }
    l->stat_key[l->n_stat] = key;
    l->stat_off[l->n_stat] = off;
    l->stat_size[l->n_stat++] = bytes;
    l->stat_used = off + bytes;
#ifdef TEMPO_ASAN
    ASAN_UNPOISON_MEMORY_REGION(l->stat + off, bytes); /* the rest of the arena stays out of bounds */
#endif
    memset(l->stat + off, 0xff, bytes); /* NaN, as the rest of the block's shared memory */
    return l->stat + off;
}

/* cp.async: each thread's copies wait in its queue, the source read now,
 * and land only when a wait covers their group (the latest moment the
 * hardware may land them), so a thread or block that reads a tile before
 * its wait and barrier reads the poison there. Copies no wait covered are
 * dropped at the block's end. Out of memory for the queue: the copy lands
 * at once. */
void tk_emu_cp_async16(void *dst, const void *src)
{
    launch *l = cur_launch;
    fiber *f = &l->f[l->current];
    if (f->n_copies == f->cap_copies) {
        int cap = f->cap_copies ? 2 * f->cap_copies : 64;
        void *p = realloc(f->copies, sizeof *f->copies * (size_t)cap);
        if (!p) {
            memcpy(dst, src, 16);
            return;
        }
        f->copies = (pending_copy *)p;
        f->cap_copies = cap;
    }
    pending_copy *c = &f->copies[f->n_copies++];
    c->dst = dst;
    memcpy(c->bytes, src, 16);
    c->group = f->group;
}

void tk_emu_cp_async_commit(void)
{
    launch *l = cur_launch;
    l->f[l->current].group++;
}

/* cp.async.wait_group n: every committed group but the newest n lands (the
 * open group's copies do not: a wait covers committed groups only) */
void tk_emu_cp_async_wait(int newest_pending)
{
    launch *l = cur_launch;
    fiber *f = &l->f[l->current];
    int k = 0;
    for (int i = 0; i < f->n_copies; i++) {
        pending_copy *c = &f->copies[i];
        if (c->group < f->group - newest_pending)
            memcpy(c->dst, c->bytes, 16);
        else
            f->copies[k++] = *c;
    }
    f->n_copies = k;
}

float tk_emu_shfl_xor(float v, int lane_mask)
{
    launch *l = cur_launch;
    int t = l->current;
    l->xf[t] = v;
    fiber_yield(F_WARP_BAR);
    float r = l->xf[(t & ~31) | ((t & 31) ^ (lane_mask & 31))];
    fiber_yield(F_WARP_BAR);
    return r;
}

double tk_emu_shfl_xor_d(double v, int lane_mask)
{
    launch *l = cur_launch;
    int t = l->current;
    l->xd[t] = v;
    fiber_yield(F_WARP_BAR);
    double r = l->xd[(t & ~31) | ((t & 31) ^ (lane_mask & 31))];
    fiber_yield(F_WARP_BAR);
    return r;
}

static float bf16_lo(unsigned r)
{
    unsigned u = r << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static float bf16_hi(unsigned r)
{
    unsigned u = r & 0xffff0000u;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* mma.sync m16n8k16 bf16 -> fp32 for the calling warp: every lane leaves
 * its fragments, the warp meets, each lane computes its four results from
 * the whole matrices (cuda_dialect.h's layout), the warp meets again. */
void tk_emu_mma_bf16(float *d, const unsigned *a, const unsigned *b)
{
    launch *l = cur_launch;
    int t = l->current, w0 = t & ~31;
    memcpy(l->ma + 4 * t, a, 4 * sizeof *a);
    memcpy(l->mb + 2 * t, b, 2 * sizeof *b);
    memcpy(l->mc + 4 * t, d, 4 * sizeof *d);
    fiber_yield(F_WARP_BAR);
    float A[16][16], B[16][8];
    for (int lane = 0; lane < 32; lane++) {
        int g = lane >> 2, q = lane & 3;
        const unsigned *fa = l->ma + 4 * (w0 + lane), *fb = l->mb + 2 * (w0 + lane);
        A[g][2 * q] = bf16_lo(fa[0]); A[g][2 * q + 1] = bf16_hi(fa[0]);
        A[g + 8][2 * q] = bf16_lo(fa[1]); A[g + 8][2 * q + 1] = bf16_hi(fa[1]);
        A[g][2 * q + 8] = bf16_lo(fa[2]); A[g][2 * q + 9] = bf16_hi(fa[2]);
        A[g + 8][2 * q + 8] = bf16_lo(fa[3]); A[g + 8][2 * q + 9] = bf16_hi(fa[3]);
        B[2 * q][g] = bf16_lo(fb[0]); B[2 * q + 1][g] = bf16_hi(fb[0]);
        B[2 * q + 8][g] = bf16_lo(fb[1]); B[2 * q + 9][g] = bf16_hi(fb[1]);
    }
    int lane = t & 31, g = lane >> 2, q = lane & 3;
    const float *c = l->mc + 4 * t;
    for (int i = 0; i < 4; i++) {
        int row = g + (i >= 2 ? 8 : 0), col = 2 * q + (i & 1);
        float s = 0;
        for (int k = 0; k < 16; k++)
            s += A[row][k] * B[k][col];
        d[i] = c[i] + s;
    }
    fiber_yield(F_WARP_BAR);
}

/* a misaligned vector access: the launch's first one kept, reported when the
 * launch ends (tk_emu_launch) */
void tk_emu_misaligned(const void *p, int bytes)
{
    launch *l = cur_launch;
    if (l && !l->misaligned) {
        l->misaligned = p;
        l->misaligned_bytes = bytes;
    }
}

/* ldmatrix x4 for the calling warp: every lane leaves its row address, the
 * warp meets, each lane reads its pairs (cuda_dialect.h), the warp meets. */
void tk_emu_ldmatrix_x4(unsigned *r, const unsigned short *row, int trans)
{
    launch *l = cur_launch;
    TK_EMU_ALIGNED(row, 16); /* each row of an ldmatrix is 16 bytes, 16-byte aligned */
    int t = l->current, w0 = t & ~31, lane = t & 31;
    l->rows[t] = row;
    fiber_yield(F_WARP_BAR);
    for (int i = 0; i < 4; i++) {
        unsigned short lo, hi;
        if (!trans) {
            const unsigned short *p = l->rows[w0 + 8 * i + lane / 4];
            lo = p[2 * (lane % 4)];
            hi = p[2 * (lane % 4) + 1];
        } else {
            lo = l->rows[w0 + 8 * i + 2 * (lane % 4)][lane / 4];
            hi = l->rows[w0 + 8 * i + 2 * (lane % 4) + 1][lane / 4];
        }
        r[i] = (unsigned)lo | ((unsigned)hi << 16);
    }
    fiber_yield(F_WARP_BAR);
}

/* One block, warp after warp (in warp order, or the reverse: l->reverse,
 * and so each warp's lanes): a warp runs, its lanes in turn and its own
 * barriers (shuffles, mma, ldmatrix) released as they fill, until every
 * lane waits at the block's barrier or has finished; then the next warp.
 * So each warp runs from one block barrier to the next ahead of the
 * others, as a GPU's warps may: a warp that reads what another writes
 * with no block barrier between them reads it too early in one of the two
 * orders. Then the block's barrier is released, and so on. 0, or -1 on a
 * deadlock. */
static int run_block(launch *l)
{
    int warps = l->nt / 32;
    for (int i = 0; i < l->nt; i++) {
        l->f[i].state = F_NEW;
        l->f[i].n_copies = 0;
        l->f[i].group = 0;
    }
    for (;;) {
        for (int wk = 0; wk < warps; wk++) {
            int w = l->reverse ? warps - 1 - wk : wk;
            for (;;) {
                for (int k = 0; k < 32; k++) {
                    int i = 32 * w + (l->reverse ? 31 - k : k);
                    if (l->f[i].state == F_NEW || l->f[i].state == F_RUNNABLE)
                        run_fiber(l, i);
                }
                int n = 0;
                for (int i = 32 * w; i < 32 * w + 32; i++)
                    n += l->f[i].state == F_WARP_BAR;
                if (n < 32)
                    break;
                for (int i = 32 * w; i < 32 * w + 32; i++)
                    l->f[i].state = F_RUNNABLE;
            }
        }
        int done = 0, at_block = 0;
        for (int i = 0; i < l->nt; i++) {
            done += l->f[i].state == F_DONE;
            at_block += l->f[i].state == F_BLOCK_BAR;
        }
        if (done == l->nt)
            return 0;
        if (!at_block || at_block + done < l->nt) /* a warp barrier some lane never reaches */
            return -1;
        for (int i = 0; i < l->nt; i++) /* exited threads count as arrived */
            if (l->f[i].state == F_BLOCK_BAR)
                l->f[i].state = F_RUNNABLE;
    }
}

/* The kernels reach the launch in progress through one pointer
 * (cur_launch: the dialect's calls carry no context), so one launch runs at
 * a time: the emulator's one lock. */
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;

static int ensure_fibers(tk_emu_registry *r, int nt)
{
    if (r->n_fibers >= nt)
        return 0;
    fiber *f = (fiber *)realloc(r->fibers, sizeof *f * (size_t)nt);
    if (!f)
        return -1;
    r->fibers = f;
    for (; r->n_fibers < nt; r->n_fibers++) {
        memset(&f[r->n_fibers], 0, sizeof f[r->n_fibers]);
        f[r->n_fibers].stack = (char *)aligned_alloc(64, FIBER_STACK);
        if (!f[r->n_fibers].stack)
            return -1;
    }
    return 0;
}

extern "C" int tk_emu_args(const tk_emu_registry *r, int idx, const unsigned char **sizes)
{
    if (idx < 0 || idx >= r->n) {
        *sizes = NULL;
        return -1;
    }
    *sizes = r->e[idx].arg_sizes;
    return r->e[idx].n_args;
}

extern "C" int tk_emu_check(const tk_emu_registry *r, int idx, const unsigned grid[3], const unsigned block[3],
                            char *err, size_t err_len)
{
    if (idx < 0 || idx >= r->n) {
        snprintf(err, err_len, "emulator: no kernel %d", idx);
        return -1;
    }
    unsigned nt = block[0] * block[1] * block[2];
    /* what the driver refuses (grid up to 2^31-1 x 65,535 x 65,535, blocks up to 1,024 threads), and blocks
     * that are not whole warps (the kernels' shuffles assume them) */
    if (nt == 0 || nt % 32 || nt > 1024 || !grid[0] || !grid[1] || !grid[2] || grid[0] > 2147483647u ||
        grid[1] > 65535 || grid[2] > 65535) {
        snprintf(err, err_len, "emulator: %s launched with %u threads per block and a %ux%ux%u grid: outside the "
                 "GPU's limits (grid 2^31-1 x 65,535 x 65,535, whole warps up to 1,024 threads)", r->e[idx].name,
                 nt, grid[0], grid[1], grid[2]);
        return -1;
    }
    if (r->e[idx].max_threads && nt > (unsigned)r->e[idx].max_threads) { /* its .maxntid: the driver refuses */
        snprintf(err, err_len, "emulator: %s launched with %u threads per block, above its launch bounds (%d)",
                 r->e[idx].name, nt, r->e[idx].max_threads);
        return -1;
    }
    return 0;
}

extern "C" int tk_emu_launch(const tk_emu_registry *rc, int idx, const unsigned grid[3], const unsigned block[3],
                             size_t shmem, void **args, char *err, size_t err_len)
{
    tk_emu_registry *r = (tk_emu_registry *)rc; /* the fiber pool grows; the kernels do not change */
    if (tk_emu_check(r, idx, grid, block, err, err_len))
        return -1;
    unsigned nt = block[0] * block[1] * block[2];
    pthread_mutex_lock(&launch_lock);
    int rc_ = 0;
    launch l;
    memset(&l, 0, sizeof l);
    l.name = r->e[idx].name;
    l.fn = r->e[idx].fn;
    l.args = args;
    l.grid = {grid[0], grid[1], grid[2]};
    l.block = {block[0], block[1], block[2]};
    l.nt = (int)nt;
    l.xf = (float *)malloc(sizeof(float) * nt);
    l.xd = (double *)malloc(sizeof(double) * nt);
    l.ma = (unsigned *)malloc(sizeof(unsigned) * 4 * nt);
    l.mb = (unsigned *)malloc(sizeof(unsigned) * 2 * nt);
    l.mc = (float *)malloc(sizeof(float) * 4 * nt);
    l.rows = (const unsigned short **)malloc(sizeof *l.rows * nt);
    l.dyn_bytes = shmem;
    l.dyn = shmem ? (unsigned char *)aligned_alloc(64, (shmem + 63) / 64 * 64) : NULL;
    l.stat = (unsigned char *)aligned_alloc(64, EMU_STATIC_SHARED_BYTES);
#ifdef TEMPO_ASAN
    /* under AddressSanitizer, shared memory past what a launch asked for (the dynamic bytes, each declared
     * array) is out of bounds, as on a GPU */
    if (l.dyn)
        ASAN_POISON_MEMORY_REGION(l.dyn + shmem, (shmem + 63) / 64 * 64 - shmem);
    if (l.stat)
        ASAN_POISON_MEMORY_REGION(l.stat, EMU_STATIC_SHARED_BYTES);
#endif
    if (!l.xf || !l.xd || !l.ma || !l.mb || !l.mc || !l.rows || (shmem && !l.dyn) || !l.stat ||
        ensure_fibers(r, (int)nt)) {
        snprintf(err, err_len, "emulator: out of memory launching %s", r->e[idx].name);
        rc_ = -1;
    } else {
        l.f = r->fibers;
        for (unsigned t = 0; t < nt; t++)
            l.f[t].tid = {t % l.block.x, t / l.block.x % l.block.y, t / (l.block.x * l.block.y)};
        cur_launch = &l;
        blockDim = l.block;
        gridDim = l.grid;
        /* every other launch runs its blocks in the reverse order: a block that reads what another block
         * of the same launch writes (no order between blocks on a GPU) reads it too early in one of them */
        unsigned long long n_blocks = (unsigned long long)l.grid.x * l.grid.y * l.grid.z;
        int reverse_blocks = (int)(r->launches++ & 1); /* and a launch of one block alternates its warps' order */
        for (unsigned long long b = 0; b < n_blocks && !rc_; b++) {
            unsigned long long i = reverse_blocks ? n_blocks - 1 - b : b;
            unsigned x = (unsigned)(i % l.grid.x), y = (unsigned)(i / l.grid.x % l.grid.y),
                     z = (unsigned)(i / ((unsigned long long)l.grid.x * l.grid.y));
            l.cur = {x, y, z};
            l.reverse = (int)((x + y + z + (unsigned)reverse_blocks) & 1); /* every other block: run_block */
            if (l.dyn_bytes)
                memset(l.dyn, 0xff, l.dyn_bytes); /* NaN in every float and double */
            for (int d = 0; d < l.n_stat; d++)
                memset(l.stat + l.stat_off[d], 0xff, l.stat_size[d]);
            if (run_block(&l)) {
                snprintf(err, err_len,
                         "emulator: %s: block (%u,%u,%u) deadlocked (a thread left before a barrier the others "
                         "wait at, or a shuffle not called by its whole warp)",
                         r->e[idx].name, x, y, z);
                rc_ = -1;
            }
        }
        if (!rc_ && l.misaligned) {
            snprintf(err, err_len, "emulator: %s: a %d-byte access at %p, not %d-byte aligned (a GPU faults on it)",
                     r->e[idx].name, l.misaligned_bytes, l.misaligned, l.misaligned_bytes);
            rc_ = -1;
        }
        cur_launch = NULL;
    }
    free(l.xf);
    free(l.xd);
    free(l.ma);
    free(l.mb);
    free(l.mc);
    free(l.rows);
#ifdef TEMPO_ASAN
    if (l.dyn)
        ASAN_UNPOISON_MEMORY_REGION(l.dyn, (shmem + 63) / 64 * 64);
    if (l.stat)
        ASAN_UNPOISON_MEMORY_REGION(l.stat, EMU_STATIC_SHARED_BYTES);
#endif
    free(l.dyn);
    free(l.stat);
    pthread_mutex_unlock(&launch_lock);
    return rc_;
}
