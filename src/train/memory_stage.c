/* memory_stage.c - building, saving and fitting the hybrid model's parts
 * during training (see memory_stage.h). */
#include "train/memory_stage.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/procfs.h"
#include "core/timer.h"
#include "eval/hybrid_bpb.h"
#include "memory/memory_budget.h"
#include "memory/memory_file.h"
#include "memory/memory_store.h"
#include "run/run_parts.h"

/* MemAvailable from /proc/meminfo in bytes, or 0 when unknown. */
static double available_bytes(void)
{
    return procfs_kb("/proc/meminfo", "MemAvailable") * 1024;
}

static void *save_thread(void *arg)
{
    memory_stage *ms = arg;
    double t0 = timer_now();
    memory_header hd;
    int store_bad = 0;   /* the store's copy was found damaged before the write */
    ms->save_rc = memory_file_header(&ms->memory, &hd, ms->path, &ms->save_err);
    if (!ms->save_rc && ms->store_dir[0]) {
        /* the store holds this memory already (another run of this data and setting): link it, write nothing */
        uint8_t id[32];
        tempo_error e;
        tempo_error_clear(&e);
        memory_header_identity(&hd, id);
        if (memory_store_link_existing(ms->store_dir, id, ms->path, &ms->store, &e) == 1) {
            ms->shared = ms->linked_unwritten = 1;
            ms->save_s = ms->share_s = timer_now() - t0;
            memory_header_free(&hd);
            atomic_store_explicit(&ms->save_done, 1, memory_order_release);
            return NULL;
        }
        store_bad = ms->store.found_bad;
    }
    if (!ms->save_rc)
        ms->save_rc = memory_file_write(&ms->memory, &hd, ms->path, &ms->save_err);
    memory_header_free(&hd);
    ms->save_s = timer_now() - t0;
    if (!ms->save_rc && ms->store_dir[0]) {   /* one copy on disk for the runs that built this memory */
        double t1 = timer_now();
        tempo_error e;
        tempo_error_clear(&e);
        ms->shared = memory_store_share(ms->store_dir, ms->path, store_bad, &ms->store, &e) == 0;
        if (!ms->shared)
            snprintf(ms->store_why, sizeof ms->store_why, "%s", e.msg);
        ms->share_s = timer_now() - t1;
    }
    atomic_store_explicit(&ms->save_done, 1, memory_order_release);
    return NULL;
}

/* The split build's exchanges over the ranks (ngram_build_split's hooks). */
typedef struct {
    dist_context *dist;
    tempo_error *err;
} split_ctx;

static int split_share(void *ctx, count_table *t, int owner)
{
    split_ctx *x = ctx;
    uint64_t head[3] = {t->capacity, t->count, (uint64_t)t->words};
    if (dist_broadcast_bytes(x->dist, head, sizeof head, owner, x->err))
        return -1;
    if (x->dist->rank != owner) {
        count_table_free(t);
        if (count_table_init_capacity(t, (int)head[2], head[0]))
            return tempo_fail(x->err, "count memory: out of memory receiving a table of %llu bytes",
                              (unsigned long long)(head[0] * count_table_stride((int)head[2])));
        t->count = head[1];
    }
    return dist_broadcast_bytes(x->dist, t->slots, (size_t)(t->capacity * count_table_stride(t->words)), owner,
                                x->err);
}

static int split_sum(void *ctx, uint64_t *v, size_t n)
{
    split_ctx *x = ctx;
    return dist_allreduce_sum_u64(x->dist, v, n, x->err);
}

static int uses_holdout(const run_config *cfg)
{
    return cfg->mixer_holdout > 0 && (cfg->memory_order > 0 || cfg->cache_order > 0 || cfg->match_length > 0);
}

int memory_stage_check(const run_config *cfg, const token_file *train, tempo_error *err)
{
    int V = (int)train->vocab_size, kmax = ngram_max_order(V), build_max = ngram_build_max_order(V);
    int cache_max = V <= NGRAM_HASHED_MAX_VOCAB ? NGRAM_MAX_ORDER : kmax;
    if (cfg->memory_order > build_max)
        return tempo_usage(err, "memory_order %d is outside 1..%d (with %d ids: exact keys up to order %d, one hashed "
                           "order above)", cfg->memory_order, build_max, V, kmax);
    if (cfg->cache_order > cache_max)
        return tempo_usage(err, "cache_order %d is outside 1..%d (with %d ids)", cfg->cache_order, cache_max, V);
    if (uses_holdout(cfg) && train->n_tokens < (uint64_t)cfg->mixer_holdout + (uint64_t)cfg->model.context * 4 + 2)
        return tempo_usage(err, "mixer_holdout %d: the training stream holds only %llu tokens", cfg->mixer_holdout,
                           (unsigned long long)train->n_tokens);
    return 0;
}

static int id_known(const uint8_t *id)
{
    for (int i = 0; id && i < 32; i++)
        if (id[i])
            return 1;
    return 0;
}

/* Rank 0 on a resume: map RUN_DIR/memory.bin into ms->memory when it is the
 * memory this run would build (memory_stage.h); 1 when it is, 0 when it
 * must be built (the file is then closed, progress told why). */
static int try_reuse(memory_stage *ms, const run_config *cfg, const token_file *train, uint64_t tokenizer_id,
                     const uint8_t *data_id, FILE *progress)
{
    tempo_error e;
    if (memory_file_load(&ms->memory, ms->path, (int)train->vocab_size, tokenizer_id, &e)) {
        if (progress)
            fprintf(progress, "count memory: not reusing it: %s; building it again\n", e.msg);
        return 0;
    }
    const ngram_memory *m = &ms->memory;
    const int ids = id_known(data_id) && id_known(m->data_id);
    char why[200] = "";
    if (ids && memcmp(data_id, m->data_id, 32))
        snprintf(why, sizeof why, "built from other data (another DATA_DIR/meta.json)");
    else if (m->order != cfg->memory_order)
        snprintf(why, sizeof why, "of order %d, this run's is %d", m->order, cfg->memory_order);
    else if (m->prune_min != cfg->memory_prune)
        snprintf(why, sizeof why, "pruned at %d, this run at %d", m->prune_min, cfg->memory_prune);
    else if (m->tokens != ms->count_tokens)
        snprintf(why, sizeof why, "counted over %llu tokens, this run over %llu", (unsigned long long)m->tokens,
                 (unsigned long long)ms->count_tokens);
    if (why[0]) {
        if (progress)
            fprintf(progress, "count memory: %s was %s: building it again\n", ms->path, why);
        ngram_memory_free(&ms->memory);
        return 0;
    }
    if (progress)
        fprintf(progress, "count memory: reusing %s (%s; order %d over %llu tokens)\n", ms->path,
                ids ? "built from this data with these settings"
                    : "the data's id is not recorded: the tokenizer and the token count match",
                m->order, (unsigned long long)m->tokens);
    return 1;
}

/* A budget too short for the whole memory counts the prefix whose estimated
 * build fits its share (memory_budget.h), said on progress. */
static void count_prefix(memory_stage *ms, const run_config *cfg, int shards, double budget_s, FILE *progress)
{
    memory_budget_count bc = memory_budget_tokens(ms->holdout_start, cfg->memory_order, shards, budget_s,
                                                  cfg->memory_budget_share, cfg->memory_build_s_per_mtok);
    ms->count_tokens = bc.tokens;
    ms->budget_capped = bc.capped;
    if (bc.capped && progress)
        fprintf(progress, "count memory: counting %llu of %llu training tokens: the whole memory would take about "
                "%.0f s, and memory_budget_share %.2f of the %.0f s budget allows %.1f s\n",
                (unsigned long long)bc.tokens, (unsigned long long)ms->holdout_start, bc.predicted_s,
                cfg->memory_budget_share, budget_s, bc.allowed_s);
}

/* The built memory said on progress, then written (and shared) while the transformer trains. */
static int start_save(memory_stage *ms, FILE *progress, tempo_error *err)
{
    if (progress)
        fprintf(progress, "count memory: %.1f s (top-order counts %.1f, continuations %.1f, contexts %.1f, "
                "compaction %.1f), %llu entries, %.2f GB\n", ms->build_s, ms->memory.build_s[0],
                ms->memory.build_s[1], ms->memory.build_s[2], ms->memory.build_s[3],
                (unsigned long long)ngram_memory_entries(&ms->memory), (double)ngram_memory_bytes(&ms->memory) / 1e9);
    if (pthread_create(&ms->saver, NULL, save_thread, ms) == 0) {
        ms->saver_running = 1;
        return 0;
    }
    save_thread(ms);
    if (ms->save_rc) {
        *err = ms->save_err;
        return -1;
    }
    return 0;
}

int memory_stage_prepare(memory_stage *ms, const run_config *cfg, const token_file *train, uint64_t tokenizer_id,
                         const uint8_t *data_id, const char *out_dir, const char *store_dir, int threads,
                         int resume, double budget_s, FILE *progress, dist_context *dist, tempo_error *err)
{
    if (dist && dist->world <= 1)
        dist = NULL;
    const int root = !dist || dist->rank == 0;
    const int every_rank = cfg->memory_train_weight > 0;   /* every rank's batches ask the memory */
    memset(ms, 0, sizeof *ms);
    atomic_init(&ms->save_done, 0);
    ms->holdout_start = train->n_tokens;
    /* orders the vocabulary allows, checked before any work (the cache's is first used at the end) */
    if (memory_stage_check(cfg, train, err))
        return -1;
    if (uses_holdout(cfg))
        ms->holdout_start = train->n_tokens - (uint64_t)cfg->mixer_holdout;
    ms->count_tokens = ms->holdout_start;
    if (cfg->memory_order <= 0)
        return 0;
    if (threads < 1) threads = 1;
    const int world = dist ? dist->world : 1;
    int shards = threads * world;   /* every rank counts `threads` shards */
    if (shards > NGRAM_MAX_SHARDS) shards = NGRAM_MAX_SHARDS;
    count_prefix(ms, cfg, shards, budget_s, progress);
    path_join(ms->path, sizeof ms->path, out_dir, "memory.bin");
    if (store_dir)
        snprintf(ms->store_dir, sizeof ms->store_dir, "%s", store_dir);
    ms->progress = progress;
    /* rank 0's folder decides for every rank */
    double t0 = timer_now();
    double load = root && resume && path_exists(ms->path) && try_reuse(ms, cfg, train, tokenizer_id, data_id, progress);
    if (dist && dist_broadcast_f64(dist, &load, 1, err)) {
        ngram_memory_free(&ms->memory);
        return -1;
    }
    if (load != 0) {
        if (!root && !every_rank)
            return 0;   /* only rank 0 reads through the memory */
        if (!root && memory_file_load(&ms->memory, ms->path, (int)train->vocab_size, tokenizer_id, err))
            return -1;
        ms->load_s = timer_now() - t0;
        ms->has_memory = 1;
        ms->reused = 1;
        return 0;
    }
    double need = ngram_memory_estimate_bytes(cfg->memory_order, ms->count_tokens), have = available_bytes();
    if (have > 0 && need > have)
        return tempo_fail(err, "count memory: order %d over %llu tokens needs about %.1f GB, and %.1f GB of memory is "
                          "available (lower memory_order)", cfg->memory_order,
                          (unsigned long long)ms->count_tokens, need / 1e9, have / 1e9);
    if (ngram_memory_init(&ms->memory, (int)train->vocab_size, cfg->memory_order, shards, err))
        return -1;
    if (progress)
        fprintf(progress, "count memory: order %d over %llu training tokens (%d threads%s)...\n", cfg->memory_order,
                (unsigned long long)ms->count_tokens, threads, world > 1 ? " on each rank" : "");
    t0 = timer_now();
    ngram_stream s = {train->tokens, (int)train->dtype_bytes, ms->count_tokens};
    split_ctx sx = {dist, err};
    ngram_build_split split = {dist ? dist->rank : 0, world, split_share, split_sum, &sx};
    tempo_error build_err;
    tempo_error_clear(&build_err);
    if (ngram_memory_build_split(&ms->memory, &s, cfg->memory_prune, dist ? &split : NULL, &build_err)) {
        ngram_memory_free(&ms->memory);
        if (err->msg[0] == 0)
            *err = build_err;
        return -1;
    }
    ms->build_s = timer_now() - t0;
    ms->memory.tokenizer_id = tokenizer_id;
    if (data_id)
        memcpy(ms->memory.data_id, data_id, 32);
    ms->memory.build_seconds = ms->build_s;
    ms->built = 1;
    if (!root && !every_rank) {   /* the others train the transformer only */
        ngram_memory_free(&ms->memory);
        return 0;
    }
    ms->has_memory = 1;
    return root ? start_save(ms, progress, err) : 0;   /* rank 0 writes the file */
}

/* Say once what the store did with the memory this run saved (nothing when
 * it saved none: a resume that reused its memory.bin). */
static void report_store(memory_stage *ms)
{
    if (!ms->progress || !ms->store_dir[0] || ms->save_rc || ms->store_reported ||
        !atomic_load_explicit(&ms->save_done, memory_order_acquire))
        return;
    ms->store_reported = 1;
    if (!ms->shared)
        fprintf(ms->progress, "count memory: not shared, the run keeps its own copy: %s\n", ms->store_why);
    else
        fprintf(ms->progress, "count memory: %s %s (%.2f GB%s%s; %.1f s)\n",
                ms->store.reused ? "the same as" : "added to the store as", ms->store.entry,
                (double)ms->store.bytes / 1e9,
                ms->linked_unwritten ? ", one copy kept, RUN_DIR/memory.bin links it, nothing written"
                : ms->store.reused ? ", one copy kept, RUN_DIR/memory.bin links it" : "",
                ms->store.replaced_bad ? ", a damaged copy there replaced" : "", ms->share_s);
    if (ms->shared && ms->store.pruned)
        fprintf(ms->progress, "count memory: %d store entr%s that no run links any more removed\n",
                ms->store.pruned, ms->store.pruned == 1 ? "y" : "ies");
}

int memory_stage_wait_saved(memory_stage *ms, tempo_error *err)
{
    if (ms->saver_running) {
        pthread_join(ms->saver, NULL);
        ms->saver_running = 0;
        if (ms->save_rc) {
            *err = ms->save_err;
            return -1;
        }
    }
    report_store(ms);
    return 0;
}

int memory_stage_save_status(memory_stage *ms, tempo_error *err)
{
    if (!ms->saver_running || !atomic_load_explicit(&ms->save_done, memory_order_acquire))
        return 0;
    return memory_stage_wait_saved(ms, err);   /* finished: the join does not wait */
}

int memory_stage_parts(memory_stage *ms, const run_config *cfg, int vocab, hybrid_parts *h, tempo_error *err)
{
    /* the run's parts as eval reads them (the mixer is fitted as val will be read: the transformer learning) */
    hybrid_settings s = run_parts_settings(cfg, run_parts_all());
    return hybrid_parts_over(h, vocab, ms->has_memory ? &ms->memory : NULL, ms->has_fitted ? &ms->fitted : NULL, &s,
                             err);
}

/* Predicted seconds of memory_stage_fit_mixer over all held-out tokens. */
static double fit_estimate(const run_config *cfg, double step_s, uint64_t tokens_per_step)
{
    if (!uses_holdout(cfg) || tokens_per_step == 0)
        return 0;
    /* windows of stride context/2 forward each token twice; a forward is about a third of a step */
    double forward_tokens = 2.0 * cfg->mixer_holdout;
    double model_s = step_s * forward_tokens / (double)tokens_per_step / 3.0;
    if (cfg->adapt_lr > 0)
        model_s *= 3.5;   /* learning while reading: one window per forward and a step on every token */
    double lookups_s = 5e-6 * cfg->mixer_holdout;
    return 1.25 * (model_s + lookups_s) + 0.2;
}

void memory_stage_fit_budget(const run_config *cfg, double step_s, uint64_t tokens_per_step, double budget_s,
                             double *reserve, double *fraction)
{
    double full = fit_estimate(cfg, step_s, tokens_per_step);
    *reserve = full;
    *fraction = 1;
    if (budget_s > 0 && full > MEMORY_STAGE_FIT_SHARE * budget_s) {
        *reserve = MEMORY_STAGE_FIT_SHARE * budget_s;
        *fraction = *reserve / full;
    }
}

int memory_stage_fit_mixer(memory_stage *ms, model *m, const run_config *cfg, const token_file *train,
                           const char *out_dir, int batch, double fraction, FILE *progress, double *seconds,
                           uint64_t *tokens, tempo_error *err)
{
    *seconds = 0;
    *tokens = 0;
    if (!uses_holdout(cfg))
        return 0;
    double t0 = timer_now();
    size_t held = (size_t)(train->n_tokens - ms->holdout_start), n = held;
    if (fraction > 0 && fraction < 1) {
        n = (size_t)ceil(fraction * (double)held);
        if (n < MEMORY_STAGE_FIT_MIN_TOKENS)
            n = MEMORY_STAGE_FIT_MIN_TOKENS;
        if (n > held)
            n = held;
    }
    if (progress) {
        if (n < held)
            fprintf(progress, "fitting the mixer on %zu of the %zu held-out training tokens (what %.0f%% of the "
                    "budget allows)...\n", n, held, 100 * MEMORY_STAGE_FIT_SHARE);
        else
            fprintf(progress, "fitting the mixer on %zu held-out training tokens...\n", n);
    }
    *tokens = n;
    int32_t *ids = malloc(sizeof(int32_t) * n);
    if (!ids)
        return tempo_fail(err, "mixer: out of memory");
    token_file_read(train, ms->holdout_start, n, ids);
    hybrid_parts h;
    mixer fitted;
    hybrid_bpb_result r;
    int rc = memory_stage_parts(ms, cfg, (int)train->vocab_size, &h, err);
    /* bytes only scale the figure, which nobody reads: the fit needs the weights */
    if (!rc)
        rc = hybrid_bpb_evaluate(NULL, m, &h, 1, ids, n, 1, cfg->model.context / 2, batch, &fitted, NULL, &r,
                                 err);
    free(ids);
    hybrid_parts_free(&h);
    if (rc)
        return -1;
    char p[1100];
    rc = mixer_save(&fitted, path_join(p, sizeof p, out_dir, "mixer.json"), err);
    if (ms->has_fitted)
        mixer_free(&ms->fitted);
    ms->fitted = fitted;
    ms->has_fitted = 1;
    *seconds = timer_now() - t0;
    return rc;
}

void memory_stage_free(memory_stage *ms)
{
    if (ms->saver_running) {
        pthread_join(ms->saver, NULL);
        ms->saver_running = 0;
    }
    ngram_memory_free(&ms->memory);
    if (ms->has_fitted)
        mixer_free(&ms->fitted);
}
