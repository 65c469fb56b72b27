# SPDX-License-Identifier: MIT
"""
job_env.py - the pod env each job system injects (job_env.json, read from the upstream
controllers' source) applied to one pod: which variables and /etc files each of its
containers gets. Used by check_manifests.py (the dry-run of every manifest),
check_job_env.py (gxboot's detection with each system's env) and job_env_md.py
(the UPSTREAM.md section).
"""
import json
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "job_env.json")
_cache = []


def table():
    if not _cache:
        with open(PATH, encoding="utf-8") as f:
            _cache.append(json.load(f))
    return _cache[0]


def system(sid):
    for s in table()["systems"]:
        if s["id"] == sid:
            return s
    raise KeyError(f"job_env.json has no system {sid}")


def chain(sid):
    """The system and those it includes (trainjob -> jobset -> indexed-job)."""
    out, todo = [], [sid] if sid else []
    while todo:
        s = system(todo.pop(0))
        out.append(s)
        todo += s.get("includes") or []
    return out


class Pod:
    """One pod of a system: its role, context (the values the templates use) and the
    conditions that hold for its workload (plugin:svc, mpi:OpenMPI, master ...)."""

    def __init__(self, sid, role, ctx, conds=(), tasks=None):
        self.sid, self.role, self.ctx, self.conds = sid, role, dict(ctx), set(conds)
        self.tasks = tasks or []  # Volcano: [{"TASK", "task_hosts", "task_num", ...}]


def _applies(entry, pod):
    roles = entry.get("roles")
    if roles and pod.role not in roles:
        return False
    w = entry.get("when")
    if not w:
        return True
    if w.startswith("!"):
        return w[1:] not in pod.conds
    return w in pod.conds


def container_gets(scope, container, is_init, index):
    """Whether a container (init or main, its index among its kind) is in scope."""
    if scope == "all":
        return True
    if scope == "containers":
        return not is_init
    if scope == "containers[0]":
        return not is_init and index == 0
    if scope == "init":
        return is_init
    if scope.startswith("named:"):
        return container.get("name") == scope[len("named:"):]
    if scope == "tpu":
        lim = (container.get("resources") or {}).get("limits") or {}
        return "google.com/tpu" in lim
    raise ValueError(f"job_env.json: unknown containers scope {scope!r}")


def _expand(entry, pod, key):
    """[(name, value)] of one entry; per task for names with {TASK}."""
    tpl = entry[key]
    if entry.get("value") is None:
        raise ValueError(f"{pod.sid}: {entry.get('name') or entry.get('path')} applies to "
                         f"this pod but its value is not modelled in job_env.json")
    if "{TASK}" in tpl or "{task_file}" in tpl:
        return [(tpl.format(**dict(pod.ctx, **t)), entry["value"].format(**dict(pod.ctx, **t)))
                for t in pod.tasks]
    return [(tpl.format(**pod.ctx), entry["value"].format(**pod.ctx))]


def env_for(pod, container, is_init, index):
    """{NAME: value} the systems inject into this container of this pod."""
    env = {}
    for s in chain(pod.sid):
        for v in s.get("vars") or []:
            if _applies(v, pod) and container_gets(v["containers"], container, is_init, index):
                env.update(_expand(v, pod, "name"))
    return env


def files_for(pod, container, is_init, index):
    """{path below /etc: text} the systems mount into this container."""
    out = {}
    for s in chain(pod.sid):
        for f in s.get("files") or []:
            if _applies(f, pod) and container_gets(f["containers"], container, is_init, index):
                for path, text in _expand(f, pod, "path"):
                    assert path.startswith("/etc/")
                    out[path[len("/etc/"):]] = text
    return out


def citations():
    """Every citation in the table: (system id, what, cite)."""
    for s in table()["systems"]:
        for v in s.get("vars") or []:
            yield s["id"], v["name"], v["cite"]
        for f in s.get("files") or []:
            yield s["id"], f["path"], f["cite"]
        for f in s.get("facts") or []:
            yield s["id"], f["what"][:40], f["cite"]
