#!/usr/bin/python3
"""The layer order of sim/ (docs/architecture.md): a layer includes only its own headers and
those of lower layers, and the third-party headers stay where they belong.

    core < hw < coll < model < trace < plan < {input, replay} < results < cli

input (reading inputs) and replay are siblings above plan: neither may include the other.
hdf5.h may appear only in sim/results and sim/cli, yaml.h only in sim/input, mpi.h only in
sim/cli.

usage: layering.py SIM_DIR      check the tree; exit 1 listing every violation
       layering.py --self-test  check a synthetic tree with one violation of each kind"""
import os
import re
import sys
import tempfile

LEVEL = {"core": 0, "hw": 1, "coll": 2, "model": 3, "trace": 4, "plan": 5,
         "input": 6, "replay": 6, "results": 7, "cli": 8}
THIRD_PARTY = {"hdf5.h": {"results", "cli"}, "yaml.h": {"input"}, "mpi.h": {"cli"}}

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def violations(sim):
    """Every violation under `sim`, as 'path:line: message' strings."""
    out = []
    for layer in sorted(os.listdir(sim)):
        folder = os.path.join(sim, layer)
        if not os.path.isdir(folder):
            continue
        if layer not in LEVEL:
            out.append("%s: folder of no known layer (add it to LEVEL)" % folder)
            continue
        for name in sorted(os.listdir(folder)):
            if not name.endswith((".c", ".h")):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                for n, line in enumerate(f, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    target = m.group(2)
                    where = "%s:%d: " % (path, n)
                    base = os.path.basename(target)
                    if base in THIRD_PARTY and layer not in THIRD_PARTY[base]:
                        out.append(where + "%s includes %s (allowed only in %s)" %
                                   (layer, base, ", ".join(sorted(THIRD_PARTY[base]))))
                    if m.group(1) != '"' or "/" not in target:
                        continue
                    dep = target.split("/")[0]
                    if dep not in LEVEL:
                        continue
                    if LEVEL[dep] > LEVEL[layer]:
                        out.append(where + "%s includes %s, a higher layer" % (layer, target))
                    elif LEVEL[dep] == LEVEL[layer] and dep != layer:
                        out.append(where + "%s includes %s, a sibling layer" % (layer, target))
    return out


def self_test():
    """A tree with one violation of each kind (and allowed includes beside them) must give
    exactly those violations: 2 layers up, 1 sibling, 3 third-party, 1 unknown folder."""
    files = {
        "core/a.h": '#include "core/sim.h"\n#include <stdint.h>\n',
        "hw/b.c": '#include "core/a.h"\n#include "plan/plan.h"\n',   # up: hw -> plan
        "plan/c.c": '#include "trace/trace.h"\n#include "cli/cli.h"\n',  # up: plan -> cli
        "input/d.c": '#include "plan/plan.h"\n#include "replay/replay.h"\n'  # sibling
                     '#include <yaml.h>\n',
        "replay/e.c": '#include "plan/plan.h"\n  #  include <hdf5.h>\n',  # hdf5 outside
        "results/f.c": '#include "replay/replay.h"\n#include "input/load.h"\n'
                       '#include <hdf5.h>\n#include <mpi.h>\n',  # mpi outside cli
        "cli/g.c": '#include "results/h5.h"\n#include <mpi.h>\n#include <hdf5.h>\n',
        "model/h.c": '#include <yaml.h>\n',  # yaml outside input
        "extra/i.c": '#include "core/sim.h"\n',  # unknown layer folder
    }
    with tempfile.TemporaryDirectory() as sim:
        for rel, text in files.items():
            os.makedirs(os.path.join(sim, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(sim, rel), "w", encoding="utf-8") as f:
                f.write(text)
        got = [v[len(sim) + 1:] for v in violations(sim)]
    want = [
        "extra: folder of no known layer (add it to LEVEL)",
        "hw/b.c:2: hw includes plan/plan.h, a higher layer",
        "input/d.c:2: input includes replay/replay.h, a sibling layer",
        "model/h.c:1: model includes yaml.h (allowed only in input)",
        "plan/c.c:2: plan includes cli/cli.h, a higher layer",
        "replay/e.c:2: replay includes hdf5.h (allowed only in cli, results)",
        "results/f.c:4: results includes mpi.h (allowed only in cli)",
    ]
    if sorted(got) != sorted(want):
        print("FAIL: self-test\n  got:\n    %s\n  want:\n    %s" %
              ("\n    ".join(sorted(got)), "\n    ".join(sorted(want))))
        return 1
    print("self-test: the %d planted violations found, nothing else" % len(want))
    return 0


def main(argv):
    if len(argv) == 2 and argv[1] == "--self-test":
        return self_test()
    if len(argv) != 2:
        print(__doc__)
        return 2
    bad = violations(argv[1])
    for v in bad:
        print("FAIL: " + v)
    if not bad:
        print("layering: every include of sim/ respects the layer order")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
