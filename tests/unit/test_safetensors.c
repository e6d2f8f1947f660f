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
#include "core/sha256.h"

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
     * the padding, offsets relative to the data block), the checksum last in
     * the metadata: the sha256 of the stream safetensors.h defines, built here
     * by hand (the value as read back: 0xff became U+00FF, C3 BF) */
    static const char stream_head[] = "tempo-safetensors-checksum-1\n"
                                      "config\0{\"d_model\":8}\0tokenizer\0line one\nline \"two\"\x01\xc3\xbf\0\n"
                                      "a\0F32\0" "2,3\0" "0,24\0layers.0.b\0F32\0" "3\0" "24,36\0\n";
    sha256_ctx sc;
    sha256_init(&sc);
    sha256_update(&sc, stream_head, sizeof stream_head - 1);
    sha256_update(&sc, a, sizeof a);
    sha256_update(&sc, b, sizeof b);
    uint8_t digest[32];
    char hex[65], want[1024];
    sha256_final(&sc, digest);
    sha256_hex(digest, hex);
    snprintf(want, sizeof want, "{\"__metadata__\":{\"config\":\"{\\\"d_model\\\":8}\",\"tokenizer\":"
                                "\"line one\\nline \\\"two\\\"\\u0001\\u00ff\",\"checksum\":\"sha256:%s\"},"
                                "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                                "\"layers.0.b\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[24,36]}}", hex);
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

/* Write a safetensors file from a header text (its length in front) and data. */
static void write_raw(const char *p, const char *header, const void *data, size_t n)
{
    size_t hl = strlen(header);
    char *file = malloc(8 + hl + n);
    uint64_t hl64 = hl;
    memcpy(file, &hl64, 8);   /* little-endian (x86, as the format) */
    memcpy(file + 8, header, hl);
    memcpy(file + 8 + hl, data, n);
    tempo_error err;
    CHECK(file_write_atomic(p, file, 8 + hl + n, &err) == 0);
    free(file);
}

/* The checksum (issue 31: a checkpoint with 2,000 flipped bytes was resumed
 * and trained on): every flipped data byte and every flipped header byte is
 * refused, naming the file, the data's and the header values' as a checksum
 * mismatch; the header's whitespace does not count; a file without a
 * checksum (an older tempo's, another tool's) opens, marked unchecked; a
 * malformed checksum is refused; a "checksum" the caller passes is replaced. */
static void test_checksum(void)
{
    char p[256], q[256];
    tmp_path(p, sizeof p, "sum.safetensors");
    tmp_path(q, sizeof q, "sum_bad.safetensors");
    float a[6] = {1, 2, 3, 4, 5, 6};
    st_write_tensor ts[1] = {{"a", a, 2, {2, 3}}};
    st_meta meta[3] = {{"step", "12"}, {"checksum", "sha256:0000"}, {"config", "{\"d_model\":8}"}};
    tempo_error err;
    CHECK(safetensors_write(p, ts, 1, meta, 3, &err) == 0);
    safetensors_file sf;
    char sum[80] = "";
    CHECK_MSG(safetensors_open(&sf, p, &err) == 0 && sf.checksummed == 1, "%s", err.msg);
    if (sf.file) {
        const char *v = safetensors_meta(&sf, "checksum");
        CHECK(v && strncmp(v, "sha256:", 7) == 0 && strlen(v) == 71);
        snprintf(sum, sizeof sum, "%s", v ? v : "");
        CHECK(sf.n_meta == 3 && !strcmp(sf.meta_keys[2], "checksum"));   /* the caller's left out, the real one last */
        safetensors_close(&sf);
    }
    char *file;
    size_t len;
    CHECK(file_read_all(p, &file, &len, 0, &err) == 0);
    uint64_t hl;
    memcpy(&hl, file, 8);
    /* the checksum key's own letters: a flip there leaves a file without a
     * checksum, which opens unchecked; tempo's formats say they have one
     * (checkpoint.c, test_run_config's test_checkpoint_checksum) */
    const char *key = strstr(file + 8, "\"checksum\"");
    size_t key_at = key ? (size_t)(key - file) + 1 : 0;
    CHECK(key != NULL);
    int mismatches = 0;
    for (size_t i = 0; i < len; i++) {
        file[i] ^= 0x01;
        CHECK(file_write_atomic(q, file, len, &err) == 0);
        file[i] ^= 0x01;
        tempo_error_clear(&err);
        int rc = safetensors_open(&sf, q, &err);
        if (key && i >= key_at && i < key_at + 8) {
            CHECK_MSG(rc == 0 && sf.checksummed == 0, "flip at %zu in the key: %s", i, err.msg);
            if (rc == 0)
                safetensors_close(&sf);
            continue;
        }
        CHECK_MSG(rc == -1 && strstr(err.msg, q), "flip at %zu of %zu opened: %s", i, len, err.msg);
        if (rc == 0)
            safetensors_close(&sf);
        mismatches += strstr(err.msg, "checksum mismatch") != NULL;
        if (i >= 8 + hl)   /* the data block */
            CHECK_MSG(strstr(err.msg, "checksum mismatch"), "data flip at %zu: %s", i, err.msg);
    }
    /* the data's 24, and the header values' (12 -> 13, 8 -> 9, the digest's digits, ...) */
    CHECK_MSG(mismatches > 24 + 40, "%d mismatches", mismatches);
    free(file);
    /* the same header with spaces between its tokens: the same checksum */
    char h[1024];
    snprintf(h, sizeof h, "{ \"__metadata__\" : { \"step\" : \"12\", \"config\" : \"{\\\"d_model\\\":8}\", "
             "\"checksum\" : \"%s\" } , \"a\" : { \"dtype\" : \"F32\", \"shape\" : [ 2, 3 ], "
             "\"data_offsets\" : [0, 24] } }", sum);
    write_raw(q, h, a, sizeof a);
    CHECK_MSG(safetensors_open(&sf, q, &err) == 0 && sf.checksummed == 1, "%s", err.msg);
    if (sf.file) safetensors_close(&sf);
    /* ... but the same values in another order: another file */
    snprintf(h, sizeof h, "{\"__metadata__\":{\"config\":\"{\\\"d_model\\\":8}\",\"step\":\"12\",\"checksum\":\"%s\"},"
             "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}", sum);
    write_raw(q, h, a, sizeof a);
    tempo_error_clear(&err);
    CHECK_MSG(safetensors_open(&sf, q, &err) == -1 && strstr(err.msg, "checksum mismatch"), "%s", err.msg);
    /* no checksum: opens, unchecked */
    write_raw(q, "{\"__metadata__\":{\"step\":\"12\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]}}",
              a, sizeof a);
    CHECK_MSG(safetensors_open(&sf, q, &err) == 0 && sf.checksummed == 0, "%s", err.msg);
    if (sf.file) safetensors_close(&sf);
    /* malformed, and well-formed but wrong */
    const char *bad[] = {"sha256:xyz", "md5:0123", "", "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                         "SHA256:0000000000000000000000000000000000000000000000000000000000000000"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(h, sizeof h, "{\"__metadata__\":{\"checksum\":\"%s\"},\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],"
                 "\"data_offsets\":[0,24]}}", bad[i]);
        write_raw(q, h, a, sizeof a);
        tempo_error_clear(&err);
        CHECK_MSG(safetensors_open(&sf, q, &err) == -1 && strstr(err.msg, q) && strstr(err.msg, "checksum mismatch"),
                  "%s: %s", bad[i], err.msg);
    }
    unlink(p);
    unlink(q);
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
    RUN(test_checksum);
    RUN(test_killed_writer_leaves_valid_file);
    return test_summary("test_safetensors");
}
