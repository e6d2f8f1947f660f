/* emulator.h - runs tempo's CUDA kernels on the CPU, for tests and for
 * machines without a GPU: the same .cu sources compiled as host C++
 * (cuda_dialect.h), each launch run block after block with a fiber per CUDA
 * thread, barriers and warp shuffles emulated. It is built to make a
 * kernel's mistakes show: all of a block's shared memory (dynamic and
 * declared) is poisoned (NaN bytes) at the start of every block, so that a
 * kernel reading what it never wrote shows up; each warp runs ahead of the
 * others from one block barrier to the next, every other block in the
 * reverse order of warps and lanes (and a launch's first block in every
 * other launch), so that a missing barrier between a write and another
 * warp's read shows up in one of the two orders; every other launch runs
 * its blocks last first, so that a block reading what another block of the
 * launch writes shows up too; a cp.async copy lands only when a wait
 * covers its group. It proves the kernels' logic and the host code around
 * them; it says nothing of speed or of the hardware's own behaviour (memory
 * model, timing), which only the device check tests.
 * Slow: meant for shapes of a few thousand elements. gpu.c's emulator
 * backend is its one user (its streams, which run these launches when the
 * host waits for them: gpu_emu_stream.c). */
#ifndef TEMPO_CUDA_EMULATOR_H
#define TEMPO_CUDA_EMULATOR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tk_emu_registry tk_emu_registry;

/* Every kernel of every .cu file, by name. NULL when out of memory. */
tk_emu_registry *tk_emu_registry_new(void);
void tk_emu_registry_free(tk_emu_registry *r);

/* The kernel's index, or -1 when there is no kernel of that name. */
int tk_emu_find(const tk_emu_registry *r, const char *name);

/* Kernel idx's parameters: returns how many (-1: no such kernel), *sizes
 * each one's bytes. */
int tk_emu_args(const tk_emu_registry *r, int idx, const unsigned char **sizes);

/* What the driver checks when a kernel is launched: 0, or -1 with a message
 * in err (a block size that is not a multiple of 32 or above 1,024 or the
 * kernel's launch bounds, a grid outside the GPU's limits, no such kernel). */
int tk_emu_check(const tk_emu_registry *r, int idx, const unsigned grid[3], const unsigned block[3], char *err,
                 size_t err_len);

/* Runs kernel idx over grid x block threads with shmem bytes of dynamic
 * shared memory; args as cuLaunchKernel takes them (an array of pointers to
 * each argument's value). Launches are serialised (the kernels reach the
 * launch in progress through one pointer). Returns 0, or -1 with a
 * message in err (what tk_emu_check refuses, no threads could be started,
 * a fault in the kernel). */
int tk_emu_launch(const tk_emu_registry *r, int idx, const unsigned grid[3], const unsigned block[3],
                  size_t shmem, void **args, char *err, size_t err_len);

#ifdef __cplusplus
}
#endif

#endif
