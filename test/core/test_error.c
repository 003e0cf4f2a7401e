/* Unit test of error codes and input diagnostics (sim/core/error.c): sim_strerror for every
 * code, and the exact text of a printed diagnostic (`FILE:LINE:COL: error: msg` then hint lines
 * indented by two spaces), including first-error-wins and the no-position form. */
#include "core/sim.h"

#include "test.h"

/* Prints d to a temporary file and reads it back into buf. */
static const char *render(const sim_diag *d, char *buf, size_t size)
{
    FILE *f = tmpfile();
    buf[0] = '\0';
    if (!f)
        return "(tmpfile failed)";
    sim_diag_print(d, f);
    rewind(f);
    size_t n = fread(buf, 1, size - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_strerror(void)
{
    /* the strings come from SIM_ERRNO_MAP in error.h */
    CHECK_STR_EQ(sim_strerror(SIM_OK), "ok");
    CHECK_STR_EQ(sim_strerror(SIM_ENOMEM), "out of memory");
    CHECK_STR_EQ(sim_strerror(SIM_EINVAL), "invalid input");
    CHECK_STR_EQ(sim_strerror(SIM_ENOENT), "no such file");
    CHECK_STR_EQ(sim_strerror(SIM_EIO), "input/output error");
    CHECK_STR_EQ(sim_strerror(SIM_ENOTSUP), "not supported yet");
    CHECK_STR_EQ(sim_strerror(SIM_EINTERNAL), "internal error");
    /* codes outside the table */
    CHECK_STR_EQ(sim_strerror(1), "unknown error");
    CHECK_STR_EQ(sim_strerror(-1000), "unknown error");
    /* error codes are negative and distinct (enumerated from SIM__ERR_FIRST = -64 upwards) */
    CHECK(SIM_ENOMEM < 0 && SIM_EINTERNAL < 0);
    CHECK_INT_EQ(SIM_ENOMEM, -63);
    CHECK(SIM_ENOMEM != SIM_EINVAL);
}

static void test_diag_format(void)
{
    static sim_diag d;
    char buf[4096];
    /* sim_diag_error returns SIM_EINVAL so callers can `return sim_diag_error(...)` */
    CHECK_INT_EQ(sim_diag_error(&d, "f.yaml", 3, 7, "%s", "msg"), SIM_EINVAL);
    sim_diag_hint(&d, "hint");
    /* the location, the message, then each hint indented by two spaces */
    CHECK_STR_EQ(render(&d, buf, sizeof buf), "f.yaml:3:7: error: msg\n  hint\n");

    /* a second error is ignored (the first one is the one to fix); its return code is not */
    CHECK_INT_EQ(sim_diag_error_code(&d, SIM_ENOENT, "g.yaml", 1, 1, "other"), SIM_ENOENT);
    sim_diag_hint(&d, "second hint %d", 2);
    CHECK_STR_EQ(render(&d, buf, sizeof buf),
                 "f.yaml:3:7: error: msg\n  hint\n  second hint 2\n");
}

static void test_diag_forms(void)
{
    static sim_diag d, e, f, none;
    char buf[4096];
    /* no position (line 0): `FILE: error: msg` */
    sim_diag_error(&d, "--set KEY=VALUE", 0, 0, "unknown key '%s'", "KEY");
    CHECK_STR_EQ(render(&d, buf, sizeof buf), "--set KEY=VALUE: error: unknown key 'KEY'\n");

    /* a line without a column prints column 1 */
    CHECK_INT_EQ(sim_diag_error_code(&e, SIM_ENOTSUP, "t.yaml", 12, 0, "no"), SIM_ENOTSUP);
    CHECK_STR_EQ(render(&e, buf, sizeof buf), "t.yaml:12:1: error: no\n");

    /* a hint before any error is dropped */
    sim_diag_hint(&f, "orphan");
    CHECK_INT_EQ(f.set, 0);
    sim_diag_error(&f, "x", 1, 2, "late");
    CHECK_STR_EQ(render(&f, buf, sizeof buf), "x:1:2: error: late\n");

    /* nothing recorded: nothing printed */
    CHECK_STR_EQ(render(&none, buf, sizeof buf), "");

    /* a quoted value's control characters are escaped: the error stays one line */
    static sim_diag g;
    sim_diag_error(&g, "a\nb.yaml", 3, 4, "'%s'", "x\ny\tz\r\x01");
    CHECK_STR_EQ(render(&g, buf, sizeof buf), "a\\nb.yaml:3:4: error: 'x\\ny\\tz\\r\\x01'\n");

    /* a NULL diag only returns the code */
    CHECK_INT_EQ(sim_diag_error(NULL, "x", 1, 1, "m"), SIM_EINVAL);
    CHECK_INT_EQ(sim_diag_error_code(NULL, SIM_EIO, "x", 1, 1, "m"), SIM_EIO);
}

int main(void)
{
    test_strerror();
    test_diag_format();
    test_diag_forms();
    return test_finish();
}
