#!/usr/bin/python3
"""Fails when a header under sim/ is missing from test/headers/meson.build's list (so the
compile-alone check would not cover it), or when the list names one that does not exist.

usage: listed.py SIM_DIR HEADER...   (HEADER relative to SIM_DIR, e.g. core/sim.h)"""
import os
import sys


def main(argv):
    sim, listed = argv[1], set(argv[2:])
    found = set()
    for root, _dirs, files in os.walk(sim):
        for f in files:
            if f.endswith(".h"):
                found.add(os.path.relpath(os.path.join(root, f), sim))
    bad = 0
    for h in sorted(found - listed):
        print("FAIL: sim/%s is not in test/headers/meson.build's sim_headers" % h)
        bad += 1
    for h in sorted(listed - found):
        print("FAIL: sim_headers lists %s, which is not under sim/" % h)
        bad += 1
    if not bad:
        print("%d headers listed, all present" % len(found))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
