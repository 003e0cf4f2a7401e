/* Minimal unit-test harness: each assertion prints both operands and the location, and the
 * test keeps going so one run reports every failure. main() returns test_finish(). */
#ifndef STEPSIM_TEST_H
#define STEPSIM_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static int test__failures;
static int test__checks;

#define TEST_FAIL_(...)                                              \
    do {                                                             \
        test__failures++;                                            \
        fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__);        \
        fprintf(stderr, __VA_ARGS__);                                \
        fputc('\n', stderr);                                         \
    } while (0)

#define CHECK(cond)                                                  \
    do {                                                             \
        test__checks++;                                              \
        if (!(cond))                                                 \
            TEST_FAIL_("%s", #cond);                                 \
    } while (0)

#define CHECK_INT_EQ(a, b)                                                        \
    do {                                                                          \
        test__checks++;                                                           \
        long long test_a_ = (long long)(a), test_b_ = (long long)(b);             \
        if (test_a_ != test_b_)                                                   \
            TEST_FAIL_("%s == %s: %lld != %lld", #a, #b, test_a_, test_b_);        \
    } while (0)

/* |a - b| <= tol_abs + tol_rel * |b| */
#define CHECK_NEAR(a, b, tol_rel, tol_abs)                                            \
    do {                                                                              \
        test__checks++;                                                               \
        double test_a_ = (double)(a), test_b_ = (double)(b);                          \
        if (!(fabs(test_a_ - test_b_) <= (tol_abs) + (tol_rel) * fabs(test_b_)))      \
            TEST_FAIL_("%s ~= %s: %.17g vs %.17g (rel %g)", #a, #b, test_a_, test_b_,  \
                       test_b_ != 0 ? fabs(test_a_ - test_b_) / fabs(test_b_) : 0.0);  \
    } while (0)

#define CHECK_STR_EQ(a, b)                                                        \
    do {                                                                          \
        test__checks++;                                                           \
        const char *test_a_ = (a), *test_b_ = (b);                                \
        if (!test_a_ || !test_b_ || strcmp(test_a_, test_b_) != 0)               \
            TEST_FAIL_("%s == %s: \"%s\" != \"%s\"", #a, #b, test_a_ ? test_a_ : "(null)", \
                       test_b_ ? test_b_ : "(null)");                             \
    } while (0)

/* a contains b */
#define CHECK_STR_HAS(a, b)                                                       \
    do {                                                                          \
        test__checks++;                                                           \
        const char *test_a_ = (a), *test_b_ = (b);                                \
        if (!test_a_ || !strstr(test_a_, test_b_))                               \
            TEST_FAIL_("%s contains %s: \"%s\" lacks \"%s\"", #a, #b,             \
                       test_a_ ? test_a_ : "(null)", test_b_);                    \
    } while (0)

static inline int test_finish(void)
{
    if (test__failures)
        fprintf(stderr, "%d of %d checks failed\n", test__failures, test__checks);
    else
        printf("%d checks passed\n", test__checks);
    return test__failures ? 1 : 0;
}

#endif
