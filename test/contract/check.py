#!/usr/bin/python3
"""Checks stepsim's outputs against what the documentation says they hold.

    check.py json FILE|-      the objects printed by `run`, `replay`, `mem`, `sweep`, `plan` or
                              `bench-coll` with --json (one or more, one per line)
    check.py h5 FILE.h5       a results file (Debian's python3-h5py and numpy)
    --docs DIR                read the documentation from DIR (default: this checkout's docs/)

The expectations are read from the docs, not written here: in docs/json.md the key tables of
`run --json` and `bench-coll --json` and the example of `mem --json`; in docs/hdf5-schema.md
the attribute and column tables with their enumerations and the statements on which tables
a run holds. An object or list key with a section of its own, headed with its dotted path
(`verdict`, `verdict.remedies`), has its keys checked against that section's key table, in
order; a `map of strings` may have any keys, each value a string. A key or column the docs do not list, or one they list that the output lacks,
is a problem; so are a wrong type, a number that is not finite, a value outside its
documented enumeration or range, and a broken stated invariant (mem_bytes sums to
peak_mem_bytes, one summary row, the tables each status holds, ...). A figure the docs say is
`null` (JSON) or NaN (HDF5) "when not replayed" must be exactly that in a run that was not
replayed (skipped, error, or an `oom` plan candidate without its steps) and a number in every
other run; NaN elsewhere is allowed only in a column whose meaning says NaN. It checks the shape of the outputs, not whether the numbers are right.

Prints one line per problem and exits 1 if any, else a one-line summary and exits 0; exits 2
on bad usage or when a doc table cannot be read."""
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
problems = []


def problem(msg):
    problems.append(msg)


class DocError(Exception):
    pass


# --- reading Markdown ------------------------------------------------------------------------

def sections(text):
    """{heading text: body} for every heading of a Markdown file."""
    out, title, body = {}, "", []
    fence = False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
        if not fence and re.match(r"^#+ ", line):
            out[title] = "\n".join(body)
            title, body = line.lstrip("#").strip(), []
        else:
            body.append(line)
    out[title] = "\n".join(body)
    return out


def section(secs, pattern, doc):
    """The body of the one section whose heading matches the regex pattern."""
    hits = [t for t in secs if re.search(pattern, t)]
    if len(hits) != 1:
        raise DocError("%s: %d sections match %r" % (doc, len(hits), pattern))
    return hits[0], secs[hits[0]]


def split_cells(line):
    """The cells of a table row; a `|` inside backticks does not split."""
    cells, cur, tick = [], "", False
    for ch in line.strip().strip("|"):
        if ch == "`":
            tick = not tick
        if ch == "|" and not tick:
            cells.append(cur.strip())
            cur = ""
        else:
            cur += ch
    cells.append(cur.strip())
    return cells


def table(body, first, doc):
    """The rows of the first table in body whose header's first cell is `first`, as dicts."""
    lines = body.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and split_cells(line)[0] == first:
            head = split_cells(line)
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                cells = split_cells(row)
                if len(cells) != len(head):
                    raise DocError("%s: row with %d cells under a %d-column header: %s"
                                   % (doc, len(cells), len(head), row))
                rows.append(dict(zip(head, cells)))
            return rows
    raise DocError("%s: no table headed `| %s |`" % (doc, first))


def pieces(text):
    """text as a list of (kind, string, depth): kind "code" for a backticked span, "text" for
    the rest; depth counts the parentheses (outside backticks) around it."""
    out, depth, i = [], 0, 0
    while i < len(text):
        if text[i] == "`":
            j = text.find("`", i + 1)
            j = len(text) if j < 0 else j
            out.append(("code", text[i + 1:j], depth))
            i = j + 1
            continue
        ch = text[i]
        if ch == "(":
            depth += 1
        out.append(("text", ch, depth))
        if ch == ")":
            depth = max(0, depth - 1)
        i += 1
    return out


def codes(text, any_depth=False):
    return [s for k, s, d in pieces(text) if k == "code" and (any_depth or d == 0)]


def after_colon(text):
    """What follows the first colon outside backticks and parentheses."""
    ps = pieces(text)
    for n, (k, s, d) in enumerate(ps):
        if k == "text" and s == ":" and d == 0:
            return "".join("`%s`" % s if k == "code" else s for k, s, _ in ps[n + 1:])
    return ""


def leading_values(text):
    """The enumeration a meaning starts with: "`ok`, `oom` (...), `skipped` or `error`" gives
    ok oom skipped error; a meaning that does not start with a backticked value gives none.
    Backticked quoted strings ("`"dp"`") anywhere at depth 0 are values too."""
    quoted = [c[1:-1] for c in codes(text) if len(c) > 2 and c[0] == c[-1] == '"']
    if quoted:
        return quoted
    if not text.lstrip().startswith("`"):
        return []
    out, gap = [], ""
    for k, s, d in pieces(text.lstrip()):
        if d > 0 or (k == "text" and s in "()"):
            continue
        if k == "code":
            if out and not re.fullmatch(r"[\s,;]*(or|and)?\s*", gap):
                break
            out.append(s)
            gap = ""
        else:
            gap += s
    return out


IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def listed(text):
    """The names a meaning lists after its colon, up to the end of that clause (a `;` or a
    full stop outside parentheses): "split by cause: `pipeline`, `dp`, ...; sums to `x`" gives
    pipeline dp ..."""
    rest = after_colon(text)
    ps = pieces(rest)
    out = []
    for n, (k, s, d) in enumerate(ps):
        if d:
            continue
        if k == "text" and (s == ";" or (s == "." and (n + 1 == len(ps) or
                                                      ps[n + 1][1].isspace()))):
            break
        if k == "code" and IDENT.fullmatch(s) and s != "null":
            out.append(s)
    return out


# --- the JSON objects ------------------------------------------------------------------------

class Key:
    def __init__(self, name, kind, nullable=False, elem=None, optional=False, cond=""):
        self.name, self.kind, self.nullable, self.elem = name, kind, nullable, elem
        self.optional, self.cond = optional, cond
        self.values, self.sub, self.sub_null = [], [], set()
        self.range, self.sums_to = None, None
        self.replay = False   # a figure of the replay: null when the run was not replayed
        self.table = None     # an object's (or a list's objects') keys, from its own table


def parse_type(name, cell):
    base, _, cond = cell.partition(",")
    words = base.split()
    if not words or words[0] not in ("string", "int", "float", "object", "list", "map"):
        raise DocError("docs/json.md: key %s: unknown type %r" % (name, cell))
    elem = None
    m = re.search(r"\bof (floats|ints|strings)\b", base)
    if m:
        elem = {"floats": "float", "ints": "int", "strings": "string"}[m.group(1)]
    return Key(name, words[0], "or null" in base, elem, bool(cond.strip()), cond.strip())


def key_of(row):
    """A row of a `| key | type | meaning |` table of docs/json.md."""
    names = codes(row["key"])
    if len(names) != 1:
        raise DocError("docs/json.md: key cell %r" % row["key"])
    key = parse_type(names[0], row["type"])
    meaning = row["meaning"]
    if key.kind == "string":
        # "`ok`, `oom` (...), ..." or "the NCCL protocol used: `ll`, `ll128`, `simple`"
        key.values = leading_values(meaning) or listed(meaning)
    if key.kind == "object":
        key.sub = listed(meaning)
        # a sub-key whose parenthesis says `null` (budget's `cost`) may be null
        last = None
        for k, s, d in pieces(after_colon(meaning)):
            if k == "code" and d == 0:
                last = s
            elif k == "code" and s == "null" and last in key.sub:
                key.sub_null.add(last)
    if re.search(r"\b0\.\.1\b", meaning):
        key.range = (0.0, 1.0)
    key.replay = "null when not replayed" in meaning
    m = re.search(r"sums to `(\w+)`", meaning)
    if m:
        key.sums_to = m.group(1)
    return key


def nested(secs, keys, prefix=""):
    """Gives an object or list key the key table of the section headed with its dotted path
    (`verdict`, `verdict.binding`, ...), recursively; an object needs that table or keys
    listed in its meaning, a list needs the table."""
    for k in keys:
        path = prefix + k.name
        if k.kind not in ("object", "list"):
            continue
        hits = [t for t in secs if t == "`%s`" % path]
        if hits:
            k.table = nested(secs, [key_of(row) for row in
                                    table(secs[hits[0]], "key", "docs/json.md")], path + ".")
        elif k.kind == "list" or not k.sub:
            raise DocError("docs/json.md: %s key %s lists no keys" % (k.kind, path))
    return keys


def json_spec(docs):
    path = os.path.join(docs, "json.md")
    secs = sections(open(path, encoding="utf-8").read())
    _, body = section(secs, r"^`run --json`$", "docs/json.md")
    run = nested(secs, [key_of(row) for row in table(body, "key", "docs/json.md")])
    _, body = section(secs, r"^`mem --json`$", "docs/json.md")
    m = re.search(r"```json\n(.*?)```", body, re.S)
    if not m:
        raise DocError("docs/json.md: `mem --json` has no example object")
    try:
        example = json.loads(m.group(1))
    except ValueError as e:
        raise DocError("docs/json.md: the `mem --json` example does not parse: %s" % e)
    by_name = {k.name: k for k in run}
    mem = []
    for name in example:
        if name not in by_name:
            raise DocError("docs/json.md: mem key %s is not in the run table" % name)
        k = by_name[name]
        mem.append(k)
    _, body = section(secs, r"^`bench-coll --json`$", "docs/json.md")
    coll = nested(secs, [key_of(row) for row in table(body, "key", "docs/json.md")])
    # advise's binding and bottleneck are the verdict's: their tables are verdict.*
    _, body = section(secs, r"^`advise --json`$", "docs/json.md")
    advise = nested(secs, [key_of(row) for row in table(body, "key", "docs/json.md")],
                    "verdict.")
    return run, mem, coll, advise


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def is_num(v):
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))


def typed(v, kind):
    return {"int": is_int, "float": is_num, "string": lambda x: isinstance(x, str),
            "object": lambda x: isinstance(x, dict), "map": lambda x: isinstance(x, dict),
            "list": lambda x: isinstance(x, list)}[kind](v)


def check_keys(where, o, keys, ordered):
    names = [k.name for k in keys]
    for extra in [n for n in o if n not in names]:
        problem("%s: key %s is not documented" % (where, extra))
    present = [n for n in names if n in o]
    if ordered and [n for n in o if n in names] != present:
        problem("%s: keys not in the documented order: %s" % (where, list(o)))
    for k in keys:
        required = not k.optional
        if k.optional:
            m = re.search(r"only with `(\w+)`", k.cond)
            if m and m.group(1) in names:
                required = m.group(1) in o
                if not required and k.name in o:
                    problem("%s: %s without %s" % (where, k.name, m.group(1)))
        if k.name not in o:
            if required:
                problem("%s: missing %s" % (where, k.name))
            continue
        v = o[k.name]
        if v is None:
            if not k.nullable:
                problem("%s: %s is null" % (where, k.name))
            continue
        if not typed(v, k.kind):
            problem("%s: %s should be %s, is %r" % (where, k.name, k.kind, v))
            continue
        if k.values and v not in k.values:
            problem("%s: %s %r not one of %s" % (where, k.name, v, " ".join(k.values)))
        if k.range and not k.range[0] <= v <= k.range[1]:
            problem("%s: %s = %r outside [%g, %g]" % (where, k.name, v, *k.range))
        if k.kind == "map":
            # any keys, each value of the element type
            for s, x in v.items():
                if not typed(x, k.elem or "string"):
                    problem("%s: %s[%r] should be %s, is %r"
                            % (where, k.name, s, k.elem or "string", x))
            continue
        if k.kind == "list":
            for n, e in enumerate(v):
                if not isinstance(e, dict):
                    problem("%s: %s[%d] should be an object, is %r" % (where, k.name, n, e))
                else:
                    check_keys("%s.%s[%d]" % (where, k.name, n), e, k.table, ordered)
            continue
        if k.kind == "object" and k.table is not None:
            check_keys("%s.%s" % (where, k.name), v, k.table, ordered)
            continue
        if k.kind == "object":
            for s in v:
                if s not in k.sub:
                    problem("%s: %s.%s is not documented" % (where, k.name, s))
            for s in k.sub:
                if s not in v:
                    problem("%s: %s lacks %s" % (where, k.name, s))
                elif v[s] is None and (s in k.sub_null or k.replay):
                    pass
                elif not typed(v[s], k.elem or "float"):
                    problem("%s: %s.%s should be %s, is %r"
                            % (where, k.name, s, k.elem or "a number", v[s]))
            if k.sums_to and is_int(o.get(k.sums_to)):
                total = sum(x for x in v.values() if is_num(x))
                if total != o[k.sums_to]:
                    problem("%s: %s sums to %d, %s is %d"
                            % (where, k.name, total, k.sums_to, o[k.sums_to]))


def untimed(v):
    """A replay figure's value in a run that was not replayed: null, or an object of nulls."""
    if isinstance(v, dict):
        return bool(v) and all(x is None for x in v.values())
    return v is None


def check_replay(where, o, keys):
    """The keys whose meaning says "null when not replayed" are all null, or none is; only a
    run that can go without a replay (oom, skipped, error) has them null."""
    figs = [k.name for k in keys if k.replay and k.name in o]
    nulls = [n for n in figs if untimed(o[n])]
    partial = [n for n in figs if isinstance(o[n], dict) and not untimed(o[n])
               and None in o[n].values()]
    for n in partial:
        problem("%s: %s is partly null" % (where, n))
    if nulls and len(nulls) != len(figs):
        problem("%s: %s null, %s not: a run is replayed or not"
                % (where, " ".join(nulls), " ".join(n for n in figs if n not in nulls)))
    elif nulls and o.get("status") not in ("oom", "skipped", "error"):
        problem("%s: status %s without its replay figures" % (where, o.get("status")))
    elif figs and not nulls and o.get("status") in ("skipped", "error"):
        problem("%s: status %s with replay figures (null when not replayed)"
                % (where, o.get("status")))


def check_run(where, o):
    """What the key table's meanings state about status, error and binding_constraint."""
    status = o.get("status")
    if status in ("skipped", "error"):
        if not isinstance(o.get("error"), str) or not o["error"]:
            problem("%s: status %s without an error message" % (where, status))
    elif status in ("ok", "oom", "tight"):
        if o.get("error") is not None:
            problem("%s: status %s with an error %r" % (where, status, o["error"]))
        # binding_constraint: "for `oom` runs, the line item ...; for `tight` ... the
        # headroom ...; null when the run fits"
        if status in ("oom", "tight") and not o.get("binding_constraint"):
            problem("%s: %s without a binding_constraint" % (where, status))
        if status == "ok" and o.get("binding_constraint") is not None:
            problem("%s: ok with a binding_constraint" % where)


def check_advise(where, o):
    """What the advise table's meanings state: binding only for oom, bottleneck only for ok,
    nothing measured for invalid, tokens_per_s null exactly when step_time_s is."""
    status = o.get("status")
    if (o.get("binding") is not None) != (status == "oom"):
        problem("%s: %s with binding %r" % (where, status, o.get("binding")))
    if o.get("bottleneck") is not None and status != "ok":
        problem("%s: %s with a bottleneck" % (where, status))
    if (o.get("step_time_s") is None) != (o.get("tokens_per_s") is None):
        problem("%s: step_time_s and tokens_per_s not null together" % where)
    if status == "invalid" and (o.get("peak_mem_bytes") or o.get("step_time_s") is not None):
        problem("%s: invalid with figures" % where)
    if not o.get("limit"):
        problem("%s: no limit" % where)


def objects(text):
    dec, i, out = json.JSONDecoder(), 0, []
    while True:
        while i < len(text) and text[i] in " \r\n\t":
            i += 1
        if i >= len(text):
            return out
        try:
            o, i = dec.raw_decode(text, i)
        except ValueError as e:
            problem("not JSON at character %d: %s" % (i, e))
            return out
        out.append(o)


def check_json(path, docs):
    run, mem, coll, advise = json_spec(docs)
    run_only = {k.name for k in run} - {k.name for k in mem}
    text = sys.stdin.read() if path == "-" else open(path, encoding="utf-8").read()
    objs = objects(text)
    if not objs:
        problem("no JSON object found")
    kinds = {}
    for n, o in enumerate(objs):
        if not isinstance(o, dict):
            problem("object %d: not an object: %r" % (n, o))
            continue
        if "op" in o or "busbw_GBps" in o:
            kind, keys = "bench-coll", coll
        elif "rung" in o:
            kind, keys = "advise", advise
        elif run_only & set(o):
            kind, keys = "run", run
        else:
            kind, keys = "mem", mem
        kinds[kind] = kinds.get(kind, 0) + 1
        where = "object %d (%s %s)" % (n, kind, o.get("name", o.get("op", o.get("rung", "?"))))
        # json.md: "Keys always appear, in the order below" (run, mem and advise)
        check_keys(where, o, keys, ordered=kind != "bench-coll")
        if kind == "advise":
            check_advise(where, o)
        elif kind != "bench-coll":
            check_run(where, o)
            check_replay(where, o, keys)
    return "%d JSON object(s) (%s)" % (len(objs), ", ".join(
        "%d %s" % (v, k) for k, v in sorted(kinds.items())))


# --- the HDF5 file ---------------------------------------------------------------------------

class Column:
    def __init__(self, name, kind, unit, meaning):
        self.name, self.kind, self.unit, self.meaning = name, kind, unit, meaning
        self.values = []
        self.replay = "NaN when not replayed" in meaning


def columns(rows, doc, what):
    """The columns of a schema table; a cell may name several (`dp`, `tp`) or a range
    (`mem_bytes.params` … `.other`, its members listed after the meaning's colon)."""
    out = []
    for row in rows:
        cell = row.get("column", row.get("attribute"))
        names = codes(cell, any_depth=True)
        if "…" in cell or "..." in cell:
            prefix = names[0].rsplit(".", 1)[0]
            members = listed(row["meaning"])
            names = [prefix + "." + s for s in members]
            if not members or names[0] != codes(cell)[0] or \
                    not names[-1].endswith(codes(cell)[-1]):
                raise DocError("%s: %s: cannot expand %r" % (doc, what, cell))
        if not names:
            raise DocError("%s: %s: no name in %r" % (doc, what, cell))
        for n in names:
            out.append(Column(n, row["type"], row.get("unit", ""), row["meaning"]))
    return out


def h5_spec(docs):
    doc = "docs/hdf5-schema.md"
    text = open(os.path.join(docs, "hdf5-schema.md"), encoding="utf-8").read()
    secs = sections(text)
    spec = {}
    _, conv = section(secs, r"^HDF5 results", doc)
    m = re.search(r"Enumeration columns \(([^)]*)\)", conv.replace("\n", " "))
    if not m:
        raise DocError("%s: the enumeration columns are not listed" % doc)
    enum_cols = set(codes(m.group(1)))
    _, body = section(secs, r"^Root attributes$", doc)
    spec["root"] = columns(table(body, "attribute", doc), doc, "root attributes")
    _, body = section(secs, r"^`/runs/<name>` attributes$", doc)
    spec["run_attrs"] = columns(table(body, "attribute", doc), doc, "run attributes")
    flat = body.replace("\n", " ")
    m = re.search(r"Runs with status (.*?) hold all", flat)
    m2 = re.search(r"Runs with status ([^.]*?) hold only (.*?)\.", flat)
    if not m or not m2:
        raise DocError("%s: which tables a run holds is not stated" % doc)
    spec["full_status"] = codes(m.group(1))
    spec["short_status"], spec["short_tables"] = codes(m2.group(1)), codes(m2.group(2))
    for c in spec["run_attrs"]:
        c.values = leading_values(c.meaning)
        p = re.search(r"Present on (.*?) runs", c.meaning)
        c.present_on = codes(p.group(1)) if p else None
    for c in spec["root"]:
        c.values = leading_values(c.meaning)
    _, layout = section(secs, r"^Layout$", doc)
    m = re.search(r"^/runs/<name>/.*\n\s+(\w[\w ]*)$", layout, re.M)
    if not m:
        raise DocError("%s: the layout does not list a run's tables" % doc)
    spec["tables"] = m.group(1).split()
    m = re.search(r"^/sweep .*$", layout, re.M)
    line = m.group(0) if m else ""
    # "/sweep  table, only when the file holds more than one run" (or "when the file holds
    # more than one run or ..."): several runs need it; "only when" forbids it with one
    spec["sweep_if_several"] = "more than one run" in line
    spec["sweep_only_several"] = spec["sweep_if_several"] and "only when" in line
    tabs = {}
    for name in spec["tables"] + ["/inputs", "/sweep"]:
        title, body = section(secs, r"^`%s`" % re.escape(name), doc)
        cols = columns(table(body, "column", doc), doc, name)
        tabs[name] = dict(title=title, cols=cols,
                          extra_strings="add one string column per" in body)
    spec["tabs"] = tabs
    attr_values = {c.name: c.values for c in spec["run_attrs"]}
    for t in tabs.values():
        for c in t["cols"]:
            if c.name in enum_cols:
                if c.meaning.startswith("as the"):   # as the group attribute / run's attributes
                    c.values = attr_values.get(c.name, [])
                else:
                    c.values = codes(c.meaning, any_depth=True)
                if not c.values:
                    raise DocError("%s: enumeration column %s lists no values" % (doc, c.name))
    spec["enum_cols"] = enum_cols
    return spec


def dtype_ok(dt, kind):
    import h5py
    import numpy as np
    if kind == "string":
        return h5py.check_string_dtype(dt) is not None
    want = {"int32": "<i4", "int64": "<i8", "float64": "<f8"}.get(kind)
    if want is None:
        raise DocError("docs/hdf5-schema.md: unknown type %r" % kind)
    return np.dtype(dt) == np.dtype(want)


def text_of(v):
    return v.decode("utf-8") if isinstance(v, bytes) else v


def check_attrs(where, obj, cols, status=None):
    import numpy as np
    names = [c.name for c in cols]
    for a in obj.attrs:
        if a not in names:
            problem("%s: attribute %s is not documented" % (where, a))
    for c in cols:
        present_on = getattr(c, "present_on", None)
        if c.name not in obj.attrs:
            if present_on is None or status in present_on:
                problem("%s: attribute %s missing" % (where, c.name))
            continue
        v = obj.attrs[c.name]
        if c.kind == "string":
            if not isinstance(v, str):
                problem("%s: attribute %s should be a string, is %r" % (where, c.name, v))
                continue
        elif np.asarray(v).shape != () or not dtype_ok(np.asarray(v).dtype, c.kind):
            problem("%s: attribute %s should be a scalar %s, is %r" % (where, c.name, c.kind, v))
            continue
        if c.values and str(v) not in c.values:
            problem("%s: attribute %s = %r not one of %s" % (where, c.name, v,
                                                              " ".join(c.values)))


def parse_pairs(text, sep):
    out = {}
    for part in [p.strip() for p in text.split(sep) if p.strip()]:
        k, _, v = part.partition(":")
        out[k.strip()] = v.strip()
    return out


def check_table(where, ds, spec_t, spec, expect_rows=None, replayed=None):
    """replayed: per row (or one for all), whether the run was replayed; the columns NaN
    "when not replayed" are checked against it (None: not known, any NaN goes)."""
    import numpy as np
    cols = spec_t["cols"]
    names = [c.name for c in cols]
    have = ds.dtype.names or ()
    if not have:
        problem("%s: not a table of a compound type" % where)
        return None
    for n in have:
        if n not in names:
            if spec_t["extra_strings"] and dtype_ok(ds.dtype[n], "string"):
                continue
            problem("%s: column %s is not documented" % (where, n))
    for n in names:
        if n not in have:
            problem("%s: column %s missing" % (where, n))
    if [n for n in have if n in names] != [n for n in names if n in have]:
        problem("%s: columns not in the documented order" % where)
    data = ds[:]
    if expect_rows is not None and len(data) != expect_rows:
        problem("%s: %d row(s), want %d" % (where, len(data), expect_rows))
    for c in cols:
        if c.name not in have:
            continue
        if not dtype_ok(ds.dtype[c.name], c.kind):
            problem("%s: column %s is %s, documented %s" % (where, c.name, ds.dtype[c.name],
                                                           c.kind))
            continue
        col = data[c.name]
        if c.kind == "float64" and len(col):
            bad = ~np.isfinite(col)
            if "NaN" in c.meaning and not (c.replay and replayed is not None):
                bad &= ~np.isnan(col)
            elif c.replay:   # NaN exactly in the runs that were not replayed
                timed = np.broadcast_to(np.asarray(replayed, dtype=bool), col.shape)
                bad &= ~(np.isnan(col) & ~timed)
                more = np.isfinite(col) & ~timed
                if more.any():
                    problem("%s: column %s holds %d number(s) for a run not replayed (NaN "
                            "documented)" % (where, c.name, int(more.sum())))
            if bad.any():
                problem("%s: column %s holds %d non-finite value(s)"
                        % (where, c.name, int(bad.sum())))
        if c.values and len(col):
            seen = {text_of(v) for v in set(col)}
            for v in sorted(seen - set(c.values)):
                problem("%s: column %s holds %r, not one of %s"
                        % (where, c.name, v, " ".join(c.values)))
    # every table has `units`; tables with enumeration columns have `values`
    units = ds.attrs.get("units")
    if not isinstance(units, str):
        problem("%s: no string attribute units" % where)
    else:
        want = {c.name: c.unit for c in cols if c.unit}
        got = parse_pairs(units, ",")
        if got != want:
            for k in sorted(set(got) | set(want)):
                if got.get(k) != want.get(k):
                    problem("%s: units lists %s: %r, documented %r"
                            % (where, k, got.get(k), want.get(k)))
    enums = {c.name: c.values for c in cols if c.name in spec["enum_cols"]}
    values = ds.attrs.get("values")
    if enums:
        if not isinstance(values, str):
            problem("%s: no string attribute values" % where)
        else:
            got = {k: v.split() for k, v in parse_pairs(values, ";").items()}
            for k in sorted(set(got) | set(enums)):
                if sorted(got.get(k, [])) != sorted(enums.get(k, [])):
                    problem("%s: values lists %s: %s, documented %s"
                            % (where, k, got.get(k), enums.get(k)))
    elif values is not None:
        problem("%s: attribute values on a table without enumeration columns" % where)
    for a in ds.attrs:
        if a not in ("units", "values"):
            problem("%s: attribute %s is not documented" % (where, a))
    return data


def check_h5(path, docs):
    import h5py
    spec = h5_spec(docs)
    tabs = spec["tabs"]
    try:
        f = h5py.File(path, "r")
    except OSError as e:
        problem("%s: cannot open: %s" % (path, e))
        return "no file"
    with f:
        check_attrs("/", f, spec["root"])
        hashes = f.attrs.get("input_hashes")
        if isinstance(hashes, str):
            for line in hashes.splitlines():
                if not re.fullmatch(r"\S+  \S.*", line):
                    problem("/: input_hashes line %r is not `<hash>  <path>`" % line)
        for name in f:
            if name not in ("inputs", "runs", "sweep"):
                problem("/%s is not documented" % name)
        if "inputs" in f:
            check_table("/inputs", f["inputs"], tabs["/inputs"], spec)
        else:
            problem("/inputs missing")
        if "runs" not in f or not isinstance(f["runs"], h5py.Group):
            problem("no /runs group")
            return "no runs"
        runs = list(f["runs"])
        for name in runs:
            check_run_group(name, f["runs"][name], spec)
        if spec["sweep_if_several"] and len(runs) > 1 and "sweep" not in f:
            problem("%d runs and no /sweep table" % len(runs))
        if spec["sweep_only_several"] and len(runs) == 1 and "sweep" in f:
            problem("1 run and a /sweep table (only when more than one run)")
        if "sweep" in f:
            names = [text_of(n) for n in f["sweep"]["name"]] \
                if "name" in (f["sweep"].dtype.names or ()) else []
            replayed = [was_replayed(f["runs"][n], spec) if n in runs else True for n in names]
            data = check_table("/sweep", f["sweep"], tabs["/sweep"], spec, len(runs),
                               replayed if len(replayed) == len(f["sweep"]) else None)
            if data is not None and "name" in data.dtype.names:
                for i, row in enumerate(data):
                    name = text_of(row["name"])
                    if "index" in data.dtype.names and row["index"] != i:
                        problem("/sweep row %d: index %d" % (i, row["index"]))
                    if name not in runs:
                        problem("/sweep row %d: no run %s" % (i, name))
                        continue
                    g = f["runs"][name]
                    for a in ("status", "error"):   # "as the run's attributes"
                        if a in data.dtype.names and text_of(row[a]) != g.attrs.get(a):
                            problem("/sweep row %d: %s %r, the run's is %r"
                                    % (i, a, text_of(row[a]), g.attrs.get(a)))
    return "%d run(s)" % len(runs)


def was_replayed(g, spec):
    """Whether the run of group g was replayed: not a skipped or failed run (summary only),
    nor an `oom` plan candidate recorded from its memory plan (docs/plan.md: its steps table
    is empty)."""
    status = g.attrs.get("status")
    if status in spec["short_status"]:
        return False
    return not (status == "oom" and "steps" in g and len(g["steps"]) == 0)


def check_run_group(name, g, spec):
    import h5py
    where = "/runs/%s" % name
    if not isinstance(g, h5py.Group):
        problem("%s: not a group" % where)
        return
    status = g.attrs.get("status")
    check_attrs(where, g, spec["run_attrs"], status)
    if status in spec["full_status"]:
        want = spec["tables"]
    elif status in spec["short_status"]:
        want = spec["short_tables"]
    else:   # a status outside the enumeration, reported above: the tables it has
        want = ["summary"] + [t for t in spec["tables"] if t in g and t != "summary"]
    for t in g:
        if t not in want:
            problem("%s/%s: %s run holds %s only" % (where, t, status, " ".join(want)))
    for t in want:
        if t not in g:
            problem("%s/%s missing" % (where, t))
    if "summary" not in g:
        return
    replayed = was_replayed(g, spec)
    s = check_table(where + "/summary", g["summary"], spec["tabs"]["summary"], spec, 1,
                    replayed)
    if s is None or len(s) != 1:
        return
    s, have = s[0], s.dtype.names
    for c in spec["tabs"]["summary"]["cols"]:   # "as the group attribute"
        if c.meaning.startswith("as the group attribute") and c.name in have \
                and text_of(s[c.name]) != g.attrs.get(c.name):
            problem("%s/summary: %s %r, the group attribute is %r"
                    % (where, c.name, text_of(s[c.name]), g.attrs.get(c.name)))
    mem = [n for n in have if n.startswith("mem_bytes.")]
    if mem and "peak_mem_bytes" in have and sum(int(s[n]) for n in mem) != s["peak_mem_bytes"]:
        problem("%s/summary: mem_bytes.* sums to %d, peak_mem_bytes is %d"
                % (where, sum(int(s[n]) for n in mem), s["peak_mem_bytes"]))
    rows = {"steps": int(s["steps"]) if "steps" in have else None}
    # docs/plan.md: a candidate whose memory plan does not fit is recorded as oom "without
    # replaying it": its summary says how many steps a replay would have run, and none ran
    if not replayed:
        rows["steps"] = 0
    for t in want:
        if t == "summary" or t not in g:
            continue
        data = check_table("%s/%s" % (where, t), g[t], spec["tabs"][t], spec, rows.get(t))
        if t == "steps" and data is not None and "step" in data.dtype.names:
            if list(data["step"]) != list(range(1, len(data) + 1)):
                problem("%s/steps: step is not 1..%d" % (where, len(data)))
        if t == "timeline" and g.attrs.get("timeline_written") == 0 and data is not None \
                and len(data):
            problem("%s/timeline: %d row(s) with timeline_written 0" % (where, len(data)))


def main(argv):
    docs = os.path.join(HERE, "..", "..", "docs")
    if "--docs" in argv:
        i = argv.index("--docs")
        if i + 1 >= len(argv):
            print(__doc__)
            return 2
        docs = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) != 3 or argv[1] not in ("json", "h5"):
        print(__doc__)
        return 2
    try:
        what = (check_json if argv[1] == "json" else check_h5)(argv[2], docs)
    except DocError as e:
        print("cannot read the docs: %s" % e)
        return 2
    except OSError as e:
        print(e)
        return 2
    for p in problems:
        print(p)
    print("%s: %s" % (what, "%d problem(s)" % len(problems) if problems else
                      "as documented"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
