/* test_infer_sample.c - the sampler against brute-force definitions: greedy
 * is the first argmax; draws at a temperature follow softmax(z/T); top-k and
 * top-p draw only from the set a full sort defines (including the fast path
 * that drops tokens below the nucleus floor before sorting), with the
 * renormalised frequencies; the same seed repeats the same tokens; bad
 * parameters are refused. Frequencies are checked within 5 standard errors
 * of deterministic seeded draws, so the test is not flaky. */
#include "test.h"

#include "core/rng.h"
#include "infer/sample.h"

#define V 40
#define DRAWS 20000

static void make_logits(float *z, uint64_t seed, float spread)
{
    rng_state r;
    rng_seed(&r, seed);
    for (int v = 0; v < V; v++)
        z[v] = (float)(spread * rng_normal(&r));
}

/* Brute force: probabilities at temperature t, the kept set for (k, p)
 * after a full sort (probability descending, id ascending), renormalised. */
static void expected(const float *z, float t, int k, float p, double *q)
{
    double mx = z[0];
    for (int v = 1; v < V; v++)
        mx = z[v] > mx ? z[v] : mx;
    double pr[V], sum = 0;
    for (int v = 0; v < V; v++)
        sum += pr[v] = exp((z[v] - mx) / t);
    int order[V];
    for (int v = 0; v < V; v++)
        order[v] = v;
    for (int i = 0; i < V; i++) /* selection sort: obviously right */
        for (int j = i + 1; j < V; j++)
            if (pr[order[j]] > pr[order[i]] ||
                (pr[order[j]] == pr[order[i]] && order[j] < order[i])) {
                int tmp = order[i];
                order[i] = order[j];
                order[j] = tmp;
            }
    int kk = k > 0 && k < V ? k : V;
    double base = 0;
    for (int i = 0; i < kk; i++)
        base += pr[order[i]];
    memset(q, 0, sizeof(double) * V);
    double kept = 0;
    for (int i = 0; i < kk; i++) {
        kept += pr[order[i]];
        q[order[i]] = pr[order[i]];
        if (p < 1 && kept >= p * base)
            break;
    }
    for (int v = 0; v < V; v++)
        q[v] /= kept;
    (void)sum;
}

static void check_distribution(const float *z, float t, int k, float p, uint64_t seed)
{
    sample_params sp = {t, k, p, seed};
    sampler s;
    tempo_error err;
    CHECK(sampler_init(&s, &sp, V, &err) == 0);
    double q[V];
    expected(z, t, k, p, q);
    int count[V] = {0};
    for (int i = 0; i < DRAWS; i++) {
        int32_t x = sampler_next(&s, z);
        CHECK(x >= 0 && x < V);
        if (x >= 0 && x < V)
            count[x]++;
    }
    int outside = 0, bad = 0;
    for (int v = 0; v < V; v++) {
        if (q[v] == 0) {
            outside += count[v];
            continue;
        }
        double f = (double)count[v] / DRAWS, se = sqrt(q[v] * (1 - q[v]) / DRAWS);
        if (fabs(f - q[v]) > 5 * se + 1e-3)
            bad++;
    }
    CHECK_MSG(outside == 0, "t %g k %d p %g: %d draws outside the kept set", t, k, p, outside);
    CHECK_MSG(bad == 0, "t %g k %d p %g: %d frequencies off", t, k, p, bad);
    sampler_free(&s);
}

static void test_greedy(void)
{
    float z[V];
    make_logits(z, 1, 2.0f);
    z[7] = z[23] = 50; /* a tie: the first index wins */
    sample_params sp = {0, 0, 1, 9};
    sampler s;
    tempo_error err;
    CHECK(sampler_init(&s, &sp, V, &err) == 0);
    for (int i = 0; i < 5; i++)
        CHECK(sampler_next(&s, z) == 7);
    sampler_free(&s);
    sp = (sample_params){1.0f, 1, 1, 9}; /* top-k 1 is greedy at any temperature */
    CHECK(sampler_init(&s, &sp, V, &err) == 0);
    CHECK(sampler_next(&s, z) == 7);
    sampler_free(&s);
}

static void test_distributions(void)
{
    float z[V];
    make_logits(z, 2, 1.5f);
    check_distribution(z, 1.0f, 0, 1.0f, 1);   /* plain temperature 1 */
    check_distribution(z, 0.5f, 0, 1.0f, 2);   /* sharper */
    check_distribution(z, 2.0f, 0, 1.0f, 3);   /* flatter */
    check_distribution(z, 1.0f, 5, 1.0f, 4);   /* top-k */
    check_distribution(z, 1.0f, 0, 0.6f, 5);   /* top-p, fast floor path */
    check_distribution(z, 0.7f, 10, 0.8f, 6);  /* both: nucleus of the top-k mass */
    make_logits(z, 3, 6.0f);                   /* peaked: most tokens fall below the floor */
    check_distribution(z, 1.0f, 0, 0.95f, 7);
    check_distribution(z, 1.0f, 0, 0.999f, 8);
}

static void test_seed_repeats(void)
{
    float z[V];
    make_logits(z, 4, 1.0f);
    sample_params sp = {0.9f, 20, 0.9f, 42};
    sampler a, b, c;
    tempo_error err;
    CHECK(sampler_init(&a, &sp, V, &err) == 0);
    CHECK(sampler_init(&b, &sp, V, &err) == 0);
    sp.seed = 43;
    CHECK(sampler_init(&c, &sp, V, &err) == 0);
    int same = 1, differ = 0;
    for (int i = 0; i < 200; i++) {
        int32_t x = sampler_next(&a, z), y = sampler_next(&b, z), w = sampler_next(&c, z);
        same &= x == y;
        differ |= x != w;
    }
    CHECK(same);
    CHECK(differ);
    sampler_free(&a);
    sampler_free(&b);
    sampler_free(&c);
}

static void test_bad_params(void)
{
    sampler s;
    tempo_error err;
    sample_params bad[] = {{-1, 0, 1, 0}, {NAN, 0, 1, 0}, {INFINITY, 0, 1, 0},
                           {1, -2, 1, 0}, {1, 0, 0, 0},   {1, 0, 1.5f, 0}, {1, 0, NAN, 0}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(sampler_init(&s, &bad[i], V, &err) == -1);
        CHECK(err.code == 2);
    }
    sample_params ok = {1, 0, 1, 0};
    CHECK(sampler_init(&s, &ok, 0, &err) == -1);
}

int main(void)
{
    RUN(test_greedy);
    RUN(test_distributions);
    RUN(test_seed_repeats);
    RUN(test_bad_params);
    return test_summary("test_infer_sample");
}
