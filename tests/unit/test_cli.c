/* test_cli.c - cli_parse_flags, the table every tempo command reads its
 * flags from: each kind of row with good values, its bounds, the
 * --flag=VALUE form, arguments that are not options (CLI_ARGS, "--"), and
 * the errors (unknown flag, missing or bad value, too many items: return 2)
 * and --help. src/cli is the binary's, not libtempo.a's, so cli.c is
 * compiled into this program. The errors' one line goes to stderr. */
#include "test.h"
#include "cli/cli.c"

typedef struct {
    int sw, n, n_list, n_args;
    long long big;
    double real, secs;
    uint64_t bytes;
    const char *str, *choice, *list[2], *args[3];
} parsed;

static int parse(parsed *p, int help_ok, ...)
{
    char *argv[32] = {"cmd"};
    int argc = 1;
    va_list ap;
    va_start(ap, help_ok);
    for (char *a; (a = va_arg(ap, char *)) && argc < 32;)
        argv[argc++] = a;
    va_end(ap);
    memset(p, 0, sizeof *p);
    p->choice = "cpu";
    const cli_flag flags[] = {
        CLI_F_SWITCH("--sw", &p->sw),
        CLI_F_STRING("--str", &p->str),
        CLI_F_CHOICE("--device", &p->choice, "cpu|cuda"),
        CLI_F_LIST("--set", p->list, &p->n_list, 2),
        CLI_F_INT("--n", &p->n, 1, 10),
        CLI_F_INT64("--big", &p->big, 0, 1LL << 40),
        CLI_F_REAL("--real", &p->real, 0, 1, 1),
        CLI_F_DURATION("--budget", &p->secs),
        CLI_F_SIZE("--bytes", &p->bytes, 1 << 10, 1LL << 30),
        CLI_F_ARGS("INPUT", p->args, &p->n_args, 3),
    };
    int help, rc = cli_parse_flags("cmd", argc, argv, flags, (int)(sizeof flags / sizeof flags[0]), &help);
    CHECK(help == help_ok || rc);
    return rc;
}

static void test_good_values(void)
{
    parsed p;
    CHECK(parse(&p, 0, "--sw", "--str", "x", "--device", "cuda", "--set", "a=1", "--set", "b=2", "--n", "10",
                "--big", "1099511627776", "--real", "1", "--budget", "1m30s", "--bytes", "64K", NULL) == 0);
    CHECK(p.sw == 1 && !strcmp(p.str, "x") && !strcmp(p.choice, "cuda"));
    CHECK(p.n_list == 2 && !strcmp(p.list[0], "a=1") && !strcmp(p.list[1], "b=2"));
    CHECK_MSG(p.n == 10 && p.big == 1LL << 40 && p.real == 1 && p.secs == 90 && p.bytes == 64 << 10,
              "%d %lld %g %g %llu", p.n, p.big, p.real, p.secs, (unsigned long long)p.bytes);
    /* defaults stay when a flag is not given; the last of two wins */
    CHECK(parse(&p, 0, "--n", "3", "--n", "4", NULL) == 0);
    CHECK(p.n == 4 && p.sw == 0 && !strcmp(p.choice, "cpu") && p.str == NULL);
}

static void test_equals_form(void)
{
    parsed p;
    CHECK(parse(&p, 0, "--n=7", "--str=a=b", "--bytes=1M", "--str2", NULL) == 2);   /* --str2: unknown */
    CHECK(parse(&p, 0, "--n=7", "--str=a=b", "--bytes=1M", NULL) == 0);
    CHECK(p.n == 7 && !strcmp(p.str, "a=b") && p.bytes == 1 << 20);
    CHECK(parse(&p, 0, "--n=", NULL) == 2);          /* an empty value is a bad number */
    CHECK(parse(&p, 0, "--sw=1", NULL) == 2);        /* a switch takes no value */
    CHECK(parse(&p, 0, "--n=11", NULL) == 2);
}

static void test_args(void)
{
    parsed p;
    CHECK(parse(&p, 0, "a.txt", "--n", "2", "-", "--", "--sw", NULL) == 0);
    CHECK(p.n_args == 3 && !strcmp(p.args[0], "a.txt") && !strcmp(p.args[1], "-") && !strcmp(p.args[2], "--sw"));
    CHECK(p.n == 2 && p.sw == 0);
    CHECK(parse(&p, 0, "a", "b", "c", "d", NULL) == 2);   /* at most 3 */
    /* a value is never taken for an argument */
    CHECK(parse(&p, 0, "--str", "b.txt", NULL) == 0);
    CHECK(p.n_args == 0 && !strcmp(p.str, "b.txt"));
}

static void test_errors(void)
{
    parsed p;
    CHECK(parse(&p, 0, "--nope", NULL) == 2);
    CHECK(parse(&p, 0, "-x", NULL) == 2);
    CHECK(parse(&p, 0, "--n", NULL) == 2);             /* missing value */
    CHECK(parse(&p, 0, "--n", "0", NULL) == 2);        /* below lo */
    CHECK(parse(&p, 0, "--n", "11", NULL) == 2);       /* above hi */
    CHECK(parse(&p, 0, "--n", "2.5", NULL) == 2);
    CHECK(parse(&p, 0, "--big", "-1", NULL) == 2);
    CHECK(parse(&p, 0, "--real", "0", NULL) == 2);     /* lo open */
    CHECK(parse(&p, 0, "--real", "nan", NULL) == 2);
    CHECK(parse(&p, 0, "--budget", "soon", NULL) == 2);
    CHECK(parse(&p, 0, "--bytes", "1", NULL) == 2);    /* below 1K */
    CHECK(parse(&p, 0, "--bytes", "2G", NULL) == 2);   /* above 1G */
    CHECK(parse(&p, 0, "--device", "tpu", NULL) == 2);
    CHECK(parse(&p, 0, "--set", "a", "--set", "b", "--set", "c", NULL) == 2);
}

/* --help stops the walk: what follows is not read, not even a bad flag. */
static void test_help(void)
{
    parsed p;
    CHECK(parse(&p, 1, "--n", "2", "--help", "--nope", NULL) == 0);
    CHECK(parse(&p, 1, "-h", NULL) == 0);
    CHECK(parse(&p, 0, "--", "--help", NULL) == 0);   /* after "--" it is an argument */
    CHECK(p.n_args == 1);
}

/* A table without CLI_ARGS refuses what is not an option. */
static void test_no_args_row(void)
{
    int n = 0, help;
    const cli_flag flags[] = {CLI_F_INT("--n", &n, 0, 5)};
    char *a1[] = {"cmd", "file"}, *a2[] = {"cmd", "--", "x"}, *a3[] = {"cmd", "--n", "5"};
    CHECK(cli_parse_flags("cmd", 2, a1, flags, 1, &help) == 2);
    CHECK(cli_parse_flags("cmd", 3, a2, flags, 1, &help) == 2);
    CHECK(cli_parse_flags("cmd", 3, a3, flags, 1, &help) == 0 && n == 5 && !help);
}

int main(void)
{
    RUN(test_good_values);
    RUN(test_equals_form);
    RUN(test_args);
    RUN(test_errors);
    RUN(test_help);
    RUN(test_no_args_row);
    return test_summary("test_cli");
}
