/* test_safetensors.c - safetensors round trip, rejection of truncated and
 * foreign files, and atomicity: a writer killed at random moments never
 * leaves a torn file under the final name. */
#include "test.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"
#include "core/fileio.h"
#include "core/safetensors.h"

static const char *tmp_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "build/test_tmp_%d_%s", (int)getpid(), name);
    return buf;
}

static void test_round_trip(void)
{
    char p[256];
    tmp_path(p, sizeof p, "rt.safetensors");
    float a[6] = {1, 2, 3, 4, 5, 6}, b[3] = {-1, 0.5f, 1e-30f};
    st_write_tensor ts[2] = {{"a", a, 2, {2, 3}}, {"layers.0.b", b, 1, {3}}};
    st_meta meta[2] = {{"config", "{\"d_model\":8}"}, {"tokenizer", "line one\nline \"two\"\x01\xff"}};
    tempo_error err;
    CHECK(safetensors_write(p, ts, 2, meta, 2, &err) == 0);
    safetensors_file sf;
    CHECK(safetensors_open(&sf, p, &err) == 0);
    CHECK(sf.n_tensors == 2);
    const st_tensor *ta = safetensors_find(&sf, "a"), *tb = safetensors_find(&sf, "layers.0.b");
    CHECK(ta && ta->ndim == 2 && ta->shape[0] == 2 && ta->shape[1] == 3 && ta->numel == 6);
    CHECK(tb && tb->ndim == 1 && tb->numel == 3);
    if (ta && tb) {
        float x[6];
        memcpy(x, ta->data, sizeof x);
        CHECK(memcmp(x, a, sizeof a) == 0);
        memcpy(x, tb->data, sizeof b);
        CHECK(memcmp(x, b, sizeof b) == 0);
    }
    const char *c = safetensors_meta(&sf, "config");
    CHECK(c && !strcmp(c, "{\"d_model\":8}"));
    const char *t = safetensors_meta(&sf, "tokenizer");
    /* 0xff is not UTF-8: the writer escapes it as \u00ff, which reads back as U+00FF (2 bytes). */
    CHECK(t && !strncmp(t, "line one\nline \"two\"\x01", 20));
    CHECK(safetensors_meta(&sf, "missing") == NULL);
    safetensors_close(&sf);
    /* the header is 8-byte aligned, so tensor data is aligned in the file */
    char *data;
    size_t len;
    CHECK(file_read_all(p, &data, &len, 0, &err) == 0);
    uint64_t hl;
    memcpy(&hl, data, 8);
    CHECK(hl % 8 == 0);
    CHECK(len == 8 + hl + sizeof a + sizeof b);
    /* the header's exact bytes: the layout other readers see (no spaces but
     * the padding, offsets relative to the data block) */
    const char *want = "{\"__metadata__\":{\"config\":\"{\\\"d_model\\\":8}\",\"tokenizer\":"
                       "\"line one\\nline \\\"two\\\"\\u0001\\u00ff\"},"
                       "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                       "\"layers.0.b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}";
    size_t wl = strlen(want);
    CHECK_MSG(hl == (wl + 7) / 8 * 8 && len > 8 + wl && !memcmp(data + 8, want, wl), "%.*s", (int)hl, data + 8);
    for (size_t i = 8 + wl; i < 8 + hl && i < len; i++)
        CHECK(data[i] == ' ');
    /* every truncation is an error naming the file, never a crash */
    char q[256];
    tmp_path(q, sizeof q, "trunc.safetensors");
    for (size_t cut = 0; cut < len; cut += (cut < 16 ? 1 : 7)) {
        CHECK(file_write_atomic(q, data, cut, &err) == 0);
        tempo_error_clear(&err);
        CHECK_MSG(safetensors_open(&sf, q, &err) == -1, "cut %zu", cut);
        CHECK(strstr(err.msg, q) != NULL);
    }
    free(data);
    unlink(p);
    unlink(q);
}

static void test_foreign_files(void)
{
    char p[256];
    tmp_path(p, sizeof p, "foreign");
    tempo_error err;
    safetensors_file sf;
    const char *cases[] = {
        "hello world, this is not a model",
        "\x10\x00\x00\x00\x00\x00\x00\x00{\"a\":1}        ",
        "\x20\x00\x00\x00\x00\x00\x00\x00{\"a\":{\"dtype\":\"BF16\",\"shape\":[1],\"data_offsets\":[0,2]}}",
        "\x08\x00\x00\x00\x00\x00\x00\x00[1,2,3]",
        "\xff\xff\xff\xff\xff\xff\xff\xff{}",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(file_write_atomic(p, cases[i], strlen(cases[i]) + (i == 2 ? 2 : 0), &err) == 0);
        tempo_error_clear(&err);
        CHECK_MSG(safetensors_open(&sf, p, &err) == -1, "case %zu", i);
        CHECK(strstr(err.msg, p) != NULL);
    }
    /* numbers no integer type holds, in shapes and offsets: refused, never cast (the sanitized build's
     * float-cast-overflow checks the "never") */
    const char *huge[] = {
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[1e300,1e300]}}",
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,1e20]}}",
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-1e300,4]}}",
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,4]}}",
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1e19,1],\"data_offsets\":[0,4]}}",
        /* dimensions whose product wraps a size_t to 0 elements, "matching" no data */
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}",
    };
    for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
        char file[512];
        size_t hl = strlen(huge[i]);
        memcpy(file, &(uint64_t){hl}, 8); /* little-endian header length (x86, as the format) */
        memcpy(file + 8, huge[i], hl);
        memset(file + 8 + hl, 0, 4);
        CHECK(file_write_atomic(p, file, 8 + hl + 4, &err) == 0);
        tempo_error_clear(&err);
        CHECK_MSG(safetensors_open(&sf, p, &err) == -1 && strstr(err.msg, "tensor w"), "%s: %s", huge[i], err.msg);
    }
    /* a key given twice, or cut short by a NUL byte, would alias another: refused (found by
     * tests/fuzz/fuzz_safetensors.c: a second __metadata__ leaked the first one's strings) */
    const char *twice[] = {
        "{\"__metadata__\":{\"a\":\"b\"},\"__metadata__\":{\"c\":\"d\"}}",
        "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        "{\"w\\u0000x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        "{\"w\":{\"dtype\":\"F32\\u0000\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        "{\"__metadata__\":{\"config\":\"{}\\u0000\"}}",
    };
    for (size_t i = 0; i < sizeof twice / sizeof twice[0]; i++) {
        char file[512];
        size_t hl = strlen(twice[i]);
        memcpy(file, &(uint64_t){hl}, 8);
        memcpy(file + 8, twice[i], hl);
        memset(file + 8 + hl, 0, 4);
        CHECK(file_write_atomic(p, file, 8 + hl + 4, &err) == 0);
        tempo_error_clear(&err);
        CHECK_MSG(safetensors_open(&sf, p, &err) == -1 && strstr(err.msg, p), "%s: %s", twice[i], err.msg);
    }
    tempo_error_clear(&err);
    CHECK(safetensors_open(&sf, "build/definitely/not/here.safetensors", &err) == -1);
    CHECK(strstr(err.msg, "not/here") != NULL);
    unlink(p);
}

/* A child rewrites a 4 MB file over and over; the parent kills it at random
 * moments. After every kill the final name holds a complete, valid file. */
static void test_killed_writer_leaves_valid_file(void)
{
    char p[256];
    tmp_path(p, sizeof p, "atomic.safetensors");
    size_t n = 1 << 20;
    float *w = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++) w[i] = (float)i;
    st_write_tensor t = {"w", w, 1, {(int64_t)n}};
    tempo_error err;
    CHECK(safetensors_write(p, &t, 1, NULL, 0, &err) == 0);
    srand(7);
    for (int round = 0; round < 8; round++) {
        pid_t pid = fork();
        if (pid == 0) {
            for (int k = 0;; k++) {
                w[0] = (float)k;
                safetensors_write(p, &t, 1, NULL, 0, NULL);
            }
        }
        struct timespec ts = {0, (long)(1 + rand() % 40) * 1000000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        safetensors_file sf;
        tempo_error_clear(&err);
        CHECK_MSG(safetensors_open(&sf, p, &err) == 0, "round %d: %s", round, err.msg);
        if (sf.file) {
            const st_tensor *x = safetensors_find(&sf, "w");
            CHECK(x && x->numel == n);
            float last;
            if (x) {
                memcpy(&last, x->data + n - 1, sizeof last);
                CHECK(last == (float)(n - 1));
            }
            safetensors_close(&sf);
        }
    }
    free(w);
    /* the killed writers' temp files are left behind under other names only */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -f %s %s.tmp.*", p, p);
    CHECK(system(cmd) == 0);
}

/* A full disk (simulated by a file-size limit: writes fail with EFBIG) is an
 * error naming the file; neither the final name nor a temp file remains. */
static void test_disk_full(void)
{
    char p[256];
    tmp_path(p, sizeof p, "full.safetensors");
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {1 << 20, 1 << 20};
        setrlimit(RLIMIT_FSIZE, &rl);
        size_t n = 1 << 20;
        float *w = calloc(n, sizeof(float));
        st_write_tensor t = {"w", w, 1, {(int64_t)n}};
        tempo_error err;
        tempo_error_clear(&err);
        int rc = safetensors_write(p, &t, 1, NULL, 0, &err);
        int ok = rc == -1 && strstr(err.msg, p) && strstr(err.msg, "write failed");
        if (!ok) fprintf(stderr, "  rc %d msg '%s'\n", rc, err.msg);
        free(w);
        _exit(ok ? 0 : 1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(!path_exists(p));
    char tmp[300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", p, (int)pid);
    CHECK(!path_exists(tmp));
}

int main(void)
{
    RUN(test_disk_full);
    RUN(test_round_trip);
    RUN(test_foreign_files);
    RUN(test_killed_writer_leaves_valid_file);
    return test_summary("test_safetensors");
}
