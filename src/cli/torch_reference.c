/* torch_reference.c - see torch_reference.h. */
#include "cli/torch_reference.h"

#include "core/data_path.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/json.h"

int torch_reference_find(const char *name, char *path, size_t n)
{
    if (data_path_find("scripts", name, path, n))
        return 1;
    fprintf(stderr, "bench train: --vs-torch: scripts/%s not found\n", name);
    return 0;
}

double torch_reference_run(const char *cmd)
{
    FILE *p = popen(cmd, "r");
    if (!p) {
        fprintf(stderr, "bench train: --vs-torch: cannot start the PyTorch reference\n");
        return -1;
    }
    char line[4096];
    double tps = -1;
    while (fgets(line, sizeof line, p)) {
        json_value *v = NULL;
        tempo_error err;
        if (json_parse(line, strlen(line), &v, &err) == 0) {
            const json_value *t = json_get(v, "tokens_per_s");
            if (t && t->type == JSON_NUMBER)
                tps = t->number;
            printf("%s", line);
            json_free(v);
        }
    }
    int status = pclose(p);
    if (status != 0 || tps <= 0) {
        fprintf(stderr, "bench train: --vs-torch: the PyTorch reference failed (exit %d)%s\n", status,
                status == 3 << 8 ? ": python3-torch is not installed, or PyTorch sees no GPU" : "");
        return -1;
    }
    return tps;
}
