/* cmd_bench_scale.c - `tempo bench scale`: the projection of a preset's step
 * over 1 to 1,024 data-parallel ranks (plan/comm_model.h over the step
 * parts of plan/throughput.h, or of a measured step), with and without the
 * sharded optimizer and the overlapped reduction, as JSON lines. A model,
 * not a measurement: what it is checked against is in docs/distributed.md. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/json_write.h"
#include "plan/chip.h"
#include "plan/comm_model.h"
#include "plan/throughput.h"

#define MAX_SETS 32

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tempo bench scale [--preset NAME] [--set KEY=VALUE]... [--chip FILE] [--link SPEC]\n"
            "                         [--step-ms MS] [--max-ranks N] [--vocab N]\n"
            "  A projection, not a measurement: the preset's training step on 1, 2, 4, ... --max-ranks\n"
            "  (default 1024) data-parallel ranks, each rank a chip of --chip (default this machine kind's\n"
            "  profile: configs/chips/cpu-zen4-2core.conf where the CPU kernels run AVX-512 on 256-bit\n"
            "  FMA pipes with AVX-512 BF16, cpu-avx512-2core.conf on other AVX-512, else\n"
            "  cpu-avx2-2core.conf), the gradients over a link of --link: 25gbe,\n"
            "  100gbe, 400gbe, nvlink (an 8-GPU NVLink server) or GBPS[:LATENCY_US]; default: the chip\n"
            "  file's link_gbs and link_latency_us. One JSON line per ranks, scaling, sharded and overlap:\n"
            "    scaling  strong: the preset's global batch split over the ranks (the trainer's rule;\n"
            "             while the batch divides), weak: every rank the preset's batch\n"
            "    sharded  the optimizer state sharded (ZeRO-1: the gradient reduce-scattered, the\n"
            "             update on 1/N, the weights all-gathered)\n"
            "    overlap  the gradient reduced span by span beside the backward pass (overlap_comm)\n"
            "  with compute, optimizer, communication (all of it, and the part the step waits for) and\n"
            "  step milliseconds, tokens/s and the efficiency against one rank (tokens/s over N times\n"
            "  one rank's). The step's parts come from the planner's throughput model of the chip, or,\n"
            "  with --step-ms, from a measured step of one process on the preset's whole batch (for\n"
            "  example tempo bench train's), split in the model's proportions. Ring collectives, one at a\n"
            "  time, with asynchronous progress: the assumptions are in plan/comm_model.h.\n");
}

static void scale_parts(comm_step_parts *p, double k)
{
    p->compute_s *= k;
    p->last_backward_s *= k;
    p->optimizer_s *= k;
    p->fixed_s *= k;
}

/* The step's parts on `ranks` ranks, scaled to a measured one-rank step when k != 1. */
static int parts_for(const run_config *cfg, const chip_profile *chip, int ranks, double k, comm_step_parts *out,
                     double *tokens_per_step, tempo_error *err)
{
    step_prediction p;
    if (throughput_predict(cfg, chip, ranks, &p, err))
        return -1;
    throughput_comm_parts(&p, out);
    scale_parts(out, k);
    *tokens_per_step = p.tokens_per_step;
    return 0;
}

static void emit(int ranks, const char *scaling, int sharded, int overlap, const comm_step *s, double tokens,
                 double one_rank_tps, const link_model *l, int measured)
{
    strbuf out = {0};
    jsonw w;
    jsonw_init(&w, &out);
    jsonw_object_begin(&w);
    jsonw_key(&w, "ranks"); jsonw_int(&w, ranks);
    jsonw_key(&w, "scaling"); jsonw_string(&w, scaling);
    jsonw_key(&w, "sharded"); jsonw_bool(&w, sharded);
    jsonw_key(&w, "overlap"); jsonw_bool(&w, overlap);
    double tps = tokens / s->step_s;
    jsonw_key(&w, "step_ms"); jsonw_number_digits(&w, s->step_s * 1e3, 4);
    jsonw_key(&w, "optimizer_ms"); jsonw_number_digits(&w, s->optimizer_s * 1e3, 4);
    jsonw_key(&w, "comm_ms"); jsonw_number_digits(&w, s->comm_s * 1e3, 4);
    jsonw_key(&w, "exposed_comm_ms"); jsonw_number_digits(&w, s->exposed_s * 1e3, 4);
    jsonw_key(&w, "tokens_per_s"); jsonw_number_digits(&w, tps, 1);
    jsonw_key(&w, "efficiency"); jsonw_number_digits(&w, tps / (ranks * one_rank_tps), 4);
    jsonw_key(&w, "link"); jsonw_string(&w, l->name);
    jsonw_key(&w, "step_source"); jsonw_string(&w, measured ? "measured" : "model");
    jsonw_object_end(&w);
    tempo_error e;
    if (jsonw_finish(&w, &e) == 0)
        printf("%.*s\n", (int)out.len, out.data);
    strbuf_free(&out);
}

int bench_scale_main(int argc, char **argv)
{
    const char *preset = "cpu-default", *chip_arg = NULL, *link_arg = NULL, *sets[MAX_SETS];
    int n_sets = 0, max_ranks = 1024, vocab = 4097;
    double step_ms = 0;
    const cli_flag flags[] = {
        CLI_F_STRING("--preset", &preset),
        CLI_F_LIST("--set", sets, &n_sets, MAX_SETS),
        CLI_F_STRING("--chip", &chip_arg),
        CLI_F_STRING("--link", &link_arg),
        CLI_F_REAL("--step-ms", &step_ms, 0, 1e9, 1),
        CLI_F_INT("--max-ranks", &max_ranks, 1, 1 << 20),
        CLI_F_INT("--vocab", &vocab, 2, 1 << 24),
    };
    int help, bad = cli_parse_flags("bench scale", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    if (bad) return bad;
    if (help) { usage(stdout); return 0; }
    tempo_error err;
    char chip_path[1200];
    if (chip_arg)
        snprintf(chip_path, sizeof chip_path, "%s", chip_arg);
    else
        plan_find_config(chip_default_file(), chip_path, sizeof chip_path);
    chip_profile chip;
    run_config cfg;
    if (chip_load(&chip, chip_path, &err))
        return cli_report(&err);
    if (cli_load_preset(preset, sets, n_sets, vocab, &cfg, &err))
        return cli_report(&err);
    link_model link = {"", chip.link_gbs, chip.link_latency_us};
    snprintf(link.name, sizeof link.name, "%s link", chip.name);
    if (link_arg && link_model_parse(&link, link_arg, &err))
        return cli_report(&err);
    double spans[COMM_MAX_SPANS];
    int n_spans = comm_grad_spans(&cfg.model, spans, COMM_MAX_SPANS);
    if (n_spans == 0)
        return cli_usage_error("bench scale: %d layers: at most %d", cfg.model.n_layers, COMM_MAX_SPANS - 2);
    /* one rank on the whole batch: the reference, and the measured step's scale */
    comm_step_parts one;
    double tokens1, k = 1;
    if (parts_for(&cfg, &chip, 1, 1, &one, &tokens1, &err))
        return cli_report(&err);
    if (step_ms > 0) {
        k = step_ms * 1e-3 / (one.compute_s + one.optimizer_s + one.fixed_s);
        scale_parts(&one, k);
    }
    const double tps1 = tokens1 / (one.compute_s + one.optimizer_s + one.fixed_s);
    double floats = 0;
    for (int i = 0; i < n_spans; i++)
        floats += spans[i];
    fprintf(stderr, "bench scale: %s on %s, a %.4g MB gradient in %d spans, one rank %.4g ms a step (%s), link %s\n",
            preset, chip.name, 4 * floats / 1e6, n_spans, 1e3 * tokens1 / tps1,
            step_ms > 0 ? "measured" : "the chip model", link.name);
    for (int weak = 0; weak <= 1; weak++) {
        run_config c = cfg;
        for (long long n = 1; n <= max_ranks; n *= 2) {
            if (weak)
                c.batch_size = cfg.batch_size * (int)n;
            else if (cfg.batch_size % n)
                break;
            comm_step_parts parts;
            double tokens;
            if (parts_for(&c, &chip, (int)n, k, &parts, &tokens, &err))
                return cli_report(&err);
            for (int sharded = 0; sharded <= 1; sharded++)
                for (int overlap = 0; overlap <= 1; overlap++) {
                    comm_step s;
                    comm_project(&parts, spans, n_spans, (int)n, sharded, overlap, &link, &s);
                    emit((int)n, weak ? "weak" : "strong", sharded, overlap, &s, tokens, tps1, &link, step_ms > 0);
                }
        }
    }
    return 0;
}
