/* YAML node tree with provenance on libyaml's event parser, and the emitter used for the
 * resolved scenario text (see yaml.h for the rules this adds on top of libyaml). */
#include "core/sim.h"

#include <string.h>
#include <yaml.h>

#include "input/ytree.h"

/* ---------------------------------------------------------------------------------------- */
/* Arena                                                                                    */

#define ARENA_BLOCK 65536

typedef struct arena_block {
    struct arena_block *next;
    size_t used, size;
    max_align_t data[]; /* aligned for any object */
} arena_block;

struct input_yarena {
    arena_block *head;
};

input_yarena *input_yarena_create(void)
{
    return sim_calloc(1, sizeof(input_yarena));
}

void input_yarena_destroy(input_yarena *a)
{
    if (!a)
        return;
    arena_block *b = a->head;
    while (b) {
        arena_block *next = b->next;
        sim_free(b);
        b = next;
    }
    sim_free(a);
}

void *input_yarena_alloc(input_yarena *a, size_t size)
{
    const size_t align = sizeof(max_align_t);
    size = (size + align - 1) / align * align;
    if (size == 0)
        size = align;
    arena_block *b = a->head;
    if (!b || b->size - b->used < size) {
        size_t cap = SIM_MAX(size, (size_t)ARENA_BLOCK);
        b = sim_calloc(1, sizeof(arena_block) + cap);
        b->size = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += size;
    return p; /* zeroed: blocks come from sim_calloc and are never reused */
}

char *input_yarena_strdup(input_yarena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = input_yarena_alloc(a, n);
    memcpy(d, s, n);
    return d;
}

const input_yorigin *input_yorigin_new(input_yarena *a, const char *name, const char *dir,
                                       bool is_set)
{
    input_yorigin *o = input_yarena_alloc(a, sizeof *o);
    o->name = input_yarena_strdup(a, name);
    o->dir = input_yarena_strdup(a, dir ? dir : ".");
    o->is_set = is_set;
    return o;
}

/* ---------------------------------------------------------------------------------------- */
/* Nodes                                                                                    */

input_ynode *input_ynode_new(input_yarena *a, input_ykind kind, const input_yorigin *origin,
                             int line, int col)
{
    input_ynode *n = input_yarena_alloc(a, sizeof *n);
    n->kind = kind;
    n->origin = origin;
    n->line = origin->is_set ? 0 : line;
    n->col = origin->is_set ? 0 : col;
    n->text = "";
    n->weight = 1;
    return n;
}

input_ynode *input_yscalar_new(input_yarena *a, const input_yorigin *origin, int line, int col,
                         const char *text, bool quoted)
{
    input_ynode *n = input_ynode_new(a, INPUT_YSCALAR, origin, line, col);
    n->text = input_yarena_strdup(a, text);
    n->quoted = quoted;
    return n;
}

/* Grows an arena array (the old copy stays in the arena until it is destroyed: trees are
 * small and built once). */
static void *arena_grow(input_yarena *a, void *old, size_t n, size_t *cap, size_t elem)
{
    if (n < *cap)
        return old;
    size_t ncap = *cap ? *cap * 2 : 4;
    void *p = input_yarena_alloc(a, ncap * elem);
    if (old)
        memcpy(p, old, n * elem);
    *cap = ncap;
    return p;
}

void input_yseq_append(input_yarena *a, input_ynode *seq, input_ynode *item)
{
    SIM_ASSERT(seq->kind == INPUT_YSEQ, "kind %d", (int)seq->kind);
    seq->items = arena_grow(a, seq->items, seq->n, &seq->cap, sizeof *seq->items);
    seq->items[seq->n++] = item;
    seq->weight += item->weight;
}

void input_ymap_append(input_yarena *a, input_ynode *map, input_ynode *key, input_ynode *value)
{
    SIM_ASSERT(map->kind == INPUT_YMAP && key->kind == INPUT_YSCALAR, "kinds %d %d", (int)map->kind,
               (int)key->kind);
    map->pairs = arena_grow(a, map->pairs, map->n, &map->cap, sizeof *map->pairs);
    map->pairs[map->n].key = key;
    map->pairs[map->n].value = value;
    map->n++;
    map->weight += key->weight + value->weight;
}

input_ypair *input_ymap_find(const input_ynode *map, const char *key)
{
    if (!map || map->kind != INPUT_YMAP)
        return NULL;
    for (size_t i = 0; i < map->n; i++)
        if (strcmp(map->pairs[i].key->text, key) == 0)
            return &map->pairs[i];
    return NULL;
}

input_ypair *input_ypath_find(const input_ynode *root, const char *dotted)
{
    const input_ynode *cur = root;
    input_ypair *pair = NULL;
    const char *s = dotted;
    for (;;) {
        const char *dot = strchr(s, '.');
        size_t len = dot ? (size_t)(dot - s) : strlen(s);
        char seg[128];
        if (len >= sizeof seg)
            return NULL;
        memcpy(seg, s, len);
        seg[len] = '\0';
        pair = input_ymap_find(cur, seg);
        if (!pair || !dot)
            return pair;
        cur = pair->value;
        s = dot + 1;
    }
}

bool input_ynode_is_null(const input_ynode *n)
{
    if (!n || n->kind != INPUT_YSCALAR || n->quoted)
        return false;
    const char *t = n->text;
    return t[0] == '\0' || strcmp(t, "~") == 0 || strcmp(t, "null") == 0 ||
           strcmp(t, "Null") == 0 || strcmp(t, "NULL") == 0;
}

static bool check_node(const input_ynode *n, bool check_weights, size_t *weight)
{
    if (!n || !n->origin || !n->origin->name || !n->text)
        return false;
    size_t w = 1;
    switch (n->kind) {
    case INPUT_YSCALAR:
        if (n->n != 0)
            return false;
        break;
    case INPUT_YSEQ:
        for (size_t i = 0; i < n->n; i++) {
            size_t c;
            if (!check_node(n->items[i], check_weights, &c))
                return false;
            w += c;
        }
        break;
    case INPUT_YMAP:
        for (size_t i = 0; i < n->n; i++) {
            size_t ck, cv;
            const input_ypair *p = &n->pairs[i];
            if (!check_node(p->key, check_weights, &ck) || p->key->kind != INPUT_YSCALAR ||
                !check_node(p->value, check_weights, &cv))
                return false;
            for (size_t j = 0; j < i; j++)
                if (strcmp(n->pairs[j].key->text, p->key->text) == 0)
                    return false;
            w += ck + cv;
        }
        break;
    default:
        return false;
    }
    if (n->n > n->cap && n->kind != INPUT_YSCALAR)
        return false;
    *weight = w;
    return !check_weights || n->weight == w;
}

bool input__ytree_check(const input_ynode *root, bool check_weights)
{
    size_t w;
    return check_node(root, check_weights, &w);
}

const char *input_ykind_name(input_ykind kind)
{
    switch (kind) {
    case INPUT_YSCALAR: return "a scalar";
    case INPUT_YSEQ: return "a list";
    case INPUT_YMAP: return "a mapping";
    }
    return "?";
}

/* ---------------------------------------------------------------------------------------- */
/* Parser                                                                                   */

typedef struct anchor {
    const char *name;
    const input_ynode *node;
} anchor;

typedef struct parser {
    yaml_parser_t yp;
    input_yarena *a;
    const input_yorigin *o;
    sim_diag *d;
    const char *text;
    size_t len;
    unsigned flags;
    anchor *anchors;
    size_t n_anchors, cap_anchors;
    size_t nodes; /* created so far, alias copies included */
} parser;

/* libyaml marks are 0-based; every position we report is 1-based. */
#define MARK_LINE(m) ((int)(m)->line + 1)
#define MARK_COL(m) ((int)(m)->column + 1)
#define PERR(p, m, ...) \
    sim_diag_error((p)->d, (p)->o->name, MARK_LINE(m), MARK_COL(m), __VA_ARGS__)

/* Reports libyaml's error: its problem text at its mark (+1), the context as a hint. */
static int syntax_error(parser *p)
{
    const yaml_parser_t *yp = &p->yp;
    const char *problem = yp->problem ? yp->problem : "unknown problem";
    int line = (int)yp->problem_mark.line + 1, col = (int)yp->problem_mark.column + 1;
    size_t offset = yp->problem_mark.index;
    if (yp->error == YAML_READER_ERROR) {
        /* Reader errors (bad encoding) carry a byte offset, not a mark. */
        offset = yp->problem_offset;
        line = 1;
        col = 1;
        for (size_t i = 0; i < offset && i < p->len; i++) {
            if (p->text[i] == '\n') {
                line++;
                col = 1;
            } else {
                col++;
            }
        }
    } else if (yp->error == YAML_MEMORY_ERROR) {
        problem = "out of memory";
    }
    if (p->o->is_set)
        sim_diag_error(p->d, p->o->name, 0, 0, "invalid YAML value: %s", problem);
    else
        sim_diag_error(p->d, p->o->name, line, col, "YAML syntax error: %s", problem);
    /* A tab where indentation is expected is the most common cause: say so. */
    int tab = 0;
    if (yp->error != YAML_READER_ERROR && offset < p->len) {
        size_t ls = offset;
        while (ls > 0 && p->text[ls - 1] != '\n')
            ls--;
        for (size_t i = ls; i < p->len && p->text[i] != '\n' && i <= offset; i++)
            if (p->text[i] == '\t')
                tab = 1;
    }
    if (tab)
        sim_diag_hint(p->d, "YAML does not allow tabs for indentation; indent with spaces");
    else if (yp->context && !p->o->is_set)
        sim_diag_hint(p->d, "%s (at %d:%d)", yp->context, (int)yp->context_mark.line + 1,
                      (int)yp->context_mark.column + 1);
    return SIM_EINVAL;
}

static int next_event(parser *p, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&p->yp, ev))
        return syntax_error(p);
    return 0;
}

static int count_nodes(parser *p, size_t add, const yaml_mark_t *m)
{
    if (p->nodes + add > INPUT_YAML_MAX_NODES) {
        PERR(p, m, "document too large: more than %d YAML nodes after expanding aliases",
             INPUT_YAML_MAX_NODES);
        sim_diag_hint(p->d, "aliases are expanded into copies; deeply nested aliases grow "
                            "exponentially (\"billion laughs\")");
        return SIM_EINVAL;
    }
    p->nodes += add;
    return 0;
}

static input_ynode *copy_tree(input_yarena *a, const input_ynode *src)
{
    input_ynode *n = input_yarena_alloc(a, sizeof *n);
    *n = *src;
    n->cap = n->n;
    if (src->kind == INPUT_YSEQ && src->n) {
        n->items = input_yarena_alloc(a, src->n * sizeof *n->items);
        for (size_t i = 0; i < src->n; i++)
            n->items[i] = copy_tree(a, src->items[i]);
    } else if (src->kind == INPUT_YMAP && src->n) {
        n->pairs = input_yarena_alloc(a, src->n * sizeof *n->pairs);
        for (size_t i = 0; i < src->n; i++) {
            n->pairs[i].key = copy_tree(a, src->pairs[i].key);
            n->pairs[i].value = copy_tree(a, src->pairs[i].value);
        }
    }
    return n;
}

static int tree_depth(const input_ynode *n)
{
    int d = 0;
    if (n->kind == INPUT_YSEQ)
        for (size_t i = 0; i < n->n; i++)
            d = SIM_MAX(d, tree_depth(n->items[i]));
    else if (n->kind == INPUT_YMAP)
        for (size_t i = 0; i < n->n; i++)
            d = SIM_MAX(d, tree_depth(n->pairs[i].value));
    return d + 1;
}

static void add_anchor(parser *p, const char *name, const input_ynode *node)
{
    if (!name)
        return;
    p->anchors = arena_grow(p->a, p->anchors, p->n_anchors, &p->cap_anchors, sizeof *p->anchors);
    p->anchors[p->n_anchors].name = name;
    p->anchors[p->n_anchors].node = node;
    p->n_anchors++;
}

static int check_tag(parser *p, const yaml_char_t *tag, const yaml_mark_t *m, bool scalar,
                     bool *quoted)
{
    if (!tag)
        return 0;
    if (scalar && strcmp((const char *)tag, YAML_STR_TAG) == 0) {
        *quoted = true;
        return 0;
    }
    PERR(p, m, "YAML tag '%s' is not supported", (const char *)tag);
    sim_diag_hint(p->d, "only !!str is accepted (it makes a scalar a string)");
    return SIM_EINVAL;
}

static int parse_node(parser *p, yaml_event_t *ev, int depth, input_ynode **out);

static int parse_mapping(parser *p, input_ynode *map, int depth)
{
    for (;;) {
        yaml_event_t ev;
        int rc = next_event(p, &ev);
        if (rc)
            return rc;
        if (ev.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        yaml_mark_t km = ev.start_mark;
        input_ynode *key;
        rc = parse_node(p, &ev, depth + 1, &key);
        if (rc)
            return rc;
        if (key->kind != INPUT_YSCALAR)
            return PERR(p, &km, "mapping keys must be scalars, not %s",
                        input_ykind_name(key->kind));
        if (!key->quoted && strcmp(key->text, "<<") == 0) {
            PERR(p, &km, "YAML merge keys ('<<') are not supported");
            sim_diag_hint(p->d,
                          "write the keys out, or use an alias as a whole value (key: *name)");
            return SIM_EINVAL;
        }
        const input_ypair *dup = input_ymap_find(map, key->text);
        if (dup) {
            if (dup->key->line > 0)
                return PERR(p, &km, "duplicate key '%s' (first at %d:%d)", key->text,
                            dup->key->line, dup->key->col);
            return PERR(p, &km, "duplicate key '%s'", key->text);
        }
        rc = next_event(p, &ev);
        if (rc)
            return rc;
        input_ynode *value;
        rc = parse_node(p, &ev, depth + 1, &value);
        if (rc)
            return rc;
        input_ymap_append(p->a, map, key, value);
    }
}

static int parse_sequence(parser *p, input_ynode *seq, int depth)
{
    for (;;) {
        yaml_event_t ev;
        int rc = next_event(p, &ev);
        if (rc)
            return rc;
        if (ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return 0;
        }
        input_ynode *item;
        rc = parse_node(p, &ev, depth + 1, &item);
        if (rc)
            return rc;
        input_yseq_append(p->a, seq, item);
    }
}

/* Builds the node that starts with event *ev (consumed). */
static int parse_node(parser *p, yaml_event_t *ev, int depth, input_ynode **out)
{
    yaml_mark_t m = ev->start_mark;
    int line = MARK_LINE(&m), col = MARK_COL(&m);
    int rc = 0;
    if (depth > INPUT_YAML_MAX_DEPTH) {
        yaml_event_delete(ev);
        return PERR(p, &m, "YAML nesting deeper than %d levels", INPUT_YAML_MAX_DEPTH);
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        const char *text = (const char *)ev->data.scalar.value;
        bool quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
        if (strlen(text) != ev->data.scalar.length) {
            rc = PERR(p, &m, "a NUL character inside a string is not supported");
        } else if (!(rc = check_tag(p, ev->data.scalar.tag, &m, true, &quoted)) &&
                   !(rc = count_nodes(p, 1, &m))) {
            *out = input_yscalar_new(p->a, p->o, line, col, text, quoted);
            const char *anc = (const char *)ev->data.scalar.anchor;
            add_anchor(p, anc ? input_yarena_strdup(p->a, anc) : NULL, *out);
        }
        yaml_event_delete(ev);
        return rc;
    }
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT: {
        bool is_map = ev->type == YAML_MAPPING_START_EVENT;
        const yaml_char_t *tag = is_map ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
        const yaml_char_t *anc =
            is_map ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor;
        const char *anchor_name = anc ? input_yarena_strdup(p->a, (const char *)anc) : NULL;
        rc = check_tag(p, tag, &m, false, NULL);
        yaml_event_delete(ev);
        if (rc || (rc = count_nodes(p, 1, &m)))
            return rc;
        input_ynode *n = input_ynode_new(p->a, is_map ? INPUT_YMAP : INPUT_YSEQ, p->o, line, col);
        rc = is_map ? parse_mapping(p, n, depth) : parse_sequence(p, n, depth);
        if (rc)
            return rc;
        add_anchor(p, anchor_name, n);
        *out = n;
        return 0;
    }
    case YAML_ALIAS_EVENT: {
        const char *name = (const char *)ev->data.alias.anchor;
        const input_ynode *target = NULL;
        for (size_t i = p->n_anchors; i-- > 0;) /* the latest definition wins */
            if (strcmp(p->anchors[i].name, name) == 0) {
                target = p->anchors[i].node;
                break;
            }
        if (!target)
            rc = PERR(p, &m, "unknown anchor '%s' (an alias must follow its anchor's node)",
                      name);
        else if (depth + tree_depth(target) - 1 > INPUT_YAML_MAX_DEPTH)
            rc = PERR(p, &m, "YAML nesting deeper than %d levels", INPUT_YAML_MAX_DEPTH);
        else if (!(rc = count_nodes(p, target->weight, &m)))
            *out = copy_tree(p->a, target); /* keeps the anchor's text positions */
        yaml_event_delete(ev);
        return rc;
    }
    default:
        yaml_event_delete(ev);
        return PERR(p, &m, "unexpected YAML event %d", (int)ev->type);
    }
}

static int parse_document(parser *p, input_ynode **root)
{
    yaml_event_t ev;
    int rc = next_event(p, &ev);
    if (rc)
        return rc;
    SIM_ASSERT(ev.type == YAML_STREAM_START_EVENT, "event %d", (int)ev.type);
    yaml_event_delete(&ev);
    if ((rc = next_event(p, &ev)))
        return rc;
    if (ev.type == YAML_STREAM_END_EVENT) {
        yaml_event_delete(&ev);
        if (p->flags & INPUT_YAML_FLOW_VALUE) {
            *root = input_yscalar_new(p->a, p->o, 0, 0, "", false);
            return 0;
        }
        return sim_diag_error(p->d, p->o->name, 1, 1, "empty document");
    }
    SIM_ASSERT(ev.type == YAML_DOCUMENT_START_EVENT, "event %d", (int)ev.type);
    yaml_event_delete(&ev);
    if ((rc = next_event(p, &ev)))
        return rc;
    yaml_mark_t root_mark = ev.start_mark;
    if ((rc = parse_node(p, &ev, 1, root)))
        return rc;
    if (!(p->flags & INPUT_YAML_FLOW_VALUE) && input_ynode_is_null(*root))
        return PERR(p, &root_mark, "empty document");
    if ((rc = next_event(p, &ev)))
        return rc;
    SIM_ASSERT(ev.type == YAML_DOCUMENT_END_EVENT, "event %d", (int)ev.type);
    yaml_event_delete(&ev);
    if ((rc = next_event(p, &ev)))
        return rc;
    if (ev.type == YAML_DOCUMENT_START_EVENT) {
        yaml_mark_t m = ev.start_mark;
        yaml_event_delete(&ev);
        PERR(p, &m, "a second YAML document ('---') is not supported");
        sim_diag_hint(p->d, "a file holds exactly one document; remove the '---' line");
        return SIM_EINVAL;
    }
    yaml_event_delete(&ev);
    return 0;
}

int input_yaml_parse(input_yarena *a, const char *text, size_t len, const input_yorigin *origin,
                  unsigned flags, input_ynode **root, sim_diag *d)
{
    parser p = {.a = a, .o = origin, .d = d, .text = text, .len = len, .flags = flags};
    *root = NULL;
    if (!yaml_parser_initialize(&p.yp))
        return sim_diag_error_code(d, SIM_ENOMEM, origin->name, 0, 0, "out of memory");
    char *wrapped = NULL;
    if (flags & INPUT_YAML_FLOW_VALUE) {
        /* Parse "[VALUE]": the brackets force flow context (no block structure, no second
         * document), and more than one item means the value was not one flow value. */
        wrapped = sim_calloc(len + 3, 1);
        wrapped[0] = '[';
        memcpy(wrapped + 1, text, len);
        wrapped[len + 1] = ']';
        p.text = wrapped;
        p.len = len + 2;
    }
    yaml_parser_set_input_string(&p.yp, (const unsigned char *)p.text, p.len);
    input_ynode *doc = NULL;
    int rc = parse_document(&p, &doc);
    if (rc == 0 && (flags & INPUT_YAML_FLOW_VALUE)) {
        SIM_ASSERT(doc->kind == INPUT_YSEQ, "kind %d", (int)doc->kind);
        if (doc->n == 0)
            doc = input_yscalar_new(a, origin, 0, 0, "", false);
        else if (doc->n == 1)
            doc = doc->items[0];
        else
            rc = sim_diag_error(d, origin->name, 0, 0,
                                "invalid YAML value: %zu comma-separated values (quote the value, "
                                "or write a [list])",
                                doc->n);
    }
    if (rc == 0)
        *root = doc;
    yaml_parser_delete(&p.yp);
    sim_free(wrapped);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Emitter                                                                                  */

typedef struct outbuf {
    char *data;
    size_t len, cap;
} outbuf;

static int write_handler(void *data, unsigned char *buffer, size_t size)
{
    outbuf *o = data;
    SIM_GROW(o->data, o->cap, o->len + size + 1);
    memcpy(o->data + o->len, buffer, size);
    o->len += size;
    o->data[o->len] = '\0';
    return 1;
}

/* Lists of scalars (or of lists of scalars, like efficiency curves) read best in flow style. */
static bool flowable(const input_ynode *n)
{
    if (n->kind == INPUT_YSCALAR)
        return true;
    if (n->kind == INPUT_YMAP)
        return false;
    for (size_t i = 0; i < n->n; i++)
        if (n->items[i]->kind == INPUT_YMAP ||
            (n->items[i]->kind == INPUT_YSEQ && !flowable(n->items[i])))
            return false;
    return true;
}

static int emit_node(yaml_emitter_t *em, const input_ynode *n, bool flow)
{
    yaml_event_t ev;
    switch (n->kind) {
    case INPUT_YSCALAR:
        if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)(uintptr_t)n->text,
                                          (int)strlen(n->text), !n->quoted, n->quoted,
                                          n->quoted ? YAML_DOUBLE_QUOTED_SCALAR_STYLE
                                                    : YAML_PLAIN_SCALAR_STYLE))
            return SIM_EINTERNAL;
        return yaml_emitter_emit(em, &ev) ? 0 : SIM_EINTERNAL;
    case INPUT_YSEQ: {
        bool f = flow || flowable(n);
        if (!yaml_sequence_start_event_initialize(
                &ev, NULL, NULL, 1, f ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return SIM_EINTERNAL;
        for (size_t i = 0; i < n->n; i++)
            if (emit_node(em, n->items[i], f))
                return SIM_EINTERNAL;
        if (!yaml_sequence_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev))
            return SIM_EINTERNAL;
        return 0;
    }
    case INPUT_YMAP:
        if (!yaml_mapping_start_event_initialize(
                &ev, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return SIM_EINTERNAL;
        for (size_t i = 0; i < n->n; i++)
            if (emit_node(em, n->pairs[i].key, flow) || emit_node(em, n->pairs[i].value, flow))
                return SIM_EINTERNAL;
        if (!yaml_mapping_end_event_initialize(&ev) || !yaml_emitter_emit(em, &ev))
            return SIM_EINTERNAL;
        return 0;
    }
    return SIM_EINTERNAL;
}

int input_yaml_emit(const input_ynode *root, char **text_out)
{
    yaml_emitter_t em;
    outbuf o = {0};
    *text_out = NULL;
    if (!yaml_emitter_initialize(&em))
        return SIM_EINTERNAL;
    yaml_emitter_set_output(&em, write_handler, &o);
    yaml_emitter_set_unicode(&em, 1);
    yaml_emitter_set_width(&em, -1);
    yaml_emitter_set_indent(&em, 2);
    yaml_event_t ev;
    int rc = SIM_EINTERNAL;
    if (yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) &&
        yaml_emitter_emit(&em, &ev) &&
        yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) &&
        yaml_emitter_emit(&em, &ev) && emit_node(&em, root, false) == 0 &&
        yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&em, &ev) &&
        yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev) &&
        yaml_emitter_flush(&em))
        rc = 0;
    yaml_emitter_delete(&em);
    if (rc) {
        sim_free(o.data);
        return rc;
    }
    if (!o.data)
        o.data = sim_strdup("");
    *text_out = o.data;
    return 0;
}
