/* hybrid.c - gathering a run's memory, cache order and mixer (see hybrid.h). */
#include "memory/hybrid.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "core/fileio.h"
#include "memory/memory_file.h"

void hybrid_run_dir(const char *run_dir_or_file, char *out, size_t n)
{
    struct stat st;
    snprintf(out, n, "%s", run_dir_or_file);
    if (stat(run_dir_or_file, &st) == 0 && S_ISDIR(st.st_mode))
        return;
    char *slash = strrchr(out, '/');
    if (slash) *slash = 0;
    else snprintf(out, n, ".");
}

int hybrid_parts_any(const hybrid_parts *h)
{
    return h->has_memory || h->cache_order > 0 || h->match_length > 0;
}

/* h empty but for the settings of s that need no file. */
static void parts_start(hybrid_parts *h, int vocab, const hybrid_settings *s)
{
    memset(h, 0, sizeof *h);
    h->vocab = vocab;
    h->cache_order = s->cache_order;
    h->match_length = s->match_length;
    h->model_lr = s->model_lr;
}

/* h's mixer from equal weights, for the memory it has and the parts s names. */
static int start_equal(hybrid_parts *h, const hybrid_settings *s, tempo_error *err)
{
    if (mixer_init(&h->mx, h->has_memory ? h->memory.order : 0, s->cache_order, s->match_length > 0, s->mixer_lr,
                   err))
        return -1;
    h->mx.beta = s->mixer_beta;
    return 0;
}

int hybrid_parts_load(hybrid_parts *h, const char *run_dir_or_file, int vocab, uint64_t tokenizer_id,
                      const hybrid_settings *s, tempo_error *err)
{
    parts_start(h, vocab, s);
    char dir[1024], p[1100];
    hybrid_run_dir(run_dir_or_file, dir, sizeof dir);
    if (s->memory_order > 0) {
        path_join(p, sizeof p, dir, "memory.bin");
        if (!path_exists(p))
            return tempo_fail(err, "%s: missing: the model's config has a count memory of order %d "
                              "(evaluate without it: --no-memory)", p, s->memory_order);
        if (memory_file_load(&h->memory, p, vocab, tokenizer_id, err))
            return -1;
        h->has_memory = 1;
    }
    int mem_k = h->has_memory ? h->memory.order : 0;
    path_join(p, sizeof p, dir, "mixer.json");
    if (path_exists(p)) {
        mixer saved;
        int rc = mixer_load(&saved, p, err);
        if (rc == -1) {
            hybrid_parts_free(h);
            return -1;
        }
        if (rc == 0 && saved.memory_order == mem_k && saved.cache_order == s->cache_order &&
            saved.match == (s->match_length > 0)) {
            h->mx = saved;
            h->mixer_fitted = 1;
            return 0;
        }
        if (rc == 0)
            mixer_free(&saved);   /* fitted for other parts (or of an older layout): start from equal weights */
    }
    if (start_equal(h, s, err)) {
        hybrid_parts_free(h);
        return -1;
    }
    return 0;
}

int hybrid_parts_over(hybrid_parts *h, int vocab, const ngram_memory *memory, const mixer *fitted,
                      const hybrid_settings *s, tempo_error *err)
{
    parts_start(h, vocab, s);
    if (memory) {
        h->memory = *memory;   /* shallow: the caller's */
        h->has_memory = 1;
        h->memory_borrowed = 1;
    }
    if (fitted) {
        h->mixer_fitted = 1;
        return mixer_copy(&h->mx, fitted, err);
    }
    return start_equal(h, s, err);
}

void hybrid_parts_free(hybrid_parts *h)
{
    if (!h->memory_borrowed)
        ngram_memory_free(&h->memory);
    mixer_free(&h->mx);
    memset(h, 0, sizeof *h);
}

mixture_options hybrid_parts_options(const hybrid_parts *h, int adapt)
{
    mixture_options o = {h->has_memory ? &h->memory : NULL, h->vocab, h->cache_order, adapt, h->match_length};
    return o;
}
