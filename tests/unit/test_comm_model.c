/* test_comm_model.c - the data-parallel communication model
 * (plan/comm_model.h): link specs and their errors, the ring formulas on
 * hand-computed cases, the gradient's spans against the spans a real model
 * hands over in its backward pass (model_grad_span: the same sizes in the
 * same order, for several shapes), and the step projection's cases: no
 * overlap, overlap that hides everything but the last span, overlap that
 * cannot keep up, the sharded optimizer, one rank. */
#include "test.h"

#include "model/model.h"
#include "plan/comm_model.h"

#include <math.h>
#include <string.h>

static void test_links(void)
{
    link_model l;
    tempo_error err;
    CHECK(link_model_parse(&l, "100gbe", &err) == 0 && l.gbs == 12.5 && l.latency_us == 5);
    CHECK(link_model_parse(&l, "nvlink", &err) == 0 && l.gbs == 450);
    CHECK(link_model_parse(&l, "25gbe", &err) == 0 && l.gbs == 3.125);
    CHECK(link_model_parse(&l, "400gbe", &err) == 0 && l.gbs == 50);
    CHECK(link_model_parse(&l, "10:2.5", &err) == 0 && l.gbs == 10 && l.latency_us == 2.5);
    CHECK(link_model_parse(&l, "7", &err) == 0 && l.gbs == 7 && l.latency_us == 0);
    const char *bad[] = {"", "0", "-1", "abc", "10:", "10:x", "10:-1", "1e7", "10gbe", "5:3:1", "nan", "inf"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tempo_error_clear(&err);
        CHECK_MSG(link_model_parse(&l, bad[i], &err) == -1 && err.code == 2 && strstr(err.msg, "GBPS"),
                  "'%s' accepted", bad[i]);
    }
}

static void test_ring(void)
{
    link_model l = {"t", 1, 0};   /* 1 GB/s, no latency */
    CHECK(comm_allreduce_s(1e9, 1, &l) == 0 && comm_reduce_scatter_s(1e9, 1, &l) == 0);
    CHECK_NEAR(comm_allreduce_s(1e9, 2, &l), 1.0, 1e-12);        /* 2 (N-1)/N = 1 buffer */
    CHECK_NEAR(comm_allreduce_s(1e9, 4, &l), 1.5, 1e-12);        /* 2 * 3/4 */
    CHECK_NEAR(comm_reduce_scatter_s(1e9, 4, &l), 0.75, 1e-12);
    l.latency_us = 10;
    CHECK_NEAR(comm_allreduce_s(0, 4, &l), 60e-6, 1e-15);        /* 2 (N-1) steps */
    CHECK_NEAR(comm_reduce_scatter_s(0, 4, &l), 30e-6, 1e-15);
}

/* comm_grad_spans from the config alone = the spans model_backward hands over. */
static void test_spans_match_model(void)
{
    model_config shapes[4] = {
        {.vocab_size = 13, .context = 6, .d_model = 8, .n_layers = 2, .n_heads = 2, .n_kv_heads = 2, .d_ff = 12,
         .mlp = MLP_RELU2, .tied_head = 1},
        {.vocab_size = 17, .context = 4, .d_model = 16, .n_layers = 3, .n_heads = 4, .n_kv_heads = 2, .d_ff = 20,
         .mlp = MLP_SWIGLU, .qk_norm = 1, .tied_head = 0},
        {.vocab_size = 9, .context = 4, .d_model = 12, .n_layers = 1, .n_heads = 3, .n_kv_heads = 1, .d_ff = 24,
         .mlp = MLP_SWIGLU, .tied_head = 1},
        {.vocab_size = 33, .context = 8, .d_model = 8, .n_layers = 4, .n_heads = 1, .n_kv_heads = 1, .d_ff = 8,
         .mlp = MLP_RELU2, .qk_norm = 1, .tied_head = 0},
    };
    for (int s = 0; s < 4; s++) {
        model_config c = shapes[s];
        c.rope_theta = 10000.0f;
        c.norm_eps = 1e-5f;
        c.init_std = 0.02f;
        model *m = NULL;
        tempo_error err;
        CHECK_MSG(model_create(&m, &c, 1, &err) == 0, "shape %d: %s", s, err.msg);
        if (!m)
            continue;
        double spans[COMM_MAX_SPANS];
        int n = comm_grad_spans(&c, spans, COMM_MAX_SPANS);
        CHECK_MSG(n == model_grad_spans(m), "shape %d: %d spans, the model %d", s, n, model_grad_spans(m));
        double total = 0;
        for (int i = 0; i < n && i < model_grad_spans(m); i++) {
            size_t off, cnt;
            model_grad_span(m, i, &off, &cnt);
            CHECK_MSG(spans[i] == (double)cnt, "shape %d span %d: %g floats, the model %zu", s, i, spans[i], cnt);
            total += spans[i];
        }
        CHECK(total == (double)model_num_params(m));
        model_free(m);
    }
    model_config deep = shapes[0];
    deep.n_layers = COMM_MAX_SPANS;   /* more spans than room */
    double spans[COMM_MAX_SPANS];
    CHECK(comm_grad_spans(&deep, spans, COMM_MAX_SPANS) == 0);
}

static void test_project(void)
{
    link_model l = {"t", 1, 0};
    /* 4 spans (2 layers): 1e8, 2e8, 2e8, 5e8 floats = 0.4, 0.8, 0.8, 2.0 GB; on 2 ranks an all-reduce
     * moves one buffer: 0.4, 0.8, 0.8, 2.0 s */
    const double spans[4] = {1e8, 2e8, 2e8, 5e8};
    comm_step_parts p = {.compute_s = 10, .last_backward_s = 4, .optimizer_s = 2, .fixed_s = 0.5};
    comm_step s;
    comm_project(&p, spans, 4, 2, 0, 0, &l, &s);
    CHECK_NEAR(s.comm_s, 4.0, 1e-9);
    CHECK_NEAR(s.exposed_s, 4.0, 1e-9);
    CHECK_NEAR(s.step_s, 10 + 2 + 0.5 + 4.0, 1e-9);
    /* overlap, a 1 s pass: span 0 at 0 (done 0.4), the last layer at 0.5 (done 1.3), the first layer at
     * the pass's end, 1 (starts after 1.3, done 2.1), the embedding after it (done 4.1): 3.1 s past the end */
    p.last_backward_s = 1;
    comm_project(&p, spans, 4, 2, 0, 1, &l, &s);
    CHECK_NEAR(s.comm_s, 4.0, 1e-9);
    CHECK_NEAR(s.exposed_s, 3.1, 1e-9);
    /* a long pass hides all but what is handed over at its end: the first layer's and the embedding's */
    p.last_backward_s = 100;
    comm_project(&p, spans, 4, 2, 0, 1, &l, &s);
    CHECK_NEAR(s.exposed_s, 2.8, 1e-9);
    /* no pass to hide behind: everything shows */
    p.last_backward_s = 0;
    comm_project(&p, spans, 4, 2, 0, 1, &l, &s);
    CHECK_NEAR(s.exposed_s, 4.0, 1e-9);
    /* sharded, 4 ranks: reduce-scatter 3/4 of each span (3.0 s in all, no overlap), the weights'
     * all-gather 3/4 of 4 GB (3.0 s) never hidden, the optimizer on a quarter */
    p.last_backward_s = 4;
    comm_project(&p, spans, 4, 4, 1, 0, &l, &s);
    CHECK_NEAR(s.optimizer_s, 0.5, 1e-12);
    CHECK_NEAR(s.comm_s, 6.0, 1e-9);
    CHECK_NEAR(s.exposed_s, 6.0, 1e-9);
    comm_project(&p, spans, 4, 4, 1, 1, &l, &s);   /* 0.3 | 2+0.6 | 4+0.6 | 4.6+1.5 = 6.1: 2.1 + 3.0 */
    CHECK_NEAR(s.exposed_s, 5.1, 1e-9);
    CHECK_NEAR(s.step_s, 10 + 0.5 + 0.5 + 5.1, 1e-9);
    /* one rank: nothing to reduce, the optimizer whole */
    comm_project(&p, spans, 4, 1, 1, 1, &l, &s);
    CHECK(s.comm_s == 0 && s.exposed_s == 0 && s.optimizer_s == 2);
    CHECK_NEAR(s.step_s, 12.5, 1e-12);
}

int main(void)
{
    RUN(test_links);
    RUN(test_ring);
    RUN(test_spans_match_model);
    RUN(test_project);
    return test_summary("test_comm_model");
}
