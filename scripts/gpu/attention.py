"""Published fused-attention rates behind the GPU catalog's attention_efficiency tables.

rates(path) reads a CSV of TFLOP/s by keys per query (test/validation/data/
fa3_cudnn_h100_attention.csv: the FlashAttention-3 paper's cuDNN figures, timed alone) and
returns (keys, {table: [TFLOP/s, ...]}) for the catalog's four tables (of cuDNN, or of the
kernel named: FlashAttention-2 or -3), the causal backward,
which the paper does not measure, being the unmasked one times the forward's causal /
unmasked ratio at each length. The catalog holds each over the peak times the in-training
ratio (docs/calibration.md, "Fused attention"). catalog_table(text, name) reads one of those
tables back from a GPU file's text. Used by test/analysis/test_gemmfit.py,
test/validation/assumptions.py and test/validation/sensitivity.py."""
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
