/* YAML node tree (sim/input/ytree.h): provenance, quoting, aliases and their bound, and the
 * errors libyaml lets through (duplicate keys, merge keys, empty and second documents, tabs). */
#include "core/sim.h"

#include "input/ytree.h"
#include "test.h"

typedef struct fixture {
    input_yarena *a;
    const input_yorigin *o;
    sim_diag d;
    input_ynode *root;
} fixture;

static int parse(fixture *f, const char *text, unsigned flags)
{
    memset(&f->d, 0, sizeof f->d);
    f->a = input_yarena_create();
    f->o = input_yorigin_new(f->a, (flags & INPUT_YAML_FLOW_VALUE) ? "--set k=v" : "t.yaml", ".",
                          (flags & INPUT_YAML_FLOW_VALUE) != 0);
    f->root = NULL;
    int rc = input_yaml_parse(f->a, text, strlen(text), f->o, flags, &f->root, &f->d);
    if (rc == 0)
        CHECK(input__ytree_check(f->root, true)); /* every tree parsed here is well formed */
    return rc;
}

static void done(fixture *f)
{
    input_yarena_destroy(f->a);
}

#define CHECK_AT(f, line_, col_)              \
    do {                                      \
        CHECK_STR_EQ((f).d.file, "t.yaml");   \
        CHECK_INT_EQ((f).d.line, line_);      \
        CHECK_INT_EQ((f).d.col, col_);        \
    } while (0)

static void test_provenance(void)
{
    fixture f;
    const char *text = "a: 1\n"
                       "b:\n"
                       "  c: \"2\"\n"
                       "  d: [1, {e: x}]\n";
    CHECK_INT_EQ(parse(&f, text, 0), 0);
    const input_ypair *c = input_ypath_find(f.root, "b.c");
    CHECK(c != NULL);
    if (c) {
        /* line 3 "  c: \"2\"": key at column 3, the quoted value at column 6 */
        CHECK_INT_EQ(c->key->line, 3);
        CHECK_INT_EQ(c->key->col, 3);
        CHECK_INT_EQ(c->value->line, 3);
        CHECK_INT_EQ(c->value->col, 6);
        CHECK_STR_EQ(c->value->text, "2");
        CHECK(c->value->quoted); /* a quoted "2" stays a string */
        CHECK_STR_EQ(c->value->origin->name, "t.yaml");
    }
    const input_ypair *d = input_ypath_find(f.root, "b.d");
    CHECK(d && d->value->kind == INPUT_YSEQ && d->value->n == 2);
    if (d && d->value->n == 2) {
        /* line 4 "  d: [1, {e: x}]": '[' is column 6, so the flow mapping opens at column 10,
         * e is at 11 and x at 14 */
        const input_ynode *m = d->value->items[1];
        CHECK_INT_EQ(m->line, 4);
        CHECK_INT_EQ(m->col, 10);
        const input_ypair *e = input_ymap_find(m, "e");
        CHECK(e != NULL);
        if (e) {
            CHECK_INT_EQ(e->key->col, 11);
            CHECK_INT_EQ(e->value->col, 14);
            CHECK(!e->value->quoted);
        }
        CHECK(!d->value->items[0]->quoted); /* plain 1 */
    }
    /* nodes: the root (1), a and 1 (2), b (1), b's mapping (1), c and "2" (2), d (1), the list
     * (1), 1 (1), the flow mapping (1), e and x (2): 13 */
    CHECK_INT_EQ(f.root->weight, 13);
    done(&f);

    CHECK_INT_EQ(parse(&f, "a: !!str 2\nb: ~\nc:\nd: null\ne: 'null'\n", 0), 0);
    CHECK(input_ymap_find(f.root, "a")->value->quoted);
    CHECK(input_ynode_is_null(input_ymap_find(f.root, "b")->value));
    CHECK(input_ynode_is_null(input_ymap_find(f.root, "c")->value)); /* empty value */
    CHECK(input_ynode_is_null(input_ymap_find(f.root, "d")->value));
    CHECK(!input_ynode_is_null(input_ymap_find(f.root, "e")->value)); /* quoted: a string */
    done(&f);
}

static void test_duplicate_and_merge(void)
{
    fixture f;
    /* the second 'a' is at line 3, column 1; the first at 1:1 */
    CHECK_INT_EQ(parse(&f, "a: 1\nb: 2\na: 3\n", 0), SIM_EINVAL);
    CHECK_AT(f, 3, 1);
    CHECK_STR_EQ(f.d.msg, "duplicate key 'a' (first at 1:1)");
    done(&f);

    /* nested, in a flow mapping: "x: {k: 1, k: 2}" - the second k at column 11 */
    CHECK_INT_EQ(parse(&f, "x: {k: 1, k: 2}\n", 0), SIM_EINVAL);
    CHECK_AT(f, 1, 11);
    CHECK_STR_EQ(f.d.msg, "duplicate key 'k' (first at 1:5)");
    done(&f);

    /* merge key at line 3, column 3 */
    CHECK_INT_EQ(parse(&f, "base: &b {x: 1}\nd:\n  <<: *b\n", 0), SIM_EINVAL);
    CHECK_AT(f, 3, 3);
    CHECK_STR_HAS(f.d.msg, "merge keys ('<<') are not supported");
    done(&f);

    /* non-scalar key ("? [a]") at line 1, column 3 */
    CHECK_INT_EQ(parse(&f, "? [a]\n: 1\n", 0), SIM_EINVAL);
    CHECK_AT(f, 1, 3);
    CHECK_STR_HAS(f.d.msg, "mapping keys must be scalars");
    done(&f);

    /* unsupported tag at line 1, column 4 */
    CHECK_INT_EQ(parse(&f, "a: !!int 3\n", 0), SIM_EINVAL);
    CHECK_AT(f, 1, 4);
    CHECK_STR_HAS(f.d.msg, "YAML tag 'tag:yaml.org,2002:int' is not supported");
    done(&f);
}

static void test_aliases(void)
{
    fixture f;
    CHECK_INT_EQ(parse(&f, "a: &x [1, 2]\nb: *x\n", 0), 0);
    const input_ynode *a = input_ymap_find(f.root, "a")->value, *b = input_ymap_find(f.root, "b")->value;
    CHECK(b->kind == INPUT_YSEQ && b->n == 2);
    CHECK(a != b);                        /* a copy, so overriding one never changes the other */
    CHECK_INT_EQ(b->items[1]->line, 1);   /* and it keeps the anchor's text position */
    CHECK_INT_EQ(b->items[1]->col, 11);
    done(&f);

    CHECK_INT_EQ(parse(&f, "a: *nope\n", 0), SIM_EINVAL);
    CHECK_AT(f, 1, 4);
    CHECK_STR_HAS(f.d.msg, "unknown anchor 'nope'");
    done(&f);

    /* Billion laughs: each level is a list of ten aliases to the previous one. Node counts
     * (a list counts itself plus its items): l0 = 1 list + 10 scalars = 11, l1 = 1 + 10 x 11 =
     * 111, l2 = 1111, l3 = 11111. With the root mapping (1) and the keys (one per level) the
     * document holds 1 + (1 + 11) + (1 + 111) + (1 + 1111) + (1 + 11111) = 12349 nodes before
     * l4. l4's key and list add 2 (12351); each "- *l3" line then adds 11111: after k aliases
     * 12351 + 11111 k, which exceeds INPUT_YAML_MAX_NODES = 100000 first at k = 8 (101239). The
     * 8th alias is on line 13 (l4's items start on line 6), column 5. */
    const char *lol = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
                      "l1: &l1 [*l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0]\n"
                      "l2: &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]\n"
                      "l3: &l3 [*l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2]\n"
                      "l4: &l4\n"
                      "  - *l3\n"
                      "  - *l3\n"
                      "  - *l3\n"
                      "  - *l3\n"
                      "  - *l3\n"
                      "  - *l3\n"
                      "  - *l3\n"
                      "  - *l3\n"
                      "  - *l3\n"
                      "  - *l3\n"
                      "l5: &l5 [*l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4]\n"
                      "l6: &l6 [*l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5]\n";
    CHECK_INT_EQ(parse(&f, lol, 0), SIM_EINVAL);
    CHECK_AT(f, 13, 5);
    CHECK_STR_HAS(f.d.msg, "more than 100000 YAML nodes after expanding aliases");
    CHECK_STR_HAS(f.d.hints, "billion laughs");
    done(&f);
}

static void test_documents_and_syntax(void)
{
    fixture f;
    CHECK_INT_EQ(parse(&f, "", 0), SIM_EINVAL);
    CHECK_AT(f, 1, 1);
    CHECK_STR_EQ(f.d.msg, "empty document");
    done(&f);

    CHECK_INT_EQ(parse(&f, "# only a comment\n", 0), SIM_EINVAL);
    CHECK_AT(f, 1, 1);
    CHECK_STR_EQ(f.d.msg, "empty document");
    done(&f);

    /* "---" then nothing: a document whose root is null, at line 2 */
    CHECK_INT_EQ(parse(&f, "---\n", 0), SIM_EINVAL);
    CHECK_STR_EQ(f.d.msg, "empty document");
    done(&f);

    /* a second document starts at line 2, column 1 */
    CHECK_INT_EQ(parse(&f, "a: 1\n---\nb: 2\n", 0), SIM_EINVAL);
    CHECK_AT(f, 2, 1);
    CHECK_STR_HAS(f.d.msg, "second YAML document");
    done(&f);

    /* a tab indenting line 2: libyaml's mark is 1:0 (0-based) -> 2:1 */
    CHECK_INT_EQ(parse(&f, "a:\n\tb: 1\n", 0), SIM_EINVAL);
    CHECK_AT(f, 2, 1);
    CHECK_STR_EQ(f.d.msg, "YAML syntax error: found character that cannot start any token");
    CHECK_STR_HAS(f.d.hints, "tabs");
    done(&f);

    /* "a:\n  b: 1\n   c: 2\n": the ':' after c (line 3, 0-based column 4) is not allowed */
    CHECK_INT_EQ(parse(&f, "a:\n  b: 1\n   c: 2\n", 0), SIM_EINVAL);
    CHECK_AT(f, 3, 5);
    CHECK_STR_EQ(f.d.msg, "YAML syntax error: mapping values are not allowed in this context");
    done(&f);

    /* unclosed flow list: libyaml's context goes to the hint */
    CHECK_INT_EQ(parse(&f, "a: [1, 2\n", 0), SIM_EINVAL);
    CHECK_STR_HAS(f.d.msg, "YAML syntax error: ");
    CHECK_STR_HAS(f.d.hints, "while parsing a flow sequence (at 1:4)");
    done(&f);

    /* nesting bound */
    char deep[4 * INPUT_YAML_MAX_DEPTH + 8];
    size_t n = 0;
    for (int i = 0; i < INPUT_YAML_MAX_DEPTH + 1; i++)
        deep[n++] = '[';
    for (int i = 0; i < INPUT_YAML_MAX_DEPTH + 1; i++)
        deep[n++] = ']';
    deep[n] = '\0';
    CHECK_INT_EQ(parse(&f, deep, 0), SIM_EINVAL);
    CHECK_STR_HAS(f.d.msg, "nesting deeper than");
    done(&f);
}

static void test_flow_values(void)
{
    fixture f;
    CHECK_INT_EQ(parse(&f, "40 GiB", INPUT_YAML_FLOW_VALUE), 0);
    CHECK(f.root->kind == INPUT_YSCALAR && !f.root->quoted);
    CHECK_STR_EQ(f.root->text, "40 GiB");
    CHECK_INT_EQ(f.root->line, 0); /* --set values have no position */
    done(&f);

    CHECK_INT_EQ(parse(&f, "[1, 2, 3]", INPUT_YAML_FLOW_VALUE), 0);
    CHECK(f.root->kind == INPUT_YSEQ && f.root->n == 3);
    done(&f);

    CHECK_INT_EQ(parse(&f, "{dp: 2, zero: 0}", INPUT_YAML_FLOW_VALUE), 0);
    CHECK(f.root->kind == INPUT_YMAP && f.root->n == 2);
    done(&f);

    CHECK_INT_EQ(parse(&f, "\"2\"", INPUT_YAML_FLOW_VALUE), 0);
    CHECK(f.root->quoted);
    done(&f);

    CHECK_INT_EQ(parse(&f, "", INPUT_YAML_FLOW_VALUE), 0);
    CHECK(input_ynode_is_null(f.root));
    done(&f);

    CHECK_INT_EQ(parse(&f, "a, b", INPUT_YAML_FLOW_VALUE), SIM_EINVAL);
    CHECK_STR_EQ(f.d.file, "--set k=v");
    CHECK_INT_EQ(f.d.line, 0);
    CHECK_STR_HAS(f.d.msg, "invalid YAML value: 2 comma-separated values");
    done(&f);

    CHECK_INT_EQ(parse(&f, "[1, 2", INPUT_YAML_FLOW_VALUE), SIM_EINVAL);
    CHECK_INT_EQ(f.d.line, 0);
    CHECK_STR_HAS(f.d.msg, "invalid YAML value: ");
    done(&f);
}

static void test_emit(void)
{
    fixture f;
    const char *text = "name: x\n"
                       "q: \"2\"\n"
                       "m:\n"
                       "  bw: 450 GB/s\n"
                       "  curve: [[1 MB, 0.5], [100 MB, 0.9]]\n"
                       "  list:\n"
                       "  - {a: 1}\n";
    CHECK_INT_EQ(parse(&f, text, 0), 0);
    char *out = NULL;
    CHECK_INT_EQ(input_yaml_emit(f.root, &out), 0);
    CHECK_STR_EQ(out, "name: x\n"
                      "q: \"2\"\n"
                      "m:\n"
                      "  bw: 450 GB/s\n"
                      "  curve: [[1 MB, 0.5], [100 MB, 0.9]]\n"
                      "  list:\n"
                      "  - a: 1\n");
    /* and it parses back to the same tree shape, quoting kept */
    fixture g;
    CHECK_INT_EQ(parse(&g, out, 0), 0);
    CHECK_INT_EQ(g.root->weight, f.root->weight);
    CHECK(input_ypath_find(g.root, "q")->value->quoted);
    done(&g);
    sim_free(out);
    done(&f);
}

int main(void)
{
    test_provenance();
    test_duplicate_and_merge();
    test_aliases();
    test_documents_and_syntax();
    test_flow_values();
    test_emit();
    return test_finish();
}
