/* throughput.h - the planner's step-time model: for a run config and a chip,
 * each op of the training step (the op kinds of core/op_profile.h, which
 * `tempo bench train` times) gets its FLOPs and bytes per optimizer step,
 * a roofline time max(FLOPs / peak, bytes / bandwidth), and a predicted time
 * roofline / efficiency + calls x per-call overhead, with the chip's per-op
 * efficiencies (plan/chip.h). The optimizer is two phases: an element-wise
 * stream over the parameters (at the gradient norm's efficiency) and, with
 * Muon, the Newton-Schulz FLOPs (at the optimizer's). Beside the step: the data-parallel all-reduce
 * of the gradients over a ring of `ranks` chips, overlapped with the backward pass as the trainer
 * runs it (plan/comm_model.h), and the count memory's
 * build time. Calibration (measuring the efficiencies on this machine) runs
 * `bench train` and lives here too; printing belongs to the CLI. */
#ifndef TEMPO_PLAN_THROUGHPUT_H
#define TEMPO_PLAN_THROUGHPUT_H

#include "core/error.h"
#include "core/op_profile.h"
#include "core/strbuf.h"
#include "plan/chip.h"
#include "plan/comm_model.h"
#include "run/run_config.h"

typedef struct {
    double flops[OP_COUNT];     /* per optimizer step, on one rank */
    double bytes[OP_COUNT];     /* main-memory traffic, same */
    double calls[OP_COUNT];     /* op calls per step (as bench train counts them) */
    double roofline_s[OP_COUNT];
    double seconds[OP_COUNT];   /* predicted */
    double step_s;              /* sum of the ops + step overhead + all-reduce */
    double allreduce_s;         /* the all-reduce's time the step waits for (overlapped with the backward pass) */
    double allreduce_total_s;   /* its whole time */
    double passes;              /* forward/backward passes (micro-batches) per step on a rank */
    double fixed_s;             /* the chip's per-step overhead */
    double optimizer_stream_s;  /* the optimizer's element-wise phase (in seconds[OP_OPTIMIZER]) */
    double tokens_per_step;     /* all ranks */
    double tokens_per_s;
    double compute_bound_s;     /* predicted seconds of the ops whose roofline is FLOPs */
    double memory_bound_s;      /* ... bytes */
    double overhead_s;          /* calls x overhead + step overhead */
    double params;              /* parameters */
    double memory_gb;           /* per rank: weights, gradients, optimizer state, activations */
} step_prediction;

/* Predict one optimizer step of cfg (finished: vocab and d_ff filled in) on
 * `ranks` chips (>= 1; batch_size split evenly over them). */
int throughput_predict(const run_config *cfg, const chip_profile *chip, int ranks, step_prediction *p,
                       tempo_error *err);

/* The step's parts the communication model needs (plan/comm_model.h):
 * compute, the last micro-batch's backward pass, the optimizer, the fixed
 * overhead, from a prediction (without its all-reduce). */
void throughput_comm_parts(const step_prediction *p, comm_step_parts *out);

/* Seconds to build a count memory of `order` over `tokens` training tokens
 * on the host CPU (linear in tokens; s_per_mtok is the measured seconds per
 * million tokens at that order). */
double throughput_memory_build_s(double tokens, double s_per_mtok);

/* One preset measured by `bench train` beside its prediction. */
typedef struct {
    char preset[64];
    double measured_tokens_per_s, predicted_tokens_per_s;
    double measured_s[OP_COUNT + 1];   /* per step; [OP_COUNT] = time no op covers */
    double roofline_s[OP_COUNT];
    double calls[OP_COUNT];
    double optimizer_stream_roofline_s; /* bytes / bandwidth of the optimizer's element-wise phase */
    double other_load_cores;           /* others' CPU use meanwhile (bench/sysload.h) */
} throughput_measurement;

/* Run `bench train` (threads, steps) on cfg and fill m (predicted from chip). */
int throughput_measure(const run_config *cfg, const chip_profile *chip, int threads, int steps,
                       throughput_measurement *m, tempo_error *err);

/* The efficiencies that make the model reproduce the measurements: per-op
 * efficiencies and one per-call overhead fitted by weighted least squares
 * over the presets (each preset weighted by 1 / its step time; the
 * optimizer's time less its streaming phase); the step overhead is the mean
 * time no op covers. Written as a chip-file fragment (`eff.OP = x` lines,
 * `call_overhead_us`, `step_overhead_ms`) with `header` (comment lines: the
 * command, the load) on top. At most 16 presets. */
void throughput_calibration_write(const throughput_measurement *m, int n, const char *header, strbuf *out);

/* The chip file at chip_path with its `efficiencies =` line replaced by the
 * calibration of the measurements m[] other than m[skip] (at most 16): a
 * leave-one-out prediction from the same minute's measurements, so a change
 * of others' load between a calibration and a check does not count as model
 * error (plan --check). */
int throughput_chip_refit(const char *chip_path, const throughput_measurement *m, int n, int skip, chip_profile *out,
                          tempo_error *err);

#endif
