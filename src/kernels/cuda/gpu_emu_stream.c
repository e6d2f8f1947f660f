/* gpu_emu_stream.c - the emulator's two streams (gpu_internal.h): the work
 * queued on the compute and copy streams is held back and run only when the
 * host waits for it (a sync, a free, a timer's stop), as late as a GPU may
 * run it, in an order a GPU may choose:
 *  - a launch's arguments are copied when it is queued (as cuLaunchKernel
 *    copies them); an upload's source is read when the copy runs if it is
 *    pinned memory (gpu_host_alloc), and when it is queued otherwise (as the
 *    driver stages pageable memory before the call returns); a download's
 *    bytes reach host memory when it runs. So a host that rewrites pinned
 *    staging, or reads what it downloaded, before the wait that covers it,
 *    uses the wrong bytes here too;
 *  - the streams run in their own orders, each op after the other stream's
 *    ops it was told to wait for (gpu_compute_waits_for_copy,
 *    gpu_copy_waits_for_compute) and otherwise in any order: every other
 *    flush runs the copy stream's ops as early as they may run, the others as
 *    late, so a wait that is missing either way shows in one of the two.
 *    gpu_copy_sync runs the copy stream's ops and only the compute ops they
 *    wait for.
 * A kernel's fault is reported when it runs (at the sync, as on a GPU); what
 * the driver refuses at launch is refused when queued (gpu.c). */
#include "kernels/cuda/gpu_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { OP_LAUNCH, OP_CALL, OP_COPY, OP_FILL };

struct gpu_emu_op {
    int kind;
    int after;  /* the other stream's ops that run before this one */
    void *mem;  /* what the op owns (the arguments, a context, a snapshot): freed when it ends */
    /* OP_LAUNCH */
    gpu_kernel k;
    unsigned grid[3], block[3], shmem;
    void **args;
    /* OP_CALL */
    void (*fn)(void *ctx);
    /* OP_COPY, OP_FILL */
    void *dst;
    const void *src;
    size_t bytes;
    unsigned char byte;
};

static struct gpu_emu_op *out_of_memory(gpu *g, const char *what)
{
    gpu_set_error(g, "gpu emulator: out of memory queueing %s", what);
    return NULL;
}

/* A new op of this kind at the end of stream s, owning mem_bytes of memory
 * (o->mem; none for 0), its other fields zero but `after`; or NULL with the
 * error set. */
static struct gpu_emu_op *push(gpu *g, int s, int kind, size_t mem_bytes, const char *what)
{
    struct gpu_emu_stream *q = &g->emu_stream[s];
    void *mem = mem_bytes ? malloc(mem_bytes) : NULL;
    if (mem_bytes && !mem)
        return out_of_memory(g, what);
    if (q->n == q->cap) {
        int cap = q->cap ? 2 * q->cap : 64;
        void *p = realloc(q->op, sizeof *q->op * (size_t)cap);
        if (!p) {
            free(mem);
            return out_of_memory(g, what);
        }
        q->op = p;
        q->cap = cap;
    }
    struct gpu_emu_op *o = &q->op[q->n++];
    memset(o, 0, sizeof *o);
    o->kind = kind;
    o->after = q->wait;
    o->mem = mem;
    return o;
}

void gpu_emu_launch(gpu *g, gpu_kernel k, const unsigned grid[3], const unsigned block[3], unsigned shmem,
                    void **args)
{
    const char *name = gpu_kernel_name(k);
    const unsigned char *sizes;
    int n = tk_emu_args(g->emu, g->emu_index[k], &sizes);
    if (n < 0) {
        gpu_set_error(g, "gpu emulator: %s is not registered", name);
        return;
    }
    size_t bytes = sizeof(void *) * (size_t)(n + 1);
    for (int i = 0; i < n; i++)
        bytes += (sizes[i] + 7u) / 8 * 8;
    struct gpu_emu_op *o = push(g, GPU_STREAM_COMPUTE, OP_LAUNCH, bytes, name);
    if (!o)
        return;
    unsigned char *mem = o->mem;
    void **copy = (void **)mem;
    unsigned char *v = mem + sizeof(void *) * (size_t)(n + 1);
    for (int i = 0; i < n; i++) { /* each value copied now: the caller's may change before the launch runs */
        memcpy(v, args[i], sizes[i]);
        copy[i] = v;
        v += (sizes[i] + 7u) / 8 * 8;
    }
    copy[n] = NULL;
    o->args = copy;
    o->k = k;
    memcpy(o->grid, grid, sizeof o->grid);
    memcpy(o->block, block, sizeof o->block);
    o->shmem = shmem;
}

void gpu_emu_call(gpu *g, const char *what, void (*fn)(void *ctx), const void *ctx, size_t bytes)
{
    struct gpu_emu_op *o = push(g, GPU_STREAM_COMPUTE, OP_CALL, bytes ? bytes : 1, what);
    if (!o)
        return;
    memcpy(o->mem, ctx, bytes);
    o->fn = fn;
}

/* Whether [p, p + bytes) lies in pinned host memory (gpu_host_alloc). */
static int pinned(const gpu *g, const void *p, size_t bytes)
{
    uintptr_t a = (uintptr_t)p;
    for (int i = 0; i < g->n_emu_pinned; i++) {
        uintptr_t b = (uintptr_t)g->emu_pinned[i].p;
        if (a >= b && a - b <= g->emu_pinned[i].bytes && bytes <= g->emu_pinned[i].bytes - (a - b))
            return 1;
    }
    return 0;
}

void gpu_emu_copy(gpu *g, int s, void *dst, const void *src, size_t bytes, int from_host)
{
    int staged = from_host && !pinned(g, src, bytes); /* pageable: the driver stages it before the call returns */
    struct gpu_emu_op *o = push(g, s, OP_COPY, staged ? bytes : 0, from_host ? "a copy to the GPU" : "a copy");
    if (!o)
        return;
    o->dst = dst;
    o->src = src;
    o->bytes = bytes;
    if (staged) {
        memcpy(o->mem, src, bytes);
        o->src = o->mem;
    }
}

void gpu_emu_fill(gpu *g, void *dst, unsigned char byte, size_t bytes)
{
    struct gpu_emu_op *o = push(g, GPU_STREAM_COMPUTE, OP_FILL, 0, "a memset");
    if (!o)
        return;
    o->dst = dst;
    o->byte = byte;
    o->bytes = bytes;
}

void gpu_emulator_order(gpu *g, int order)
{
    if (g->info.backend == GPU_EMULATOR)
        g->emu_order = order;
}

void gpu_emu_wait(gpu *g, int s) { g->emu_stream[s].wait = g->emu_stream[!s].n; }

static void run_op(gpu *g, struct gpu_emu_op *o)
{
    char e[300];
    switch (o->kind) {
    case OP_LAUNCH:
        if (tk_emu_launch(g->emu, g->emu_index[o->k], o->grid, o->block, o->shmem, o->args, e, sizeof e))
            gpu_set_error(g, "%s", e);
        break;
    case OP_CALL:
        o->fn(o->mem);
        break;
    case OP_COPY:
        memmove(o->dst, o->src, o->bytes);
        break;
    case OP_FILL:
        memset(o->dst, o->byte, o->bytes);
        break;
    }
}

/* Whether stream s's next op may run now. */
static int ready(const gpu *g, int s)
{
    const struct gpu_emu_stream *q = &g->emu_stream[s];
    return q->head < q->n && q->op[q->head].after <= g->emu_stream[!s].head;
}

void gpu_emu_run(gpu *g, int copy_only)
{
    struct gpu_emu_stream *q = g->emu_stream;
    int copies_first = g->emu_order == GPU_EMU_ALTERNATE ? (int)(g->emu_flushes++ & 1)
                                                         : g->emu_order == GPU_EMU_COPIES_EARLY;
    while (!g->failed && (q[1].head < q[1].n || (!copy_only && q[0].head < q[0].n))) {
        int c = ready(g, 0), k = ready(g, 1);
        if (!c && !k) { /* each op waits only for ops queued before it: one of the two can always run */
            gpu_set_error(g, "gpu emulator: the streams wait for each other");
            break;
        }
        int s = c && k ? (copy_only || copies_first) : k;
        struct gpu_emu_op *o = &q[s].op[q[s].head++];
        run_op(g, o);
        free(o->mem);
        o->mem = NULL;
    }
    if (g->failed) { /* nothing after a fault runs, as in a context a kernel's fault has broken */
        gpu_emu_end(g);
        return;
    }
    if (q[0].head == q[0].n && q[1].head == q[1].n)
        for (int s = 0; s < 2; s++)
            q[s].n = q[s].head = q[s].wait = 0;
}

void gpu_emu_end(gpu *g)
{
    for (int s = 0; s < 2; s++) {
        struct gpu_emu_stream *q = &g->emu_stream[s];
        for (int i = q->head; i < q->n; i++)
            free(q->op[i].mem);
        q->n = q->head = q->wait = 0;
    }
}

int gpu_emu_pinned_add(gpu *g, void *p, size_t bytes)
{
    if (g->n_emu_pinned == g->cap_emu_pinned) {
        int cap = g->cap_emu_pinned ? 2 * g->cap_emu_pinned : 8;
        void *a = realloc(g->emu_pinned, sizeof *g->emu_pinned * (size_t)cap);
        if (!a)
            return -1;
        g->emu_pinned = a;
        g->cap_emu_pinned = cap;
    }
    g->emu_pinned[g->n_emu_pinned].p = p;
    g->emu_pinned[g->n_emu_pinned].bytes = bytes;
    g->n_emu_pinned++;
    return 0;
}

void gpu_emu_pinned_remove(gpu *g, void *p)
{
    for (int i = 0; i < g->n_emu_pinned; i++)
        if (g->emu_pinned[i].p == p) {
            g->emu_pinned[i] = g->emu_pinned[--g->n_emu_pinned];
            return;
        }
}
