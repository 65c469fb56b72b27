#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""
check_job_env.py - job_env.json against upstream, and gxboot's peer detection against
job_env.json. PASS/FAIL/SKIP lines; exit 1 on a FAIL.

  check_job_env.py [--gxboot PATH] [--mirror DIR]

--mirror DIR: DIR/<owner>+<name>/repo are git directories of the upstream repositories;
each citation's line (at its commit) must hold its 'match' text (a repository not there
is SKIP).

Then, for each system, a small job as its controller makes it: every pod, in each container
position (containers[0], a second main container, an init container), runs
`gxboot --dry-run -- true` with exactly the job_env.json env and /etc files of that position
(and the pod's /etc/hosts, as root) and no --peers. Each must give the plan the job needs
(peer count, source, observer) or, where the position lacks the inputs (EXPECT "refuses"),
refuse with a usage error: a wrong plan is a FAIL.
"""
import argparse
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import job_env  # noqa: E402
import check_manifests as cm  # noqa: E402

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


NS = cm.NAMESPACE
POSITIONS = ("containers[0]", "containers[1]", "init")


def P(sid, role, host, sub, conds=(), tasks=None, **ctx):
    return {"host": host, "sub": sub,
            "pod": job_env.Pod(sid, role, dict(ctx, ns=NS), conds, tasks)}


def jobs():
    """(system, [pod], gxboot flags the job needs beyond its env, main container name
    [, variant: the EXPECT key of this job when it is not the system's usual])."""
    out = []
    out.append(("indexed-job", [P("indexed-job", None, f"ij-{i}", "ij", index=i)
                                for i in range(3)], ["--nnodes", "3"], "main"))
    out.append(("jobset", [P("jobset", None, f"js-w-0-{i}", "js", index=i)
                           for i in range(3)], ["--nnodes", "3"], "main"))
    out.append(("trainjob", [P("trainjob", "node", f"tj-node-0-{i}", "tj", nnodes=3, nproc=8,
                               tj="tj", index=i) for i in range(3)], [], "node"))
    out.append(("lws", [P("lws", "leader" if i == 0 else "worker",
                          "lws-0" if i == 0 else f"lws-0-{i}", "lws", lws="lws", group=0,
                          subdomain="lws", size=3, worker=i) for i in range(3)], [], "main"))
    out.append(("lws", [P("lws", "leader" if i == 0 else "worker",
                          "lws-1" if i == 0 else f"lws-1-{i}", "lws-1", lws="lws", group=1,
                          subdomain="lws-1", size=3, worker=i) for i in range(3)], [], "main"))
    hs = [f"vj-trainer-{i}.vj" for i in range(3)]
    tasks = [{"TASK": "TRAINER", "task_file": "trainer", "task_hosts": ",".join(hs),
              "task_lines": "\n".join(hs), "task_num": 3}]
    out.append(("volcano", [P("volcano", "trainer", f"vj-trainer-{i}", "vj",
                              {"plugin:svc", "plugin:env"}, tasks, job="vj", index=i,
                              world=0, rank=0) for i in range(3)], [], "main"))
    # master + 2 workers with the pytorch plugin too (MASTER_ADDR, WORLD_SIZE, RANK)
    ts = [("master", 1), ("worker", 2)]
    tasks = []
    for t, n in ts:
        hs = [f"vp-{t}-{i}.vp" for i in range(n)]
        tasks.append({"TASK": t.upper(), "task_file": t, "task_hosts": ",".join(hs),
                      "task_lines": "\n".join(hs), "task_num": n})
    out.append(("volcano", [P("volcano", t, f"vp-{t}-{i}", "vp",
                              {"plugin:svc", "plugin:env", "plugin:pytorch"}, tasks, job="vp",
                              index=i, world=3, rank=i + (t == "worker"))
                            for t, n in ts for i in range(n)], [], "main"))
    hf = "".join(f"mpi-worker-{i}.mpi.{NS}.svc slots=1\n" for i in range(2))
    mctx = {"slots": 1, "hostfile": hf}
    out.append(("mpi-operator", [P("mpi-operator", "launcher", "mpi-launcher", "mpi",
                                   {"mpi:OpenMPI"}, **mctx)], [], "main"))
    out.append(("mpi-operator", [P("mpi-operator", "worker", f"mpi-worker-{i}", "mpi",
                                   {"mpi:OpenMPI"}, **mctx) for i in range(2)],
                ["--nnodes", "2"], "main"))
    hf = f"mpl-launcher.mpl.{NS}.svc slots=1\n" + hf.replace("mpi-", "mpl-").replace(
        ".mpi.", ".mpl.")
    mctx = {"slots": 1, "hostfile": hf}
    out.append(("mpi-operator", [P("mpi-operator", "launcher", "mpl-launcher", "mpl",
                                   {"mpi:OpenMPI", "runLauncherAsWorker"}, **mctx)], [],
                "main", "runLauncherAsWorker"))
    fq = f"rc-head-svc.{NS}.svc.cluster.local"
    rb = {"cluster": "rc", "port": "6379", "fq": fq, "ray_ip": "rc-head-svc",
          "kuberay_version": cm.KUBERAY_VERSION}
    out.append(("kuberay", [P("kuberay", "head", "rc-head-x7k2p", None, pod="rc-head-x7k2p",
                              group="headgroup", address="127.0.0.1:6379",
                              start_cmd=cm.ray_start_cmd(True, {}, fq, "6379"), **rb)]
                + [P("kuberay", "worker", f"rc-wg-worker-{x}", None, pod=f"rc-wg-worker-{x}",
                     group="wg", address=f"{fq}:6379",
                     start_cmd=cm.ray_start_cmd(False, {}, fq, "6379"), **rb)
                   for x in ("q4t8z", "m2w9c")], [], "main"))
    out.append(("pytorchjob", [P("pytorchjob", "master" if i == 0 else "worker",
                                 "pt-master-0" if i == 0 else f"pt-worker-{i - 1}", None,
                                 {"master"}, job="pt", port=23456, world=3, rank=i, nnodes=3,
                                 nproc=None) for i in range(3)], [], "pytorch"))
    for nproc, world in (("8", 24), ("auto", 3)):
        out.append(("pytorchjob", [P("pytorchjob", "master" if i == 0 else "worker",
                                     "pn-master-0" if i == 0 else f"pn-worker-{i - 1}", None,
                                     {"master", "nprocPerNode"}, job="pn", port=23456,
                                     world=world, rank=i, nnodes=3, nproc=nproc)
                                   for i in range(3)], [], "pytorch"))
    out.append(("trainjob", [P("trainjob", "node", f"ta-node-0-{i}", "ta", nnodes=3,
                               nproc="auto", tj="ta", index=i) for i in range(3)], [], "node"))
    return out


# What each position must give: (peers, source text, observer) or "refuses" (why).
# Every pair not listed here must give the system's plan (EXPECT_OK).
EXPECT_OK = {
    "indexed-job": (3, "indexed hostname", False), "jobset": (3, "indexed hostname", False),
    "trainjob": (3, "indexed hostname", False), "lws": (3, "LeaderWorkerSet", False),
    "volcano": (3, "Volcano", False), "kuberay": (1, "KubeRay", False),
    "pytorchjob": (3, "PyTorchJob", False),
}
EXPECT = {
    ("trainjob", "containers[1]"): "refuses: PET_* are on the container named node only "
                                   "(JOB_COMPLETION_INDEX gives no count): --nnodes",
    ("trainjob", "init"): "refuses: PET_* are on the container named node only: --nnodes",
    ("mpi-operator", "launcher", "containers[0]"): (2, "MPI Operator", True),
    ("mpi-operator", "launcher", "containers[1]"): "refuses: /etc/mpi is mounted on the "
                                                   "launcher's containers[0] only",
    ("mpi-operator", "launcher", "init"): "refuses: /etc/mpi is mounted on the launcher's "
                                          "containers[0] only",
    ("mpi-operator", "worker"): (2, "indexed hostname", False),
    ("runLauncherAsWorker", "launcher", "containers[0]"): (3, "MPI Operator", False),
    ("kuberay", "containers[1]"): "refuses: the cluster's variables are on containers[0] only",
    ("kuberay", "init"): "refuses: init containers get FQ_RAY_IP and RAY_IP only",
    ("pytorchjob", "init"): "refuses: training-operator sets env on main containers only",
}


def expectation(sid, variant, role, pos):
    for key in ((variant, role, pos), (sid, role, pos), (sid, pos), (sid, role)):
        if key in EXPECT:
            return EXPECT[key]
    return EXPECT_OK[sid]


def check_detection(gxboot):
    if not os.path.exists(gxboot):
        return report("SKIP", "detection", f"{gxboot} not built")
    if not cm.etc_runner_works():
        return report("SKIP", "detection", "needs root (unshare -m) to give pods their /etc")
    for sid, pods, flags, main, *variant in jobs():
        containers = [{"name": main}, {"name": "sidecar"}]
        init = {"name": "gxboot-init"}
        for pos in POSITIONS:
            c, is_init, idx = ((init, True, 0) if pos == "init" else
                               (containers[int(pos[-2])], False, int(pos[-2])))
            ids = set()
            for rep in pods:
                pod = rep["pod"]
                want = expectation(sid, (variant or [sid])[0], pod.role, pos)
                label = f"detect {sid} {rep['host']}/{pos}"
                env = job_env.env_for(pod, c, is_init, idx)
                etc_files = cm.pod_etc(rep["host"], rep["sub"])
                etc_files.update(job_env.files_for(pod, c, is_init, idx))
                with tempfile.TemporaryDirectory(prefix="gxck-env.") as tmp:
                    etc = os.path.join(tmp, "etc")
                    for rel, text in etc_files.items():
                        os.makedirs(os.path.dirname(os.path.join(etc, rel)), exist_ok=True)
                        with open(os.path.join(etc, rel), "w", encoding="utf-8") as f:
                            f.write(text)
                    full = dict(env, PATH="/usr/sbin:/usr/bin:/sbin:/bin", HOME="/tmp",
                                GXBOOT_SELF=rep["host"], GXBOOT_OUT=tmp)
                    p = subprocess.run(cm.ETC_RUNNER + [etc, gxboot, "--dry-run"] + flags +
                                       ["--", "true"], capture_output=True, text=True,
                                       env=full, timeout=20)
                last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
                if isinstance(want, str):
                    if p.returncode == 2 and "--peers" in last:
                        report("PASS", label, want)
                    else:
                        plan = cm.parse_plan(p.stdout)
                        report("FAIL", label, f"want a refusal ({want}); got exit "
                               f"{p.returncode}: {plan['peers']} peers from {plan['source']}")
                    continue
                if p.returncode != 0:
                    report("FAIL", label, f"exit {p.returncode}: {last}")
                    continue
                plan = cm.parse_plan(p.stdout)
                peers, source, observer = want
                if plan["peers"] != peers or source not in (plan["source"] or "") or \
                        plan["observer"] != observer:
                    report("FAIL", label, f"{plan['peers']} peers from {plan['source']}"
                           f"{' (observer)' if plan['observer'] else ''}, want {peers} from "
                           f"{source}{' (observer)' if observer else ''}")
                    continue
                ids.add(plan["job"])
                report("PASS", label, f"{peers} peers from {plan['source']}")
            if len(ids) > 1 and sid != "kuberay":
                report("FAIL", f"detect {sid} {pos} job id", f"pods disagree: {sorted(ids)}")


# Each must make check_detection FAIL: (system, entry name or file path, field, new value).
MUTATIONS = [
    ("lws", "LWS_GROUP_SIZE", "value", "2"),
    ("mpi-operator", "/etc/mpi/hostfile", "containers", "all"),
    ("trainjob", "PET_NNODES", "containers", "all"),
    ("kuberay", "RAY_PORT", "containers", "init"),
]


def self_test(gxboot):
    import copy
    import io
    import contextlib
    saved = copy.deepcopy(job_env.table())
    for sid, name, field, value in MUTATIONS:
        label = f"self-test {sid} {name}.{field}={value!r}"
        hit = 0
        for e in [x for k in ("vars", "files") for x in job_env.system(sid).get(k) or []]:
            if e.get("name", e.get("path")) == name:
                e[field], hit = value, hit + 1
        before = dict(results)
        with contextlib.redirect_stdout(io.StringIO()):
            check_detection(gxboot)
        fails = results["FAIL"] - before["FAIL"]
        results.update(before)
        job_env.table().clear()
        job_env.table().update(copy.deepcopy(saved))
        if not hit:
            report("FAIL", label, "no such entry in job_env.json")
        elif fails:
            report("PASS", label, f"{fails} detections fail")
        else:
            report("FAIL", label, "not caught")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gxboot", default="build/gxboot")
    ap.add_argument("--mirror")
    ap.add_argument("--self-test", action="store_true",
                    help="break job_env.json entries in memory and expect detection FAILs")
    a = ap.parse_args()
    if a.self_test:
        if not os.path.exists(a.gxboot) or not cm.etc_runner_works():
            report("SKIP", "check_job_env self-test", "needs root and a built gxboot")
            return 77
        self_test(os.path.abspath(a.gxboot))
        print(f"check_job_env self-test: {results['PASS']} passed, {results['FAIL']} failed")
        return 1 if results["FAIL"] else 0
    if a.mirror:
        check_citations(a.mirror)
    check_detection(os.path.abspath(a.gxboot))
    n = sum(len(s.get("vars") or []) for s in job_env.table()["systems"])
    print(f"check_job_env: {len(job_env.table()['systems'])} systems, {n} variables; "
          f"{results['PASS']} passed, {results['FAIL']} failed, {results['SKIP']} skipped")
    return 1 if results["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
