/* comm_model.c - ring collectives, the gradient's spans and a step's time
 * on N ranks (see comm_model.h). */
#include "plan/comm_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const link_model LINKS[] = {
    {"25gbe", 25.0 / 8, 10},
    {"100gbe", 100.0 / 8, 5},
    {"400gbe", 400.0 / 8, 3},
    {"nvlink", 450, 2},
};

int link_model_parse(link_model *l, const char *spec, tempo_error *err)
{
    for (size_t i = 0; i < sizeof LINKS / sizeof LINKS[0]; i++)
        if (!strcmp(spec, LINKS[i].name)) {
            *l = LINKS[i];
            return 0;
        }
    char *end;
    double gbs = strtod(spec, &end), lat = 0;
    if (end != spec && *end == ':') {
        const char *s = end + 1;
        lat = strtod(s, &end);
        if (end == s)
            end = (char *)s - 1;   /* "GBPS:" with nothing after: not accepted */
    }
    if (end == spec || *end != 0 || !(gbs > 0 && gbs <= 1e6) || !(lat >= 0 && lat <= 1e6))
        return tempo_usage(err, "link '%s': expected 25gbe, 100gbe, 400gbe, nvlink or GBPS[:LATENCY_US] "
                           "(bandwidth in (0, 1e6] GB/s, latency in [0, 1e6] us)", spec);
    snprintf(l->name, sizeof l->name, "%g GB/s, %g us", gbs, lat);
    l->gbs = gbs;
    l->latency_us = lat;
    return 0;
}

double comm_allreduce_s(double bytes, int ranks, const link_model *l)
{
    return 2 * comm_reduce_scatter_s(bytes, ranks, l);
}

double comm_reduce_scatter_s(double bytes, int ranks, const link_model *l)
{
    if (ranks <= 1)
        return 0;
    double steps = ranks - 1;
    return bytes * steps / ranks / (l->gbs * 1e9) + steps * l->latency_us * 1e-6;
}

int comm_grad_spans(const model_config *c, double *floats, int max)
{
    int L = c->n_layers;
    if (L + 2 > max || L < 0)
        return 0;
    double C = c->d_model, V = c->vocab_size;
    model_layer_params lp = model_config_layer_params(c);
    double layer = lp.attn + lp.mlp + lp.norms;
    floats[0] = C + (c->tied_head ? 0 : V * C);
    for (int i = 1; i <= L; i++)
        floats[i] = layer;
    floats[L + 1] = V * C;
    return L + 2;
}

void comm_project(const comm_step_parts *p, const double *span_floats, int n_spans, int ranks, int sharded,
                  int overlap, const link_model *l, comm_step *out)
{
    memset(out, 0, sizeof *out);
    double params = 0;
    for (int i = 0; i < n_spans; i++)
        params += span_floats[i];
    out->optimizer_s = sharded && ranks > 1 ? p->optimizer_s / ranks : p->optimizer_s;
    double gather = sharded ? comm_reduce_scatter_s(4 * params, ranks, l) : 0;   /* the weights' all-gather */
    double reduce = 0, done = 0;
    /* the spans' collectives one after another; with overlap each starts at its hand-over: span 0 at the
     * start of the last backward pass, the layers' at even steps through it, the embedding at its end */
    int layers = n_spans - 2;
    for (int i = 0; i < n_spans; i++) {
        double bytes = 4 * span_floats[i];
        double t = sharded ? comm_reduce_scatter_s(bytes, ranks, l) : comm_allreduce_s(bytes, ranks, l);
        double ready = p->last_backward_s;   /* the embedding, after the whole pass */
        if (i == 0)
            ready = 0;
        else if (i < n_spans - 1 && layers > 0)
            ready = p->last_backward_s * i / layers;
        done = (overlap ? (done > ready ? done : ready) : done) + t;
        reduce += t;
    }
    double waited = overlap ? done - p->last_backward_s : reduce;
    if (waited < 0)
        waited = 0;
    if (ranks <= 1)
        waited = reduce = gather = 0;
    out->comm_s = reduce + gather;
    out->exposed_s = waited + gather;
    out->step_s = p->compute_s + out->optimizer_s + p->fixed_s + out->exposed_s;
}
