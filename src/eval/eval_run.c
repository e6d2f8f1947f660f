/* eval_run.c - bits per byte of a loaded model on a val split or a text
 * file, and the phase-2 scorecard's assembly (see eval_run.h). */
#include "eval/eval_run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/fileio.h"
#include "core/progress.h"
#include "data/token_store.h"
#include "eval/hybrid_bpb.h"

int eval_run_stride(const run_config *cfg, int stride)
{
    return stride ? stride : cfg->model.context / 2;
}

/* The val split of data_dir as ids, with its byte and document counts. */
static int read_val(const char *data_dir, int vocab, int32_t **ids, size_t *n, uint64_t *n_bytes, uint64_t *n_docs,
                    tempo_error *err)
{
    char p[1100];
    token_file tf;
    if (token_file_open(&tf, path_join(p, sizeof p, data_dir, "val.tok"), err))
        return -1;
    int rc = 0;
    if (tf.vocab_size != (uint32_t)vocab)
        rc = tempo_fail(err, "%s: vocabulary %u does not match the model's %d", p, tf.vocab_size, vocab);
    else if (!(*ids = malloc(sizeof(int32_t) * (tf.n_tokens ? tf.n_tokens : 1))))
        rc = tempo_fail(err, "%s: out of memory", p);
    else {
        token_file_read(&tf, 0, tf.n_tokens, *ids);
        *n = tf.n_tokens;
        *n_bytes = tf.n_bytes;
        *n_docs = tf.n_docs;
    }
    token_file_close(&tf);
    return rc;
}

int eval_run_bpb(const char *run_dir, model *m, const tokenizer *tok, const run_config *cfg, const char *data_dir,
                 const char *text, int stride, int batch, run_parts_use use, FILE *progress,
                 hybrid_bpb_result *r, tempo_error *err)
{
    memset(r, 0, sizeof *r);
    int32_t *ids = NULL;
    size_t n = 0;
    uint64_t n_bytes = 0, n_docs = 0;
    int rc = text ? token_encode_file(tok, text, &ids, &n, &n_bytes, &n_docs, err)
                  : read_val(data_dir, cfg->model.vocab_size, &ids, &n, &n_bytes, &n_docs, err);
    hybrid_parts h;
    memset(&h, 0, sizeof h);
    if (!rc)
        rc = run_parts_load(run_dir, cfg, tok, use, &h, err);
    char what[300];
    snprintf(what, sizeof what, "eval: bpb of %s", text ? text : data_dir);
    progress_meter pm;
    progress_meter_start(&pm, progress, what, "tokens", 10);
    if (!rc)
        rc = hybrid_bpb_evaluate(NULL, m, &h, use.adapt, ids, n, n_bytes, eval_run_stride(cfg, stride), batch,
                                 NULL, &pm, r, err);
    free(ids);
    hybrid_parts_free(&h);
    if (rc)
        return -1;
    r->documents = n_docs;
    r->source = text ? text : data_dir;
    return 0;
}

void eval_scorecard_fill(eval_scorecard *s, const char *bpb_json, double bpb, const icl_summary *icl,
                         const char *icl_json, int icl_limit, const char *model_name, double seconds)
{
    memset(s, 0, sizeof *s);
    s->bpb = bpb_json ? bpb : NAN;
    s->bpb_detail = bpb_json;
    s->core = icl->core;
    s->core_entries = icl->n_core;
    s->core_of = icl->n_table;
    s->icl_limit = icl_limit;
    s->decode_tokens_per_s = s->prefill_tokens_per_s = s->time_to_first_token_s = NAN;
    s->best_decode_tokens_per_s = NAN;
    s->icl_json = icl_json;
    s->model = model_name;
    s->seconds = seconds;
}
