#!/usr/bin/env python3
"""Where the test suite's time went: per-module totals and the slowest test classes, from JUnit XML reports.

Reads the pytest report (``--junitxml``), Surefire's and Failsafe's ``TEST-*.xml`` files under the given roots and
prints, for each report folder, the number of tests, failures and the summed time, then the ``--top`` slowest
classes over all of them. Standard library only: it runs with any Python 3.9+.
"""

from __future__ import annotations

import argparse
import os
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def suites(path: Path) -> list[ET.Element]:
    root = ET.parse(path).getroot()
    return [root] if root.tag == "testsuite" else list(root.iter("testsuite"))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("roots", nargs="+", type=Path, help="folders searched for TEST-*.xml and *.junit.xml")
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--newer-than", type=Path, default=None,
                   help="only reports written after this file was (the reports of this run, not earlier ones')")
    a = p.parse_args(argv)
    since = a.newer_than.stat().st_mtime if a.newer_than is not None and a.newer_than.exists() else None
    per_class: dict[str, float] = defaultdict(float)
    per_folder: dict[str, list[float]] = {}
    for root in a.roots:
        if not root.exists():
            continue
        for f in sorted([*root.rglob("TEST-*.xml"), *root.rglob("*.junit.xml")]):
            if since is not None and f.stat().st_mtime < since:
                continue
            folder = os.path.relpath(f.parent)
            totals = per_folder.setdefault(folder, [0.0, 0.0, 0.0])
            for s in suites(f):
                cases = list(s.iter("testcase"))
                totals[0] += len(cases)
                totals[1] += sum(1 for c in cases if c.find("failure") is not None or c.find("error") is not None)
                totals[2] += float(s.get("time") or 0)
                if f.name.endswith(".junit.xml"):  # pytest: one suite, classes are the test files
                    for c in cases:
                        per_class["pytest " + (c.get("classname") or "?")] += float(c.get("time") or 0)
                else:
                    per_class[s.get("name") or f.stem] += float(s.get("time") or 0)
    if not per_folder:
        print("test times: no reports found")
        return 0
    print("test time per report folder (tests, failed, seconds):")
    for folder, (n, failed, t) in sorted(per_folder.items()):
        print(f"  {folder:<60} {int(n):>5} {int(failed):>4} {t:>8.1f}")
    print(f"the {a.top} slowest test classes (seconds):")
    for name, t in sorted(per_class.items(), key=lambda kv: -kv[1])[: a.top]:
        print(f"  {t:>8.1f}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
