/* gpu_ptx.h - the PTX built into tempo: one module per .cu file, compiled by
 * clang at build time (Makefile) and embedded as text in a generated C file
 * (build/gen/gpu_ptx.c, made by scripts/embed_ptx.sh). The table ends with a
 * NULL name; it is empty when the build had no clang (then --device cuda
 * says so). */
#ifndef TEMPO_GPU_PTX_H
#define TEMPO_GPU_PTX_H

typedef struct {
    const char *name;   /* the .cu file's base name, e.g. "attention" */
    const char *target; /* e.g. "sm_80" */
    const char *ptx;    /* NUL-terminated PTX text */
} gpu_ptx_module;

extern const gpu_ptx_module gpu_ptx_modules[];

#endif
