/* plan_fixture.h - what the planner's unit tests (test_plan.c,
 * test_plan_chip.c) share: a valid chip profile, its reader on a string,
 * and a small finished run config. Include after test.h. */
#ifndef TEMPO_TEST_PLAN_FIXTURE_H
#define TEMPO_TEST_PLAN_FIXTURE_H

#include <string.h>

#include "plan/chip.h"
#include "run/run_config.h"

static const char *good_chip =
    "# a test chip\n"
    "name = test-chip\n"
    "kind = gpu\n"
    "train_dtype = bf16\n"
    "peak_tflops_bf16 = 100   # dense\n"
    "peak_tflops_fp32 = 25\n"
    "memory_gb = 80\n"
    "bandwidth_gbs = 2000\n"
    "sram_mib = 50\n"
    "cores = 100\n"
    "link_gbs = 400\n"
    "eff_compute = 0.5\n"
    "eff_memory = 0.8\n"
    "eff.attention_bwd = 0.25\n";

static int parse(const char *text, chip_profile *c, tempo_error *err)
{
    return chip_parse(c, text, strlen(text), "t.conf", err);
}

static run_config small_config(void)
{
    run_config c;
    run_config_defaults(&c);
    c.model.vocab_size = 512;
    c.model.d_model = 128;
    c.model.n_layers = 3;
    c.model.n_heads = 2;
    c.model.context = 64;
    c.batch_size = 8;
    tempo_error err;
    CHECK_MSG(run_config_finish(&c, &err) == 0, "%s", err.msg);
    return c;
}

#endif
