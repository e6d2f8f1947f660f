/* dist.c - the MPI session and collectives of dist.h; without TEMPO_MPI a
 * world of one whose collectives do nothing. */
#include "parallel/dist.h"

#include "core/number.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The size of the job mpirun (Open MPI, or a PMI launcher) started, from
 * its environment; 0 when not started by one. */
static int launcher_world(void)
{
    const char *names[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "PMI_SIZE"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *v = getenv(names[i]);
        if (v && *v) {
            long n = strtol(v, NULL, 10);
            return n > 0 && n < (1 << 20) ? (int)n : 0;
        }
    }
    return 0;
}

int dist_launched_world(void) { return launcher_world(); }

#ifdef TEMPO_MPI
#include <mpi.h>

int dist_built_with_mpi(void) { return 1; }

const char *dist_library_version(char *buf, size_t n)
{
    char v[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(v, &len);
    char *nl = strpbrk(v, ",\n");   /* "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4" */
    if (nl) *nl = 0;
    snprintf(buf, n, "%s", v);
    return buf;
}

/* d->piece: DIST_PIECE_FLOATS, or TEMPO_MPI_PIECE_FLOATS when set. */
static int piece_from_env(dist_context *d, tempo_error *err)
{
    d->piece = DIST_PIECE_FLOATS;
    const char *v = getenv("TEMPO_MPI_PIECE_FLOATS");
    long long p;
    if (!v)
        return 0;
    if (number_parse_int("TEMPO_MPI_PIECE_FLOATS", v, 1, (long long)1 << 30, &p, err))
        return -1;
    d->piece = (size_t)p;
    return 0;
}

int dist_init(dist_context *d, int *argc, char ***argv, tempo_error *err)
{
    memset(d, 0, sizeof *d);
    d->world = 1;
    if (piece_from_env(d, err))
        return -1;
    if (launcher_world() == 0)
        return 0;
    int provided;
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return tempo_fail(err, "mpi: MPI_Init failed");
    d->active = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &d->world);
    return 0;
}

/* Wait for a request without spinning a core: a few quick tests, then
 * sleeps growing to 1 ms (a step is hundreds of ms; a rank idle for a
 * minute while the root builds the count memory costs nothing). */
static int wait_sleeping(MPI_Request *req)
{
    int done = 0;
    long ns = 20000;
    for (int i = 0; !done; i++) {
        if (MPI_Test(req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            return -1;
        if (done || i < 32)
            continue;
        struct timespec t = {0, ns};
        nanosleep(&t, NULL);
        if (ns < 1000000) ns *= 2;
    }
    return 0;
}

void dist_finalize(dist_context *d)
{
    if (!d->active)
        return;
    MPI_Request r;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &r) == MPI_SUCCESS)
        wait_sleeping(&r);
    MPI_Finalize();
    d->active = 0;
}

void dist_abort(dist_context *d, int status)
{
    if (d->active)
        MPI_Abort(MPI_COMM_WORLD, status);
    exit(status);
}

int dist_allreduce_sum_f32(dist_context *d, float *x, size_t n, tempo_error *err)
{
    if (d->world <= 1)
        return 0;
    /* in pieces: Open MPI's all-reduce of one long buffer is slow (dist.h) */
    const size_t piece = d->piece;
    for (size_t at = 0; at < n; at += piece) {
        int cnt = (int)(n - at < piece ? n - at : piece);
        /* blocking: a non-blocking collective advances only inside MPI calls, so a
         * sleeping wait would stall it between polls (measured: 1 GB/s at 10 MB) */
        if (MPI_Allreduce(MPI_IN_PLACE, x + at, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
            return tempo_fail(err, "mpi: all-reduce of %zu floats failed", n);
    }
    return 0;
}

int dist_allreduce_mean_f32(dist_context *d, float *x, size_t n, tempo_error *err)
{
    if (d->world <= 1)
        return 0;
    if (dist_allreduce_sum_f32(d, x, n, err))
        return -1;
    const float s = 1.0f / (float)d->world;
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
    return 0;
}

int dist_allreduce_sum_f64(dist_context *d, double *x, size_t n, tempo_error *err)
{
    if (d->world <= 1)
        return 0;
    if (MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        return tempo_fail(err, "mpi: all-reduce of %zu doubles failed", n);
    return 0;
}

int dist_broadcast_f64(dist_context *d, double *x, size_t n, tempo_error *err)
{
    if (d->world <= 1)
        return 0;
    MPI_Request r;
    if (MPI_Ibcast(x, (int)n, MPI_DOUBLE, 0, MPI_COMM_WORLD, &r) != MPI_SUCCESS || wait_sleeping(&r))
        return tempo_fail(err, "mpi: broadcast failed");
    return 0;
}

int dist_barrier(dist_context *d, tempo_error *err)
{
    if (d->world <= 1)
        return 0;
    MPI_Request r;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &r) != MPI_SUCCESS || wait_sleeping(&r))
        return tempo_fail(err, "mpi: barrier failed");
    return 0;
}

int dist_allreduce_sum_u64(dist_context *d, uint64_t *x, size_t n, tempo_error *err)
{
    if (d->world <= 1)
        return 0;
    if (MPI_Allreduce(MPI_IN_PLACE, x, (int)n, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS)
        return tempo_fail(err, "mpi: all-reduce of %zu counts failed", n);
    return 0;
}

int dist_broadcast_bytes(dist_context *d, void *buf, size_t n, int root, tempo_error *err)
{
    if (d->world <= 1)
        return 0;
    const size_t piece = (size_t)1 << 30;   /* counts are int */
    for (size_t at = 0; at < n; at += piece) {
        int cnt = (int)(n - at < piece ? n - at : piece);
        if (MPI_Bcast((char *)buf + at, cnt, MPI_BYTE, root, MPI_COMM_WORLD) != MPI_SUCCESS)
            return tempo_fail(err, "mpi: broadcast of %zu bytes failed", n);
    }
    return 0;
}

/* The spans as MPI's int counts and displacements; -1 when one does not fit. */
static int span_counts(const dist_context *d, const size_t *begin, const size_t *len, int **counts, int **displs,
                       tempo_error *err)
{
    *counts = malloc(sizeof(int) * (size_t)d->world);
    *displs = malloc(sizeof(int) * (size_t)d->world);
    if (!*counts || !*displs) {
        free(*counts);
        free(*displs);
        return tempo_fail(err, "mpi: out of memory");
    }
    for (int r = 0; r < d->world; r++) {
        if (len[r] > (size_t)INT_MAX || begin[r] > (size_t)INT_MAX || begin[r] + len[r] > (size_t)INT_MAX) {
            free(*counts);
            free(*displs);
            return tempo_fail(err, "mpi: a shard of %zu floats at %zu is beyond 2^31", len[r], begin[r]);
        }
        (*counts)[r] = (int)len[r];
        (*displs)[r] = (int)begin[r];
    }
    return 0;
}

/* x[a, a + n) summed into rank owner's x (in place there). */
static int reduce_to(dist_context *d, float *x, size_t a, size_t n, int owner)
{
    if (owner == d->rank)
        return MPI_Reduce(MPI_IN_PLACE, x + a, (int)n, MPI_FLOAT, MPI_SUM, owner, MPI_COMM_WORLD);
    return MPI_Reduce(x + a, NULL, (int)n, MPI_FLOAT, MPI_SUM, owner, MPI_COMM_WORLD);
}

int dist_reduce_scatter_mean_f32(dist_context *d, float *x, const size_t *begin, const size_t *len,
                                 tempo_error *err)
{
    if (d->world <= 1)
        return 0;
    /* each owner's span, in pieces, reduced to it: one MPI_Reduce_scatter of a long buffer is slow (dist.h),
     * and these are the overlapped path's collectives, so both give the same sums */
    for (int r = 0; r < d->world; r++)
        for (size_t at = 0; at < len[r]; at += d->piece) {
            size_t cnt = len[r] - at < d->piece ? len[r] - at : d->piece;
            if (reduce_to(d, x, begin[r] + at, cnt, r) != MPI_SUCCESS)
                return tempo_fail(err, "mpi: reduce-scatter failed (rank %d's span of %zu floats)", r, len[r]);
        }
    const float s = 1.0f / (float)d->world;
    float *mine = x + begin[d->rank];
    for (size_t i = 0; i < len[d->rank]; i++)
        mine[i] *= s;
    return 0;
}

int dist_allgather_f32(dist_context *d, float *x, const size_t *begin, const size_t *len, tempo_error *err)
{
    if (d->world <= 1)
        return 0;
    int *counts, *displs;
    if (span_counts(d, begin, len, &counts, &displs, err))
        return -1;
    int rc = MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, counts, displs, MPI_FLOAT, MPI_COMM_WORLD);
    free(counts);
    free(displs);
    return rc == MPI_SUCCESS ? 0 : tempo_fail(err, "mpi: all-gather failed");
}

int dist_gather_f32(dist_context *d, const float *mine, float *full, const size_t *begin, const size_t *len,
                    tempo_error *err)
{
    if (d->world <= 1) {
        if (full != mine)
            memcpy(full + begin[0], mine, sizeof(float) * len[0]);
        return 0;
    }
    int *counts, *displs;
    if (span_counts(d, begin, len, &counts, &displs, err))
        return -1;
    int rc = MPI_Gatherv(mine, counts[d->rank], MPI_FLOAT, full, counts, displs, MPI_FLOAT, 0, MPI_COMM_WORLD);
    free(counts);
    free(displs);
    return rc == MPI_SUCCESS ? 0 : tempo_fail(err, "mpi: gather failed");
}

int dist_overlap_init(dist_overlap *o, dist_context *d, int max_spans, size_t n_total, tempo_error *err)
{
    memset(o, 0, sizeof *o);
    o->d = d;
    /* a span cut at the owners' bounds and then into pieces: at most n / piece + 1 per owner it touches */
    size_t cap = n_total / d->piece + (size_t)max_spans * (size_t)(d->world > 1 ? d->world : 1) + 1;
    if (cap > (size_t)INT_MAX)
        return tempo_fail(err, "mpi: %zu collectives a step are too many (TEMPO_MPI_PIECE_FLOATS too small)", cap);
    o->cap = (int)cap;
    o->req = malloc(sizeof(MPI_Request) * (size_t)(o->cap > 0 ? o->cap : 1));
    if (!o->req)
        return tempo_fail(err, "mpi: out of memory");
    return 0;
}

void dist_overlap_free(dist_overlap *o)
{
    free(o->req);
    o->req = NULL;
}

void dist_overlap_begin(dist_overlap *o, float *x, size_t n, const size_t *begin, const size_t *len)
{
    o->x = x;
    o->n_total = n;
    o->begin = begin;
    o->len = len;
    o->n = 0;
    o->failed = 0;
}

/* One collective of the step: x[a, a + n) summed to every rank (owner < 0)
 * or to rank owner. */
static void overlap_piece(dist_overlap *o, size_t a, size_t n, int owner)
{
    MPI_Request *req = o->req;
    int rc = MPI_ERR_OTHER;
    if (o->n < o->cap && n <= (size_t)INT_MAX) {
        if (owner < 0)
            rc = MPI_Iallreduce(MPI_IN_PLACE, o->x + a, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &req[o->n]);
        else if (owner == o->d->rank)
            rc = MPI_Ireduce(MPI_IN_PLACE, o->x + a, (int)n, MPI_FLOAT, MPI_SUM, owner, MPI_COMM_WORLD, &req[o->n]);
        else
            rc = MPI_Ireduce(o->x + a, NULL, (int)n, MPI_FLOAT, MPI_SUM, owner, MPI_COMM_WORLD, &req[o->n]);
    }
    if (rc == MPI_SUCCESS) {
        o->n++;
    } else if (!o->failed) {
        o->failed = 1;
        o->fail_n = n;
    }
}

/* x[a, a + n) in pieces (one long collective is slow: dist.h). */
static void overlap_one(dist_overlap *o, size_t a, size_t n, int owner)
{
    for (size_t at = 0; at < n; at += o->d->piece)
        overlap_piece(o, a + at, n - at < o->d->piece ? n - at : o->d->piece, owner);
}

void dist_overlap_start(dist_overlap *o, size_t off, size_t n)
{
    if (o->d->world <= 1 || n == 0)
        return;
    if (!o->begin) {
        overlap_one(o, off, n, -1);
    } else {
        /* the owners' spans follow each other in rank order: each overlap with [off, off + n) goes to its owner */
        for (int r = 0; r < o->d->world; r++) {
            size_t a = off > o->begin[r] ? off : o->begin[r];
            size_t e = off + n < o->begin[r] + o->len[r] ? off + n : o->begin[r] + o->len[r];
            if (a < e)
                overlap_one(o, a, e - a, r);
        }
    }
    int done;   /* the poll: Open MPI advances the started collectives only inside MPI calls */
    if (o->n > 0 && MPI_Testall(o->n, o->req, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS && !o->failed) {
        o->failed = 1;
        o->fail_n = n;
    }
}

int dist_overlap_finish(dist_overlap *o, tempo_error *err)
{
    if (o->d->world <= 1)
        return 0;
    int rc = o->n > 0 ? MPI_Waitall(o->n, o->req, MPI_STATUSES_IGNORE) : MPI_SUCCESS;
    o->n = 0;
    if (o->failed || rc != MPI_SUCCESS)
        return tempo_fail(err, "mpi: reducing the gradient (a span of %zu floats) failed", o->fail_n);
    const float s = 1.0f / (float)o->d->world;
    size_t a = o->begin ? o->begin[o->d->rank] : 0;
    size_t e = o->begin ? a + o->len[o->d->rank] : o->n_total;
    for (size_t i = a; i < e; i++)
        o->x[i] *= s;
    return 0;
}

#else /* built without MPI: a world of one */

int dist_built_with_mpi(void) { return 0; }

const char *dist_library_version(char *buf, size_t n)
{
    snprintf(buf, n, "none");
    return buf;
}

int dist_init(dist_context *d, int *argc, char ***argv, tempo_error *err)
{
    (void)argc;
    (void)argv;
    memset(d, 0, sizeof *d);
    d->world = 1;
    d->piece = DIST_PIECE_FLOATS;
    int w = launcher_world();
    if (w > 1)
        return tempo_usage(err, "mpi: started by mpirun as one of %d processes, but this tempo was built without "
                           "MPI (install libopenmpi-dev and rebuild)", w);
    return 0;
}

void dist_finalize(dist_context *d) { (void)d; }

void dist_abort(dist_context *d, int status)
{
    (void)d;
    exit(status);
}

int dist_allreduce_mean_f32(dist_context *d, float *x, size_t n, tempo_error *err)
{
    (void)d; (void)x; (void)n; (void)err;
    return 0;
}

int dist_allreduce_sum_f64(dist_context *d, double *x, size_t n, tempo_error *err)
{
    (void)d; (void)x; (void)n; (void)err;
    return 0;
}

int dist_allreduce_sum_f32(dist_context *d, float *x, size_t n, tempo_error *err)
{
    (void)d; (void)x; (void)n; (void)err;
    return 0;
}

int dist_broadcast_f64(dist_context *d, double *x, size_t n, tempo_error *err)
{
    (void)d; (void)x; (void)n; (void)err;
    return 0;
}

int dist_barrier(dist_context *d, tempo_error *err)
{
    (void)d; (void)err;
    return 0;
}

int dist_allreduce_sum_u64(dist_context *d, uint64_t *x, size_t n, tempo_error *err)
{
    (void)d; (void)x; (void)n; (void)err;
    return 0;
}

int dist_broadcast_bytes(dist_context *d, void *buf, size_t n, int root, tempo_error *err)
{
    (void)d; (void)buf; (void)n; (void)root; (void)err;
    return 0;
}

int dist_reduce_scatter_mean_f32(dist_context *d, float *x, const size_t *begin, const size_t *len,
                                 tempo_error *err)
{
    (void)d; (void)x; (void)begin; (void)len; (void)err;
    return 0;
}

int dist_allgather_f32(dist_context *d, float *x, const size_t *begin, const size_t *len, tempo_error *err)
{
    (void)d; (void)x; (void)begin; (void)len; (void)err;
    return 0;
}

int dist_gather_f32(dist_context *d, const float *mine, float *full, const size_t *begin, const size_t *len,
                    tempo_error *err)
{
    (void)d; (void)err;
    if (full != mine)
        memcpy(full + begin[0], mine, sizeof(float) * len[0]);
    return 0;
}

int dist_overlap_init(dist_overlap *o, dist_context *d, int max_spans, size_t n_total, tempo_error *err)
{
    (void)max_spans; (void)n_total; (void)err;
    memset(o, 0, sizeof *o);
    o->d = d;
    return 0;
}

void dist_overlap_free(dist_overlap *o) { (void)o; }

void dist_overlap_begin(dist_overlap *o, float *x, size_t n, const size_t *begin, const size_t *len)
{
    o->x = x;
    o->n_total = n;
    o->begin = begin;
    o->len = len;
}

void dist_overlap_start(dist_overlap *o, size_t off, size_t n) { (void)o; (void)off; (void)n; }

int dist_overlap_finish(dist_overlap *o, tempo_error *err)
{
    (void)o; (void)err;
    return 0;
}

#endif
