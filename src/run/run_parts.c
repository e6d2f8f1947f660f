/* run_parts.c - a run's hybrid parts from its config (see run_parts.h). */
#include "run/run_parts.h"

#include "memory/memory_file.h"

run_parts_use run_parts_all(void)
{
    run_parts_use u = {1, 1, 1, -1, -1, -1};
    return u;
}

run_parts_use run_parts_frozen(int memory, int cache)
{
    run_parts_use u = run_parts_all();
    u.memory = memory;
    u.cache = cache;
    u.adapt = 0;
    u.adapt_lr = 0;
    return u;
}

hybrid_settings run_parts_settings(const run_config *cfg, run_parts_use use)
{
    hybrid_settings s;
    s.memory_order = use.memory ? cfg->memory_order : 0;
    s.cache_order = !use.cache ? 0 : use.cache_order >= 0 ? use.cache_order : cfg->cache_order;
    s.match_length = !use.cache ? 0 : use.match_length >= 0 ? use.match_length : cfg->match_length;
    s.mixer_lr = cfg->mixer_lr;
    s.mixer_beta = cfg->mixer_beta;
    s.model_lr = use.adapt_lr >= 0 ? use.adapt_lr : cfg->adapt_lr;
    return s;
}

int run_parts_load(const char *run_dir, const run_config *cfg, const tokenizer *tok, run_parts_use use,
                   hybrid_parts *h, tempo_error *err)
{
    hybrid_settings s = run_parts_settings(cfg, use);
    return hybrid_parts_load(h, run_dir, cfg->model.vocab_size, ngram_tokenizer_id(tok), &s, err);
}
