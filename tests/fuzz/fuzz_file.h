/* fuzz_file.h - what the file-reader harnesses share: the fuzzer's bytes put
 * in a file of this process's own, since the readers under test take paths. */
#ifndef TEMPO_FUZZ_FILE_H
#define TEMPO_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

/* Write data to /tmp/tempo_fuzz_<tag>.<pid> (its name into path); 0, or -1 when it cannot. */
static inline int fuzz_write_file(char *path, size_t n, const char *tag, const uint8_t *data, size_t size)
{
    snprintf(path, n, "/tmp/tempo_fuzz_%s.%d", tag, (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t wrote = fwrite(data, 1, size, f);
    return fclose(f) == 0 && wrote == size ? 0 : -1;
}

#endif
