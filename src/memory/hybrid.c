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

int hybrid_parts_load(hybrid_parts *h, const char *run_dir_or_file, int vocab, uint64_t tokenizer_id,
                      int memory_order, int cache_order, int match_length, double mixer_lr, double mixer_beta,
                      tempo_error *err)
{
    memset(h, 0, sizeof *h);
    h->vocab = vocab;
    h->cache_order = cache_order;
    h->match_length = match_length;
    char dir[1024], p[1100];
    hybrid_run_dir(run_dir_or_file, dir, sizeof dir);
    if (memory_order > 0) {
        path_join(p, sizeof p, dir, "memory.bin");
        if (!path_exists(p))
            return tempo_fail(err, "%s: missing: the model's config has a count memory of order %d "
                              "(evaluate without it: --no-memory)", p, memory_order);
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
        if (rc == 0 && saved.memory_order == mem_k && saved.cache_order == cache_order &&
            saved.match == (match_length > 0)) {
            h->mx = saved;
            h->mixer_fitted = 1;
            return 0;
        }
        if (rc == 0)
            mixer_free(&saved);   /* fitted for other parts (or of an older layout): start from equal weights */
    }
    if (mixer_init(&h->mx, mem_k, cache_order, match_length > 0, mixer_lr, err)) {
        hybrid_parts_free(h);
        return -1;
    }
    h->mx.beta = mixer_beta;
    return 0;
}

void hybrid_parts_free(hybrid_parts *h)
{
    ngram_memory_free(&h->memory);
    mixer_free(&h->mx);
    memset(h, 0, sizeof *h);
}

mixture_options hybrid_parts_options(const hybrid_parts *h, int adapt)
{
    mixture_options o = {h->has_memory ? &h->memory : NULL, h->vocab, h->cache_order, adapt, h->match_length};
    return o;
}
