/* fuzz_icl_table.c - libFuzzer harness for the ICL task table reader
 * (icl_table_read: TASKS_DIR/core_tasks.tsv, src/eval/icl_task.c): any bytes
 * must read or be refused with "core_tasks.tsv:LINE: problem", never crash or
 * leak; an accepted table's entries are all well-formed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/icl_task.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char dir[64], path[96];
    snprintf(dir, sizeof dir, "/tmp/tempo_fuzz_icl_table.%d", (int)getpid());
    snprintf(path, sizeof path, "%s/core_tasks.tsv", dir);
    mkdir(dir, 0700);
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    size_t wrote = fwrite(data, 1, size, f);
    if (fclose(f) || wrote != size)
        return 0;
    icl_task_spec *specs;
    int n, n_core;
    tempo_error err;
    if (icl_table_read(dir, &specs, &n, &n_core, &err) == 0) {
        if (n != n_core + 1 || n_core < 1)
            __builtin_trap();
        for (int i = 0; i < n; i++)
            if (!specs[i].label[0] || !specs[i].file[0] || strstr(specs[i].file, "..") ||
                !(specs[i].random_baseline >= 0 && specs[i].random_baseline < 1))
                __builtin_trap(); /* an entry the table's rules forbid */
        free(specs);
    }
    unlink(path);
    rmdir(dir);
    return 0;
}
