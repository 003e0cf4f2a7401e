/* Scenario loader: files, references, --set overrides, and the hand-off to the schema
 * (see load.h for the steps). */
#include "core/sim.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input/import.h"
#include "input/keys.h"
#include "input/load.h"
#include "input/schema.h"
#include "input/suggest.h"
#include "input/ytree.h"

#define PATH_MAX_LEN 4096

typedef struct loader {
    input_yarena *arena;
    sim_diag *diag;
    input_input_file *inputs;
    size_t n_inputs, cap_inputs;
    const char *base; /* dotted path of the tree's root in a scenario: "" or "topology" */
    char notes[8192];  /* what the user should know (a config.json's ignored fields) */
} loader;

typedef enum ref_kind { REF_TOPOLOGY, REF_MODEL, REF_GPU } ref_kind;

static const struct {
    const char *what;    /* for messages */
    const char *subdir;  /* catalog folder below a data directory */
} refs[] = {
    [REF_TOPOLOGY] = {"topology", "topologies"},
    [REF_MODEL] = {"model", "workloads"},
    [REF_GPU] = {"GPU", "topologies/gpus"},
};

/* ---------------------------------------------------------------------------------------- */
/* Paths                                                                                    */

static void path_join(const char *dir, const char *rel, char *out, size_t size)
{
    if (rel[0] == '/' || !dir[0] || strcmp(dir, ".") == 0)
        snprintf(out, size, "%s", rel);
    else
        snprintf(out, size, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", rel);
}

static void path_dir(const char *path, char *out, size_t size)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, size, ".");
    else if (slash == path)
        snprintf(out, size, "/");
    else
        snprintf(out, size, "%.*s", (int)(slash - path), path);
}

/* Lexical normalisation: drops "." segments and folds "dir/.." pairs ("scenarios/../x.yaml"
 * -> "x.yaml"). Only used for display, and only when it names the same file (symlinks). */
static void path_normalize(const char *path, char *out, size_t size)
{
    char buf[PATH_MAX_LEN];
    snprintf(buf, sizeof buf, "%s", path);
    const char *seg[512];
    size_t n = 0;
    bool absolute = buf[0] == '/';
    for (char *save = NULL, *s = strtok_r(buf, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (strcmp(s, ".") == 0)
            continue;
        if (strcmp(s, "..") == 0 && n > 0 && strcmp(seg[n - 1], "..") != 0) {
            n--;
            continue;
        }
        if (strcmp(s, "..") == 0 && absolute)
            continue;
        if (n < SIM_ARRAY_LEN(seg))
            seg[n++] = s;
    }
    size_t len = 0;
    out[0] = '\0';
    if (absolute)
        len += (size_t)snprintf(out, size, "/");
    for (size_t i = 0; i < n && len < size; i++)
        len += (size_t)snprintf(out + len, size - len, "%s%s", i ? "/" : "", seg[i]);
    if (!out[0])
        snprintf(out, size, ".");
}

/* The path shown in messages and recorded as an input: the opened path, lexically normalised
 * when that names the same file, and relative to the current directory when below it (files
 * found in the data directories are absolute). */
static void display_path(const char *open_path, char *out, size_t size)
{
    char norm[PATH_MAX_LEN];
    path_normalize(open_path, norm, sizeof norm);
    struct stat a, b;
    const char *shown = open_path;
    if (strcmp(norm, open_path) != 0 && stat(open_path, &a) == 0 && stat(norm, &b) == 0 &&
        a.st_dev == b.st_dev && a.st_ino == b.st_ino)
        shown = norm;
    char cwd[PATH_MAX_LEN];
    size_t n;
    if (shown[0] == '/' && getcwd(cwd, sizeof cwd) && (n = strlen(cwd)) > 1 &&
        strncmp(shown, cwd, n) == 0 && shown[n] == '/')
        shown += n + 1;
    snprintf(out, size, "%s", shown);
}

static bool is_regular_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Data directories, in search order (load.h). Returns how many were stored. */
static size_t data_dirs(const char *dirs[3])
{
    size_t n = 0;
    const char *env = getenv("STEPSIM_DATA_DIR");
    if (env && env[0])
        dirs[n++] = env;
    dirs[n++] = STEPSIM_SOURCE_DIR;
    dirs[n++] = STEPSIM_DATA_DIR;
    return n;
}

/* ---------------------------------------------------------------------------------------- */
/* Files                                                                                    */

static void hash_hex(const char *data, size_t len, char out[17])
{
    snprintf(out, 17, "%016" PRIx64, sim_fnv1a64(SIM_FNV64_OFFSET, data, len));
}

static void record_input(loader *L, const char *display, const char *data, size_t len)
{
    for (size_t i = 0; i < L->n_inputs; i++)
        if (strcmp(L->inputs[i].path, display) == 0)
            return;
    SIM_GROW(L->inputs, L->cap_inputs, L->n_inputs + 1);
    L->inputs[L->n_inputs].path = sim_strdup(display);
    hash_hex(data, len, L->inputs[L->n_inputs].hash);
    L->n_inputs++;
}

/* Where a file error goes: at the referencing value, or at the file itself (no position). */
static int file_error(loader *L, int code, const input_ynode *ref, const char *display,
                      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int file_error(loader *L, int code, const input_ynode *ref, const char *display,
                      const char *fmt, ...)
{
    char msg[SIM_DIAG_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (ref)
        return sim_diag_error_code(L->diag, code, ref->origin->name, ref->line, ref->col, "%s",
                                   msg);
    return sim_diag_error_code(L->diag, code, display, 0, 0, "%s", msg);
}

/* Reads and parses one YAML file. `ref` is the node that named it (NULL for the scenario). */
static int load_file(loader *L, const char *open_path, const char *display, const input_ynode *ref,
                     input_ynode **root)
{
    const char *kind;
    int fd = sim_open_regular(open_path, &kind);
    if (fd < 0 && kind) {
        if (ref)
            return file_error(L, SIM_EINVAL, ref, display, "'%s' is not a regular file (%s)",
                              display, kind);
        return file_error(L, SIM_EINVAL, NULL, display, "not a regular file (%s)", kind);
    }
    FILE *f = fd < 0 ? NULL : fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return file_error(L, e == ENOENT || e == ENOTDIR ? SIM_ENOENT : SIM_EINVAL, ref, display,
                          "cannot open '%s': %s", display, strerror(e));
    }
    char *data = NULL;
    size_t len = 0, cap = 0;
    int rc = 0;
    for (;;) {
        SIM_GROW(data, cap, len + 65536);
        size_t got = fread(data + len, 1, cap - len, f);
        len += got;
        if (got == 0) {
            if (ferror(f))
                rc = file_error(L, SIM_EINVAL, ref, display, "cannot read '%s': %s", display,
                                strerror(errno));
            break;
        }
        if (len > INPUT_YAML_MAX_FILE_BYTES) {
            rc = file_error(L, SIM_EINVAL, ref, display, "'%s' is larger than %u MiB", display,
                            INPUT_YAML_MAX_FILE_BYTES >> 20);
            break;
        }
    }
    fclose(f);
    if (rc == 0) {
        record_input(L, display, data, len);
        char dir[PATH_MAX_LEN];
        path_dir(open_path, dir, sizeof dir);
        const input_yorigin *o = input_yorigin_new(L->arena, display, dir, false);
        rc = input_yaml_parse(L->arena, data, len, o, 0, root, L->diag);
    }
    sim_free(data);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* References                                                                               */

static int cmp_names(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

/* Did-you-mean over the catalog entries (*.yaml stems) in the searched folders. */
static void suggest_catalog(loader *L, const char *name, char dirs[][PATH_MAX_LEN], size_t n_dirs)
{
    enum { MAX_NAMES = 256 };
    char(*names)[64] = sim_calloc(MAX_NAMES, sizeof *names);
    size_t n = 0;
    for (size_t d = 0; d < n_dirs; d++) {
        DIR *dir = opendir(dirs[d]);
        if (!dir)
            continue;
        for (struct dirent *e = readdir(dir); e && n < MAX_NAMES; e = readdir(dir)) {
            size_t len = strlen(e->d_name);
            if (len > 5 && len < 64 + 5 && strcmp(e->d_name + len - 5, ".yaml") == 0)
                snprintf(names[n++], 64, "%.*s", (int)(len - 5), e->d_name);
        }
        closedir(dir);
    }
    qsort(names, n, sizeof *names, cmp_names); /* readdir order is arbitrary */
    const char **ptrs = sim_calloc(n ? n : 1, sizeof *ptrs);
    for (size_t i = 0; i < n; i++)
        ptrs[i] = names[i];
    const char *sug = input_suggest(name, ptrs, n);
    for (size_t i = 0; !sug && i < n; i++) /* "h100" -> "h100-sxm" */
        if (strncmp(ptrs[i], name, strlen(name)) == 0)
            sug = ptrs[i];
    if (sug) {
        sim_diag_hint(L->diag, "did you mean '%s'?", sug);
    } else if (n > 0) {
        char list[SIM_DIAG_HINT_MAX / 2];
        size_t len = 0;
        list[0] = '\0';
        for (size_t i = 0; i < n && len + 70 < sizeof list; i++)
            if (i == 0 || strcmp(ptrs[i], ptrs[i - 1]) != 0)
                len += (size_t)snprintf(list + len, sizeof list - len, "%s%s", len ? ", " : "",
                                        ptrs[i]);
        sim_diag_hint(L->diag, "available: %s", list);
    }
    sim_free(ptrs);
    sim_free(names);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t len = strlen(s), n = strlen(suffix);
    return len > n && strcmp(s + len - n, suffix) == 0;
}

static bool looks_like_path(const char *s)
{
    return strchr(s, '/') || ends_with(s, ".yaml") || ends_with(s, ".yml") ||
           ends_with(s, ".json");
}

static bool is_directory(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A model given as a Hugging Face config.json (or the directory holding one): its fields as
 * the model's keys, named after the directory (or _name_or_path's last part). */
static int translate_hf(loader *L, const char *open_path, input_ynode **root)
{
    char name[128], dir[PATH_MAX_LEN];
    path_dir(open_path, dir, sizeof dir);
    const input_ypair *np = input_ymap_find(*root, "_name_or_path");
    const char *src = np && np->value->kind == INPUT_YSCALAR && np->value->text[0]
                          ? np->value->text
                          : dir;
    const char *slash = strrchr(src, '/');
    snprintf(name, sizeof name, "%.100s", slash && slash[1] ? slash + 1 : src);
    if (!name[0] || strcmp(name, ".") == 0)
        snprintf(name, sizeof name, "hf-model");
    char notes[768];
    int rc = input__hf_model(L->arena, *root, name, root, notes, sizeof notes, L->diag);
    if (rc == 0 && notes[0]) {
        char display[PATH_MAX_LEN];
        display_path(open_path, display, sizeof display);
        size_t len = strlen(L->notes);
        snprintf(L->notes + len, sizeof L->notes - len, "%s%s: note: %s", len ? "\n" : "",
                 display, notes);
    }
    return rc;
}

/* If pair->value is a reference (a string), loads the file it names and puts the file's
 * mapping in its place. Mappings and anything else are left to the schema. */
static int resolve_ref(loader *L, input_ypair *pair, ref_kind kind)
{
    const input_ynode *v = pair->value;
    if (v->kind != INPUT_YSCALAR || input_ynode_is_null(v))
        return 0;
    if (!v->text[0])
        return 0;
    char open_path[PATH_MAX_LEN];
    if (looks_like_path(v->text)) {
        path_join(v->origin->dir, v->text, open_path, sizeof open_path);
    } else {
        /* A catalog name: GPUs next to the naming file first, then the data directories. */
        char cand[4][PATH_MAX_LEN];
        char cand_dirs[4][PATH_MAX_LEN];
        size_t n = 0;
        if (kind == REF_GPU) {
            path_join(v->origin->dir, "gpus", cand_dirs[n], sizeof cand_dirs[n]);
            n++;
        }
        const char *dd[3];
        size_t n_dd = data_dirs(dd);
        for (size_t i = 0; i < n_dd; i++, n++)
            snprintf(cand_dirs[n], sizeof cand_dirs[n], "%s/%s", dd[i], refs[kind].subdir);
        size_t found = n;
        for (size_t i = 0; i < n; i++) {
            snprintf(cand[i], sizeof cand[i], "%s/%s.yaml", cand_dirs[i], v->text);
            if (found == n && is_regular_file(cand[i]))
                found = i;
        }
        if (found == n) {
            sim_diag_error_code(L->diag, SIM_ENOENT, v->origin->name, v->line, v->col,
                                "unknown %s '%s': no %s/%s.yaml in the data directories",
                                refs[kind].what, v->text, refs[kind].subdir, v->text);
            suggest_catalog(L, v->text, cand_dirs, n);
            char looked[SIM_DIAG_HINT_MAX];
            size_t len = 0;
            looked[0] = '\0';
            for (size_t i = 0; i < n && len < sizeof looked; i++)
                len += (size_t)snprintf(looked + len, sizeof looked - len, "%s%s", i ? ", " : "",
                                        cand[i]);
            sim_diag_hint(L->diag, "looked for %s", looked);
            sim_diag_hint(L->diag, "a value with '/' or ending in .yaml is a path relative to "
                                   "the file that names it");
            return SIM_ENOENT;
        }
        snprintf(open_path, sizeof open_path, "%s", cand[found]);
    }
    if (kind == REF_MODEL && is_directory(open_path)) { /* a Hugging Face model directory */
        size_t len = strlen(open_path);
        snprintf(open_path + len, sizeof open_path - len, "%sconfig.json",
                 len && open_path[len - 1] == '/' ? "" : "/");
    }
    char display[PATH_MAX_LEN];
    display_path(open_path, display, sizeof display);
    input_ynode *root;
    int rc = load_file(L, open_path, display, v, &root);
    if (rc)
        return rc;
    if (kind == REF_MODEL && ends_with(open_path, ".json") &&
        (rc = translate_hf(L, open_path, &root)))
        return rc;
    if (root->kind != INPUT_YMAP)
        return sim_diag_error(L->diag, root->origin->name, root->line, root->col,
                              "a %s file must be a mapping of keys, not %s", refs[kind].what,
                              input_ykind_name(root->kind));
    pair->value = root;
    return 0;
}

/* The GPU references of a topology mapping: its gpu, and each node group's. */
static int resolve_gpus(loader *L, input_ynode *topo)
{
    if (topo->kind != INPUT_YMAP)
        return 0;
    input_ypair *gpu = input_ymap_find(topo, "gpu");
    int rc = gpu ? resolve_ref(L, gpu, REF_GPU) : 0;
    input_ypair *ng = input_ymap_find(topo, "node_groups");
    for (size_t i = 0; !rc && ng && ng->value->kind == INPUT_YSEQ && i < ng->value->n; i++) {
        input_ynode *item = ng->value->items[i];
        input_ypair *g = item->kind == INPUT_YMAP ? input_ymap_find(item, "gpu") : NULL;
        if (g)
            rc = resolve_ref(L, g, REF_GPU);
    }
    return rc;
}

/* Loads every reference still in the tree: topology (then its GPUs) and model, in key
 * order. */
static int resolve_all(loader *L, input_ynode *root)
{
    for (size_t i = 0; i < root->n; i++) {
        input_ypair *p = &root->pairs[i];
        int rc = 0;
        if (strcmp(p->key->text, "topology") == 0) {
            if ((rc = resolve_ref(L, p, REF_TOPOLOGY)) || (rc = resolve_gpus(L, p->value)))
                return rc;
        } else if (strcmp(p->key->text, "model") == 0) {
            if ((rc = resolve_ref(L, p, REF_MODEL)))
                return rc;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Overrides                                                                                */

#define SET_DEPTH_MAX 16

/* Whether a dotted path names a reference key (a value that may be a file), and which. */
static int ref_slot(const char *path, ref_kind *kind)
{
    if (strcmp(path, "topology") == 0)
        *kind = REF_TOPOLOGY;
    else if (strcmp(path, "model") == 0)
        *kind = REF_MODEL;
    else if (strcmp(path, "topology.gpu") == 0)
        *kind = REF_GPU;
    else
        return 0;
    return 1;
}

/* Makes pair->value a mapping if it is a reference to a file (loads the file). */
static int resolve_slot(loader *L, input_ypair *pair, const char *path)
{
    ref_kind kind;
    char full[SET_DEPTH_MAX * 129 + 16];
    snprintf(full, sizeof full, "%s%s%s", L->base ? L->base : "", L->base && L->base[0] ? "." : "",
             path);
    if (pair->value->kind == INPUT_YSCALAR && ref_slot(full, &kind))
        return resolve_ref(L, pair, kind);
    return 0;
}

/* Deep merge of an override mapping into the existing mapping at `path`: keys of `src`
 * replace those of `dst`, except that a mapping merges into a mapping (a reference to a file
 * is loaded first); new keys are appended. Sweep axes merge the same way (docs/sweeps.md). */
static int merge_map(loader *L, input_ynode *dst, const input_ynode *src, const char *path)
{
    for (size_t i = 0; i < src->n; i++) {
        const input_ypair *sp = &src->pairs[i];
        input_ypair *dp = input_ymap_find(dst, sp->key->text);
        if (!dp) {
            input_ymap_append(L->arena, dst, sp->key, sp->value);
            continue;
        }
        char child[512];
        snprintf(child, sizeof child, "%s.%s", path, sp->key->text);
        int rc;
        if (sp->value->kind == INPUT_YMAP && (rc = resolve_slot(L, dp, child)))
            return rc;
        if (dp->value->kind == INPUT_YMAP && sp->value->kind == INPUT_YMAP) {
            if ((rc = merge_map(L, dp->value, sp->value, child)))
                return rc;
        } else {
            dp->value = sp->value;
        }
    }
    return 0;
}

static int apply_set(loader *L, input_ynode *root, const char *set)
{
    char origin_name[SIM_DIAG_FILE_MAX];
    snprintf(origin_name, sizeof origin_name, "--set %s", set);
    const input_yorigin *o = input_yorigin_new(L->arena, origin_name, ".", true);
    const char *eq = strchr(set, '=');
    if (!eq || eq == set) {
        sim_diag_error(L->diag, o->name, 0, 0, "expected KEY=VALUE");
        sim_diag_hint(L->diag, "KEY is a dotted path such as parallel.dp or topology.gpu.memory");
        return SIM_EINVAL;
    }

    char segs[SET_DEPTH_MAX][128];
    size_t n = 0;
    for (const char *s = set; s < eq;) {
        const char *dot = memchr(s, '.', (size_t)(eq - s));
        const char *end = dot ? dot : eq;
        size_t len = (size_t)(end - s);
        if (len == 0 || len >= sizeof segs[0] || n == SET_DEPTH_MAX)
            return sim_diag_error(L->diag, o->name, 0, 0, "invalid key path '%.*s'",
                                  (int)(eq - set), set);
        memcpy(segs[n], s, len);
        segs[n][len] = '\0';
        n++;
        s = dot ? dot + 1 : eq;
        if (dot && dot + 1 == eq)
            return sim_diag_error(L->diag, o->name, 0, 0, "invalid key path '%.*s'",
                                  (int)(eq - set), set);
    }

    input_ynode *value;
    int rc = input_yaml_parse(L->arena, eq + 1, strlen(eq + 1), o, INPUT_YAML_FLOW_VALUE, &value,
                           L->diag);
    if (rc)
        return rc;

    input_ynode *cur = root;
    char path[SET_DEPTH_MAX * 129] = "";
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(path);
        snprintf(path + len, sizeof path - len, "%s%s", i ? "." : "", segs[i]);
        input_ypair *p = input_ymap_find(cur, segs[i]);
        if (i + 1 == n) {
            /* The last segment: set, or merge a mapping into a mapping. */
            if (!p) {
                input_ymap_append(L->arena, cur,
                                  input_yscalar_new(L->arena, o, 0, 0, segs[i], false), value);
            } else {
                if (value->kind == INPUT_YMAP && (rc = resolve_slot(L, p, path)))
                    return rc;
                if (value->kind == INPUT_YMAP && p->value->kind == INPUT_YMAP)
                    return merge_map(L, p->value, value, path);
                p->value = value;
            }
            return 0;
        }
        if (!p) {
            /* An absent optional mapping: create it; the schema judges the key names. */
            input_ymap_append(L->arena, cur, input_yscalar_new(L->arena, o, 0, 0, segs[i], false),
                           input_ynode_new(L->arena, INPUT_YMAP, o, 0, 0));
            p = &cur->pairs[cur->n - 1];
        } else if (input_ynode_is_null(p->value)) {
            p->value = input_ynode_new(L->arena, INPUT_YMAP, o, 0, 0);
        } else if ((rc = resolve_slot(L, p, path))) {
            return rc;
        }
        if (p->value->kind != INPUT_YMAP) {
            sim_diag_error(L->diag, o->name, 0, 0, "cannot set '%.*s': '%s' is %s, not a mapping",
                           (int)(eq - set), set, path, input_ykind_name(p->value->kind));
            if (p->value->kind == INPUT_YSCALAR)
                sim_diag_hint(L->diag, "its value is '%s'", p->value->text);
            return SIM_EINVAL;
        }
        cur = p->value;
    }
    return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* parallel.from: a training framework's config as the scenario's keys (import.h)          */

/* The mapping at dotted path `path` below root, created as needed (NULL: a scalar is in the
 * way). */
static input_ynode *map_at(loader *L, input_ynode *root, const char *path, size_t len,
                           const input_yorigin *o)
{
    input_ynode *cur = root;
    char seg[128];
    for (size_t i = 0; i < len;) {
        const char *dot = memchr(path + i, '.', len - i);
        size_t n = dot ? (size_t)(dot - (path + i)) : len - i;
        snprintf(seg, sizeof seg, "%.*s", (int)n, path + i);
        input_ypair *p = input_ymap_find(cur, seg);
        if (!p) {
            input_ymap_append(L->arena, cur, input_yscalar_new(L->arena, o, 0, 0, seg, false),
                              input_ynode_new(L->arena, INPUT_YMAP, o, 0, 0));
            p = &cur->pairs[cur->n - 1];
        }
        if (p->value->kind != INPUT_YMAP)
            return NULL;
        cur = p->value;
        i += n + (dot ? 1 : 0);
    }
    return cur;
}

/* An integer in the tree (parallel.dp, training.micro_batch), or `dflt`. */
static long long tree_int(const input_ynode *root, const char *path, long long dflt)
{
    const input_ypair *p = input_ypath_find(root, path);
    if (!p || p->value->kind != INPUT_YSCALAR)
        return dflt;
    char *end;
    long long x = strtoll(p->value->text, &end, 10);
    return *end ? dflt : x;
}

static int apply_from(loader *L, input_ynode *root)
{
    input_ypair *par = input_ymap_find(root, "parallel");
    input_ypair *from = par && par->value->kind == INPUT_YMAP ? input_ymap_find(par->value, "from")
                                                              : NULL;
    if (!from)
        return 0;
    const input_ynode *v = from->value;
    const input_ypair *fw_pair = v->kind == INPUT_YMAP && v->n == 1 ? &v->pairs[0] : NULL;
    int fw = fw_pair ? input_framework_of(fw_pair->key->text) : -1;
    if (fw < 0 || fw_pair->value->kind != INPUT_YSCALAR) {
        const input_ynode *at = fw_pair ? fw_pair->key : v;
        sim_diag_error(L->diag, at->origin->name, at->line, at->col,
                       "parallel.from: expected one of {deepspeed: FILE}, {accelerate: FILE}, "
                       "{torchtitan: FILE}, {megatron: \"ARGUMENTS\"}");
        sim_diag_hint(L->diag, "the framework's config supplies the scenario's training and "
                               "parallel keys (docs/import.md)");
        return SIM_EINVAL;
    }
    const input_ynode *src = fw_pair->value;
    char path[PATH_MAX_LEN];
    bool inline_args = fw == INPUT_FW_MEGATRON && strncmp(src->text, "--", 2) == 0;
    if (inline_args)
        snprintf(path, sizeof path, "%s", src->text);
    else /* a file, beside the scenario like every other reference */
        path_join(src->origin->dir, src->text, path, sizeof path);
    if (!inline_args) {
        const char *kind;
        int fd = sim_open_regular(path, &kind);
        if (fd < 0) {
            int err = errno, code = err == ENOENT && !kind ? SIM_ENOENT : SIM_EINVAL;
            sim_diag_error_code(L->diag, code, src->origin->name, src->line, src->col,
                                "parallel.from: %s: %s", path,
                                kind ? kind : strerror(err));
            sim_diag_hint(L->diag, "a relative path is read from the scenario's folder%s",
                          fw == INPUT_FW_MEGATRON ? "; inline arguments start with --" : "");
            return code;
        }
        close(fd);
    }
    input_import im;
    int rc = input_import_read((input_framework)fw, path, &im, L->diag);
    if (rc)
        return rc;
    if (!inline_args) { /* its bytes, for the record of inputs */
        FILE *f = fopen(path, "rb");
        char *data = sim_calloc(16u << 20, 1);
        size_t len = f ? fread(data, 1, (16u << 20) - 1, f) : 0;
        if (f)
            fclose(f);
        char display[PATH_MAX_LEN];
        display_path(path, display, sizeof display);
        record_input(L, display, data, len);
        sim_free(data);
    }
    /* the framework's settings take the place of `from` */
    for (size_t i = 0; i < par->value->n; i++)
        if (&par->value->pairs[i] == from) {
            memmove(&par->value->pairs[i], &par->value->pairs[i + 1],
                    (par->value->n - i - 1) * sizeof *from);
            par->value->n--;
            break;
        }
    const input_yorigin *o = input_yorigin_new(L->arena, im.file, src->origin->dir, false);
    /* Megatron's arguments describe a model too: the scenario's own model takes its place */
    bool own_model = input_ymap_find(root, "model") != NULL;
    long long accum = 0;
    const input_import_item *accum_at = NULL;
    for (size_t i = 0; i < im.n && !rc; i++) {
        const input_import_item *it = &im.items[i];
        if (strcmp(it->key, "training.grad_accum") == 0) {
            accum = strtoll(it->value, NULL, 10);
            accum_at = it;
            continue;
        }
        if (own_model && strncmp(it->key, "model.", 6) == 0)
            continue;
        const char *dot = strrchr(it->key, '.');
        input_ynode *m = map_at(L, root, it->key, dot ? (size_t)(dot - it->key) : 0, o);
        const input_ypair *have = m ? input_ymap_find(m, dot ? dot + 1 : it->key) : NULL;
        if (!m || have) {
            const input_ynode *at = have ? have->key : src;
            rc = sim_diag_error(L->diag, at->origin->name, at->line, at->col,
                                "%s: given here and by %s (%s)", it->key, im.file, it->source);
            sim_diag_hint(L->diag, "keep one: the framework's value, or this one");
            break;
        }
        input_ymap_append(L->arena, m, input_yscalar_new(L->arena, o, it->line, it->col,
                                                         dot ? dot + 1 : it->key, false),
                          input_yscalar_new(L->arena, o, it->line, it->col, it->value, false));
    }
    if (!rc && accum_at) { /* micro-batches per replica: the step's sequences need dp */
        long long gb = tree_int(root, "training.micro_batch", 1) * accum *
                       tree_int(root, "parallel.dp", 1);
        const input_ypair *have = input_ypath_find(root, "training.global_batch");
        if (have && tree_int(root, "training.global_batch", -1) != gb) {
            rc = sim_diag_error(L->diag, have->key->origin->name, have->key->line,
                                have->key->col, "training.global_batch: %s, but %s's %s gives "
                                "micro_batch x %lld x dp = %lld", have->value->text, im.file,
                                accum_at->source, accum, gb);
            sim_diag_hint(L->diag, "keep one of them");
        } else if (!have) {
            char text[32];
            snprintf(text, sizeof text, "%lld", gb);
            input_ymap_append(L->arena, map_at(L, root, "training", 8, o),
                              input_yscalar_new(L->arena, o, accum_at->line, accum_at->col,
                                                "global_batch", false),
                              input_yscalar_new(L->arena, o, accum_at->line, accum_at->col,
                                                input_yarena_strdup(L->arena, text), false));
        }
    }
    if (!rc && im.model[0] && !input_ymap_find(root, "model")) {
        input_ymap_append(L->arena, root, input_yscalar_new(L->arena, o, 0, 0, "model", false),
                          input_yscalar_new(L->arena, o, 0, 0,
                                            input_yarena_strdup(L->arena, im.model), false));
        rc = resolve_ref(L, &root->pairs[root->n - 1], REF_MODEL);
    }
    if (!rc && im.unmapped[0]) {
        size_t len = strlen(L->notes);
        snprintf(L->notes + len, sizeof L->notes - len, "%s%.1000s: note: no stepsim "
                 "equivalent: %.4000s", len ? "\n" : "", im.file, im.unmapped);
    }
    input_import_clear(&im);
    return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Entry points                                                                             */

void input_scenario_info_destroy(input_scenario_info *info)
{
    if (!info)
        return;
    for (size_t i = 0; i < info->n_inputs; i++)
        sim_free(info->inputs[i].path);
    sim_free(info->inputs);
    sim_free(info->resolved_yaml);
    sim_free(info->notes);
    sim_free(info);
}

int input_scenario_load(const char *path, const char *const *sets, size_t n_sets,
                        plan_scenario *out, input_scenario_info **info_out, sim_diag *diag)
{
    return input_scenario_load_ex(path, sets, n_sets, out, info_out, diag, NULL);
}

int input_scenario_load_ex(const char *path, const char *const *sets, size_t n_sets,
                        plan_scenario *out, input_scenario_info **info_out, sim_diag *diag,
                        input_load_stage *stage)
{
    return input_scenario_load_opts(path, sets, n_sets, NULL, out, info_out, diag, stage);
}

int input_scenario_load_opts(const char *path, const char *const *sets, size_t n_sets,
                             const input_load_options *opt, plan_scenario *out,
                             input_scenario_info **info_out, sim_diag *diag,
                             input_load_stage *stage)
{
    if (stage)
        *stage = INPUT_LOAD_INPUT;
    loader L = {.arena = input_yarena_create(), .diag = diag, .base = ""};
    plan_scenario *sc = sim_calloc(1, sizeof *sc);
    input_scenario_info *info = NULL;
    input_ynode *root = NULL;
    int rc = load_file(&L, path, path, NULL, &root);
    if (rc)
        goto fail;
    if (root->kind != INPUT_YMAP) {
        rc = sim_diag_error(diag, path, root->line, root->col,
                            "a scenario must be a mapping of keys (name, topology, model, "
                            "training, parallel, simulation, collectives), not %s",
                            input_ykind_name(root->kind));
        goto fail;
    }
    for (size_t i = 0; i < n_sets; i++)
        if ((rc = apply_set(&L, root, sets[i])))
            goto fail;
    if ((rc = resolve_all(&L, root)) || (rc = apply_from(&L, root)))
        goto fail;

    plan_scenario_defaults(sc);
    input__scenario_prefill(sc);
    input_schema_ctx ctx = {.diag = diag};
    char stem[128];
    input__file_stem(path, stem, sizeof stem);
    if ((rc = input_schema_apply(input__scenario_schema(), root, NULL, sc, &ctx)))
        goto fail;
    if (stage)
        *stage = INPUT_LOAD_CHECKS;
    if ((rc = input__scenario_finish(root, stem, sc, &ctx)) ||
        (rc = input__check_work(root, sc, opt, &ctx)))
        goto fail;

    if (info_out) {
        info = sim_calloc(1, sizeof *info);
        if ((rc = input_yaml_emit(root, &info->resolved_yaml))) {
            sim_diag_error_code(diag, rc, path, 0, 0, "cannot write the resolved scenario as YAML");
            goto fail;
        }
        info->inputs = L.inputs;
        info->n_inputs = L.n_inputs;
        info->notes = L.notes[0] ? sim_strdup(L.notes) : NULL;
        L.inputs = NULL;
        L.n_inputs = 0;
        *info_out = info;
        info = NULL;
    }
    *out = *sc;
    rc = 0;
fail:
    input_scenario_info_destroy(info);
    for (size_t i = 0; i < L.n_inputs; i++)
        sim_free(L.inputs[i].path);
    sim_free(L.inputs);
    sim_free(sc);
    input_yarena_destroy(L.arena);
    return rc;
}

int input_topology_load_ref(const char *ref, hw_topology_spec *out, sim_diag *diag)
{
    char path[PATH_MAX_LEN];
    snprintf(path, sizeof path, "%s", ref);
    if (!looks_like_path(ref)) { /* a catalog name, as a scenario's `topology:` takes it */
        const char *dd[3];
        size_t n = data_dirs(dd);
        for (size_t i = 0; i < n; i++) {
            snprintf(path, sizeof path, "%s/topologies/%s.yaml", dd[i], ref);
            if (is_regular_file(path))
                break;
        }
        if (!is_regular_file(path))
            return sim_diag_error_code(diag, SIM_ENOENT, ref, 0, 0, "unknown topology '%s': no "
                                       "topologies/%s.yaml in the data directories", ref, ref);
    }
    return input_topology_load(path, NULL, 0, out, diag);
}

int input_topology_load(const char *path, const char *const *sets, size_t n_sets,
                     hw_topology_spec *out, sim_diag *diag)
{
    return input_topology_load_budget(path, sets, n_sets, 0, out, diag);
}

int input_topology_load_budget(const char *path, const char *const *sets, size_t n_sets,
                               double max_bytes, hw_topology_spec *out, sim_diag *diag)
{
    loader L = {.arena = input_yarena_create(), .diag = diag, .base = "topology"};
    hw_topology_spec *t = sim_calloc(1, sizeof *t);
    input_ynode *troot = NULL;
    int rc = load_file(&L, path, path, NULL, &troot);
    if (rc)
        goto fail;
    if (troot->kind != INPUT_YMAP) {
        rc = sim_diag_error(diag, path, troot->line, troot->col,
                            "a topology must be a mapping of keys (name, gpu, nodes, node, fabric, "
                            "or devices and links), not %s",
                            input_ykind_name(troot->kind));
        goto fail;
    }
    for (size_t i = 0; i < n_sets; i++)
        if ((rc = apply_set(&L, troot, sets[i])))
            goto fail;
    if ((rc = resolve_gpus(&L, troot)))
        goto fail;

    /* The checks read a scenario's tree ("topology.node.intra", ...): wrap the file's mapping
     * as `topology:` of a scenario. The wrapper has an origin of its own, so that a missing
     * required key is reported in the file, at its first key, as for a referenced file. */
    const input_yorigin *wo = input_yorigin_new(L.arena, path, ".", false);
    input_ynode *root = input_ynode_new(L.arena, INPUT_YMAP, wo, 0, 0);
    input_ynode *key = input_yscalar_new(L.arena, wo, 0, 0, "topology", false);
    input_ymap_append(L.arena, root, key, troot);

    input__topology_prefill(t);
    input_schema_ctx ctx = {.diag = diag};
    snprintf(ctx.path, sizeof ctx.path, "topology");
    char stem[128];
    input__file_stem(path, stem, sizeof stem);
    if ((rc = input_schema_apply(input__topology_schema(), troot, key, t, &ctx)) ||
        (rc = input__topology_finish(root, stem, t, &ctx)) ||
        (rc = input__check_topology_budget(root, t, max_bytes, &ctx)))
        goto fail;
    memcpy(out, t, sizeof *t);
    rc = 0;
fail:
    for (size_t i = 0; i < L.n_inputs; i++)
        sim_free(L.inputs[i].path);
    sim_free(L.inputs);
    sim_free(t);
    input_yarena_destroy(L.arena);
    return rc;
}
