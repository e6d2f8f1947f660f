/* chip.h - a chip profile for the planner: what a chip can do (peak dense
 * FLOP/s in its training dtype, memory bandwidth and capacity, on-chip SRAM,
 * compute units, chip-to-chip links) and how close to that the training
 * step's ops get (per-op efficiencies: measured on this machine, stated
 * assumptions elsewhere). Read from configs/chips/NAME.conf; the format is
 * documented in docs/planner.md and configs/chips/README.md:
 *
 *   # comment (each figure with its source)
 *   name = nvidia-h200
 *   train_dtype = bf16          # fp32 | bf16 | fp8: which peak the step runs at
 *   peak_tflops_bf16 = 989      # dense; one line per dtype known
 *   memory_gb = 141
 *   bandwidth_gbs = 4800
 *   sram_mib = 50
 *   cores = 132
 *   link_gbs = 900              # chip-to-chip, per chip, one direction
 *   eff_compute = 0.5           # default efficiency of the FLOP-bound ops
 *   eff_memory = 0.7            # default efficiency of the byte-bound ops
 *   eff.gemm_fwd = 0.6          # per op (names of core/op_profile.h)
 *   call_overhead_us = 5        # fixed cost per op call
 *   efficiencies = ../scaling/op_efficiency_cpu-avx2.conf   # more keys, from a file
 *
 * Nothing here models time; that is plan/throughput.h. */
#ifndef TEMPO_PLAN_CHIP_H
#define TEMPO_PLAN_CHIP_H

#include "core/error.h"
#include "core/op_profile.h"

typedef struct {
    char name[64];
    char kind[16];            /* cpu | gpu | accelerator (informative) */
    char train_dtype[8];      /* fp32 | bf16 | fp8 */
    double peak_tflops_fp32, peak_tflops_bf16, peak_tflops_fp8; /* 0: not given */
    double peak_tflops;       /* the one of train_dtype (> 0) */
    double memory_gb;         /* capacity of the chip's main memory (HBM, DRAM) */
    double bandwidth_gbs;     /* its bandwidth */
    double sram_mib;          /* on-chip SRAM / last-level cache */
    int cores;                /* compute units: cores, SMs, NeuronCores */
    double link_gbs;          /* chip-to-chip bandwidth per chip, one direction */
    double link_latency_us;   /* per collective step; 0: not given */
    double eff[OP_COUNT];     /* fraction of the op's roofline time it reaches, (0, 1] */
    double call_overhead_us;  /* fixed cost per op call (launch, barrier), >= 0 */
    double step_overhead_ms;  /* fixed cost per optimizer step, >= 0 */
    double dtype_bytes;       /* bytes per activation element in train_dtype */
} chip_profile;

/* Read a chip file (path) into c. Every required field present and > 0
 * (peak of train_dtype, memory_gb, bandwidth_gbs, sram_mib, cores,
 * link_gbs, both default efficiencies), efficiencies in (0, 1], no unknown
 * key, no key twice. Errors (code 2) name the file, the line and the problem:
 *   "configs/chips/x.conf: missing bandwidth_gbs"
 *   "configs/chips/x.conf:7: memory_gb: '-1' is out of range (...)" */
int chip_load(chip_profile *c, const char *path, tempo_error *err);

/* The same from text in memory; path names it in errors and is the base of
 * a relative `efficiencies =` file (which may not itself include another). */
int chip_parse(chip_profile *c, const char *text, size_t len, const char *path, tempo_error *err);

/* Whether op k is FLOP-bound in the model (GEMMs, attention, head, optimizer). */
int chip_op_is_compute(op_kind k);

/* The chip file that describes this machine kind, relative to configs/:
 * "chips/cpu-zen4-2core.conf" where the CPU kernels run their AVX-512 path
 * (cpu_kernel_path_select, so TEMPO_KERNELS=avx2 caps it) on 256-bit FMA pipes
 * with AVX-512 BF16 (cpu_info's fma512_full and cpu_kernel_path_bf16: Zen 4),
 * "chips/cpu-avx512-2core.conf" on any other AVX-512 path, else
 * "chips/cpu-avx2-2core.conf". The default `--chip` of `tempo plan` and
 * `tempo bench scale`. */
const char *chip_default_file(void);

#endif
