/* procfs.c - numbers from /proc files (see procfs.h). */
#include "core/procfs.h"

#include <stdio.h>
#include <string.h>

double procfs_kb(const char *path, const char *field)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char line[256];
    double kb = 0;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, n) && line[n] == ':' && sscanf(line + n + 1, "%lf", &kb) == 1)
            break;
    fclose(f);
    return kb;
}
