/* match_model.c - the match model of the text being read (see match_model.h). */
#include "memory/match_model.h"

#include <stdlib.h>
#include <string.h>

#include "memory/count_table.h"

#define MATCH_TABLE_BITS 20

int match_model_init(match_model *mm, int vocab, int min_len, tempo_error *err)
{
    memset(mm, 0, sizeof *mm);
    if (vocab < 2 || min_len < 1 || min_len > 64)
        return tempo_usage(err, "match model: vocabulary %d and minimum length %d (1..64)", vocab, min_len);
    mm->vocab = vocab;
    mm->min_len = min_len;
    mm->bits = MATCH_TABLE_BITS;
    mm->table = calloc((size_t)1 << mm->bits, sizeof(uint32_t));
    if (!mm->table)
        return tempo_fail(err, "match model: out of memory");
    return 0;
}

void match_model_free(match_model *mm)
{
    free(mm->table);
    memset(mm, 0, sizeof *mm);
}

int match_model_bin(const match_model *mm)
{
    if (!mm->next)
        return 0;
    int l = mm->length;
    return l < 4 ? 1 : l < 8 ? 2 : l < 16 ? 3 : l < 32 ? 4 : 5;
}

/* The hit rate at the current bin, Laplace-smoothed. */
static double confidence(const match_model *mm)
{
    int b = match_model_bin(mm);
    return ((double)mm->hits[b] + 1.0) / ((double)mm->trials[b] + 2.0);
}

double match_model_prob_of(const match_model *mm, const int32_t *tokens, int32_t y)
{
    if (!mm->next)
        return 1.0 / mm->vocab;
    double q = confidence(mm);
    return tokens[mm->next - 1] == y ? q : (1 - q) / (mm->vocab - 1);
}

double match_model_prob(const match_model *mm, const int32_t *tokens, size_t i)
{
    return match_model_prob_of(mm, tokens, tokens[i]);
}

double match_model_predict(const match_model *mm, const int32_t *tokens, int32_t *predicted)
{
    if (!mm->next) {
        *predicted = -1;
        return 1.0 / mm->vocab;
    }
    *predicted = tokens[mm->next - 1];
    return confidence(mm);
}

/* Hash of tokens[end - min_len .. end). */
static uint32_t key_of(const match_model *mm, const int32_t *tokens, size_t end)
{
    uint64_t h = 0x51ed27ULL;
    for (size_t j = end - (size_t)mm->min_len; j < end; j++)
        h = count_hash(h ^ (uint64_t)(uint32_t)tokens[j]);
    return (uint32_t)(h >> (64 - mm->bits));
}

/* Point the hash of tokens[end - min_len .. end) at the position after them. */
static void remember(match_model *mm, size_t end, uint32_t k)
{
    if (end < UINT32_MAX)
        mm->table[k] = (uint32_t)end + 1;
}

void match_model_update(match_model *mm, const int32_t *tokens, size_t i)
{
    if (i < mm->seen)
        return;   /* already learned (callers read streams forward) */
    /* tokens before i that nobody scored (a stream whose first token is given): index them only */
    for (; mm->seen < i; mm->seen++)
        if (mm->seen + 1 >= (size_t)mm->min_len)
            remember(mm, mm->seen + 1, key_of(mm, tokens, mm->seen + 1));
    mm->seen++;
    /* the prediction made for token i, scored: its bin's hit rate, and the match goes on or ends */
    if (mm->next) {
        int b = match_model_bin(mm);
        int hit = tokens[mm->next - 1] == tokens[i];
        mm->trials[b]++;
        mm->hits[b] += (uint32_t)hit;
        if (hit) {
            mm->next++;
            mm->length++;
        } else {
            mm->next = 0;
            mm->length = 0;
        }
    }
    size_t end = i + 1;   /* tokens[0..end) are known now */
    if (end < (size_t)mm->min_len)
        return;
    uint32_t k = key_of(mm, tokens, end);
    if (!mm->next && mm->table[k]) {
        size_t q = mm->table[k] - 1;   /* the position after an earlier occurrence */
        if (q >= (size_t)mm->min_len && q < end &&
            !memcmp(tokens + q - mm->min_len, tokens + end - mm->min_len, sizeof(int32_t) * (size_t)mm->min_len)) {
            mm->next = q + 1;
            mm->length = 0;
        }
    }
    remember(mm, end, k);
}
