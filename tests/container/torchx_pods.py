# SPDX-License-Identifier: MIT
"""
torchx_pods.py - the pods of a request the real TorchX generates, as a kubelet runs them.

`torchx run --workspace="" --dryrun -s SCHEDULER ...` prints the request TorchX would submit
(a YAML document after "=== SCHEDULER REQUEST ==="). This module runs that command with
TorchX from ../shared/third_party/python (never a copy in this project) and Debian's
/usr/bin/python3, parses the request with python3-yaml and gives, per pod:

- its name, hostname and subdomain. `-s kubernetes` is a Volcano Job: one task per replica,
  pod <job>-<task>-<i>, and the svc plugin sets hostname = pod name, subdomain = <job>
  (volcano-sh/volcano pkg/controllers/job/plugins/svc/svc.go, OnPodCreate).
  `-s kubernetes_mcad` is an AppWrapper whose GenericItems hold the Pods (hostname and
  subdomain set by TorchX) and the headless Service that publishes them.
- its container's command + args, with the kubelet's $(VAR) expansion, and the argv the
  runtime starts: Kubernetes' `command` replaces the image's ENTRYPOINT (and drops its CMD),
  `args` alone replaces only the CMD.
- its env: the container's env list, then what the job system injects. Volcano's svc and
  env plugins (the ones the Job names in spec.plugins) add VC_<TASK>_HOSTS, VC_<TASK>_NUM,
  VK_TASK_INDEX and VC_TASK_INDEX, exactly as tests/container/job_env.json records them
  from Volcano's source. The runtime adds PATH (the image's), HOSTNAME and HOME. Not
  modelled: the service-link variables (gxboot and torch read none) and the svc plugin's
  /etc/volcano/<task>.host files (gxboot reads the VC_*_HOSTS variables first).

Only paths may be changed (--map FROM=TO): the gxboot binary, the token and mounted files,
for a test that runs the pods on one machine. A word or env value is mapped when it is FROM,
starts with FROM/, or is --option=FROM...; "{i}" in TO is the pod's index.

CLI (the e2e cases; the request travels on stdin/stdout, so a case can name its pods after
TorchX's random app id before it creates them):
  torchx_pods.py request -- TORCHX-RUN-ARGS...   print the request (YAML) TorchX generated
  torchx_pods.py pods < REQUEST                  one line per pod: index, hostname, subdomain,
                                                 the Multus networks annotation or "-"
  torchx_pods.py export --out DIR [--map FROM=TO]... [--image-dockerfile F] < REQUEST
      DIR/<i>.argv and DIR/<i>.env (NUL-separated: the argv the runtime starts, NAME=value),
      DIR/request.yaml, and a summary on stdout.
Exit 1 with one line on any error.
"""
import argparse
import copy
import json
import os
import re
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import job_env  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
TORCHX_PATH = os.path.normpath(os.path.join(ROOT, "..", "shared", "third_party", "python"))
PYTHON = "/usr/bin/python3"
MARK = "=== SCHEDULER REQUEST ==="
SCHEDULERS = ("kubernetes", "kubernetes_mcad")  # Volcano Job, MCAD AppWrapper
MULTUS = "k8s.v1.cni.cncf.io/networks"
# what an image built on Debian has (docker's default PATH), and what the runtime sets
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class Error(Exception):
    pass


_requests = {}  # one TorchX run per argument list and tree in a process


def torchx_dryrun(args, torchx=TORCHX_PATH, cwd=ROOT):
    """Run `torchx run --workspace="" --dryrun ARGS` (the real CLI); return the request."""
    key = (tuple(args), torchx, os.path.abspath(cwd))
    if key not in _requests:
        _requests[key] = _torchx_dryrun(args, torchx, cwd)
    return copy.deepcopy(_requests[key])


def _torchx_dryrun(args, torchx, cwd):
    if not os.path.isdir(os.path.join(torchx, "torchx")):
        raise Error(f"TorchX is not at {torchx} (see ../shared/third_party/README.md)")
    env = dict(os.environ, PYTHONPATH=torchx)
    cmd = [PYTHON, "-m", "torchx.cli.main", "run", "--workspace=", "--dryrun"] + list(args)
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=120)
    if p.returncode != 0 or MARK not in p.stdout:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise Error(f"torchx run exited {p.returncode}: {last}")
    req = yaml.safe_load(p.stdout.split(MARK, 1)[1])
    if not isinstance(req, dict) or "kind" not in req:
        raise Error("torchx printed no request after its scheduler-request line")
    return req


def k8s_expand(s, env):
    """The kubelet's expansion of command, args and env values: $(VAR) is VAR's value when
    VAR is defined, else left as written; $$ is $; any other $ stays."""
    out, i = [], 0
    while i < len(s):
        if s[i] != "$" or i + 1 == len(s):
            out.append(s[i])
            i += 1
        elif s[i + 1] == "$":
            out.append("$")
            i += 2
        elif s[i + 1] == "(" and ")" in s[i + 2:]:
            j = s.index(")", i + 2)
            name = s[i + 2:j]
            out.append(env[name] if name in env else s[i:j + 1])
            i = j + 1
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


class Pod:
    def __init__(self, name, spec, meta, injected=None):
        self.name = name
        self.spec = spec
        self.meta = meta
        self.hostname = spec.get("hostname") or name
        self.subdomain = spec.get("subdomain")
        self.namespace = meta.get("namespace") or "default"
        self.annotations = meta.get("annotations") or {}
        self.labels = meta.get("labels") or {}
        self.injected = injected or {}

    def container(self):
        cs = self.spec.get("containers") or []
        if len(cs) != 1:
            raise Error(f"pod {self.name}: {len(cs)} containers (TorchX makes one)")
        return cs[0]

    def env(self):
        """The container's env as the kubelet gives it (later entries win; values may
        use earlier ones), then what the job system injected."""
        env = {}
        for e in (self.container().get("env") or []) + [
                {"name": k, "value": v} for k, v in self.injected.items()]:
            if "value" not in e:
                raise Error(f"pod {self.name}: env {e.get('name')} is not a plain value")
            env[e["name"]] = k8s_expand(str(e["value"]), env)
        return env

    def argv(self, entrypoint=None, cmd=None):
        """What the runtime starts: command (+ args) replaces the image's ENTRYPOINT and
        CMD; args alone replace only the CMD."""
        c, env = self.container(), self.env()
        command = [k8s_expand(w, env) for w in c.get("command") or []]
        args = [k8s_expand(w, env) for w in c.get("args") or []]
        if command:
            return command + args
        return list(entrypoint or []) + (args or list(cmd or []))

    def networks(self):
        return self.annotations.get(MULTUS)


def volcano_pods(req):
    """Volcano Job: tasks x replicas; env from the plugins the Job names (job_env.json)."""
    job, spec = req["metadata"]["name"], req.get("spec") or {}
    plugins = spec.get("plugins") or {}
    tasks = spec.get("tasks") or []
    info = []
    for t in tasks:
        hs = [f"{job}-{t['name']}-{i}.{job}" for i in range(t.get("replicas", 1))]
        key = t["name"].replace("-", "_")
        info.append({"TASK": key.upper(), "task_file": key, "task_hosts": ",".join(hs),
                     "task_lines": "\n".join(hs), "task_num": len(hs)})
    conds = {f"plugin:{p}" for p in plugins}
    pods = []
    for t in tasks:
        tpl = t["template"]
        for i in range(t.get("replicas", 1)):
            jp = job_env.Pod("volcano", t["name"], {"job": job, "index": i}, conds, info)
            c = (tpl["spec"].get("containers") or [None])[0]
            inj = job_env.env_for(jp, c, False, 0) if c else {}
            meta = dict(tpl.get("metadata") or {}, namespace=req["metadata"].get("namespace"))
            spec_ = dict(tpl["spec"])
            if "svc" in plugins or "env" in plugins:
                # svc.go / env.go OnPodCreate: hostname = pod name, subdomain = job name
                spec_.setdefault("hostname", f"{job}-{t['name']}-{i}")
                spec_.setdefault("subdomain", job)
            pods.append(Pod(f"{job}-{t['name']}-{i}", spec_, meta, inj))
    service = job if "svc" in plugins else None
    return pods, service


def appwrapper_pods(req):
    """MCAD AppWrapper: the Pods of its GenericItems, and the headless Service that
    publishes them (it must select every pod, and its name must be their subdomain)."""
    items = ((req.get("spec") or {}).get("resources") or {}).get("GenericItems") or []
    pods, services = [], []
    for it in items:
        gt = it.get("generictemplate") or {}
        if gt.get("kind") == "Pod":
            if it.get("replicas", 1) != 1:
                raise Error(f"GenericItem Pod {gt['metadata']['name']}: replicas "
                            f"{it.get('replicas')}")
            pods.append(Pod(gt["metadata"]["name"], gt["spec"], gt["metadata"]))
        elif gt.get("kind") == "Service":
            services.append(gt)
    subs = {p.subdomain for p in pods}
    if len(subs) != 1:
        raise Error(f"the pods' subdomains are {sorted(map(str, subs))}, not one")
    sub = subs.pop()
    svc = next((s for s in services if s["metadata"]["name"] == sub), None)
    if svc is None:
        raise Error(f"no Service named {sub} (the pods' subdomain) in the AppWrapper")
    sspec = svc.get("spec") or {}
    if sspec.get("clusterIP") != "None":
        raise Error(f"Service {sub} is not headless (clusterIP {sspec.get('clusterIP')})")
    sel = sspec.get("selector") or {}
    for p in pods:
        if not sel or any(p.labels.get(k) != v for k, v in sel.items()):
            raise Error(f"Service {sub}'s selector {sel} does not select pod {p.name}")
    return pods, sub


def request_pods(req):
    """(pods, the headless Service's name) of a TorchX request."""
    kind, api = req.get("kind"), req.get("apiVersion", "")
    if kind == "Job" and api.startswith("batch.volcano.sh/"):
        return volcano_pods(req)
    if kind == "AppWrapper":
        return appwrapper_pods(req)
    raise Error(f"not a Volcano Job or an AppWrapper: {api} {kind}")


def dockerfile_entry(path):
    """(ENTRYPOINT, CMD) of a Dockerfile's last stage, exec form only."""
    ep = cmd = None
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\s*(FROM|ENTRYPOINT|CMD)\s+(.*)", line)
        if not m:
            continue
        if m.group(1) == "FROM":
            ep = cmd = None
        elif m.group(1) == "ENTRYPOINT":
            ep = json.loads(m.group(2))
        else:
            cmd = json.loads(m.group(2))
    return ep, cmd


class Mapper:
    def __init__(self, maps):
        self.maps = []
        for m in maps:
            src, eq, dst = m.partition("=")
            if not eq or not src.startswith("/"):
                raise Error(f"--map {m}: want /FROM=TO")
            self.maps.append((src.rstrip("/") or "/", dst))
        self.maps.sort(key=lambda x: -len(x[0]))
        self.used = {src: 0 for src, _ in self.maps}

    def word(self, w, i):
        pre, val = "", w
        m = re.match(r"(--[A-Za-z0-9_-]+=)(.*)", w, re.S)
        if m:
            pre, val = m.groups()
        for src, dst in self.maps:
            if val == src or val.startswith(src + "/"):
                self.used[src] += 1
                return pre + dst.replace("{i}", str(i)) + val[len(src):]
        return w


def write_nul(path, words):
    with open(path, "wb") as f:
        for w in words:
            if "\0" in w:
                raise Error(f"{path}: a NUL byte in {w!r}")
            f.write(w.encode() + b"\0")


def pod_lines(pods):
    out = []
    for i, p in enumerate(pods):
        for what, v in (("hostname", p.hostname), ("subdomain", p.subdomain)):
            if not v or not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", v):
                raise Error(f"pod {p.name}: {what} {v!r} is not a DNS label")
        out.append(f"{i} {p.hostname} {p.subdomain} {p.networks() or '-'}")
    return out


def export(req, out, mapper, entrypoint=None, cmd=None):
    pods, service = request_pods(req)
    pod_lines(pods)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "request.yaml"), "w", encoding="utf-8") as f:
        yaml.safe_dump(req, f)
    for i, p in enumerate(pods):
        env = {"PATH": IMAGE_PATH, "HOSTNAME": p.hostname, "HOME": "/root"}
        env.update(p.env())
        argv = [mapper.word(w, i) for w in p.argv(entrypoint, cmd)]
        env = {k: mapper.word(v, i) for k, v in env.items()}
        write_nul(os.path.join(out, f"{i}.argv"), argv)
        write_nul(os.path.join(out, f"{i}.env"), [f"{k}={v}" for k, v in env.items()])
        print(f"pod {i}: {p.hostname}.{p.subdomain} ({p.namespace}), networks "
              f"{p.networks() or '-'}, runs {' '.join(argv)[:200]}")
    for src, n in mapper.used.items():
        print(f"mapped {src}: {n} word(s)")
    print(f"{req['kind']} {req['metadata']['name']}: {len(pods)} pods, Service {service}")


def read_request(f):
    req = yaml.safe_load(f)
    if not isinstance(req, dict) or "kind" not in req:
        raise Error("stdin holds no request")
    return req


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("request")
    r.add_argument("--torchx", default=TORCHX_PATH)
    r.add_argument("torchx_args", nargs=argparse.REMAINDER)
    sub.add_parser("pods")
    e = sub.add_parser("export")
    e.add_argument("--out", required=True)
    e.add_argument("--map", action="append", default=[])
    e.add_argument("--image-dockerfile", help="the image's ENTRYPOINT/CMD from this file")
    a = ap.parse_args()
    try:
        if a.cmd == "request":
            targs = a.torchx_args[1:] if a.torchx_args[:1] == ["--"] else a.torchx_args
            yaml.safe_dump(torchx_dryrun(targs, a.torchx), sys.stdout)
        elif a.cmd == "pods":
            print("\n".join(pod_lines(request_pods(read_request(sys.stdin))[0])))
        else:
            ep, cmd = dockerfile_entry(a.image_dockerfile) if a.image_dockerfile else (None, None)
            export(read_request(sys.stdin), a.out, Mapper(a.map), ep, cmd)
    except (Error, OSError, KeyError, ValueError, yaml.YAMLError,
            subprocess.TimeoutExpired) as ex:
        print(f"torchx_pods: {ex}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
