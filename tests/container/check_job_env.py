#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""
check_job_env.py - job_env.json against upstream, and gxboot's peer detection against
job_env.json. PASS/FAIL/SKIP lines; exit 1 on a FAIL.

  check_job_env.py [--gxboot PATH] [--mirror DIR]

--mirror DIR: DIR/<owner>+<name>/repo are git directories of the upstream repositories;
each citation's line (at its commit) must hold its 'match' text (a repository not there
is SKIP).
"""
import argparse
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import job_env  # noqa: E402

results = {"PASS": 0, "FAIL": 0, "SKIP": 0}


def report(kind, name, why=""):
    results[kind] += 1
    print(f"{kind} {name}" + (f": {why}" if why else ""), flush=True)


def check_citations(mirror):
    texts = {}
    for sid, what, c in job_env.citations():
        label = f"citation {sid} {what}"
        gd = os.path.join(mirror, c["repo"].replace("/", "+"), "repo")
        if not os.path.isdir(gd):
            report("SKIP", label, f"{c['repo']} not under {mirror}")
            continue
        key = (gd, c["commit"], c["path"])
        if key not in texts:
            p = subprocess.run(["git", "-C", gd, "show", f"{c['commit']}:{c['path']}"],
                               capture_output=True, text=True)
            texts[key] = p.stdout.splitlines() if p.returncode == 0 else None
        lines = texts[key]
        if lines is None:
            report("FAIL", label, f"{c['path']} not at {c['commit'][:8]}")
        elif c["line"] is None:
            hit = [i + 1 for i, s in enumerate(lines) if c["match"] in s]
            report("PASS" if hit else "FAIL", label, f"no line pinned; '{c['match']}' at {hit}")
        elif not 1 <= c["line"] <= len(lines) or c["match"] not in lines[c["line"] - 1]:
            report("FAIL", label, f"{c['path']}:{c['line']} lacks '{c['match']}'")
        else:
            report("PASS", label)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gxboot", default="build/gxboot")
    ap.add_argument("--mirror")
    a = ap.parse_args()
    if a.mirror:
        check_citations(a.mirror)
    n = sum(len(s.get("vars") or []) for s in job_env.table()["systems"])
    print(f"check_job_env: {len(job_env.table()['systems'])} systems, {n} variables; "
          f"{results['PASS']} passed, {results['FAIL']} failed, {results['SKIP']} skipped")
    return 1 if results["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
