/* Did-you-mean (sim/input/suggest.h): the edit distance and the closeness rule. */
#include "core/sim.h"

#include "input/suggest.h"
#include "test.h"

int main(void)
{
    /* classic Levenshtein examples: kitten -> sitting is 2 substitutions + 1 insertion */
    CHECK_INT_EQ(input_edit_distance("kitten", "sitting"), 3);
    CHECK_INT_EQ(input_edit_distance("", "abc"), 3);
    CHECK_INT_EQ(input_edit_distance("same", "same"), 0);
    /* one deletion; one adjacent transposition (Damerau) instead of two substitutions */
    CHECK_INT_EQ(input_edit_distance("training", "trainig"), 1);
    CHECK_INT_EQ(input_edit_distance("bf16", "bf61"), 1);
    CHECK_INT_EQ(input_edit_distance("GiB", "gib"), 2); /* case-sensitive: two substitutions */

    static const char *const keys[] = {"name", "topology", "model", "training", "parallel"};
    CHECK_STR_EQ(input_suggest("trainig", keys, 5), "training");
    CHECK_STR_EQ(input_suggest("paralel", keys, 5), "parallel");
    CHECK_STR_EQ(input_suggest("Model", keys, 5), "model"); /* a case-only difference costs 1 */
    /* too far: words up to 4 characters allow 1 edit, up to 8 allow 2, longer 3 */
    CHECK(input_suggest("xyz", keys, 5) == NULL);
    CHECK(input_suggest("modle", keys, 5) != NULL);            /* transposition: 1 */
    CHECK(input_suggest("topologyyyy", keys, 5) != NULL);      /* 3 deletions, 11 letters */
    CHECK(input_suggest("topologyyyyy", keys, 5) == NULL);     /* 4 */
    static const char *const units[] = {"KiB", "MiB", "GiB"};
    CHECK_STR_EQ(input_suggest("gib", units, 3), "GiB");
    /* ties go to the earliest candidate: "XiB" is 1 substitution from each */
    CHECK_STR_EQ(input_suggest("XiB", units, 3), "KiB");
    return test_finish();
}
