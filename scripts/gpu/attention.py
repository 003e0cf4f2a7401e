"""Published fused-attention rates behind the GPU catalog's attention_efficiency tables.

rates(path) reads a CSV of TFLOP/s by keys per query (test/validation/data/
fa3_cudnn_h100_attention.csv: the FlashAttention-3 paper's cuDNN figures, timed alone) and
returns (keys, {table: [TFLOP/s, ...]}) for the catalog's four tables (of cuDNN, or of the
kernel named: FlashAttention-2 or -3), the causal backward,
which the paper does not measure, being the unmasked one times the forward's causal /
unmasked ratio at each length. The catalog holds each over the peak times the in-training
ratio (docs/calibration.md, "Fused attention"). catalog_table(text, name) reads one of those
tables back from a GPU file's text. Used by test/analysis/test_gemmfit.py,
test/validation/assumptions.py and test/validation/sensitivity.py. a100_tables(path, kernel)
gives the A100 files' tables from the FlashAttention-2 paper's A100 figure
(test/validation/data/fa2_a100_attention.csv, forward + backward only); a100_yaml writes them
as the catalog holds them."""
import csv, re

TABLES = ("forward", "backward", "forward_unmasked", "backward_unmasked")


def _read(path, kernel):
    """(keys, {row: [TFLOP/s, ...]}) of the CSV's rows for one kernel, its prefix dropped:
    kernel "" is cuDNN's (unprefixed) rows, "fa2" or "fa3" the rows prefixed with it."""
    with open(path) as f:
        rows = list(csv.reader(l for l in f if l.strip() and not l.startswith("#")))
    keys = [int(x) for x in rows[0][1:]]
    pre = kernel + "_" if kernel else ""
    t = {r[0][len(pre):]: [float(x) for x in r[1:]] for r in rows[1:]
         if r[0].startswith(pre) and (pre or not re.match(r"fa\d_", r[0]))}
    return keys, t


def rates(path, kernel=""):
    """kernel "" is cuDNN's rows (the catalog's attention_efficiency), "fa2" or "fa3" the
    rows prefixed with it (the catalog's attention_kernels)."""
    keys, t = _read(path, kernel)
    t["backward"] = [b * c / u for b, c, u in zip(t["backward_unmasked"], t["forward"], t["forward_unmasked"])]
    return keys, {n: t[n] for n in TABLES}


def catalog_table(text, name, kernel=""):
    """[(keys, efficiency), ...] of attention_efficiency's `name` table in a GPU file's text
    (one flow-style line, as the catalog writes it), or with `kernel` of attention_kernels'
    entry for it; None if it has none."""
    if kernel:
        m = re.search(r"^attention_kernels:\n(?:    .*\n|  (?!%s:).*\n)*?  %s:\n((?:    .*\n)+)" % (kernel, kernel), text, re.M)
        if m is None:
            return None
        text = "\n".join(l[2:] for l in m.group(1).splitlines())
    m = re.search(r"^  %s: (\[.*\])$" % name, text, re.M)
    if m is None:
        return None
    return [(int(k), float(e)) for k, e in re.findall(r"\[(\d+), ([0-9.]+)\]", m.group(1))]


def head_dim_factors(path, kernel=""):
    """{"forward": [(64, f), (128, 1.0), (256, f)], "backward": [(64, f), (128, 1.0)]}: the
    kernel's rate at head dim 64 and 256 over its rate at 128, the causal forward and the
    unmasked backward, averaged over 4k, 8k and 16k keys (where training runs)."""
    keys, t = _read(path, kernel)
    cols = [i for i, k in enumerate(keys) if k >= 4096]

    def ratio(a, b):
        return sum(t[a][i] / t[b][i] for i in cols) / len(cols)
    out = {"forward": [(64, ratio("hd64_forward", "forward")), (128, 1.0)],
           "backward": [(64, ratio("hd64_backward_unmasked", "backward_unmasked")), (128, 1.0)]}
    if "hd256_forward" in t:
        out["forward"].append((256, ratio("hd256_forward", "forward")))
    return out


def catalog_head_dim(text, name, kernel=""):
    """[(head dim, factor), ...] of the head_dim `name` curve in attention_efficiency (or the
    kernel's attention_kernels entry) of a GPU file's text, or None."""
    if kernel:
        m = re.search(r"^attention_kernels:\n(?:    .*\n|  (?!%s:).*\n)*?  %s:\n((?:    .*\n)+)" % (kernel, kernel), text, re.M)
        if m is None:
            return None
        block = m.group(1)
        m = re.search(r"^    head_dim:\n((?:      .*\n)+)", block, re.M)
        ind = "      "
    else:
        m = re.search(r"^attention_efficiency:\n((?:  .*\n)+)", text, re.M)
        if m is None:
            return None
        m = re.search(r"^  head_dim:[^\n]*\n((?:    .*\n)+)", m.group(1), re.M)
        ind = "    "
    if m is None:
        return None
    m2 = re.search(r"^%s%s: (\[.*\])$" % (ind, name), m.group(1), re.M)
    if m2 is None:
        return None
    return [(int(k), float(e)) for k, e in re.findall(r"\[(\d+), ([0-9.]+)\]", m2.group(1))]


def a100_tables(path, kernel, peak=312.0, in_training=1.0):
    """The A100 files' tables of `kernel` ("fa2", "fa1" or "fa_triton") from the
    FlashAttention-2 figure's forward + backward rates at head dim 128: ({table: [(keys,
    efficiency), ...]}, {"forward": [(64, f), (128, 1.0)], "backward": the same}). The figure
    has no pass alone, so the forward and the backward both take the pair's rate (which
    times a forward + backward, 3.5 x the forward's FLOPs, exactly); each over the peak times
    in_training (1 on the A100: the kernel's own training runs, FlashAttention-2 paper Table
    1, run it at its rate alone; docs/calibration.md, "Fused attention"), to three decimals; a length whose label the figure hides is left
    out of its table. The head-dim factor is the causal rate at 64 over that at 128,
    averaged over 4k, 8k and 16k keys, for both passes."""
    with open(path) as f:
        rows = list(csv.reader(l for l in f if l.strip() and not l.startswith("#")))
    keys = [int(x) for x in rows[0][1:]]
    t = {r[0]: [float(x) if x else None for x in r[1:]] for r in rows[1:]}

    def table(row):
        return [(k, round(v / peak * in_training, 3)) for k, v in zip(keys, t[row]) if v is not None]
    causal, unmasked = table(kernel + "_causal_128"), table(kernel + "_unmasked_128")
    tables = {"forward": causal, "backward": causal,
              "forward_unmasked": unmasked, "backward_unmasked": unmasked}
    cols = [i for i, k in enumerate(keys) if k >= 4096]
    f64 = sum(t[kernel + "_causal_64"][i] / t[kernel + "_causal_128"][i] for i in cols) / len(cols)
    head = [(64, round(f64, 3)), (128, 1.0)]
    return tables, {"forward": head, "backward": head}


def _flow(pairs):
    return "[" + ", ".join("[%d, %s]" % (k, ("%.3f" % v) if v != 1.0 else "1") for k, v in pairs) + "]"


def a100_yaml(path, in_training=1.0):
    """The attention lines of an A100 catalog file: FlashAttention-2 as attention_efficiency
    (attention_kernel: fa2), FlashAttention and its Triton implementation as
    attention_kernels."""
    out = []
    for kernel in ("fa2", "fa1", "fa_triton"):
        tables, head = a100_tables(path, kernel, in_training=in_training)
        ind = "  " if kernel == "fa2" else "    "
        if kernel == "fa2":
            out.append("attention_efficiency:")
        else:
            if kernel == "fa1":
                out.append("attention_kernel: fa2")
                out.append("attention_kernels:")
            out.append("  %s:" % kernel)
        for name in TABLES:
            out.append("%s%s: %s" % (ind, name, _flow(tables[name])))
        out.append("%shead_dim:" % ind)
        for name in ("forward", "backward"):
            out.append("%s  %s: %s" % (ind, name, _flow(head[name])))
    return "\n".join(out) + "\n"
