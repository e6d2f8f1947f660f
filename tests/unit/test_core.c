/* test_core.c - error formatting, number and duration parsing, the clock format, rng determinism,
 * removing a folder tree, atomic files written around the page cache (O_DIRECT). */
#include "test.h"
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/data_path.h"
#include "core/error.h"
#include "core/fileio.h"
#include "core/number.h"
#include "core/omp_team.h"
#include "core/rng.h"
#include "core/timer.h"

static void test_durations(void)
{
    tempo_error err;
    double s = 0, max = NUMBER_MAX_DURATION_S;
    CHECK(number_parse_duration("--budget", "90s", max, &s, &err) == 0 && s == 90);
    CHECK(number_parse_duration("--budget", "10m", max, &s, &err) == 0 && s == 600);
    CHECK(number_parse_duration("--budget", "1h30m", max, &s, &err) == 0 && s == 5400);
    CHECK(number_parse_duration("--budget", "2.5m", max, &s, &err) == 0 && s == 150);
    CHECK(number_parse_duration("--budget", "45", max, &s, &err) == 0 && s == 45);
    CHECK(number_parse_duration("--budget", "720h", max, &s, &err) == 0 && s == max);
    const char *bad[] = {"-5m", "0s", "", "abc", "5x", "m", "1e400", "0", "720h1s", "721h",
                         "99999999999999999999999h", "nan", "inf", "1e308h", " 5m"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tempo_error_clear(&err);
        s = -1;
        CHECK_MSG(number_parse_duration("--budget", bad[i], max, &s, &err) == -1 && s == -1, "%s", bad[i]);
        CHECK(err.code == 2 && strstr(err.msg, "--budget") != NULL);
    }
    CHECK(number_parse_duration("--grace", "2h", 3600, &s, &err) == -1 && strstr(err.msg, "--grace '2h'"));
}

/* Integers: the whole text, in range, one clear line otherwise (issue 9:
 * --threads 4294967297 ran on 1 thread, --steps 99999999999999999999 became
 * LLONG_MAX). */
static void test_integers(void)
{
    tempo_error err;
    long long x = 0;
    CHECK(number_parse_int("--threads", "4", 1, 1024, &x, &err) == 0 && x == 4);
    CHECK(number_parse_int("--seed", "0", 0, NUMBER_MAX_SEED, &x, &err) == 0 && x == 0);
    CHECK(number_parse_int("--steps", "1099511627776", 1, NUMBER_MAX_STEPS, &x, &err) == 0 && x == NUMBER_MAX_STEPS);
    CHECK(number_parse_int("n", "-9223372036854775808", LLONG_MIN, LLONG_MAX, &x, &err) == 0 && x == LLONG_MIN);
    CHECK(number_parse_int("n", "9223372036854775807", LLONG_MIN, LLONG_MAX, &x, &err) == 0 && x == LLONG_MAX);
    struct { const char *text, *msg; } bad[] = {
        {"4294967297", "--threads: 4294967297 is out of range (1 to 1024)"},
        {"99999999999999999999", "--threads: 99999999999999999999 is out of range (1 to 1024)"},
        {"-99999999999999999999", "--threads: -99999999999999999999 is out of range (1 to 1024)"},
        {"9223372036854775808", "--threads: 9223372036854775808 is out of range (1 to 1024)"},
        {"0", "--threads: 0 is out of range (1 to 1024)"},
        {"1025", "--threads: 1025 is out of range (1 to 1024)"},
        {"2.5", "--threads: '2.5' is not an integer (use 1 to 1024)"},
        {"1e3", "--threads: '1e3' is not an integer (use 1 to 1024)"},
        {"abc", "--threads: 'abc' is not a number (use 1 to 1024)"},
        {"", "--threads: '' is not a number (use 1 to 1024)"},
        {" 4", "--threads: ' 4' is not a number (use 1 to 1024)"},
        {"4 ", "--threads: '4 ' is not a number (use 1 to 1024)"},
        {"nan", "--threads: 'nan' is not a number (use 1 to 1024)"},
        {"0x10", "--threads: '0x10' is not an integer (use 1 to 1024)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tempo_error_clear(&err);
        x = -7;
        CHECK_MSG(number_parse_int("--threads", bad[i].text, 1, 1024, &x, &err) == -1 && x == -7, "%s", bad[i].text);
        CHECK_MSG(err.code == 2 && !strcmp(err.msg, bad[i].msg), "'%s': got '%s'", bad[i].text, err.msg);
    }
    CHECK(number_parse_int("--threads", NULL, 1, 2, &x, &err) == -1 && err.code == 2);
}

static void test_reals(void)
{
    tempo_error err;
    double v = 0;
    CHECK(number_parse_real("--top-p", "1", 0, 1, 1, &v, &err) == 0 && v == 1);
    CHECK(number_parse_real("--top-p", "1e-300", 0, 1, 1, &v, &err) == 0 && v == 1e-300);
    CHECK(number_parse_real("--val-share", "0", 0, 0.5, 0, &v, &err) == 0 && v == 0);
    const char *bad[] = {"0", "1.0000001", "1e999", "-1e999", "inf", "-inf", "nan", "NaN", "", "x", "0.5x", " 0.5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tempo_error_clear(&err);
        v = -7;
        CHECK_MSG(number_parse_real("--top-p", bad[i], 0, 1, 1, &v, &err) == -1 && v == -7 && err.code == 2,
                  "%s", bad[i]);
    }
    CHECK(number_parse_real("--top-p", "0", 0, 1, 1, &v, &err) == -1 && !strcmp(err.msg, "--top-p: 0 is out of range (above 0 to 1)"));
    CHECK(number_parse_real("--top-p", "nan", 0, 1, 1, &v, &err) == -1 && !strcmp(err.msg, "--top-p: 'nan' is not a number"));
}

static void test_sizes(void)
{
    tempo_error err;
    uint64_t b = 0, max = 1ULL << 50;
    CHECK(number_parse_size("--memory", "8G", 1, max, &b, &err) == 0 && b == 8ULL << 30);
    CHECK(number_parse_size("--memory", "1.5M", 1, max, &b, &err) == 0 && b == 3ULL << 19);
    CHECK(number_parse_size("--memory", "4096", 1, max, &b, &err) == 0 && b == 4096);
    CHECK(number_parse_size("--memory", "1024T", 1, max, &b, &err) == 0 && b == max);
    CHECK(number_parse_size("n", "16T", 1, UINT64_MAX, &b, &err) == 0 && b == 16ULL << 40);
    const char *bad[] = {"1e30G", "1025T", "0", "-1G", "nan", "inf", "8X", "G", "", " 8G", "8GB", "1e400"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tempo_error_clear(&err);
        b = 7;
        CHECK_MSG(number_parse_size("--memory", bad[i], 1, max, &b, &err) == -1 && b == 7 && err.code == 2, "%s", bad[i]);
    }
    CHECK(number_parse_size("--memory", "1e30G", 1 << 20, max, &b, &err) == -1 &&
          !strcmp(err.msg, "--memory: 1e30G is out of range (1M to 1024T)"));
    /* 2^64 bytes and beyond never reach the cast, even with hi = UINT64_MAX ((double) rounds it up to 2^64) */
    CHECK(number_parse_size("n", "16777216T", 1, UINT64_MAX, &b, &err) == -1);
    CHECK(number_parse_size("n", "18446744073709551615", 1, UINT64_MAX, &b, &err) == -1);
}

/* The progress line's clock, for any double (issue 9: a 3.6e26 s budget
 * printed "ETA -153722867280912930:-8" through an out-of-range cast). */
static void test_format_clock(void)
{
    struct { double s; const char *want; } cases[] = {
        {0, "0:00"}, {59.4, "0:59"}, {59.5, "1:00"}, {3599, "59:59"}, {3600, "1:00:00"},
        {5400, "1:30:00"}, {-5, "0:00"}, {-1e300, "0:00"}, {-INFINITY, "0:00"}, {NAN, "--:--"},
        {3.6e26, "999999:59:59"}, {1e300, "999999:59:59"}, {INFINITY, "999999:59:59"},
        {9.3e18, "999999:59:59"}, {999999 * 3600.0 + 3599, "999999:59:59"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[16];
        timer_format_clock(buf, sizeof buf, cases[i].s);
        CHECK_MSG(!strcmp(buf, cases[i].want), "%g: got '%s', want '%s'", cases[i].s, buf, cases[i].want);
    }
}

static void test_error_prefix(void)
{
    tempo_error err;
    tempo_error_clear(&err);
    CHECK(tempo_fail(&err, "truncated at byte %d", 12) == -1);
    tempo_error_prefix(&err, "a.bin");
    CHECK(strcmp(err.msg, "a.bin: truncated at byte 12") == 0);
    CHECK(err.code == 1);
}

static void test_rng(void)
{
    rng_state a, b;
    rng_seed(&a, 42);
    rng_seed(&b, 42);
    for (int i = 0; i < 100; i++)
        CHECK(rng_next(&a) == rng_next(&b));
    rng_seed(&b, 43);
    CHECK(rng_next(&a) != rng_next(&b));
    double sum = 0, sum2 = 0;
    int n = 100000;
    for (int i = 0; i < n; i++) {
        double x = rng_normal(&a);
        sum += x;
        sum2 += x * x;
        CHECK(rng_below(&a, 7) < 7);
    }
    CHECK_NEAR(sum / n, 0.0, 0.02);
    CHECK_NEAR(sum2 / n, 1.0, 0.02);
}

static void touch(const char *dir, const char *name)
{
    char path[512];
    FILE *f = fopen(path_join(path, sizeof path, dir, name), "w");
    if (f)
        fclose(f);
}

/* dir_remove_tree removes a whole tree, read-only files and links included,
 * and never what a link points to (a link to a folder outside stays a link). */
static void test_remove_tree(void)
{
    char base[] = "/tmp/tempo_test_core.XXXXXX";
    if (!mkdtemp(base)) {
        CHECK(0);
        return;
    }
    char tree[512], sub[512], deep[600], outside[512], link[600], path[700];
    tempo_error err;
    path_join(tree, sizeof tree, base, "tree");
    path_join(sub, sizeof sub, tree, "sub");
    path_join(deep, sizeof deep, sub, "deeper");
    path_join(outside, sizeof outside, base, "outside");
    CHECK(dir_create(deep, &err) == 0 && dir_create(outside, &err) == 0);
    touch(outside, "keep.txt");
    touch(tree, "a.txt");
    touch(deep, "b.txt");
    chmod(path_join(path, sizeof path, deep, "b.txt"), 0444);
    CHECK(symlink(outside, path_join(link, sizeof link, sub, "to_outside")) == 0);
    CHECK(symlink(path_join(path, sizeof path, outside, "keep.txt"), path_join(link, sizeof link, tree, "to_file")) == 0);
    CHECK(dir_remove_tree(tree, &err) == 0);
    CHECK(!path_exists(tree));
    CHECK(path_exists(path_join(path, sizeof path, outside, "keep.txt")));
    /* the path itself a link to a folder: the link goes, the folder stays */
    CHECK(symlink(outside, path_join(link, sizeof link, base, "link")) == 0);
    CHECK(dir_remove_tree(link, &err) == 0 && !path_exists(link));
    CHECK(path_exists(path_join(path, sizeof path, outside, "keep.txt")));
    CHECK(dir_remove_tree(tree, &err) == 0); /* nothing there: fine */
    CHECK(dir_remove_tree(base, &err) == 0 && !path_exists(base));
}

/* Whether the file system under dir takes O_DIRECT (tmpfs does not). */
static int takes_direct(const char *dir)
{
    char probe[600];
    path_join(probe, sizeof probe, dir, "probe");
    int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
    if (fd < 0)
        return 0;
    close(fd);
    unlink(probe);
    return 1;
}

/* Write n bytes of a known pattern through atomic_open_direct in pieces of
 * awkward sizes; the file must hold exactly those bytes and nothing else
 * may be left in the folder. */
static void direct_round_trip(const char *dir, size_t n, int expect_direct)
{
    char path[600];
    tempo_error err;
    path_join(path, sizeof path, dir, "big.bin");
    unsigned char *want = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++)
        want[i] = (unsigned char)(i * 131 + (i >> 12));
    atomic_file af;
    CHECK(atomic_open_direct(&af, path, &err) == 0);
    CHECK(af.f == NULL && af.fd >= 0 && af.direct == expect_direct);
    size_t off = 0, piece = 1216;
    while (off < n) {
        size_t take = piece < n - off ? piece : n - off;
        CHECK(atomic_write(&af, want + off, take, &err) == 0);
        off += take;
        piece = piece * 3 + 7 < ATOMIC_STAGE_BYTES ? piece * 3 + 7 : 4093;
    }
    CHECK(atomic_commit(&af, &err) == 0);
    char *got = NULL;
    size_t len = 0;
    CHECK(file_read_all(path, &got, &len, 0, &err) == 0);
    CHECK(len == n && (n == 0 || memcmp(got, want, n) == 0));
    free(got);
    free(want);
    CHECK(unlink(path) == 0);
    DIR *d = opendir(dir);
    int left = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        left += e->d_name[0] != '.';
    if (d)
        closedir(d);
    CHECK(left == 0);
}

/* atomic_open_direct: exact bytes for lengths around the block and staging
 * sizes, the ordinary fallback where O_DIRECT is refused, and an abort that
 * leaves the old file alone. */
static void test_atomic_direct(void)
{
    char base[] = "/tmp/tempo_test_direct.XXXXXX";
    if (!mkdtemp(base)) {
        CHECK(0);
        return;
    }
    int direct = takes_direct(base);
    const size_t sizes[] = {0, 1, 4096, 4097, ATOMIC_STAGE_BYTES, ATOMIC_STAGE_BYTES + 1,
                            2 * ATOMIC_STAGE_BYTES + 12345};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        direct_round_trip(base, sizes[i], direct);
    /* /dev/shm is tmpfs where it exists: the fallback path */
    char shm[] = "/dev/shm/tempo_test_direct.XXXXXX";
    if (mkdtemp(shm)) {
        direct_round_trip(shm, ATOMIC_STAGE_BYTES + 99, takes_direct(shm));
        rmdir(shm);
    }
    /* abort: the old file stays, the temporary goes */
    char path[600], *got = NULL;
    size_t len = 0;
    tempo_error err;
    path_join(path, sizeof path, base, "keep.bin");
    CHECK(file_write_atomic(path, "old", 3, &err) == 0);
    atomic_file af;
    CHECK(atomic_open_direct(&af, path, &err) == 0);
    CHECK(atomic_write(&af, "new bytes", 9, &err) == 0);
    atomic_abort(&af);
    CHECK(file_read_all(path, &got, &len, 0, &err) == 0 && len == 3 && memcmp(got, "old", 3) == 0);
    free(got);
    CHECK(unlink(path) == 0);
    CHECK(dir_remove_tree(base, &err) == 0 && !path_exists(base));
}

/* data_dir_beside: <exe>/../TOP (a build tree), else <exe>/../share/tempo/TOP
 * (an install), else nothing; a file named TOP is not a folder. */
static void test_data_dir_beside(void)
{
    char root[] = "/tmp/tempo-datapath-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char p[512], exe[512], out[600];
    snprintf(exe, sizeof exe, "%s/bin/tempo", root);
    snprintf(p, sizeof p, "%s/bin", root);
    CHECK(mkdir(p, 0755) == 0);
    CHECK(data_dir_beside(exe, "configs", out, sizeof out) == 0);   /* neither layout */
    snprintf(p, sizeof p, "%s/share", root);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/share/tempo", root);
    CHECK(mkdir(p, 0755) == 0);
    snprintf(p, sizeof p, "%s/share/tempo/configs", root);
    CHECK(mkdir(p, 0755) == 0);
    CHECK(data_dir_beside(exe, "configs", out, sizeof out) == 1);
    snprintf(p, sizeof p, "%s/bin/../share/tempo/configs", root);
    CHECK_MSG(!strcmp(out, p), "install layout: %s", out);
    CHECK(data_dir_beside(exe, "scripts", out, sizeof out) == 0);
    snprintf(p, sizeof p, "%s/configs", root);                       /* a build tree's wins */
    CHECK(mkdir(p, 0755) == 0);
    CHECK(data_dir_beside(exe, "configs", out, sizeof out) == 1);
    snprintf(p, sizeof p, "%s/bin/../configs", root);
    CHECK_MSG(!strcmp(out, p), "build layout: %s", out);
    snprintf(p, sizeof p, "%s/scripts", root);                       /* a file, not a folder */
    FILE *f = fopen(p, "w");
    CHECK(f != NULL);
    if (f) fclose(f);
    CHECK(data_dir_beside(exe, "scripts", out, sizeof out) == 0);
    CHECK(data_dir_beside("tempo", "configs", out, sizeof out) == 0); /* no folder in the path */
    CHECK(data_dir_beside(exe, "configs", out, 8) == 0);              /* too long for out */
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    CHECK(system(cmd) == 0);
}

/* A loop gets a team of its own only from serial code, with threads to use
 * and more than its minimum of work; OMP_TEAM_FOR runs every iteration once
 * either way. */
static void test_omp_team(void)
{
    int saved = omp_get_max_threads();
    omp_set_num_threads(2);
    CHECK(omp_team_worth(100, 10) == 1);
    CHECK(omp_team_worth(10, 10) == 0);
    int inner = -1, team_size = 0;
#pragma omp parallel num_threads(2)
    {
#pragma omp single
        inner = omp_team_worth(100, 10);
    }
    CHECK_MSG(inner == 0, "inside a region: %d", inner);
    int hits[64] = {0};
    OMP_TEAM_FOR(omp_team_worth(64, 1), int, i, 64, hits[i]++; if (i == 0) team_size = omp_get_num_threads());
    int once = 1;
    for (int i = 0; i < 64; i++)
        once &= hits[i] == 1;
    CHECK(once);
    CHECK_MSG(team_size == 2, "a team of %d ran the worthwhile loop", team_size);
    OMP_TEAM_FOR(0, int, i, 64, hits[i]++; if (i == 0) team_size = omp_get_num_threads());
    CHECK_MSG(team_size == 1 && hits[63] == 2, "the plain loop: %d threads, hits %d", team_size, hits[63]);
    omp_set_num_threads(1);
    CHECK(omp_team_worth(100, 10) == 0);
    omp_set_num_threads(saved);
}

int main(void)
{
    RUN(test_durations);
    RUN(test_integers);
    RUN(test_reals);
    RUN(test_sizes);
    RUN(test_format_clock);
    RUN(test_error_prefix);
    RUN(test_rng);
    RUN(test_remove_tree);
    RUN(test_atomic_direct);
    RUN(test_data_dir_beside);
    RUN(test_omp_team);
    return test_summary("test_core");
}
