/* emulator.cpp - the CPU emulator of tempo's CUDA kernels (see emulator.h).
 * Host C++ only; the kernels themselves come from the .cu files compiled in
 * host mode (cuda_dialect.h), each of which registers its kernels here. */
#include "kernels/cuda/cuda_dialect.h"
#include "kernels/cuda/emulator.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

thread_local tk_dim3 threadIdx, blockIdx, blockDim, gridDim;

#define EMU_FILES(X) X(embedding) X(rmsnorm) X(rope) X(activation) X(attention) X(cross_entropy) X(optim)
#define DECLARE(f) extern "C" void tk_emu_register_##f(tk_emu_registry *r);
EMU_FILES(DECLARE)

struct tk_emu_registry {
    struct entry {
        char name[64];
        tk_emu_trampoline fn;
    } *e;
    int n, cap, oom;
};

void tk_emu_add(tk_emu_registry *r, const char *name, tk_emu_trampoline fn)
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
    if (r) {
        free(r->e);
        free(r);
    }
}

extern "C" int tk_emu_find(const tk_emu_registry *r, const char *name)
{
    for (int i = 0; i < r->n; i++)
        if (!strcmp(r->e[i].name, name))
            return i;
    return -1;
}

/* One launch: what its threads share. */
struct launch {
    tk_emu_trampoline fn;
    void **args;
    tk_dim3 grid, block;
    int n_threads;
    pthread_barrier_t block_bar;
    pthread_barrier_t *warp_bar;  /* [n_threads / 32] */
    float *xf;                    /* [n_threads] shuffle slots */
    double *xd;
    unsigned char *dyn;
    size_t dyn_bytes;
};

struct thread_arg {
    launch *l;
    int tid;
};

static thread_local launch *tl_launch;
static thread_local int tl_tid;

void tk_emu_syncthreads(void) { pthread_barrier_wait(&tl_launch->block_bar); }

void *tk_emu_dynamic_shared(void) { return tl_launch->dyn; }

float tk_emu_shfl_xor(float v, int lane_mask)
{
    launch *l = tl_launch;
    int t = tl_tid, w = t >> 5;
    l->xf[t] = v;
    pthread_barrier_wait(&l->warp_bar[w]);
    float r = l->xf[(t & ~31) | ((t & 31) ^ (lane_mask & 31))];
    pthread_barrier_wait(&l->warp_bar[w]);
    return r;
}

double tk_emu_shfl_xor_d(double v, int lane_mask)
{
    launch *l = tl_launch;
    int t = tl_tid, w = t >> 5;
    l->xd[t] = v;
    pthread_barrier_wait(&l->warp_bar[w]);
    double r = l->xd[(t & ~31) | ((t & 31) ^ (lane_mask & 31))];
    pthread_barrier_wait(&l->warp_bar[w]);
    return r;
}

static void *thread_main(void *p)
{
    thread_arg *a = (thread_arg *)p;
    launch *l = a->l;
    tl_launch = l;
    tl_tid = a->tid;
    blockDim = l->block;
    gridDim = l->grid;
    threadIdx.x = (unsigned)a->tid % l->block.x;
    threadIdx.y = (unsigned)a->tid / l->block.x % l->block.y;
    threadIdx.z = (unsigned)a->tid / (l->block.x * l->block.y);
    for (unsigned z = 0; z < l->grid.z; z++)
        for (unsigned y = 0; y < l->grid.y; y++)
            for (unsigned x = 0; x < l->grid.x; x++) {
                blockIdx.x = x;
                blockIdx.y = y;
                blockIdx.z = z;
                if (a->tid == 0 && l->dyn_bytes)
                    memset(l->dyn, 0xff, l->dyn_bytes); /* NaN in every float and double */
                pthread_barrier_wait(&l->block_bar);
                l->fn(l->args);
                pthread_barrier_wait(&l->block_bar);
            }
    return NULL;
}

/* The kernels' static shared arrays are process-wide here, so one launch
 * runs at a time: the one lock of the emulator. */
static pthread_mutex_t launch_lock = PTHREAD_MUTEX_INITIALIZER;

extern "C" int tk_emu_launch(const tk_emu_registry *r, int idx, const unsigned grid[3], const unsigned block[3],
                             size_t shmem, void **args, char *err, size_t err_len)
{
    if (idx < 0 || idx >= r->n) {
        snprintf(err, err_len, "emulator: no kernel %d", idx);
        return -1;
    }
    unsigned nt = block[0] * block[1] * block[2];
    if (nt == 0 || nt % 32 || nt > 1024 || !grid[0] || !grid[1] || !grid[2]) {
        snprintf(err, err_len, "emulator: %s launched with %u threads per block and a %ux%ux%u grid", r->e[idx].name,
                 nt, grid[0], grid[1], grid[2]);
        return -1;
    }
    pthread_mutex_lock(&launch_lock);
    launch l;
    memset(&l, 0, sizeof l);
    l.fn = r->e[idx].fn;
    l.args = args;
    l.grid = {grid[0], grid[1], grid[2]};
    l.block = {block[0], block[1], block[2]};
    l.n_threads = (int)nt;
    int nw = (int)nt / 32, rc = 0;
    l.warp_bar = (pthread_barrier_t *)malloc(sizeof(pthread_barrier_t) * (size_t)nw);
    l.xf = (float *)malloc(sizeof(float) * nt);
    l.xd = (double *)malloc(sizeof(double) * nt);
    l.dyn_bytes = shmem;
    l.dyn = shmem ? (unsigned char *)aligned_alloc(64, (shmem + 63) / 64 * 64) : NULL;
    thread_arg *ta = (thread_arg *)malloc(sizeof(thread_arg) * nt);
    pthread_t *th = (pthread_t *)malloc(sizeof(pthread_t) * nt);
    if (!l.warp_bar || !l.xf || !l.xd || (shmem && !l.dyn) || !ta || !th) {
        snprintf(err, err_len, "emulator: out of memory launching %s", r->e[idx].name);
        rc = -1;
    } else {
        pthread_barrier_init(&l.block_bar, NULL, nt);
        for (int w = 0; w < nw; w++)
            pthread_barrier_init(&l.warp_bar[w], NULL, 32);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setstacksize(&attr, 1u << 20);
        unsigned started = 0;
        for (; started < nt; started++) {
            ta[started].l = &l;
            ta[started].tid = (int)started;
            if (pthread_create(&th[started], &attr, thread_main, &ta[started]))
                break;
        }
        pthread_attr_destroy(&attr);
        if (started < nt) {
            /* the started threads wait at a barrier that can never fill: a
             * partial launch cannot be undone, so this is fatal to the process */
            fprintf(stderr, "tempo: emulator: could not start %u threads for %s\n", nt, r->e[idx].name);
            abort();
        }
        for (unsigned t = 0; t < nt; t++)
            pthread_join(th[t], NULL);
        pthread_barrier_destroy(&l.block_bar);
        for (int w = 0; w < nw; w++)
            pthread_barrier_destroy(&l.warp_bar[w]);
    }
    free(l.warp_bar);
    free(l.xf);
    free(l.xd);
    free(l.dyn);
    free(ta);
    free(th);
    pthread_mutex_unlock(&launch_lock);
    return rc;
}
