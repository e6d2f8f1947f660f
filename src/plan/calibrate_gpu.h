/* calibrate_gpu.h - a GPU's per-op efficiencies for the planner, from the
 * per-kernel profile that `tempo bench train --device cuda` prints
 * ("kernels_ms", "kernel_calls": one step with every kernel waited for):
 * each kernel's time is given to the op of core/op_profile.h it belongs to
 * (the products by the label they ran under: gemm_fwd, gemm_bwd, gemm_head,
 * gemm_optimizer; an unlabelled "gemm" entry, from profiles before the
 * labels, is shared among those ops by their FLOPs), less the wait the
 * profile adds to every call (the
 * profiled step's excess over the unprofiled step, spread over its calls),
 * beside the roofline of the same config on the chip. The result is a
 * throughput_measurement, which throughput_calibration_write turns into a
 * chip-file fragment, as `tempo plan --calibrate` does for the CPU. So the
 * device machine only runs the benchmark; the fit runs anywhere. */
#ifndef TEMPO_PLAN_CALIBRATE_GPU_H
#define TEMPO_PLAN_CALIBRATE_GPU_H

#include <stddef.h>

#include "core/error.h"
#include "plan/chip.h"
#include "plan/throughput.h"

/* One `"bench":"train","device":"cuda"` JSON line (from a file; `what`
 * names it in errors) against chip. Errors: not such a line, a missing or
 * malformed field, a kernel no op owns (code 1). */
int calibrate_gpu_measurement(const char *json_line, size_t len, const char *what, const chip_profile *chip,
                              throughput_measurement *m, tempo_error *err);

/* calibrate_gpu_measurement of the last line of the file at path that holds a
 * `tempo bench train --device cuda` result (its "kernels_ms"); an error
 * naming the file when it has none. */
int calibrate_gpu_file(const char *path, const chip_profile *chip, throughput_measurement *m, tempo_error *err);

#endif
