/* Did-you-mean suggestions (see suggest.h). */
#include "core/sim.h"

#include <ctype.h>
#include <string.h>

#include "input/suggest.h"

#define SUGGEST_LEN_MAX 63

static int min3(int a, int b, int c)
{
    return SIM_MIN(a, SIM_MIN(b, c));
}

int input_edit_distance(const char *a, const char *b)
{
    size_t na = SIM_MIN(strlen(a), (size_t)SUGGEST_LEN_MAX);
    size_t nb = SIM_MIN(strlen(b), (size_t)SUGGEST_LEN_MAX);
    int d[SUGGEST_LEN_MAX + 1][SUGGEST_LEN_MAX + 1];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        for (size_t j = 1; j <= nb; j++) {
            int cost = a[i - 1] == b[j - 1] ? 0 : 1;
            d[i][j] = min3(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = SIM_MIN(d[i][j], d[i - 2][j - 2] + 1);
        }
    }
    return d[na][nb];
}

static int same_ignoring_case(const char *a, const char *b)
{
    for (; *a && *b; a++, b++)
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
    return *a == *b;
}

const char *input_suggest(const char *word, const char *const *candidates, size_t n)
{
    size_t len = strlen(word);
    int limit = len <= 4 ? 1 : len <= 8 ? 2 : 3;
    const char *best = NULL;
    int best_d = limit + 1;
    for (size_t i = 0; i < n; i++) {
        int dist =
            same_ignoring_case(word, candidates[i]) ? 1 : input_edit_distance(word, candidates[i]);
        if (dist < best_d) {
            best_d = dist;
            best = candidates[i];
        }
    }
    return best;
}
