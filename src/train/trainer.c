/* trainer.c - the budgeted training loop (see trainer.h). Startup, the loop,
 * the divergence guard, periodic evaluation/checkpoints, and the result. */
#include "train/trainer.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fileio.h"
#include "core/json.h"
#include "core/procfs.h"
#include "core/progress.h"
#include "core/sha256.h"
#include "core/strbuf.h"
#include "core/timer.h"
#include "data/token_store.h"
#include "data/tokenizer.h"
#include "eval/bpb.h"
#include "eval/hybrid_bpb.h"
#include "memory/memory_file.h"
#include "model/model.h"
#include "kernels/cpu/optim_kernels.h"
#include "optim/optimizer.h"
#include "train/batch.h"
#include "run/checkpoint.h"
#include "train/memory_stage.h"
#include "train/metrics_log.h"
#include "train/train_step.h"
#include "train/train_step_cuda.h"

/* Everything one run holds; freed in one place. */
typedef struct {
    token_file train, val;
    token_file train_batches;    /* train less the tail held out for the mixer: what batches sample */
    int train_open, val_open;
    memory_stage mem;
    char *tok_text;
    size_t tok_len;
    tokenizer *tok;
    model *m;
    optimizer opt;
    int opt_ready;
    int32_t *inputs, *targets;
    float *mix_b;                /* memory_train_weight > 0: the memory's weighted probability of each target */
    int32_t *mix_window;         /* [micro_batch * (T + 1)] scratch for it */
    int32_t *val_tokens;         /* the whole val stream as int32 */
    /* divergence guard snapshot */
    float *snap_params, *snap_m, *snap_v;
    int64_t snap_opt_t;
    train_state snap_state;
    metrics_log metrics;         /* rank 0 only (not open elsewhere) */
    char ckpt_path[1100], model_path[1100];
    int made_out_dir;            /* the run folder did not exist before this run (rank 0) */
    dist_context *dist;          /* NULL: one process */
    int rank, world;
    /* ZeRO-1 (shard_optimizer with world > 1): this rank's optimizer holds
     * the state of its span only; every rank's span of the flat buffer */
    int sharded;
    size_t *shard_begin, *shard_len;
    train_reduce reduce;         /* the gradient's mean over the ranks (train_step.h) */
    int reduce_ready;
    double *slice_nats;          /* with ranks: the periodic val slice's per-token figures */
    char data_id[80];            /* "sha256:<hex>" of DATA_DIR/meta.json, or "unknown" */
    uint8_t data_digest[32];     /* the same digest (all zero: unknown), recorded in memory.bin */
    const char *commit;
    /* on a GPU (train_options.gpu): the model there, attached to m, and its optimizer; opt
     * (on the host) holds the state only for checkpoints and snapshots */
    model_cuda *gm;
    optim_cuda gopt;
    int gopt_ready;
} run_ctx;

static void ctx_free(run_ctx *c)
{
    if (c->gopt_ready) optim_cuda_free(&c->gopt);
    if (c->m) model_attach_device(c->m, NULL);
    model_cuda_free(c->gm);
    memory_stage_free(&c->mem);
    if (c->train_open) token_file_close(&c->train);
    if (c->val_open) token_file_close(&c->val);
    free(c->tok_text);
    if (c->tok) tok_free(c->tok);
    if (c->reduce_ready) train_reduce_free(&c->reduce);   /* its thread replicas before the model they read */
    if (c->m) model_free(c->m);
    if (c->opt_ready) optim_free(&c->opt);
    free(c->inputs);
    free(c->targets);
    free(c->mix_b);
    free(c->mix_window);
    free(c->val_tokens);
    free(c->snap_params);
    free(c->snap_m);
    free(c->snap_v);
    free(c->shard_begin);
    free(c->shard_len);
    free(c->slice_nats);
    metrics_log_close(&c->metrics);
}


/* The data's id (memory.bin's and the store's key, the exports' provenance):
 * meta.json's "content_id" (tempo prepare: the options and the sources'
 * content, so the same text prepared again keeps it), else, for a folder
 * prepared before it existed, the sha256 of meta.json itself. */
static void data_identity(run_ctx *c, const char *meta_path)
{
    char *meta;
    size_t meta_len;
    json_value *j = NULL;
    char hex[65];
    snprintf(c->data_id, sizeof c->data_id, "unknown");
    if (file_read_all(meta_path, &meta, &meta_len, 64u << 20, NULL))
        return;
    const char *id = json_parse(meta, meta_len, &j, NULL) == 0 ? json_get_string(j, "content_id") : NULL;
    if (id && sha256_from_hex(id, c->data_digest) == 0) {
        snprintf(hex, sizeof hex, "%s", id);
    } else {
        sha256(meta, meta_len, c->data_digest);
        sha256_hex(c->data_digest, hex);
    }
    snprintf(c->data_id, sizeof c->data_id, "sha256:%s", hex);
    json_free(j);
    free(meta);
}

static int open_data(run_ctx *c, const char *dir, tempo_error *err)
{
    char p[1100];
    if (token_file_open(&c->train, path_join(p, sizeof p, dir, "train.tok"), err))
        return -1;
    c->train_open = 1;
    if (token_file_open(&c->val, path_join(p, sizeof p, dir, "val.tok"), err))
        return -1;
    c->val_open = 1;
    if (file_read_all(path_join(p, sizeof p, dir, "tokenizer.tiktoken"), &c->tok_text, &c->tok_len, 64u << 20, err))
        return -1;
    if (tok_parse(&c->tok, c->tok_text, c->tok_len, p, err))
        return -1;
    int v = tok_vocab_size(c->tok);
    if ((uint32_t)v != c->train.vocab_size || c->val.vocab_size != c->train.vocab_size)
        return tempo_fail(err, "%s: tokenizer (%d ids), train.tok (%u) and val.tok (%u) disagree", dir, v,
                          c->train.vocab_size, c->val.vocab_size);
    if (c->val.n_tokens < 2 || c->val.n_bytes == 0)
        return tempo_fail(err, "%s/val.tok: no validation text", dir);
    data_identity(c, path_join(p, sizeof p, dir, "meta.json"));
    return 0;
}

/* On a GPU: the parameters and the optimizer state into the host model and
 * optimizer (for a checkpoint or a snapshot), and back. */
static int gpu_to_host(run_ctx *c, tempo_error *err)
{
    if (!c->gm)
        return 0;
    return model_params_to_host(c->m, err) || optim_cuda_get_state(&c->gopt, c->opt.m, c->opt.v, &c->opt.t, err)
               ? -1 : 0;
}

static int host_to_gpu(run_ctx *c, tempo_error *err)
{
    if (!c->gm)
        return 0;
    return model_params_to_device(c->m, err) || optim_cuda_set_state(&c->gopt, c->opt.m, c->opt.v, c->opt.t, err)
               ? -1 : 0;
}

static int snapshot_take(run_ctx *c, const train_state *st, tempo_error *err)
{
    if (gpu_to_host(c, err))
        return -1;
    size_t n = model_num_params(c->m), ns = c->opt.state_len;
    memcpy(c->snap_params, model_params(c->m), n * sizeof(float));
    memcpy(c->snap_m, c->opt.m, ns * sizeof(float));
    memcpy(c->snap_v, c->opt.v, ns * sizeof(float));
    c->snap_opt_t = c->opt.t;
    c->snap_state = *st;
    return 0;
}

static int snapshot_restore(run_ctx *c, train_state *st, tempo_error *err)
{
    size_t n = model_num_params(c->m), ns = c->opt.state_len;
    memcpy(model_params(c->m), c->snap_params, n * sizeof(float));
    memcpy(c->opt.m, c->snap_m, ns * sizeof(float));
    memcpy(c->opt.v, c->snap_v, ns * sizeof(float));
    c->opt.t = c->snap_opt_t;
    double elapsed = st->elapsed_s, mult = st->guard_mult;
    int retries = st->retries;
    *st = c->snap_state;
    st->elapsed_s = elapsed;   /* time spent is spent */
    st->guard_mult = mult;
    st->retries = retries;
    return host_to_gpu(c, err);
}

/* The optimizer whole, for a checkpoint. Sharded, every rank must call it:
 * the state is gathered on rank 0 into *full (freed by the caller; a
 * transient 2 x parameters there, the other ranks keep only their share)
 * and *whole views it; one process or unsharded, *whole is the optimizer. */
static int gather_optimizer(run_ctx *c, optimizer *whole, float **full, tempo_error *err)
{
    *whole = c->opt;
    *full = NULL;
    if (!c->sharded)
        return 0;
    size_t n = c->opt.n_params;
    if (c->rank == 0 && !(*full = malloc(sizeof(float) * 2 * (n ? n : 1))))
        return tempo_fail(err, "checkpoint: out of memory gathering the optimizer state");
    if (dist_gather_f32(c->dist, c->opt.m, *full, c->shard_begin, c->shard_len, err) ||
        dist_gather_f32(c->dist, c->opt.v, *full ? *full + n : NULL, c->shard_begin, c->shard_len, err))
        return -1;
    if (*full) {
        whole->m = *full;
        whole->v = *full + n;
        whole->state_base = 0;
        whole->state_len = n;
    }
    return 0;
}

/* Write the model (with_model), then the checkpoint (with the optimizer
 * `whole`): rank 0. The model first: it is the run's result and a third of
 * the checkpoint's size, so a disk that fills at the end keeps it (the run
 * then fails on the checkpoint, whose old copy, if any, stays). */
static int write_run(run_ctx *c, const run_config *cfg, const train_state *st, const optimizer *whole,
                     int with_model, tempo_error *err)
{
    if (c->rank != 0)
        return 0;
    checkpoint_provenance prov = {c->data_id, c->commit};
    if (with_model && checkpoint_save_model(c->model_path, c->m, cfg, c->tok_text, st, &prov, err))
        return -1;
    return checkpoint_save_full(c->ckpt_path, c->m, cfg, whole, st, err);
}

/* A checkpoint now (every rank calls it when sharded; rank 0 writes). */
static int save_all(run_ctx *c, const run_config *cfg, const train_state *st, int with_model, tempo_error *err)
{
    if (gpu_to_host(c, err))
        return -1;
    optimizer whole;
    float *full;
    int rc = gather_optimizer(c, &whole, &full, err);
    if (rc == 0)
        rc = write_run(c, cfg, st, &whole, with_model, err);
    free(full);
    return rc;
}

/* ZeRO-1's layout: this rank's optimizer owns optim_partition's share; the
 * spans of every rank, for the collectives. */
static int shard_setup(run_ctx *c, const run_config *cfg, tempo_error *err)
{
    c->sharded = cfg->shard_optimizer && c->world > 1;
    if (!c->sharded)
        return train_optimizer_create(&c->opt, c->m, &cfg->optim, err);
    if (train_optimizer_create_shard(&c->opt, c->m, &cfg->optim, c->world, c->rank, err))
        return -1;
    c->shard_begin = malloc(sizeof(size_t) * (size_t)c->world);
    c->shard_len = malloc(sizeof(size_t) * (size_t)c->world);
    if (!c->shard_begin || !c->shard_len)
        return tempo_fail(err, "training: out of memory");
    for (int r = 0; r < c->world; r++) {
        int b, e;
        optim_partition(c->opt.tensors, c->opt.n_tensors, c->world, r, &b, &e);
        optim_tensor_span(c->opt.tensors, b, e, &c->shard_begin[r], &c->shard_len[r]);
    }
    return 0;
}

static void progress(const train_options *o, const train_state *st, double budget, double loss, double lr,
                     double tps, double last_bpb)
{
    if (!o->progress)
        return;
    char el[32], bu[32], eta[32];
    timer_format_clock(el, sizeof el, st->elapsed_s);
    timer_format_clock(bu, sizeof bu, budget);
    timer_format_clock(eta, sizeof eta, budget - st->elapsed_s);
    char bpb[32] = "";
    if (last_bpb > 0) snprintf(bpb, sizeof bpb, " val_bpb %.4f", last_bpb);
    if (o->budget_s > 0)
        fprintf(o->progress, "%s[%s/%s] step %lld loss %.4f%s lr %.2e %.0f tok/s ETA %s%s",
                o->progress_tty ? "\r\033[K" : "", el, bu, (long long)st->step, loss, bpb, lr, tps, eta,
                o->progress_tty ? "" : "\n");
    else
        fprintf(o->progress, "%s[%s] step %lld/%lld loss %.4f%s lr %.2e %.0f tok/s%s",
                o->progress_tty ? "\r\033[K" : "", el, (long long)st->step, (long long)o->max_steps, loss, bpb,
                lr, tps, o->progress_tty ? "" : "\n");
    fflush(o->progress);
}

/* The run folder, emptied of killed runs' temporaries (rank 0), and the paths in it. */
static int prepare_out_dir(run_ctx *c, const train_options *o, tempo_error *err)
{
    c->made_out_dir = c->rank == 0 && !path_exists(o->out_dir);
    if (dir_create(o->out_dir, err))
        return -1;
    if (c->rank == 0) {
        /* temporaries of runs killed mid-write (memory.bin's are gigabytes): nobody else removes them */
        int stale = atomic_remove_stale(o->out_dir);
        if (stale && o->progress)
            fprintf(o->progress, "removed %d temporary file%s left in %s by killed runs\n", stale,
                    stale > 1 ? "s" : "", o->out_dir);
    }
    path_join(c->ckpt_path, sizeof c->ckpt_path, o->out_dir, "checkpoint.safetensors");
    path_join(c->model_path, sizeof c->model_path, o->out_dir, "model.safetensors");
    return 0;
}

/* The run's config: the checkpoint's on --resume, else the options' finished for the data's
 * vocabulary; then what it asks checked against the data and the ranks. */
static int run_settings(run_ctx *c, const train_options *o, run_config *cfg, tempo_error *err)
{
    *cfg = o->cfg;
    if (o->resume) {
        if (!path_exists(c->ckpt_path))
            return tempo_fail(err, "%s: --resume: no checkpoint to resume from", c->ckpt_path);
        if (checkpoint_read_config(c->ckpt_path, cfg, err))
            return -1;
        if ((uint32_t)cfg->model.vocab_size != c->train.vocab_size)
            return tempo_fail(err, "%s: checkpoint vocabulary %d does not match the data's %u", c->ckpt_path,
                              cfg->model.vocab_size, c->train.vocab_size);
    } else {
        cfg->model.vocab_size = (int)c->train.vocab_size;
        if (run_config_finish(cfg, err))
            return -1;
    }
    /* Usage errors come here, before the first collective, and the same on
     * every rank: each rank reports it and the job ends without an abort. */
    if (memory_stage_check(cfg, &c->train, err))
        return -1;
    if (c->world > 1) {
        /* each rank takes batch_size / world sequences of every global batch */
        if (cfg->batch_size % c->world)
            return tempo_usage(err, "batch_size %d does not divide among %d ranks", cfg->batch_size, c->world);
        int local = cfg->batch_size / c->world;
        if (cfg->micro_batch > local)
            cfg->micro_batch = local;
        if (local % cfg->micro_batch)
            return tempo_usage(err, "a rank's %d sequences per step do not split into micro-batches of %d",
                               local, cfg->micro_batch);
    } else if (cfg->shard_optimizer && !o->resume) {
        /* a resumed sharded run may go on in one process (--resume-other-world): the state is whole */
        if (!dist_built_with_mpi())
            return tempo_usage(err, "shard_optimizer: this tempo was built without MPI (install Open MPI, "
                               "rebuild, and run under mpirun)");
        return tempo_usage(err, "shard_optimizer: one process has no ranks to share the optimizer state with "
                           "(run under mpirun -np N)");
    }
    if (c->train.n_tokens < (uint64_t)cfg->model.context + 2)
        return tempo_fail(err, "%s/train.tok: %llu tokens, fewer than one training window of %d", o->data_dir,
                          (unsigned long long)c->train.n_tokens, cfg->model.context + 1);
    if (o->gpu && c->world > 1)
        return tempo_usage(err, "train --device cuda under mpirun: one process per GPU is not built yet");
    return 0;
}

/* The model initialised from the seed (and its copy on the GPU), the optimizer (this rank's
 * share when sharded) and the gradient's reduction over the ranks. */
static int create_model(run_ctx *c, const train_options *o, const run_config *cfg, tempo_error *err)
{
    if (o->gpu ? model_create_for_device(&c->m, &cfg->model, cfg->micro_batch, err)
               : model_create(&c->m, &cfg->model, cfg->micro_batch, err))
        return -1;
    if (!o->gpu && cfg->model.bf16_products == MODEL_PRODUCTS_BF16 && !model_products_bf16(c->m))
        return tempo_usage(err, "train: bf16_products=1 needs a CPU with AVX-512 BF16 and the avx512 kernel "
                                "path; this one runs them in fp32 (leave bf16_products at 0)");
    if (!o->gpu && cfg->model.bf16_products == MODEL_PRODUCTS_AUTO && c->rank == 0 && o->progress)
        fprintf(o->progress, "products: %s (bf16_products auto: this CPU %s)\n",
                model_products_bf16(c->m) ? "bf16 operands, fp32 sums" : "fp32",
                model_products_bf16(c->m) ? "has AVX-512 BF16" : "or TEMPO_KERNELS has no AVX-512 BF16 path");
    model_init(c->m, o->seed);
    if (o->gpu) {
        if (model_cuda_create(&c->gm, o->gpu, &cfg->model, cfg->micro_batch,
                              o->gpu_bf16 ? MODEL_CUDA_BF16 : MODEL_CUDA_FP32, err))
            return -1;
        model_attach_device(c->m, c->gm);
    }
    if (shard_setup(c, cfg, err))
        return -1;
    c->opt_ready = 1;
    if (train_reduce_init(&c->reduce, c->dist, c->m, cfg->overlap_comm, c->sharded ? c->shard_begin : NULL,
                          c->shard_len, err))
        return -1;
    c->reduce_ready = 1;
    if (cfg->thread_replicas && !o->gpu &&
        train_reduce_replicas(&c->reduce, c->m, omp_get_max_threads(), cfg->micro_batch, err))
        return -1;
    return 0;
}

/* The training state: a fresh one from the seed, or on --resume the checkpoint's weights,
 * optimizer and state (with its budget and step limit unless given anew); then the GPU's
 * optimizer with the host's state. */
static int start_state(run_ctx *c, const train_options *o, const run_config *cfg, train_state *st, tempo_error *err)
{
    memset(st, 0, sizeof *st);
    rng_seed(&st->rng, o->seed ^ 0x5eed5eedULL);
    st->guard_mult = 1.0;
    st->budget_s = o->budget_s;
    st->max_steps = o->max_steps;
    int checksummed = 1;
    if (o->resume && checkpoint_load_full(c->ckpt_path, c->m, &c->opt, st, &checksummed, err))
        return -1;
    if (!checksummed && o->progress)
        fprintf(o->progress, "tempo: note: %s carries no checksum (written before tempo wrote them): resumed "
                "unchecked\n", c->ckpt_path);
    if (c->gm) {   /* the GPU's optimizer, with the host's state (zero, or the checkpoint's) */
        if (optim_cuda_create(&c->gopt, o->gpu, &cfg->optim, c->opt.tensors, c->opt.n_tensors, c->opt.n_params,
                              o->gpu_bf16 ? GPU_BF16 : GPU_F32, err))
            return -1;
        c->gopt_ready = 1;
        if (host_to_gpu(c, err))
            return -1;
    }
    if (o->resume) {
        /* A resume continues the same run: its budget and step limit, unless given anew. */
        if (o->budget_s > 0) st->budget_s = o->budget_s;
        if (o->max_steps > 0) st->max_steps = o->max_steps;
        if (st->world_size != c->world && !o->resume_other_world)
            return tempo_usage(err, "%s: a checkpoint of %d rank%s, resumed on %d: add --resume-other-world "
                               "(the batches are re-split; the result is not bit-identical)", c->ckpt_path,
                               st->world_size, st->world_size == 1 ? "" : "s", c->world);
    }
    st->world_size = c->world;
    return 0;
}

/* The step's batch, the val stream (read whole), the divergence guard's snapshot and, with
 * ranks, the val slice's per-token figures. */
static int alloc_buffers(run_ctx *c, const run_config *cfg, tempo_error *err)
{
    size_t n = model_num_params(c->m), bt = (size_t)cfg->micro_batch * cfg->model.context;
    c->inputs = malloc(sizeof(int32_t) * bt);
    c->targets = malloc(sizeof(int32_t) * bt);
    c->val_tokens = malloc(sizeof(int32_t) * c->val.n_tokens);
    c->snap_params = malloc(sizeof(float) * n);
    c->snap_m = malloc(sizeof(float) * (c->opt.state_len ? c->opt.state_len : 1));
    c->snap_v = malloc(sizeof(float) * (c->opt.state_len ? c->opt.state_len : 1));
    if (c->world > 1)
        c->slice_nats = malloc(sizeof(double) * ((size_t)cfg->eval_tokens + 1));
    if (!c->inputs || !c->targets || !c->val_tokens || !c->snap_params || !c->snap_m || !c->snap_v ||
        (c->world > 1 && !c->slice_nats))
        return tempo_fail(err, "training: out of memory");
    token_file_read(&c->val, 0, c->val.n_tokens, c->val_tokens);
    return 0;
}

static int setup(run_ctx *c, const train_options *o, run_config *cfg, train_state *st, tempo_error *err)
{
    c->commit = o->commit;
    if (open_data(c, o->data_dir, err) || prepare_out_dir(c, o, err) || run_settings(c, o, cfg, err) ||
        create_model(c, o, cfg, err) || start_state(c, o, cfg, st, err) || alloc_buffers(c, cfg, err))
        return -1;
    if (c->rank != 0)
        return 0;   /* only rank 0 writes the run folder */
    return metrics_log_open(&c->metrics, o->out_dir, o->resume ? st->step : -1, err);
}

/* Periodic val bpb on the first eval_tokens tokens of the val stream. With
 * ranks, every rank calls it: each runs every world-th window, the
 * per-token figures are summed over the ranks (each from one rank) and
 * added up in token order. NaN when nothing could be scored; -1 only when a
 * collective failed. */
static int slice_bpb(run_ctx *c, const run_config *cfg, double *bpb, tempo_error *err)
{
    size_t n = (size_t)cfg->eval_tokens + 1;
    if (n > c->val.n_tokens) n = c->val.n_tokens;
    uint64_t bytes = bpb_count_bytes(c->tok, c->val_tokens, n);
    bpb_result r;
    tempo_error e;
    *bpb = NAN;
    if (!c->dist) {
        bpb_options bo = {.stride = cfg->model.context, .batch = cfg->micro_batch};
        if (bytes > 0 && !bpb_evaluate(c->m, c->val_tokens, n, bytes, &bo, &r, &e))
            *bpb = r.bpb;
        return 0;
    }
    memset(c->slice_nats, 0, sizeof(double) * n);
    bpb_token_out out = {c->slice_nats, NULL, NULL, NULL, 0};
    bpb_options bo = {.stride = cfg->model.context, .batch = cfg->micro_batch, .part = c->rank, .parts = c->world,
                      .out = &out};
    int ok = bytes > 0 && !bpb_evaluate(c->m, c->val_tokens, n, bytes, &bo, &r, &e);
    double sum = 0;   /* a rank that failed poisons the sum: every rank then reads NaN */
    if (!ok)
        c->slice_nats[0] = NAN;
    if (dist_allreduce_sum_f64(c->dist, c->slice_nats, n, err))
        return -1;
    for (size_t i = 0; i < n; i++)
        sum += c->slice_nats[i];
    if (bytes > 0)
        *bpb = sum / log(2.0) / (double)bytes;
    return 0;
}

/* A metrics line (rank 0); a failed write (a full disk) stops the run. */
static int log_step(metrics_log *m, const train_state *st, double loss, double lr, double tps, double gnorm,
                    double step_s, tempo_error *err)
{
    metrics_record r = {.kind = METRICS_STEP, .step = st->step, .elapsed_s = st->elapsed_s, .tokens = st->tokens,
                        .value = loss, .lr = lr, .tokens_per_s = tps, .grad_norm = gnorm, .step_s = step_s};
    return metrics_log_write(m, &r, err);
}

static int log_event(metrics_log *m, const train_state *st, metrics_kind kind, double value, const char *note,
                     tempo_error *err)
{
    metrics_record r = {.kind = kind, .step = st->step, .elapsed_s = st->elapsed_s, .tokens = st->tokens,
                        .value = value, .note = note};
    return metrics_log_write(m, &r, err);
}

typedef struct {
    run_ctx *c;
    const run_config *cfg;
    rng_state *rng;
} batch_source;

/* Training inside the mixture: b[n] = (1 - a) p_memory(target n), the
 * memory leaving out the occurrence being trained on. */
static void mixture_prior(run_ctx *c, float a, int rows, int T, const int32_t *inputs, const int32_t *targets)
{
    #pragma omp parallel for schedule(static)
    for (int r = 0; r < rows; r++) {
        int32_t *win = c->mix_window + (size_t)r * (T + 1);
        memcpy(win, inputs + (size_t)r * T, sizeof(int32_t) * (size_t)T);
        win[T] = targets[(size_t)r * T + T - 1];
        for (int t = 0; t < T; t++)
            c->mix_b[(size_t)r * T + t] = (1 - a) * (float)ngram_memory_prob_loo(&c->mem.memory, win, (size_t)t + 1);
    }
    model_set_mixture(c->m, c->mix_b, a);
}

static void next_train_batch(void *ctx, int rows, int T, int32_t *inputs, int32_t *targets)
{
    batch_source *b = ctx;
    batch_sample(&b->c->train_batches, b->rng, rows, T, inputs, targets);
    if (b->c->mix_b)
        mixture_prior(b->c, (float)b->cfg->memory_train_weight, rows, T, inputs, targets);
}

/* On a GPU: the prior next_train_batch just computed, for the GPU's batch */
static const float *train_mix_prior(void *ctx, int rows, int T, const int32_t *inputs, const int32_t *targets,
                                    float *mix_a)
{
    batch_source *b = ctx;
    (void)rows; (void)T; (void)inputs; (void)targets;
    *mix_a = (float)b->cfg->memory_train_weight;
    return b->c->mix_b;
}

/* One optimizer step's forward/backward over this rank's share of the
 * global batch (rows rank*local .. of the rows a single process would draw,
 * the others skipped), then the mean over ranks of the gradient (sharded:
 * of this rank's span only; overlap_comm: reduced layer by layer inside the
 * backward pass) and of the loss (*loss_out), and the whole gradient's L2
 * norm (*gnorm); *comm_s gets the seconds spent in collectives (with the
 * overlap: the exposed part). Returns 0, or -1 when a collective failed. */
static int forward_backward(run_ctx *c, const run_config *cfg, train_state *st, double *loss_out, double *gnorm,
                            double *comm_s, tempo_error *err)
{
    batch_source src = {c, cfg, &st->rng};
    int local = cfg->batch_size / c->world, T = cfg->model.context;
    if (c->gm) {   /* one process on a GPU */
        *comm_s = 0;
        return train_step_cuda_gradient(c->gm, &c->gopt, cfg->batch_size, cfg->micro_batch, T, next_train_batch, &src,
                                        train_mix_prior, &src, c->inputs, c->targets, loss_out, gnorm, err);
    }
    batch_skip(&c->train_batches, &st->rng, c->rank * local, T);
    double loss;
    int rc = train_step_gradient_ranks(c->m, &c->reduce, local, cfg->micro_batch, T, next_train_batch, &src,
                                       c->inputs, c->targets, NULL, &loss, err);
    batch_skip(&c->train_batches, &st->rng, (c->world - 1 - c->rank) * local, T);
    *comm_s = c->reduce.comm_s;
    if (rc)
        return -1;
    float *g = model_grads(c->m);
    if (c->world == 1) {
        *loss_out = loss;
        *gnorm = optim_grad_norm(g, model_num_params(c->m));
        return 0;
    }
    double t0 = timer_now();
    if (c->sharded) {
        /* the norm from the spans' sums of squares: the same figure up to the sum's order */
        double part[2] = {loss, optim_kernel_sum_squares(g + c->opt.state_base, c->opt.state_len)};
        if (dist_allreduce_sum_f64(c->dist, part, 2, err))
            return -1;
        *loss_out = part[0] / c->world;
        *gnorm = sqrt(part[1]);
    } else {
        if (dist_allreduce_sum_f64(c->dist, &loss, 1, err))
            return -1;
        *loss_out = loss / c->world;
        *gnorm = optim_grad_norm(g, model_num_params(c->m));
    }
    *comm_s += timer_now() - t0;
    return 0;
}

/* The loop's own clock and running figures (this session's). */
typedef struct {
    double budget;                 /* seconds; 0 = none */
    int64_t max_steps;             /* 0 = none */
    uint64_t tokens_per_step;
    double elapsed_at_start;       /* of a resumed run: the sessions before */
    double loop_t0;                /* st.elapsed_s = now - loop_t0 */
    double step_pred;              /* the next step's predicted seconds */
    double fit_reserve;            /* room left at the end of the budget to fit the mixer */
    double fit_fraction;           /* the share of the held-out tokens the fit reads (1: all) */
    double last_eval, last_ckpt, last_snap, last_progress;
    double eval_cost, ckpt_cost, last_bpb;
    double loss, gnorm, lr_now;
    double session_t0, session_end;
    uint64_t session_tokens0;
    int64_t steps_this_session;
    double step_time_sum;
} loop_state;

/* Set up the run (data, model, optimizer, the count memory: built first,
 * split over the ranks, its seconds charged to the budget) and the loop's clock. */
static int start_run(run_ctx *c, const train_options *o, run_config *cfg, train_state *st, train_result *res,
                     loop_state *ls, tempo_error *err)
{
    double t_start = timer_now();
    if (setup(c, o, cfg, st, err))
        return -1;
    memset(ls, 0, sizeof *ls);
    ls->fit_fraction = 1;
    ls->budget = st->budget_s;
    ls->max_steps = st->max_steps;
    if (ls->budget <= 0 && ls->max_steps <= 0)
        return tempo_usage(err, "train: give a --budget or a --steps limit");
    /* A new run's checkpoint at step 0, before the count memory's build (minutes at the default
     * scale): a run killed before its first periodic checkpoint resumes from the start, with
     * its config, seed and budget, and reuses the memory it completed. No model.safetensors yet:
     * an untrained model is no result. */
    if (!o->resume && save_all(c, cfg, st, 0, err))
        return -1;
    res->startup_seconds = timer_now() - t_start;
    /* every rank counts its shards of the count memory; rank 0 keeps it (every rank with memory_train_weight) */
    int known = 0;
    for (int i = 0; i < 32; i++) known |= c->data_digest[i];
    char store[1100] = "";   /* "none" (or ""): no store */
    if (!o->memory_store)
        path_join(store, sizeof store, o->data_dir, "memory-store");
    else if (strcmp(o->memory_store, "none"))
        snprintf(store, sizeof store, "%s", o->memory_store);
    if (memory_stage_prepare(&c->mem, cfg, &c->train, ngram_tokenizer_id(c->tok), known ? c->data_digest : NULL,
                             o->out_dir, store, o->threads, o->resume, st->budget_s, c->rank == 0 ? o->progress : NULL,
                             c->dist, err))
        return -1;
    c->train_batches = c->train;
    c->train_batches.n_tokens = c->mem.holdout_start;
    /* training inside the mixture asks the memory leave-one-out: only of tokens it counted */
    if (cfg->memory_train_weight > 0 && c->mem.has_memory)
        c->train_batches.n_tokens = c->mem.count_tokens;
    if (cfg->memory_train_weight > 0 && c->mem.has_memory) {
        size_t bt = (size_t)cfg->micro_batch * cfg->model.context;
        c->mix_b = malloc(sizeof(float) * bt);
        c->mix_window = malloc(sizeof(int32_t) * (bt + (size_t)cfg->micro_batch));
        if (!c->mix_b || !c->mix_window)
            return tempo_fail(err, "training: out of memory");
    }
    if (c->mem.reused && st->memory_s == 0 && c->mem.memory.build_seconds > 0) {
        /* resumed from a checkpoint written before the memory's build (step 0): the build
         * the reused file cost is this run's, charged as if built now (not this session's) */
        st->memory_s = c->mem.memory.build_seconds;
        st->elapsed_s += st->memory_s;
    }
    ls->elapsed_at_start = st->elapsed_s;
    if (c->mem.built) {
        res->phase_seconds.memory_build = c->mem.build_s;
        st->memory_s += c->mem.build_s;
        st->elapsed_s += c->mem.build_s;
    }
    res->startup_seconds += c->mem.load_s;
    res->params = model_num_params(c->m);
    res->flops_per_token = model_flops_per_token(&cfg->model, cfg->model.context);
    ls->tokens_per_step = (uint64_t)cfg->batch_size * cfg->model.context;
    ls->loop_t0 = timer_now() - st->elapsed_s;
    ls->last_eval = ls->last_ckpt = st->elapsed_s;
    ls->last_snap = -1e9;
    ls->last_bpb = -1;
    ls->loss = NAN;
    ls->session_t0 = timer_now();
    ls->session_tokens0 = st->tokens;
    return 0;
}

/* Rank 0's clock decides for every rank: ctl[0] stop (1: limit, 2:
 * interrupted), ctl[1] the schedule's progress, ctl[2] whether to take the
 * divergence guard's snapshot. */
static int clock_decide(run_ctx *c, const train_options *o, const train_state *st, const loop_state *ls,
                        double ctl[3], tempo_error *err)
{
    ctl[0] = ctl[1] = ctl[2] = 0;
    if (c->rank == 0) {
        if ((ls->max_steps > 0 && st->step >= ls->max_steps) ||
            (ls->budget > 0 && st->elapsed_s + ls->step_pred + ls->fit_reserve > ls->budget))
            ctl[0] = 1;
        else if (o->stop_flag && *o->stop_flag)
            ctl[0] = 2;
        /* the schedule spans the transformer's share of the budget */
        ctl[1] = ls->max_steps > 0 ? (double)st->step / (double)ls->max_steps
                                   : (st->elapsed_s - st->memory_s) / (ls->budget - st->memory_s - ls->fit_reserve);
        ctl[2] = st->elapsed_s - ls->last_snap >= 30.0 || st->step == 0;
    }
    return c->dist ? dist_broadcast_f64(c->dist, ctl, 3, err) : 0;
}

/* A non-finite loss or gradient: restore the last snapshot with a lower
 * learning rate, or give up (-1) after max_retries. */
static int guard_restore(run_ctx *c, const train_options *o, const run_config *cfg, train_state *st,
                         const loop_state *ls, tempo_error *err)
{
    st->retries++;
    st->elapsed_s = timer_now() - ls->loop_t0;
    if (st->retries > cfg->max_retries) {
        tempo_error ignored;   /* the divergence is the error to report */
        log_event(&c->metrics, st, METRICS_DIVERGED, ls->loss, "non-finite loss or gradient; giving up", &ignored);
        return tempo_fail(err, "training diverged: non-finite loss or gradient at step %lld after %d restores "
                          "(lr multiplier %.3g); lower lr or raise grad_clip",
                          (long long)st->step, cfg->max_retries, st->guard_mult);
    }
    st->guard_mult *= cfg->retry_lr_factor;
    char note[160];
    snprintf(note, sizeof note, "non-finite loss or gradient: restored step %lld, lr multiplier now %.3g",
             (long long)c->snap_state.step, st->guard_mult);
    if (log_event(&c->metrics, st, METRICS_DIVERGED, ls->loss, note, err))
        return -1;
    if (o->progress)
        fprintf(o->progress, "%sstep %lld: %s\n", o->progress_tty ? "\r\033[K" : "", (long long)st->step, note);
    return snapshot_restore(c, st, err);
}

/* After a step: the metrics line, the periodic val slice and checkpoint
 * (rank 0, when the budget has room for them) and the progress line. */
static int after_step(run_ctx *c, const train_options *o, const run_config *cfg, train_state *st, train_result *res,
                      loop_state *ls, double lr, double dt, tempo_error *err)
{
    st->elapsed_s = timer_now() - ls->loop_t0;
    double tps = (double)(st->tokens - ls->session_tokens0) / (timer_now() - ls->session_t0);
    if (log_step(&c->metrics, st, ls->loss, lr, tps, ls->gnorm, dt, err))
        return -1;
    const int root = c->rank == 0;
    double remaining = ls->budget > 0 ? ls->budget - st->elapsed_s - ls->step_pred - ls->fit_reserve : 1e300;
    double slice = root && cfg->eval_every_s > 0 && st->elapsed_s - ls->last_eval >= cfg->eval_every_s &&
                   remaining > ls->eval_cost;
    if (c->dist && dist_broadcast_f64(c->dist, &slice, 1, err))   /* the slice is shared out over the ranks */
        return -1;
    if (slice != 0) {
        double e0 = timer_now();
        if (slice_bpb(c, cfg, &ls->last_bpb, err))
            return -1;
        ls->eval_cost = timer_now() - e0;
        res->phase_seconds.val_slices += ls->eval_cost;
        st->elapsed_s = timer_now() - ls->loop_t0;
        ls->last_eval = st->elapsed_s;
        if (log_event(&c->metrics, st, METRICS_VAL_SLICE, ls->last_bpb, NULL, err))
            return -1;
    }
    if (root && memory_stage_save_status(&c->mem, err))   /* memory.bin could not be written */
        return -1;
    remaining = ls->budget > 0 ? ls->budget - st->elapsed_s - ls->step_pred - ls->fit_reserve : 1e300;
    double ckpt = root && cfg->checkpoint_every_s > 0 && st->elapsed_s - ls->last_ckpt >= cfg->checkpoint_every_s &&
                  remaining > ls->ckpt_cost;
    if (c->sharded && dist_broadcast_f64(c->dist, &ckpt, 1, err))   /* saving gathers from every rank */
        return -1;
    if (ckpt != 0) {
        double k0 = timer_now();
        if (save_all(c, cfg, st, 1, err))
            return -1;
        ls->ckpt_cost = timer_now() - k0;
        res->phase_seconds.checkpoints += ls->ckpt_cost;
        st->elapsed_s = timer_now() - ls->loop_t0;
        ls->last_ckpt = st->elapsed_s;
    }
    /* A TTY line is redrawn a few times a second; plain lines (logs) every 10 s. */
    double now = timer_now();
    if (now - ls->last_progress >= (o->progress_tty ? 0.25 : 10.0) || st->step == 1) {
        progress(o, st, ls->budget, ls->loss, lr, tps, ls->last_bpb);
        ls->last_progress = now;
    }
    return 0;
}

/* The budgeted loop: until rank 0's clock says stop. */
static int train_loop(run_ctx *c, const train_options *o, const run_config *cfg, train_state *st, train_result *res,
                      loop_state *ls, tempo_error *err)
{
    for (;;) {
        st->elapsed_s = timer_now() - ls->loop_t0;
        double ctl[3];
        if (clock_decide(c, o, st, ls, ctl, err))
            return -1;
        if (ctl[0] == 2) res->interrupted = 1;
        if (ctl[0] != 0) return 0;
        if (ctl[2] != 0) {
            double s0 = timer_now();
            if (snapshot_take(c, st, err))
                return -1;
            res->phase_seconds.snapshots += timer_now() - s0;
            ls->last_snap = st->elapsed_s;
        }
        double mult = schedule_lr_mult(&cfg->schedule, ctl[1]) * st->guard_mult;
        ls->lr_now = cfg->optim.lr * mult;
        double t0 = timer_now(), comm_s = 0;
        if (forward_backward(c, cfg, st, &ls->loss, &ls->gnorm, &comm_s, err))
            return -1;
        if (o->inject_nan_step > 0 && st->step == o->inject_nan_step && st->retries == 0)
            ls->loss = NAN; /* fault injection for the divergence-guard test */
        if (!isfinite(ls->loss) || !isfinite(ls->gnorm)) {
            res->phase_seconds.steps += timer_now() - t0;   /* a step thrown away is a step's time still */
            if (guard_restore(c, o, cfg, st, ls, err))
                return -1;
            continue;
        }
        if (c->gm) {
            optim_cuda_step(&c->gopt, model_cuda_params(c->gm), model_cuda_grads(c->gm), ls->gnorm, mult);
            model_cuda_weights_changed(c->gm);
        } else {
            optim_step(&c->opt, model_params(c->m), model_grads(c->m), ls->gnorm, mult);
        }
        if (c->sharded) {   /* every rank's updated span to every rank */
            double g0 = timer_now();
            if (dist_allgather_f32(c->dist, model_params(c->m), c->shard_begin, c->shard_len, err))
                return -1;
            comm_s += timer_now() - g0;
        }
        res->comm_seconds += comm_s;
        st->step++;
        st->tokens += ls->tokens_per_step;
        ls->steps_this_session++;
        double dt = timer_now() - t0;
        ls->step_time_sum += dt;
        res->phase_seconds.steps += dt;
        /* Predict the next step from the recent ones, leaning to the slower side. */
        ls->step_pred = ls->step_pred == 0 ? dt : fmax(dt, 0.7 * ls->step_pred + 0.3 * dt);
        memory_stage_fit_budget(cfg, ls->step_pred, ls->tokens_per_step, ls->budget, &ls->fit_reserve,
                                &ls->fit_fraction);
        if (after_step(c, o, cfg, st, res, ls, cfg->optim.lr * mult, dt, err))
            return -1;
        if (o->stop_at_step > 0 && st->step >= o->stop_at_step) {
            res->interrupted = 1;
            return 0;
        }
    }
}

/* After the loop: the last progress line, then (rank 0) the mixer's fit on
 * the held-out training tokens (charged to the budget) and the run folder. */
static int end_training(run_ctx *c, const train_options *o, const run_config *cfg, train_state *st,
                        train_result *res, loop_state *ls, int rc, tempo_error *err)
{
    st->elapsed_s = timer_now() - ls->loop_t0;
    ls->session_end = timer_now();
    if (ls->steps_this_session > 0)
        progress(o, st, ls->budget, ls->loss, ls->lr_now,
                 (double)(st->tokens - ls->session_tokens0) / (timer_now() - ls->session_t0), ls->last_bpb);
    if (o->progress && o->progress_tty) fputc('\n', o->progress);
    if (rc)
        return rc;
    if (st->step == 0 && !res->interrupted)
        return tempo_fail(err, "train: the budget ended before the first step could run (one step takes longer%s)",
                          st->memory_s > 0 ? " after the count memory's build" : "");
    /* sharded: the optimizer state is gathered first, by every rank, so no rank
     * waits in a collective while rank 0 alone fits the mixer */
    if (gpu_to_host(c, err))   /* the files are written from the host's copies */
        return -1;
    optimizer whole;
    float *full;
    if (gather_optimizer(c, &whole, &full, err)) {
        free(full);
        return -1;
    }
    if (c->rank != 0)
        return 0;
    if (!res->interrupted) {
        if (memory_stage_fit_mixer(&c->mem, c->m, cfg, &c->train, o->out_dir, cfg->micro_batch,
                                   ls->fit_fraction, o->progress, &res->mixer_seconds,
                                   &res->mixer_tokens, err)) {
            free(full);
            return -1;
        }
        st->elapsed_s += res->mixer_seconds;
    }
    int rc_write = write_run(c, cfg, st, &whole, 1, err);
    free(full);
    if (rc_write)
        return -1;
    return memory_stage_wait_saved(&c->mem, err);
}

/* The run's figures (all but the final validation's). */
static void fill_result(const run_ctx *c, const train_options *o, const run_config *cfg, const train_state *st,
                        const loop_state *ls, train_result *res)
{
    res->world_size = c->world;
    snprintf(res->device, sizeof res->device, "%s", o->gpu ? gpu_get_info(o->gpu)->name : "cpu");
    res->precision = (o->gpu ? o->gpu_bf16 : model_products_bf16(c->m)) ? "bf16" : "fp32";
    res->memory_order = c->mem.has_memory ? c->mem.memory.order : 0;
    res->cache_order = cfg->cache_order;
    res->match_length = cfg->match_length;
    res->adapt_lr = cfg->adapt_lr;
    res->memory_seconds = st->memory_s;
    res->memory_save_seconds = c->mem.save_s;
    if (c->mem.has_memory) {
        res->memory_bytes = ngram_memory_bytes(&c->mem.memory);
        res->memory_entries = ngram_memory_entries(&c->mem.memory);
        res->memory_tokens = c->mem.memory.tokens;
        res->memory_budget_capped = c->mem.budget_capped;
        if (!c->mem.saver_running && c->mem.shared) {   /* the saver has been joined: its fields are final */
            snprintf(res->memory_store, sizeof res->memory_store, "%s", c->mem.store.entry);
            res->memory_store_reused = c->mem.store.reused;
        }
    }
    for (int k = 0; k < MIX_N; k++)
        res->val.bpb_component[k] = res->val.mean_weight[k] = NAN;
    res->val.bpb_linear = NAN;
    res->train_seconds = st->elapsed_s;
    res->phase_seconds.mixer_fit = res->mixer_seconds;
    res->phase_seconds.other = st->elapsed_s - ls->elapsed_at_start - res->phase_seconds.steps -
                               res->phase_seconds.val_slices - res->phase_seconds.checkpoints -
                               res->phase_seconds.snapshots - res->phase_seconds.memory_build -
                               res->phase_seconds.mixer_fit;
    res->budget_s = ls->budget;
    res->overrun_seconds = ls->budget > 0 && st->elapsed_s > ls->budget ? st->elapsed_s - ls->budget : 0;
    res->steps = st->step;
    res->tokens = st->tokens;
    res->retries = st->retries;
    res->final_train_loss = ls->loss;
    double session_s = ls->session_end - ls->session_t0;
    res->tokens_per_second = session_s > 0 ? (double)(st->tokens - ls->session_tokens0) / session_s : 0;
    res->model_gflops = res->tokens_per_second * res->flops_per_token * 1e-9;
    res->peak_gflops = o->peak_gflops;
    res->mfu = o->peak_gflops > 0 ? res->model_gflops / o->peak_gflops : NAN;
    res->step_seconds_mean = ls->steps_this_session ? ls->step_time_sum / (double)ls->steps_this_session : 0;
}

/* Every rank's optimizer state and peak resident set, summed into rank 0's
 * report (each rank fills its own slots). */
static int rank_memory(run_ctx *c, train_result *res, tempo_error *err)
{
    int n = c->world < TRAIN_RANK_REPORT_MAX ? c->world : TRAIN_RANK_REPORT_MAX;
    double v[2 * TRAIN_RANK_REPORT_MAX] = {0};
    if (c->rank < n) {
        v[c->rank] = 2.0 * sizeof(float) * (double)c->opt.state_len;
        v[n + c->rank] = procfs_kb("/proc/self/status", "VmHWM") * 1024.0;
    }
    if (c->dist && dist_allreduce_sum_f64(c->dist, v, (size_t)(2 * n), err))
        return -1;
    res->shard_optimizer = c->sharded;
    res->overlap_comm = c->reduce.overlap;
    res->n_rank_report = n;
    for (int r = 0; r < n; r++) {
        res->rank_optimizer_bytes[r] = v[r];
        res->rank_peak_rss_bytes[r] = v[n + r];
    }
    return 0;
}

/* The full validation, every rank on its share of the windows. */
static int final_validation(run_ctx *c, const train_options *o, const run_config *cfg, const train_state *st,
                            train_result *res, tempo_error *err)
{
    int stride = o->eval_stride > 0 ? o->eval_stride : cfg->model.context / 2;
    size_t n_val = c->val.n_tokens;
    uint64_t val_bytes = c->val.n_bytes;
    if (o->val_limit > 0 && (uint64_t)o->val_limit < n_val) {
        n_val = (size_t)o->val_limit;   /* a prefix, for quick experiments: not the official score */
        val_bytes = bpb_count_bytes(c->tok, c->val_tokens, n_val);
    }
    if (o->progress)
        fprintf(o->progress, "evaluating val bpb on %llu tokens (stride %d)...\n", (unsigned long long)n_val, stride);
    progress_meter pm;   /* a line every 30 s on a long reading */
    progress_meter_start(&pm, o->progress, "val bpb", "tokens", 30);
    hybrid_parts h;
    hybrid_bpb_result hr;
    int rc = 0;
    if (memory_stage_parts(&c->mem, cfg, (int)c->train.vocab_size, &h, err) ||
        hybrid_bpb_evaluate(c->dist, c->m, &h, 1, c->val_tokens, n_val, val_bytes, stride, cfg->micro_batch,
                            NULL, &pm, &hr, err)) {
        rc = -1;
    } else {
        res->val = hr;
        rc = log_event(&c->metrics, st, METRICS_VAL_FULL, hr.mixture.bpb, "full validation", err);
    }
    hybrid_parts_free(&h);
    return rc;
}

int train_run(const train_options *o, train_result *res, tempo_error *err)
{
    memset(res, 0, sizeof *res);
    res->val.mixture.bpb = res->val.mixture.loss = NAN;
    if (o->threads > 0)
        omp_set_num_threads(o->threads);
    run_ctx c;
    memset(&c, 0, sizeof c);
    c.dist = o->dist && o->dist->world > 1 ? o->dist : NULL;
    c.rank = c.dist ? c.dist->rank : 0;
    c.world = c.dist ? c.dist->world : 1;
    run_config cfg;
    train_state st;
    loop_state ls;
    if (start_run(&c, o, &cfg, &st, res, &ls, err)) {
        res->failed_in_setup = err->code == 2;   /* usage errors only: a file may fail on one rank alone */
        if (c.made_out_dir)
            rmdir(o->out_dir);   /* a refused run leaves no empty folder; one with files in it stays */
        ctx_free(&c);
        return -1;
    }
    int rc = train_loop(&c, o, &cfg, &st, res, &ls, err);
    rc = end_training(&c, o, &cfg, &st, res, &ls, rc, err);
    fill_result(&c, o, &cfg, &st, &ls, res);
    if (rc == 0)
        rc = rank_memory(&c, res, err);
    if (rc == 0 && o->final_eval && !res->interrupted)
        rc = final_validation(&c, o, &cfg, &st, res, err);
    ctx_free(&c);
    return rc;
}
