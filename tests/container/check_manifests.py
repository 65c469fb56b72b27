#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""
check_manifests.py - lint container/: the Dockerfile, every manifest in container/k8s and
the TorchX component. Prints PASS/FAIL/SKIP lines; exit 1 on any FAIL.

  check_manifests.py [--root DIR] [--gxboot PATH] [--only FILE] [--self-test]

Each pod template (found anywhere in a document: Pod, StatefulSet, Job, JobSet, PyTorchJob,
MPIJob, Volcano Job, AppWrapper ...) must carry: the Multus annotation; an RDMA resource
(then root + IPC_LOCK) or the TCP-only marker (then user 65532, no capability); the
downward-API network-status volume that --network-status names; an emptyDir at
/run/gxboot; the token from a Secret with --token-file and --require-token; the headless
Service / not-ready publishing its mode needs. Every gxboot command line that meets peers
(also inside `sh -c` scripts) is run through `gxboot --dry-run` with the environment and,
as root, the /etc the system would give the pod (UPSTREAM.md lists the sources); the plan
must show the workload's pod count, and a job's pods must agree on the job id.
NetworkPolicies must admit the rendezvous ports; MPI pods need no RBAC. The TorchX component
goes through the real TorchX (../shared/third_party/python, torchx_pods.py): every documented
`torchx run` line, its pods checked and dry-run, the AppWrapper's other outputs, and plain
dist.ddp's command replacing an image's ENTRYPOINT.
"""
import argparse
import ast
import os
import re
import shlex
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import job_env  # noqa: E402
import torchx_pods  # noqa: E402

NET_ANN = "k8s.v1.cni.cncf.io/networks"
NS_FIELD = "metadata.annotations['k8s.v1.cni.cncf.io/network-status']"
TCP_MARKER = ("gxboot/transport", "tcp")
RDMA_PREFIXES = ("rdma/", "nvidia.com/hostdev")
MEET_CMDS = ("run", "init", "serve", "check", "hosts")
SUBCMDS = MEET_CMDS + ("exec", "install", "netdetect", "rsh", "version", "help")
NETWORK_STATUS_JSON = """[{"name":"cbr0","interface":"eth0","ips":["10.244.1.5"],"default":true},
{"name":"default/rdma-shared-net","interface":"net1","ips":["192.168.2.11"],
"mac":"02:00:00:00:00:0b","dns":{},"device-info":{"type":"pci","version":"1.1.0",
"pci":{"pci-address":"0000:3b:00.2","rdma-device":"mlx5_2"}}}]
"""

results = {"PASS": 0, "FAIL": 0, "SKIP": 0}


def report(kind, name, why=""):
    results[kind] += 1
    print(f"{kind} {name}" + (f": {why}" if why else ""), flush=True)


# ---------------------------------------------------------------- Dockerfile
def deps_build_packages(path):
    """The package names of tests/deps.sh's "# build" section of PKGS=( ... )."""
    pkgs, section, inside = [], None, False
    for line in open(path, encoding="utf-8"):
        s = line.strip()
        if s.startswith("PKGS=("):
            inside = True
            continue
        if inside and s.startswith(")"):
            break
        if not inside:
            continue
        if s.startswith("#"):
            section = s.lstrip("#").strip().split(":")[0].split()[0]
            continue
        if section == "build":
            pkgs += s.split()
    return pkgs


def dockerfile_instructions(path):
    """[(INSTR, rest)] with continuation lines joined and comments dropped."""
    out, cur = [], ""
    for line in open(path, encoding="utf-8"):
        s = line.rstrip("\n")
        if not cur and (not s.strip() or s.lstrip().startswith("#")):
            continue
        if s.lstrip().startswith("#"):
            continue
        if s.endswith("\\"):
            cur += s[:-1] + " "
            continue
        cur += s
        parts = cur.strip().split(None, 1)
        out.append((parts[0].upper(), parts[1] if len(parts) > 1 else ""))
        cur = ""
    return out


def check_dockerfile(root):
    path = os.path.join(root, "container/Dockerfile")
    name = "dockerfile"
    if not os.path.exists(path):
        return report("FAIL", name, "container/Dockerfile missing")
    ins = dockerfile_instructions(path)
    stages, errs = [], []
    for i, r in ins:
        if i == "FROM":
            w = r.split()
            alias = w[2] if len(w) >= 3 and w[1].lower() == "as" else None
            stages.append({"image": w[0], "alias": alias, "ins": []})
        elif stages:
            stages[-1]["ins"].append((i, r))
    if len(stages) < 2:
        errs.append(f"{len(stages)} stage(s), want a build stage and a final stage")
    else:
        build, final = stages[0], stages[-1]
        if not build["image"].startswith("debian:bookworm"):
            errs.append(f"build stage FROM {build['image']}, want debian:bookworm")
        if final["image"] != "scratch":
            errs.append(f"final stage FROM {final['image']}, want scratch")
        runs = " ; ".join(r for i, r in build["ins"] if i == "RUN")
        m = re.search(r"apt-get install ((?:[^;&|])*)", runs)
        got = [w for w in (m.group(1).split() if m else []) if not w.startswith("-")]
        want = deps_build_packages(os.path.join(root, "tests/deps.sh"))
        if not want:
            errs.append("no build packages found in tests/deps.sh")
        elif sorted(got) != sorted(want):
            errs.append(f"apt-get install {sorted(got)} != deps.sh build {sorted(want)}")
        if not re.search(r"(^|[;&|]\s*)make\b", runs):
            errs.append("build stage never runs make")
        copies = [r for i, r in final["ins"] if i == "COPY"]
        src = build["alias"] or "0"
        if not any(re.search(rf"--from={re.escape(src)}\b.*\s/gxboot$", c) for c in copies):
            errs.append(f"final stage lacks COPY --from={src} ... /gxboot")
        if any(not re.search(r"\s/gxboot$", c) for c in copies):
            errs.append("final stage copies more than /gxboot")
        if any(i == "RUN" for i, _ in final["ins"]):
            errs.append("final stage has RUN (scratch has no shell)")
        users = [r for i, r in final["ins"] if i == "USER"]
        if not users or users[-1].split(":")[0] != "65532":
            errs.append("final stage lacks USER 65532")
        ep = [r for i, r in final["ins"] if i == "ENTRYPOINT"]
        if not ep or ep[-1].replace(" ", "") != '["/gxboot"]':
            errs.append('final stage lacks ENTRYPOINT ["/gxboot"]')
    if errs:
        return report("FAIL", name, "; ".join(errs))
    report("PASS", name)


def check_static(gxboot):
    if not os.path.exists(gxboot):
        return report("SKIP", "static binary", f"{gxboot} not built")
    p = subprocess.run(["ldd", gxboot], capture_output=True, text=True)
    out = p.stdout + p.stderr
    if "not a dynamic executable" in out:
        return report("PASS", "static binary (ldd: not a dynamic executable)")
    report("FAIL", "static binary", "ldd: " + out.strip().replace("\n", " | ")[:200])


# ---------------------------------------------------------------- manifests
def pod_templates(node, path="", ctx=None):
    """Yield (path, template, ctx) for every dict whose spec has a containers list."""
    if isinstance(node, dict):
        spec = node.get("spec")
        if isinstance(spec, dict) and isinstance(spec.get("containers"), list):
            yield path, node, ctx
            return
        for k, v in node.items():
            yield from pod_templates(v, f"{path}.{k}" if path else k, ctx)
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from pod_templates(v, f"{path}[{i}]", ctx)


def workloads(doc):
    """Yield (workload doc, pod path, template). AppWrapper items are unwrapped; a
    TrainJob's pod is assembled from its trainer and runtimePatches."""
    if doc.get("kind") == "AppWrapper":
        items = (doc.get("spec", {}).get("resources", {}).get("GenericItems") or
                 doc.get("spec", {}).get("components") or [])
        for it in items:
            inner = it.get("generictemplate") or it.get("template")
            if isinstance(inner, dict):
                yield from workloads(inner)
        return
    if doc.get("kind") == "TrainJob":
        yield from trainjob_pods(doc)
        return
    for path, tpl, _ in pod_templates(doc):
        yield doc, path, tpl


def trainjob_pods(doc):
    """The "node" pod of a TrainJob (trainer.kubeflow.org/v1alpha1) as Trainer builds it from
    the runtime: container "node" gets trainer.command/args/env/resourcesPerNode, then each
    runtimePatches entry for replicatedJob "node" adds pod metadata, volumes and the
    container's env / volumeMounts / securityContext (ContainerPatch allows nothing else)."""
    s = doc.get("spec") or {}
    tr = s.get("trainer") or {}
    node = {"name": "node", "command": list(tr.get("command") or []),
            "args": list(tr.get("args") or []), "env": list(tr.get("env") or []),
            "resources": dict(tr.get("resourcesPerNode") or {}), "volumeMounts": []}
    tpl = {"metadata": {"annotations": {}, "labels": {}},
           "spec": {"containers": [node], "volumes": []}}
    for i, rp in enumerate(s.get("runtimePatches") or []):
        rjobs = ((((rp.get("trainingRuntimeSpec") or {}).get("template") or {})
                  .get("spec") or {}).get("replicatedJobs") or [])
        for rj in rjobs:
            if rj.get("name") != "node":
                continue
            pt = (((rj.get("template") or {}).get("spec") or {}).get("template") or {})
            md = pt.get("metadata") or {}
            tpl["metadata"]["annotations"].update(md.get("annotations") or {})
            tpl["metadata"]["labels"].update(md.get("labels") or {})
            ps = pt.get("spec") or {}
            tpl["spec"]["volumes"] += ps.get("volumes") or []
            for k in ("securityContext", "nodeSelector", "tolerations", "affinity"):
                if k in ps:
                    tpl["spec"][k] = ps[k]
            for cp in ps.get("containers") or []:
                if cp.get("name") != "node":
                    continue
                node["env"] += cp.get("env") or []
                node["volumeMounts"] += cp.get("volumeMounts") or []
                if "securityContext" in cp:
                    node["securityContext"] = cp["securityContext"]
    yield doc, "trainer+runtimePatches(node)", tpl


def words(c):
    return [str(w) for w in (c.get("command") or []) + (c.get("args") or [])]


SHELLS = ("sh", "bash", "dash", "ash")
SHELL_WORDS = {"then", "else", "elif", "fi", "do", "done", "if", "while", "until", "exec",
               "!", "{", "}", "(", ")"}


def _subcmd(argv):
    for x in argv[1:]:
        if x == "--":
            break
        if x in SUBCMDS:
            return x
    return "run"


def script_calls(script):
    """gxboot command lines inside a shell script (`sh -c SCRIPT`): each simple command whose
    program is .../gxboot, up to the next ; & | newline or shell keyword."""
    out = []
    text = script.replace("\\\n", " ")
    for line in text.splitlines():
        lex = shlex.shlex(line, posix=True, punctuation_chars=";&|()<>")
        lex.whitespace_split = True
        lex.commenters = "#"
        try:
            toks = list(lex)
        except ValueError:
            continue
        cur = None
        for t in toks + [";"]:
            if cur is None:
                if os.path.basename(t) == "gxboot":
                    cur = [t]
                continue
            if set(t) <= set(";&|()<>") or t in ("then", "else", "elif", "fi", "do", "done"):
                out.append(cur)
                cur = None
            else:
                cur.append(t)
    return out


def gxboot_calls(c):
    """[(argv from the gxboot word on, subcommand)] of a container: its command/args, or the
    gxboot lines of a `sh -c SCRIPT` command (one entry per line that runs gxboot)."""
    w = words(c)
    for i, a in enumerate(w):
        if os.path.basename(a) == "gxboot":
            return [(w[i:], _subcmd(w[i:]))]
    if len(w) >= 3 and os.path.basename(w[0]) in SHELLS and w[1] == "-c":
        return [(argv, _subcmd(argv)) for argv in script_calls(w[2])]
    return []


def gxboot_call(c):
    """(argv, subcommand) of the container's first gxboot command line, or None."""
    calls = gxboot_calls(c)
    return calls[0] if calls else None


def runs_program(c, prog):
    """Whether the container runs prog: as its first word or inside its sh -c script."""
    w = words(c)
    return bool(w) and (w[0] == prog or any(a[0] == prog for a, _ in gxboot_calls(c)))


def opt(argv, name):
    """Value of --name V / --name=V before '--' (None if absent, True for a flag)."""
    for i, a in enumerate(argv):
        if a == "--":
            break
        if a == name:
            return argv[i + 1] if i + 1 < len(argv) and not argv[i + 1].startswith("--") \
                else True
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


def env_value(c, name):
    for e in c.get("env") or []:
        if e.get("name") == name:
            return e.get("value", "")
    return None


def sec(c, spec, key):
    """Effective securityContext key: container's, else pod's."""
    v = (c.get("securityContext") or {}).get(key)
    return v if v is not None else (spec.get("securityContext") or {}).get(key)


def mount_of(c, vol):
    for m in c.get("volumeMounts") or []:
        if m.get("name") == vol:
            return m.get("mountPath")
    return None


def check_pod(fname, doc, path, tpl, all_docs):
    """Return (errors, gxboot calls) for one pod template."""
    errs = []
    meta, spec = tpl.get("metadata") or {}, tpl["spec"]
    ann = meta.get("annotations") or {}
    if not ann.get(NET_ANN):
        errs.append(f"no {NET_ANN} annotation")
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    inits, mains = spec.get("initContainers") or [], spec.get("containers") or []
    calls = [(c, g, c in inits) for c in inits + mains for g in gxboot_calls(c)]
    if not calls:
        return [f"no gxboot command line"], []
    subs = {g[1] for _, g, _ in calls}
    meet = [(c, g) for c, g, _ in calls if g[1] in MEET_CMDS]
    init_mode = any(g[1] == "init" and is_init for _, g, is_init in calls)
    if not meet:
        errs.append("no gxboot command that meets the peers (run/init/serve)")
    # RDMA or TCP
    tcp = ann.get(TCP_MARKER[0]) == TCP_MARKER[1]
    workers = [c for c in inits + mains
               if not (gxboot_call(c) and gxboot_call(c)[1] == "install")]
    rdma_res = [c for c in workers
                if any(k.startswith(RDMA_PREFIXES)
                       for k in ((c.get("resources") or {}).get("limits") or {}))]
    if tcp:
        if rdma_res:
            errs.append("TCP-only pod requests an RDMA resource")
        for c, g in meet:
            if opt(g[0], "--rdma") != "off" and env_value(c, "GXBOOT_RDMA") != "off":
                errs.append(f"{c['name']}: TCP-only pod without --rdma off")
        for c in inits + mains:
            if sec(c, spec, "runAsUser") != 65532:
                errs.append(f"{c['name']}: TCP-only pod must run as 65532")
            caps = (c.get("securityContext") or {}).get("capabilities") or {}
            if caps.get("add"):
                errs.append(f"{c['name']}: TCP-only pod adds capabilities {caps['add']}")
    else:
        for c in workers:
            if c not in rdma_res:
                errs.append(f"{c['name']}: no RDMA resource ({'/'.join(RDMA_PREFIXES)}*) "
                            f"and no {TCP_MARKER[0]}: {TCP_MARKER[1]} marker")
            caps = ((c.get("securityContext") or {}).get("capabilities") or {}).get("add")
            if "IPC_LOCK" not in (caps or []):
                errs.append(f"{c['name']}: RDMA container without IPC_LOCK")
            if sec(c, spec, "runAsUser") != 0:
                errs.append(f"{c['name']}: RDMA container must run as root (runAsUser: 0)")
    # network status, token, /run/gxboot
    for c, g in meet:
        errs += check_files(c, g[0], vols)
    for c, g, _ in calls:
        if g[1] in ("init", "run", "serve", "exec"):
            out = opt(g[0], "--out") or "/run/gxboot"
            mp = [m for m in c.get("volumeMounts") or [] if m.get("mountPath") == out]
            if not mp or "emptyDir" not in vols.get(mp[0].get("name"), {}):
                errs.append(f"{c['name']}: no emptyDir mounted at {out}")
    # one Secret per job, named after it (one job's rsh.key must not open another's)
    job = (doc.get("metadata") or {}).get("name")
    for v in vols.values():
        sn = (v.get("secret") or {}).get("secretName")
        if isinstance(sn, str) and sn.endswith("gxboot-token") and sn != f"{job}-gxboot-token":
            errs.append(f"Secret {sn}: the token Secret is per job: {job}-gxboot-token")
    for c, g, _ in calls:
        if g[1] == "install":
            errs += check_install(c, g[0], vols, mains)
        if g[1] == "exec" and "--" not in g[0][1:]:
            errs.append(f"{c['name']}: exec without '-- CMD'")
    if init_mode:
        errs += check_not_ready(doc, spec, all_docs)
    else:
        errs += check_headless(doc, spec, all_docs)
    if doc.get("kind") == "StatefulSet" and \
            doc["spec"].get("podManagementPolicy") != "Parallel":
        errs.append("StatefulSet without podManagementPolicy: Parallel")
    return errs, [(c, g) for c, g in meet]


def check_files(c, argv, vols):
    errs, name = [], c["name"]
    ns = opt(argv, "--network-status") or env_value(c, "GXBOOT_NETWORK_STATUS")
    ok = False
    for v in vols.values():
        items = (v.get("downwardAPI") or {}).get("items") or []
        for it in items:
            fp = (it.get("fieldRef") or {}).get("fieldPath")
            mp = mount_of(c, v["name"])
            if fp in (NS_FIELD, "metadata.annotations") and mp and \
                    isinstance(ns, str) and ns == f"{mp}/{it.get('path')}":
                ok = True
    if not ok:
        errs.append(f"{name}: --network-status does not name a mounted downward-API "
                    f"file of the network-status annotation")
    tf = opt(argv, "--token-file") or env_value(c, "GXBOOT_TOKEN_FILE")
    ok = False
    for v in vols.values():
        s = v.get("secret")
        mp = mount_of(c, v["name"])
        if s and mp and isinstance(tf, str) and tf.startswith(mp + "/"):
            keys = [it.get("path") for it in s.get("items") or []]
            ok = not keys or tf[len(mp) + 1:] in keys
    if not ok:
        errs.append(f"{name}: --token-file is not a file of a mounted Secret")
    if opt(argv, "--require-token") is not True and \
            env_value(c, "GXBOOT_REQUIRE_TOKEN") not in ("1", "true", "yes"):
        errs.append(f"{name}: no --require-token")
    return errs


def check_install(c, argv, vols, mains):
    rest = [a for a in argv[1:] if a != "install"]
    if len(rest) != 1:
        return [f"{c['name']}: want 'gxboot install DIR'"]
    d = rest[0]
    vol = [m["name"] for m in c.get("volumeMounts") or [] if m.get("mountPath") == d]
    if not vol or "emptyDir" not in vols.get(vol[0], {}):
        return [f"{c['name']}: install DIR {d} is not a mounted emptyDir"]
    users = [m for m in mains if runs_program(m, f"{d}/gxboot")]
    if not users:
        return [f"{c['name']}: no container runs {d}/gxboot"]
    return [f"{m['name']}: runs {d}/gxboot without mounting {d}"
            for m in users if mount_of(m, vol[0]) != d]


def services(all_docs):
    return {d["metadata"]["name"]: d for d in all_docs if d.get("kind") == "Service"}


def check_not_ready(doc, spec, all_docs):
    kind, s = doc.get("kind"), doc.get("spec") or {}
    if kind == "JobSet":
        if (s.get("network") or {}).get("publishNotReadyAddresses") is False:
            return ["init-container mode on a JobSet with publishNotReadyAddresses: false"]
        return []
    if kind == "Job" and doc.get("apiVersion", "").startswith("batch.volcano.sh"):
        if "--publish-not-ready-addresses" not in ((s.get("plugins") or {}).get("svc") or []):
            return ["init-container mode on Volcano needs svc: [--publish-not-ready-addresses]"]
        return []
    if kind in ("PyTorchJob", "MPIJob", "TFJob"):
        return [f"init-container mode hangs on {kind} (its Services hide not-ready pods): "
                "use the entrypoint flow"]
    name = s.get("serviceName") if kind == "StatefulSet" else spec.get("subdomain")
    svc = services(all_docs).get(name)
    if not svc:
        return [f"init-container mode: no headless Service '{name}' in the file"]
    if svc["spec"].get("clusterIP") != "None" or not svc["spec"].get("publishNotReadyAddresses"):
        return [f"Service {name}: init-container mode needs clusterIP: None and "
                "publishNotReadyAddresses: true"]
    return []


def check_headless(doc, spec, all_docs):
    kind, s = doc.get("kind"), doc.get("spec") or {}
    if kind not in ("StatefulSet", "Pod") and not (kind == "Job" and
                                                   doc.get("apiVersion") == "batch/v1"):
        return []  # the job system makes the Service
    name = s.get("serviceName") if kind == "StatefulSet" else spec.get("subdomain")
    svc = services(all_docs).get(name)
    if not name or not svc or svc["spec"].get("clusterIP") != "None":
        return [f"no headless Service '{name}' for the pods' names"]
    return []


# ---------------------------------------------------------------- policies
POLICY_KINDS = ("NetworkPolicy", "MultiNetworkPolicy")
RBAC_KINDS = ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "ServiceAccount")
RDZV_PORTS = (29410, 29411)  # --port P (rendezvous) and P+1 (check) on the primary network


def check_policy(doc):
    """A NetworkPolicy must admit TCP P and P+1 from the job's own pods to them; a
    MultiNetworkPolicy must name its networks (k8s.v1.cni.cncf.io/policy-for)."""
    errs, s = [], doc.get("spec") or {}
    sel = ((s.get("podSelector") or {}).get("matchLabels")) or {}
    if not sel:
        errs.append("podSelector selects no job (matchLabels empty)")
    if doc["kind"] == "MultiNetworkPolicy":
        if not doc["apiVersion"].startswith("k8s.cni.cncf.io/"):
            errs.append(f"MultiNetworkPolicy apiVersion {doc['apiVersion']}")
        if not ((doc["metadata"].get("annotations") or {}).get(
                "k8s.v1.cni.cncf.io/policy-for")):
            errs.append("no k8s.v1.cni.cncf.io/policy-for annotation")
        return errs
    if doc["apiVersion"] != "networking.k8s.io/v1":
        errs.append(f"NetworkPolicy apiVersion {doc['apiVersion']}")
    admitted = set()
    for rule in s.get("ingress") or []:
        peers = [((f.get("podSelector") or {}).get("matchLabels") or {})
                 for f in rule.get("from") or []]
        if not any(p and all(sel.get(k) == v for k, v in p.items()) for p in peers):
            continue
        ports = rule.get("ports")
        if not ports:
            admitted |= set(RDZV_PORTS)
        for pt in ports or []:
            if pt.get("protocol", "TCP") == "TCP":
                lo = pt.get("port")
                hi = pt.get("endPort", lo)
                admitted |= {p for p in RDZV_PORTS if isinstance(lo, int) and lo <= p <= hi}
    if "Ingress" in (s.get("policyTypes") or ["Ingress"]):
        missing = [p for p in RDZV_PORTS if p not in admitted]
        if missing:
            errs.append(f"does not admit TCP {missing} from the job's own pods "
                        "(gxboot --port P and P+1 on the primary network)")
    return errs


def wants_no_rbac(tpl, meet):
    """Pods of an MPI job run through `gxboot rsh` (a `serve` line, or a run line whose
    command is mpirun) need no Kubernetes API access."""
    for _, (argv, sub) in meet:
        rest = argv[argv.index("--") + 1:] if "--" in argv else []
        if sub == "serve" or (rest and os.path.basename(rest[0]) == "mpirun"):
            return True
    return False


# ---------------------------------------------------------------- dry-run
POD_IP = "10.244.1.5"
NAMESPACE = "default"


def pod_etc(host, sub):
    """The /etc files kubelet gives a pod: /etc/hosts (with "<host>.<sub>.<ns>.svc.<domain>"
    when the pod has a subdomain) and the cluster DNS resolv.conf."""
    full = f"{host}.{sub}.{NAMESPACE}.svc.cluster.local\t" if sub else ""
    return {"hosts": f"127.0.0.1\tlocalhost\n{POD_IP}\t{full}{host}\n",
            "resolv.conf": f"search {NAMESPACE}.svc.cluster.local svc.cluster.local "
                           "cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n"}


def replica(host, sub, pod):
    """One pod as its system makes it: host name, subdomain, and the job_env.Pod whose
    table entries (job_env.json, read from upstream) give each container its env and
    /etc files (pod_env)."""
    return {"host": host, "sub": sub, "pod": pod}


def pod_env(rep, tpl, c):
    """(env, {path below /etc: text}) of container c of this replica: exactly the
    job_env.json entries for its system, role and container position."""
    spec = tpl["spec"]
    inits, mains = spec.get("initContainers") or [], spec.get("containers") or []
    is_init = any(x is c for x in inits)
    idx = next(i for i, x in enumerate(inits if is_init else mains) if x is c)
    etc = pod_etc(rep["host"], rep["sub"])
    files = job_env.files_for(rep["pod"], c, is_init, idx)
    etc.update(files)
    return job_env.env_for(rep["pod"], c, is_init, idx), etc, sorted(files)


def Pod(sid, role=None, conds=(), tasks=None, **ctx):
    return job_env.Pod(sid, role, ctx, conds, tasks)


def replicas_of(doc, path):
    """The first and second replica of this template (see replica())."""
    kind, name, s = doc.get("kind"), doc["metadata"]["name"], doc.get("spec") or {}
    out = []
    if kind == "StatefulSet":
        out = [replica(f"{name}-{i}", s.get("serviceName"), Pod(None))
               for i in range(min(2, s.get("replicas", 1)))]
    elif kind == "Job" and doc.get("apiVersion") == "batch/v1":
        sub = ((s.get("template") or {}).get("spec") or {}).get("subdomain")
        indexed = s.get("completionMode") == "Indexed"
        out = [replica(f"{name}-{i}", sub, Pod("indexed-job" if indexed else None, index=i))
               for i in range(min(2, s.get("completions", 1)))]
    elif kind == "JobSet":
        rj = s["replicatedJobs"][int(re.search(r"replicatedJobs\[(\d+)\]", path).group(1))]
        n = rj["template"]["spec"].get("parallelism", 1)
        sub = (s.get("network") or {}).get("subdomain") or name
        out = [replica(f"{name}-{rj['name']}-0-{i}", sub, Pod("jobset", index=i))
               for i in range(min(2, n))]
    elif kind == "PyTorchJob":
        out = pytorchjob_replicas(doc, path)
    elif kind == "MPIJob":
        out = mpijob_replicas(doc, path)
    elif kind == "Job" and doc.get("apiVersion", "").startswith("batch.volcano.sh"):
        out = volcano_replicas(doc, path)
    elif kind == "LeaderWorkerSet":
        out = lws_replicas(doc, path)
    elif kind == "TrainJob":
        out = trainjob_replicas(doc)
    elif kind == "RayCluster":
        out = raycluster_replicas(doc, path)
    else:
        out = [replica(name, None, Pod(None))]
    return out


def pytorchjob_replicas(doc, path):
    """kubeflow/training-operator v1 (pkg/controller.v1/pytorch/envvar.go, master.go): pods
    <job>-<type>-<i>, each behind a Service of its name (no subdomain); MASTER_ADDR
    <job>-master-0, the port of the master's container "pytorch" named pytorchjob-port."""
    name, s = doc["metadata"]["name"], doc.get("spec") or {}
    specs = s["pytorchReplicaSpecs"]
    total = sum(r.get("replicas", 1) for r in specs.values())
    nproc = s.get("nprocPerNode")
    nproc_int = int(nproc) if isinstance(nproc, int) or (nproc or "").isdigit() else 1
    port = 23456
    for c in ((specs.get("Master") or {}).get("template") or {}).get("spec", {}).get(
            "containers") or []:
        for p in c.get("ports") or [] if c.get("name") == "pytorch" else []:
            if p.get("name") == "pytorchjob-port":
                port = p["containerPort"]
    conds = {"master"} if "Master" in specs else set()
    conds |= {"nprocPerNode"} if nproc is not None else set()
    conds |= {"elasticPolicy"} if s.get("elasticPolicy") else set()
    rtype = re.search(r"pytorchReplicaSpecs\.(\w+)", path).group(1)
    out = []
    for i in range(min(2, specs[rtype].get("replicas", 1))):
        rank = i + (1 if rtype == "Worker" else 0)
        out.append(replica(f"{name}-{rtype.lower()}-{i}", None, Pod(
            "pytorchjob", rtype.lower(), conds, job=name, port=port, world=total * nproc_int,
            rank=rank, nnodes=total, nproc=nproc)))
    return out


def volcano_replicas(doc, path):
    """volcano-sh/volcano job plugins (svc, env, pytorch): pods <job>-<task>-<i>, hostname the
    pod name, subdomain <job>; the svc plugin's VC_<TASK>_HOSTS / _NUM and
    /etc/volcano/<task>.host list every task's pods."""
    name, s = doc["metadata"]["name"], doc.get("spec") or {}
    tasks, info = s["tasks"], []
    for t in tasks:
        hs = [f"{name}-{t['name']}-{i}.{name}" for i in range(t.get("replicas", 1))]
        key = t["name"].replace("-", "_")
        info.append({"TASK": key.upper(), "task_file": key, "task_hosts": ",".join(hs),
                     "task_lines": "\n".join(hs), "task_num": len(hs)})
    conds = {f"plugin:{p}" for p in s.get("plugins") or {}}
    world = sum(t.get("replicas", 1) for t in tasks if t["name"] in ("master", "worker"))
    t = tasks[int(re.search(r"tasks\[(\d+)\]", path).group(1))]
    return [replica(f"{name}-{t['name']}-{i}", name, Pod(
        "volcano", t["name"], conds, info, job=name, index=i, world=world,
        rank=i + 1 if t["name"] == "worker" else 0)) for i in range(min(2, t.get("replicas", 1)))]


def mpijob_replicas(doc, path):
    """kubeflow/mpi-operator v2 (pkg/controller/mpi_job_controller.go): pods <job>-launcher and
    <job>-worker-<i> under subdomain <job>; the launcher's containers[0] alone gets the
    ConfigMap at /etc/mpi (hostfile "<job>-worker-<i>.<job>.<ns>.svc slots=N" for OpenMPI,
    "...svc:N" for Intel MPI and MPICH) and its mpiImplementation's variables."""
    name, s = doc["metadata"]["name"], doc.get("spec") or {}
    rtype = re.search(r"mpiReplicaSpecs\.(\w+)", path).group(1)
    n = s["mpiReplicaSpecs"]["Worker"].get("replicas", 1)
    slots = s.get("slotsPerWorker", 1)
    impl = s.get("mpiImplementation", "OpenMPI")
    line = "{} slots={}\n" if impl == "OpenMPI" else "{}:{}\n"
    hf = "".join(line.format(f"{name}-worker-{i}.{name}.{NAMESPACE}.svc", slots)
                 for i in range(n))
    conds = {f"mpi:{impl}"}
    if s.get("runLauncherAsWorker"):
        hf = line.format(f"{name}-launcher.{name}.{NAMESPACE}.svc", slots) + hf
        conds.add("runLauncherAsWorker")
    ctx = {"slots": slots, "hostfile": hf}
    if rtype == "Launcher":
        return [replica(f"{name}-launcher", name, Pod("mpi-operator", "launcher", conds, **ctx))]
    return [replica(f"{name}-worker-{i}", name, Pod("mpi-operator", "worker", conds, **ctx))
            for i in range(min(2, n))]


def lws_replicas(doc, path):
    """kubernetes-sigs/lws (pkg/utils/pod/pod_utils.go): leader <lws>-<g>, workers
    <lws>-<g>-<i>, subdomain <lws> (SubdomainShared) or the leader's name
    (UniquePerReplica)."""
    name, s = doc["metadata"]["name"], doc.get("spec") or {}
    size = (s.get("leaderWorkerTemplate") or {}).get("size", 1)
    groups = s.get("replicas", 1)
    unique = ((s.get("networkConfig") or {}).get("subdomainPolicy") == "UniquePerReplica")
    if "leaderTemplate" in path:
        pods = [(g, 0) for g in range(min(2, groups))]
    else:
        pods = [(g, i) for g in range(groups) for i in range(1, size)][:2]
    return [replica(f"{name}-{g}" if i == 0 else f"{name}-{g}-{i}",
                    f"{name}-{g}" if unique else name,
                    Pod("lws", "leader" if i == 0 else "worker", lws=name, group=g,
                        subdomain=f"{name}-{g}" if unique else name, ns=NAMESPACE,
                        size=size, worker=i))
            for g, i in pods]


def trainjob_nproc(tr):
    """PET_NPROC_PER_NODE as the torch plugin sets it (torch.go): numProcPerNode, else
    "auto" with a GPU per node, else max(1, CPUs per node)."""
    if tr.get("numProcPerNode") is not None:
        return tr["numProcPerNode"]
    res = tr.get("resourcesPerNode") or {}
    lim, req = res.get("limits") or {}, res.get("requests") or {}
    if any("gpu" in k for k in lim):
        return "auto"
    cpu = str(req.get("cpu") or lim.get("cpu") or "0")
    cpus = int(cpu[:-1]) // 1000 if cpu.endswith("m") else int(float(cpu))
    return max(1, cpus)


def trainjob_replicas(doc):
    """kubeflow/trainer torch plugin (pkg/runtime/framework/plugins/torch/torch.go) on the
    JobSet of ClusterTrainingRuntime torch-distributed: pods <tj>-node-0-<i>, subdomain
    <tj>; PET_* on the container named node."""
    name, tr = doc["metadata"]["name"], (doc.get("spec") or {}).get("trainer") or {}
    n = tr.get("numNodes", 1)
    return [replica(f"{name}-node-0-{i}", name, Pod(
        "trainjob", "node", nnodes=n, nproc=trainjob_nproc(tr), tj=name, index=i))
            for i in range(min(2, n))]


KUBERAY_VERSION = "v1.5.0"


def ray_start_cmd(head, params, fq, port):
    """generateRayStartCommand after setMissingRayStartParams (kuberay common/pod.go)."""
    p = {str(k): str(v) for k, v in (params or {}).items()}
    if head:
        p.setdefault("dashboard-host", "0.0.0.0")
    else:
        p.setdefault("address", f"{fq}:{port}")
    p.setdefault("metrics-export-port", "8080")
    p["block"] = "true"
    p.setdefault("dashboard-agent-listen-port", "52365")
    flags = ""
    for k in sorted(p):
        if p[k].lower() in ("true", "false") and k not in (
                "log-color", "include-dashboard", "include-log-monitor"):
            flags += f" --{k} " if p[k].lower() == "true" else ""
        else:
            flags += f" --{k}={p[k]} "
    return ("ray start --head " if head else "ray start ") + flags


def raycluster_replicas(doc, path):
    """ray-project/kuberay (ray-operator/controllers/ray/common/pod.go): the Ray container is
    containers[0] and alone gets the cluster's variables; init containers get FQ_RAY_IP and
    RAY_IP only. Pod names are random."""
    name, s = doc["metadata"]["name"], doc.get("spec") or {}
    head = s.get("headGroupSpec") or {}
    port = str((head.get("rayStartParams") or {}).get("port", 6379))
    fq = f"{name}-head-svc.{NAMESPACE}.svc.cluster.local"
    base = {"cluster": name, "ns": NAMESPACE, "port": port, "fq": fq,
            "ray_ip": f"{name}-head-svc", "kuberay_version": KUBERAY_VERSION}
    if "headGroupSpec" in path:
        host = f"{name}-head-x7k2p"
        return [replica(host, None, Pod("kuberay", "head", pod=host, group="headgroup",
                                        address=f"127.0.0.1:{port}", start_cmd=ray_start_cmd(
                                            True, head.get("rayStartParams"), fq, port), **base))]
    g = s["workerGroupSpecs"][int(re.search(r"workerGroupSpecs\[(\d+)\]", path).group(1))]
    out = []
    for suffix in ("q4t8z", "m2w9c")[:min(2, g.get("replicas", 1))]:
        host = f"{name}-{g['groupName']}-worker-{suffix}"
        out.append(replica(host, None, Pod(
            "kuberay", "worker", pod=host, group=g["groupName"], address=f"{fq}:{port}",
            start_cmd=ray_start_cmd(False, g.get("rayStartParams"), fq, port), **base)))
    return out


def expected_plan(doc, path):
    """What every dry-run plan of this pod must show: the number of peers the workload
    makes (its pods that meet), elastic for Ray, observer for an MPI launcher."""
    kind, s = doc.get("kind"), doc.get("spec") or {}
    if kind == "StatefulSet":
        return {"world": s.get("replicas", 1), "observer": False}
    if kind == "Job" and doc.get("apiVersion") == "batch/v1":
        return {"world": s.get("completions", 1), "observer": False}
    if kind == "JobSet":
        return {"world": sum(rj.get("replicas", 1) *
                             rj["template"]["spec"].get("parallelism", 1)
                             for rj in s["replicatedJobs"]), "observer": False}
    if kind == "PyTorchJob":
        return {"world": sum(r.get("replicas", 1) for r in s["pytorchReplicaSpecs"].values()),
                "observer": False}
    if kind == "MPIJob":
        n = s["mpiReplicaSpecs"]["Worker"].get("replicas", 1)
        launcher = "Launcher" in path
        if s.get("runLauncherAsWorker"):
            return {"world": n + 1, "observer": False}
        return {"world": n, "observer": launcher}
    if kind == "Job" and doc.get("apiVersion", "").startswith("batch.volcano.sh"):
        return {"world": sum(t.get("replicas", 1) for t in s["tasks"]), "observer": False}
    if kind == "LeaderWorkerSet":
        return {"world": (s.get("leaderWorkerTemplate") or {}).get("size", 1),
                "observer": False}
    if kind == "TrainJob":
        return {"world": (s.get("trainer") or {}).get("numNodes", 1), "observer": False}
    if kind == "RayCluster":
        return {"elastic": True}
    return {}


def fill_volumes(tmp, spec, c):
    """Create each of c's mounts under tmp; return {mountPath: local dir}."""
    vols = {v.get("name"): v for v in spec.get("volumes") or []}
    mapping = {}
    for m in c.get("volumeMounts") or []:
        v = vols.get(m.get("name"), {})
        d = os.path.join(tmp, m["name"])
        os.makedirs(d, exist_ok=True)
        if "secret" in v:
            keys = [it["path"] for it in v["secret"].get("items") or []] or ["token"]
            for k in keys:
                p = os.path.join(d, k)
                with open(p, "w", encoding="utf-8") as f:
                    f.write(os.urandom(24).hex() + "\n")
                os.chmod(p, 0o640)
        for it in (v.get("downwardAPI") or {}).get("items") or []:
            fp = (it.get("fieldRef") or {}).get("fieldPath", "")
            with open(os.path.join(d, it["path"]), "w", encoding="utf-8") as f:
                if fp == NS_FIELD:
                    f.write(NETWORK_STATUS_JSON)
                elif fp == "metadata.annotations":
                    esc = NETWORK_STATUS_JSON.replace('"', '\\"').replace("\n", "\\n")
                    f.write(f'k8s.v1.cni.cncf.io/network-status="{esc}"\n')
        mapping[m["mountPath"]] = d
    return mapping


def remap(word, mapping):
    for mp, d in sorted(mapping.items(), key=lambda x: -len(x[0])):
        for pre in ("", ) + tuple(f"{o}=" for o in ("--token-file", "--network-status",
                                                      "--out")):
            if word == pre + mp or word.startswith(pre + mp + "/"):
                return pre + d + word[len(pre + mp):]
    return word


def k8s_expand(word, env):
    """Kubernetes $(VAR) expansion in command/args ($$ escapes)."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else env.get(m.group(1), m.group(0)),
                  word)


def container_env(c, hostname):
    env = {}
    for e in c.get("env") or []:
        if "value" in e:
            env[e["name"]] = str(e["value"])
        elif "valueFrom" in e:
            fp = ((e["valueFrom"].get("fieldRef") or {}).get("fieldPath") or "")
            env[e["name"]] = {"metadata.name": hostname, "status.podIP": "10.244.1.5",
                              "spec.nodeName": "node-1", "metadata.namespace": "default"
                              }.get(fp, "0" if "index" in fp else "placeholder")
    return env


def dry_run_probe(gxboot):
    """None if dry-run works, else the reason to skip."""
    if not os.path.exists(gxboot):
        return f"{gxboot} not built"
    p = subprocess.run([gxboot, "--dry-run", "--peers", "a", "--", "true"],
                       capture_output=True, text=True, timeout=20)
    if p.returncode == 2 and "not available" in p.stderr:
        return "gxboot --dry-run not available in this build"
    return None


# Subcommands this gxboot does not have yet: while gxboot answers "not available yet" for
# one of them, its command lines are SKIP with this reason; delete the entry (one line) to
# make them count. Any other "not available yet" answer is a FAIL.
PENDING_SUBCMDS = {}

ETC_RUNNER = ["unshare", "-m", "/bin/sh", "-c",
              'mount --make-rprivate / && mount --bind "$0" /etc && exec "$@"']
_etc_ok = []


def etc_runner_works():
    """Whether this user can give a command a private /etc (root: unshare -m + bind mount)."""
    if not _etc_ok:
        ok = False
        if os.geteuid() == 0:
            with tempfile.TemporaryDirectory(prefix="gxck-etc.") as d:
                open(os.path.join(d, "gxck-probe"), "w").close()
                try:
                    p = subprocess.run(ETC_RUNNER + [d, "/bin/sh", "-c",
                                                     "test -e /etc/gxck-probe"],
                                       capture_output=True, timeout=20)
                    ok = p.returncode == 0
                except (OSError, subprocess.TimeoutExpired):
                    ok = False
        _etc_ok.append(ok)
    return _etc_ok[0]


def dry_run(gxboot, label, argv, env, skip, sub="run", etc=None, expect=None):
    """Run `gxboot --dry-run ARGS`; with etc (a directory), inside a mount namespace where
    that directory is /etc (the pod's /etc/hosts, resolv.conf, /etc/mpi/hostfile ...)."""
    shown = " ".join(shlex.quote(a) for a in argv)
    if skip:
        return report("SKIP", f"dry-run {label}", skip)
    full = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/tmp"}
    full.update(env)
    cmd = [gxboot, "--dry-run"] + argv[1:]
    if etc:
        cmd = ETC_RUNNER + [etc] + cmd
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, env=full, timeout=20)
    except subprocess.TimeoutExpired:
        return report("FAIL", f"dry-run {label}", f"timed out: {shown}")
    if p.returncode == 2 and "not available yet" in p.stderr and sub in PENDING_SUBCMDS:
        return report("SKIP", f"dry-run {label}", PENDING_SUBCMDS[sub])
    if p.returncode != 0:
        last = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
        return report("FAIL", f"dry-run {label}", f"exit {p.returncode}: {last} [{shown}]")
    plan = parse_plan(p.stdout)
    bad = plan_mismatch(plan, expect or {})
    if bad:
        return report("FAIL", f"dry-run {label}", f"{bad} [{shown}]")
    report("PASS", f"dry-run {label}" + (f" ({plan['peers']} peers from {plan['source']}"
                                          f"{', observer' if plan['observer'] else ''})"
                                          if plan.get("peers") else ""))
    return plan.get("job")


def parse_plan(out):
    """The fields of `gxboot --dry-run`'s plan the checker compares."""
    def field(name):
        m = re.search(rf"^  {name}:\s*(.*)$", out, re.M)
        return m.group(1).strip() if m else None
    plan = {"job": (field("job id") or "").split(" ")[0] or None, "peers": None,
            "source": None, "observer": "observer (not in the peer list)" in out,
            "elastic": field("elastic") is not None}
    m = re.match(r"(\d+) from (.*)", field("peers") or "")
    if m:
        plan["peers"], plan["source"] = int(m.group(1)), m.group(2)
    m = re.search(r"^    rank (\d+) .*<- this pod$", out, re.M)
    plan["rank"] = int(m.group(1)) if m else None
    return plan


def plan_mismatch(plan, expect):
    """Why the plan is not what the system's pod needs ("" when it is)."""
    if expect.get("world") and plan["peers"] != expect["world"] and not plan["elastic"]:
        return f"plan has {plan['peers']} peers, the workload has {expect['world']} pods"
    if "rank" in expect and plan["rank"] != expect["rank"]:
        return f"this pod is rank {plan['rank']}, want {expect['rank']}"
    if expect.get("elastic") and not plan["elastic"]:
        return "the plan is not elastic (workers join whenever they start)"
    if "observer" in expect and plan["observer"] != expect["observer"]:
        return ("the launcher does not join as an observer" if expect["observer"] else
                "this pod joins as an observer, not as a peer")
    return ""


def job_group(doc, rep):
    """Pods that must meet as one job: the workload, per LWS group."""
    return (doc["metadata"]["name"], str(rep["pod"].ctx.get("group", ""))
            if rep["pod"].sid == "lws" else "")


def dry_run_pod(gxboot, fname, doc, path, tpl, meet, skip, job_ids):
    """Dry-run every gxboot line of the first two replicas; job_ids[group][label] = job id."""
    for rep in replicas_of(doc, path):
        host = rep["host"]
        for c, (argv, sub) in meet:
            label = f"{fname} {host}/{c['name']} ({sub})"
            sys_env, etc_files, system_files = pod_env(rep, tpl, c)
            with tempfile.TemporaryDirectory(prefix="gxck.") as tmp:
                etc = None
                if etc_runner_works():
                    etc = os.path.join(tmp, "etc")
                    for rel, text in etc_files.items():
                        os.makedirs(os.path.dirname(os.path.join(etc, rel)), exist_ok=True)
                        with open(os.path.join(etc, rel), "w", encoding="utf-8") as f:
                            f.write(text)
                elif system_files and not skip:
                    report("SKIP", f"dry-run {label}", "needs root (unshare -m) to give the "
                           f"pod its /etc/{', /etc/'.join(system_files)}")
                    continue
                mapping = fill_volumes(tmp, tpl["spec"], c)
                env = dict(sys_env)
                env.update(container_env(c, host))
                words_ = [remap(k8s_expand(a, env), mapping) for a in argv]
                env = {k: remap(v, mapping) for k, v in env.items()}
                if opt(words_, "--self") is None:
                    env["GXBOOT_SELF"] = host
                if opt(words_, "--out") is None and "GXBOOT_OUT" not in env:
                    env["GXBOOT_OUT"] = os.path.join(tmp, "out")
                    os.makedirs(env["GXBOOT_OUT"])
                jid = dry_run(gxboot, label, words_, env, skip, sub, etc,
                              expected_plan(doc, path))
                if jid:
                    job_ids.setdefault(job_group(doc, rep), {})[label] = jid


# ---------------------------------------------------------------- TorchX
# The component through the real TorchX (../shared/third_party/python, run by torchx_pods.py
# with --workspace="" --dryrun): every `torchx run` line that README.md, docs/torchx.md,
# container/README.md and the component's docstring document, the pods of each request
# checked and dry-run with the env TorchX and the job system give them (torchx_pods.py:
# Volcano's plugins from job_env.json).
MCAD_EXTRA_CFG = {"image_secret": "regcred", "priority": "5", "priority_class_name": "high",
                  "coscheduler_name": "cosched", "service_account": "trainer"}


def documented_torchx_runs(text):
    """The argument lists after `torchx run` of the lines of text that start with it
    (backslash continuations joined)."""
    runs, cur = [], None
    for line in text.splitlines():
        s = line.strip()
        if cur is None and not s.startswith("torchx run "):
            continue
        cur = (cur or "") + " " + s.rstrip("\\")
        if not s.endswith("\\"):
            runs.append(shlex.split(cur)[2:])
            cur = None
    return runs


def sched_of(args):
    return args[args.index("-s") + 1] if "-s" in args else None


def cfg_of(args):
    cfg = {}
    for i, a in enumerate(args[:-1]):
        if a == "-cfg":
            cfg.update(kv.split("=", 1) for kv in args[i + 1].split(","))
    return cfg


def torchx_runs(root):
    """{tuple(args): [where]} of the documented lines. container/README.md and the component
    document both schedulers (FAIL otherwise); README.md and docs/torchx.md show one."""
    comp = os.path.join(root, "container/torchx/gxboot_ddp.py")
    docs = [(f, open(os.path.join(root, f), encoding="utf-8").read(), every)
            for f, every in (("README.md", False), ("docs/torchx.md", False),
                             ("container/README.md", True))]
    docs.append(("the component's docstring", ast.get_docstring(ast.parse(
        open(comp, encoding="utf-8").read())) or "", True))
    runs = {}
    for where, text, every in docs:
        got = [a for a in documented_torchx_runs(text) if "gxboot_ddp.py:ddp" in " ".join(a)]
        for sched in torchx_pods.SCHEDULERS if every else ():
            if not any(sched_of(a) == sched for a in got):
                report("FAIL", f"torchx documented lines ({where})",
                       f"no `torchx run -s {sched} ...gxboot_ddp.py:ddp` line")
        if not got:
            report("FAIL", f"torchx documented lines ({where})", "none")
        for a in got:
            runs.setdefault(tuple(a), []).append(where)
    return runs


def torchx_pod_errs(sched, args, req, pods):
    """What is wrong with the pods of one documented line (a list of reasons)."""
    errs = []
    m = re.search(r"-j\s+(?:\d+:)?(\d+)x", " ".join(args))
    n = int(m.group(1)) if m else None
    # an elastic -j MIN:MAX: dist.ddp writes torchrun --nnodes MIN:MAX, which gxboot runs only
    # as its own --nnodes MIN:MAX (it refuses the line under a fixed count)
    rng = re.search(r"-j\s+(\d+:\d+)x", " ".join(args))
    if n is not None and len(pods) != n:
        errs.append(f"{len(pods)} pods for -j {n}x")
    for i, p in enumerate(pods):
        argv, env, c = p.argv(), p.env(), p.container()
        if os.path.basename(argv[0]) != "gxboot":
            errs.append(f"pod {i} runs {argv[0]}, not gxboot")
            continue
        if "--" not in argv or argv[argv.index("--") + 1:argv.index("--") + 3] != ["bash", "-c"]:
            errs.append(f"pod {i}: not 'gxboot OPTS -- bash -c ...'")
        elif "torchrun" not in argv[argv.index("--") + 3]:
            errs.append(f"pod {i}: the dist.ddp torchrun command is gone")
        if "--require-token" not in argv:
            errs.append(f"pod {i}: no --require-token")
        gopts = argv[:argv.index("--")] if "--" in argv else argv
        if rng and ("--nnodes" not in gopts or
                    gopts[gopts.index("--nnodes") + 1] != rng.group(1)):
            errs.append(f"pod {i}: -j {rng.group(1)}x does not give gxboot --nnodes {rng.group(1)}")
        lim = ((c.get("resources") or {}).get("limits") or {})
        if not any(k.startswith(RDMA_PREFIXES) for k in lim):
            errs.append(f"pod {i}: no RDMA device requested")
        if (env.get("TORCHX_RANK0_HOST") == "localhost") != (i == 0):
            errs.append(f"pod {i}: TORCHX_RANK0_HOST={env.get('TORCHX_RANK0_HOST')}")
    if sched == "kubernetes_mcad":
        # -cfg network= is the only way TorchX attaches net1 (the Multus annotation)
        net = cfg_of(args).get("network")
        bad = [p.name for p in pods if not p.networks() or p.networks() != net]
        if bad:
            errs.append(f"no {NET_ANN} annotation naming the secondary network on "
                        f"{', '.join(bad)} (-cfg network= is what TorchX turns into it): "
                        f"net1 would not be attached")
        svc = next(it["generictemplate"] for it in req["spec"]["resources"]["GenericItems"]
                   if it["generictemplate"].get("kind") == "Service")
        if svc["spec"].get("publishNotReadyAddresses") is not True:
            errs.append(f"Service {svc['metadata']['name']} does not publish not-ready pods")
    else:
        if "--publish-not-ready-addresses" not in (req["spec"].get("plugins") or {}).get(
                "svc", []):
            errs.append("the Volcano svc plugin does not publish not-ready pods")
        if any(p.networks() for p in pods):
            errs.append("a Multus annotation from TorchX on Volcano: the README says it "
                        "cannot")
    return errs


def torchx_dry_runs(gxboot, sched, pods, skip):
    """gxboot --dry-run of every pod with its own env, /etc (as root) and mounted files;
    each plan: every pod a peer, rank = pod index, one job id."""
    ids = set()
    for i, p in enumerate(pods):
        label = f"torchx {sched} {p.hostname}"
        with tempfile.TemporaryDirectory(prefix="gxck.") as tmp:
            os.makedirs(os.path.join(tmp, "tok"))
            os.makedirs(os.path.join(tmp, "pi"))
            with open(os.path.join(tmp, "tok", "token"), "w", encoding="utf-8") as f:
                f.write(os.urandom(24).hex() + "\n")
            os.chmod(os.path.join(tmp, "tok", "token"), 0o640)
            with open(os.path.join(tmp, "pi", "network-status"), "w", encoding="utf-8") as f:
                f.write(NETWORK_STATUS_JSON)
            mp = torchx_pods.Mapper([f"/etc/gxboot={tmp}/tok", f"/etc/podinfo={tmp}/pi"])
            argv = [mp.word(w, i) for w in p.argv()]
            env = {k: mp.word(v, i) for k, v in p.env().items()}
            env.update(GXBOOT_SELF=p.hostname, GXBOOT_OUT=os.path.join(tmp, "out"))
            etc = None
            if etc_runner_works():
                etc = os.path.join(tmp, "etc")
                os.makedirs(etc)
                for rel, text in pod_etc(p.hostname, p.subdomain).items():
                    with open(os.path.join(etc, rel), "w", encoding="utf-8") as f:
                        f.write(text)
            jid = dry_run(gxboot, label, argv, env, skip, etc=etc,
                          expect={"world": len(pods), "rank": i})
            if jid:
                ids.add(jid)
    if len(ids) > 1:
        report("FAIL", f"job id torchx {sched}", f"pods disagree: {sorted(ids)}")
    elif ids:
        report("PASS", f"job id torchx {sched} ({len(pods)} pods agree)")


def check_torchx_mcad_outputs(root):
    """The AppWrapper's other outputs, as container/README.md states them."""
    args = ["-s", "kubernetes_mcad", "-cfg", ",".join(
        f"{k}={v}" for k, v in dict(MCAD_EXTRA_CFG, network="rdma-shared-net").items()),
        "container/torchx/gxboot_ddp.py:ddp", "--scheduler", "kubernetes_mcad", "-j", "2x1",
        "--script", "train.py"]
    bare = ["-s", "kubernetes_mcad", "dist.ddp", "-j", "2x1", "--script", "train.py"]
    try:
        req = torchx_pods.torchx_dryrun(args, cwd=root)
        pods, _ = torchx_pods.request_pods(req)
        pods0, _ = torchx_pods.request_pods(torchx_pods.torchx_dryrun(bare, cwd=root))
    except torchx_pods.Error as e:
        return report("FAIL", "torchx kubernetes_mcad outputs", str(e))
    errs, cfg = [], MCAD_EXTRA_CFG
    items = [it["generictemplate"] for it in req["spec"]["resources"]["GenericItems"]]
    if req["spec"].get("priority") != int(cfg["priority"]):
        errs.append(f"-cfg priority: spec.priority {req['spec'].get('priority')}")
    groups = [g for g in items if g.get("kind") == "PodGroup"]
    if [g["spec"].get("minMember") for g in groups] != [len(pods)]:
        errs.append(f"-cfg coscheduler_name: PodGroups {groups}")
    svc = next(g for g in items if g.get("kind") == "Service")
    if [(x.get("port"), x.get("targetPort")) for x in svc["spec"].get("ports") or []] != [
            (29500, 29500)]:
        errs.append(f"Service ports {svc['spec'].get('ports')}, want the c10d port alone")
    for p in pods:
        if p.spec.get("imagePullSecrets") != [{"name": cfg["image_secret"]}]:
            errs.append(f"-cfg image_secret: {p.spec.get('imagePullSecrets')}")
        for key, field in (("priority_class_name", "priorityClassName"),
                           ("coscheduler_name", "schedulerName"),
                           ("service_account", "serviceAccountName")):
            if p.spec.get(field) != cfg[key]:
                errs.append(f"-cfg {key}: {field} {p.spec.get(field)}")
    for p in pods0:
        # without image_secret TorchX still writes one entry, with no name
        if p.spec.get("imagePullSecrets") != [{}]:
            errs.append(f"no image_secret: imagePullSecrets {p.spec.get('imagePullSecrets')}")
        if p.networks() is not None:
            errs.append(f"no -cfg network: annotation {p.networks()}")
    report("FAIL" if errs else "PASS", "torchx kubernetes_mcad outputs (Service, network, "
           + ", ".join(cfg) + ")", "; ".join(sorted(set(errs))))


def check_torchx_plain(root):
    """Plain dist.ddp: TorchX always sets `command`, which replaces an image's ENTRYPOINT,
    so gxboot as the ENTRYPOINT (container/Dockerfile's) never runs."""
    ep, cmd = torchx_pods.dockerfile_entry(os.path.join(root, "container/Dockerfile"))
    for sched in torchx_pods.SCHEDULERS:
        args = ["-s", sched] + (["-cfg", "queue=default"] if sched == "kubernetes" else []) + [
            "dist.ddp", "-j", "2x1", "--script", "train.py"]
        try:
            pods, _ = torchx_pods.request_pods(torchx_pods.torchx_dryrun(args, cwd=root))
        except torchx_pods.Error as e:
            report("FAIL", f"torchx dist.ddp {sched}", str(e))
            continue
        bad = [f"pod {i} runs {' '.join(p.argv(ep, cmd))[:60]}" for i, p in enumerate(pods)
               if not p.container().get("command") or
               any("gxboot" in w for w in p.argv(ep, cmd))]
        report("FAIL" if bad or not ep else "PASS",
               f"torchx dist.ddp {sched}: its command replaces the ENTRYPOINT {ep}",
               "; ".join(bad) or ("" if ep else "container/Dockerfile has no ENTRYPOINT"))


def check_torchx(root, gxboot, skip):
    path = os.path.join(root, "container/torchx/gxboot_ddp.py")
    if not os.path.exists(path):
        return report("FAIL", "torchx component", "container/torchx/gxboot_ddp.py missing")
    for args, where in torchx_runs(root).items():
        args, sched = list(args), sched_of(args)
        label = f"torchx component ({sched}, {' and '.join(where)})"
        try:
            req = torchx_pods.torchx_dryrun(args, cwd=root)
            pods, _ = torchx_pods.request_pods(req)
            errs = torchx_pod_errs(sched, args, req, pods)
        except torchx_pods.Error as e:
            errs, pods = [str(e)], []
        report("FAIL" if errs else "PASS", label, "; ".join(errs))
        if not errs:
            torchx_dry_runs(gxboot, sched, pods, skip)
    check_torchx_mcad_outputs(root)
    check_torchx_plain(root)


# ---------------------------------------------------------------- self-test
# Each mutation breaks one rule in a copy of the tree; the checker must FAIL on it.
MUTATIONS = [
    ("statefulset-init.yaml", "  publishNotReadyAddresses: true\n", "", "publishNotReadyAddresses"),
    ("statefulset-init.yaml", "  podManagementPolicy: Parallel\n", "", "Parallel"),
    ("statefulset-init.yaml", "        - --require-token\n", "", "--require-token"),
    ("jobset.yaml", "publishNotReadyAddresses: true", "publishNotReadyAddresses: false",
     "publishNotReadyAddresses"),
    ("volcano-job.yaml", 'svc: ["--publish-not-ready-addresses"]', "svc: []",
     "publish-not-ready"),
    ("volcano-job.yaml", "k8s.v1.cni.cncf.io/networks: rdma-shared-net",
     "example.com/other: x", "k8s.v1.cni.cncf.io/networks"),
    ("pytorchjob.yaml", "            add: [\"IPC_LOCK\"]", "            add: []", "IPC_LOCK"),
    ("pytorchjob.yaml", "\n                rdma/rdma_shared_device_a: 1\n", "\n", "RDMA resource"),
    ("pytorchjob.yaml", "            - /etc/podinfo/network-status\n",
     "            - /etc/podinfo/other\n", "network-status"),
    ("pytorchjob.yaml", '["/gxboot", "install", "/opt/gxboot"]', '["/gxboot", "init"]',
     "init-container mode hangs"),
    ("mpijob.yaml", "mountPath: /run/gxboot", "mountPath: /run/other", "/run/gxboot"),
    ("mpijob.yaml", "secretName: mpi-gxboot-token", "secretName: mpi-gxboot-token\n"
     "              items: [{key: token, path: other}]", "Secret"),
    ("mpijob.yaml", "secretName: mpi-gxboot-token", "secretName: gxboot-token",
     "per job"),
    ("indexed-job-tcp.yaml", "        runAsUser: 65532\n", "        runAsUser: 1000\n", "65532"),
    ("indexed-job-tcp.yaml", "            drop: [\"ALL\"]\n        volumeMounts:\n        - name: gxboot-bin\n          mountPath: /opt/gxboot\n          readOnly",
     "            add: [\"NET_RAW\"]\n        volumeMounts:\n        - name: gxboot-bin\n          mountPath: /opt/gxboot\n          readOnly", "capabilities"),
    ("indexed-job-tcp.yaml", '        - "off"\n', '        - "auto"\n', "--rdma off"),
    ("indexed-job-tcp.yaml", "      subdomain: ij\n", "      subdomain: nope\n", "headless"),
    ("appwrapper-pytorchjob.yaml", '"install", "/opt/gxboot"]', '"install", "/opt/elsewhere"]',
     "install DIR"),
    ("trainjob.yaml", "                      k8s.v1.cni.cncf.io/networks: rdma-shared-net\n",
     "                      example.com/other: x\n", "k8s.v1.cni.cncf.io/networks"),
    ("trainjob.yaml", '                          add: ["IPC_LOCK"]\n',
     "                          add: []\n", "IPC_LOCK"),
    ("lws.yaml", "          - /etc/podinfo/network-status\n", "          - /etc/podinfo/other\n",
     "network-status"),
    ("lws-ray.yaml", "          - name: gxboot-run\n            mountPath: /run/gxboot\n",
     "          - name: gxboot-run\n            mountPath: /run/other\n", "/run/gxboot"),
    ("statefulset-mpi.yaml", "      automountServiceAccountToken: false\n", "",
     "automountServiceAccountToken"),
    ("statefulset-mpi.yaml", "apiVersion: v1\nkind: Service\n",
     "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: exec\n"
     "rules: []\n---\napiVersion: v1\nkind: Service\n", "RBAC"),
    ("statefulset-mpi.yaml", "--token-file /etc/gxboot/token --require-token \\\n",
     "--token-file /etc/gxboot/token \\\n", "--require-token"),
    ("mpijob-serve.yaml", "          automountServiceAccountToken: false\n", "",
     "automountServiceAccountToken"),
    ("networkpolicy.yaml", "    - protocol: TCP\n      port: 29411\n", "", "29411"),
    ("networkpolicy.yaml", "    k8s.v1.cni.cncf.io/policy-for: rdma-shared-net\n",
     "    example.com/other: x\n", "policy-for"),
    ("appwrapper-v1beta2.yaml", "\n                      rdma/rdma_shared_device_a: 1\n", "\n",
     "RDMA resource"),
    ("raycluster-appwrapper.yaml", "                  mountPath: /run/gxboot\n",
     "                  mountPath: /run/other\n", "/run/gxboot"),
    ("../README.md", "torchx run -s kubernetes_mcad -cfg network=rdma-shared-net",
     "torchx run -s kubernetes_mcad", "net1 would not be attached"),
    ("../../README.md", "torchx run -s kubernetes_mcad -cfg network=rdma-shared-net",
     "torchx run -s kubernetes_mcad", "net1 would not be attached"),
    ("../../docs/torchx.md", "torchx run -s kubernetes_mcad -cfg network=rdma-shared-net",
     "torchx run -s kubernetes_mcad", "net1 would not be attached"),
    ("../torchx/gxboot_ddp.py", "        role.entrypoint = gxboot\n", "", "not gxboot"),
    ("../torchx/gxboot_ddp.py", ', "--require-token"]', "]", "--require-token"),
    ("../Dockerfile", "FROM scratch", "FROM debian:bookworm-slim", "scratch"),
    ("../Dockerfile", " libjansson-dev", "", "deps.sh"),
    ("../Dockerfile", "USER 65532:65532\n", "", "USER 65532"),
    ("../Dockerfile", "COPY --from=build /src/build/gxboot /gxboot",
     "COPY --from=build /src/build/gxboot /usr/bin/gxboot", "/gxboot"),
]


# Mutations of the dry-run (they need a gxboot binary; SKIP without one): the checker must
# see that the plan gxboot prints is not what the workload needs.
DRY_MUTATIONS = [
    ("check-job.yaml", '        - "ck-{0..3}.ck"\n', '        - "ck-{0..4}.ck"\n',
     "5 peers, the workload has 4"),
    ("statefulset-mpi.yaml", "--peers 'smpi-{0..2}.smpi' --slots 8 \\\n",
     "--peers 'smpi-{0..3}.smpi' --slots 8 \\\n", "4 peers, the workload has 3"),
    ("mpijob-serve.yaml", "            - /opt/gxboot/gxboot\n            - --token-file\n",
     "            - /opt/gxboot/gxboot\n            - --peers\n            - mpi2-worker-{0..1}.mpi2\n"
     "            - --token-file\n", "not in --peers"),
    ("raycluster-appwrapper.yaml", "                - --ray\n                - head\n",
     "                - --ray\n                - worker\n", "dry-run"),
    ("trainjob.yaml", "    numNodes: 4\n", "    numNodes: 4\n    env:\n    - name: GXBOOT_NNODES\n"
     "      value: \"2\"\n", "dry-run"),
    ("../torchx/gxboot_ddp.py", 'f"{app}-{{0..{nnodes - 1}}}.{app}"',
     'f"{app}-{{0..{nnodes}}}.{app}"', "peers, the workload has"),
    ("../torchx/gxboot_ddp.py", '    count = str(nnodes)\n', '    count = str(nnodes + 1)\n',
     "dry-run"),
]


def self_test(root, gxboot):
    import shutil
    have = os.path.exists(gxboot)
    for (fname, old, new, want), dry in [(m, False) for m in MUTATIONS] + \
            [(m, True) for m in DRY_MUTATIONS]:
        name = f"self-test {fname}: {old.strip()[:40]!r}"
        if dry and not have:
            report("SKIP", name, f"{gxboot} not built")
            continue
        if dry and fname.startswith("mpijob") and not etc_runner_works():
            report("SKIP", name, "needs root (unshare -m) for the launcher's /etc/mpi/hostfile")
            continue
        with tempfile.TemporaryDirectory(prefix="gxck-self.") as tmp:
            shutil.copytree(os.path.join(root, "container"), os.path.join(tmp, "container"))
            os.makedirs(os.path.join(tmp, "tests"))
            shutil.copy(os.path.join(root, "tests/deps.sh"), os.path.join(tmp, "tests"))
            shutil.copy(os.path.join(root, "README.md"), tmp)
            shutil.copytree(os.path.join(root, "docs"), os.path.join(tmp, "docs"))
            path = os.path.normpath(os.path.join(tmp, "container/k8s", fname))
            text = open(path, encoding="utf-8").read()
            if old not in text:
                report("FAIL", name, "mutation does not apply (manifest changed?)")
                continue
            with open(path, "w", encoding="utf-8") as f:
                f.write(text.replace(old, new, 1))
            args = ["--root", tmp, "--gxboot", gxboot if dry else os.path.join(tmp, "no-gxboot")]
            if fname.startswith(("../torchx/", "../README.md", "../../")):
                args += ["--only", "torchx"]
            elif fname == "../Dockerfile":
                args += ["--only", "Dockerfile"]
            elif not fname.startswith("../"):
                args += ["--only", fname]
            p = subprocess.run([sys.executable, os.path.abspath(__file__)] + args,
                               capture_output=True, text=True)
            fails = [l for l in p.stdout.splitlines() if l.startswith("FAIL")]
            if p.returncode == 1 and fails and (want is None or any(want in l for l in fails)):
                report("PASS", name)
            else:
                report("FAIL", name, f"not caught (exit {p.returncode}, want '{want}')")


# ---------------------------------------------------------------- main
def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(here)))
    ap.add_argument("--gxboot", default=None)
    ap.add_argument("--only", default=None,
                    help="check only this file of container/k8s (torchx: the TorchX checks; "
                    "Dockerfile: the Dockerfile and the binary alone)")
    ap.add_argument("--self-test", action="store_true",
                    help="break each rule in a copy of the tree and expect a FAIL")
    a = ap.parse_args()
    gxboot = os.path.abspath(a.gxboot or os.path.join(a.root, "build/gxboot"))
    if a.self_test:
        self_test(a.root, gxboot)
        print(f"check_manifests self-test: {results['PASS']} passed, {results['FAIL']} failed")
        return 1 if results["FAIL"] else 0
    check_dockerfile(a.root)
    check_static(gxboot)
    skip = dry_run_probe(gxboot)
    kdir = os.path.join(a.root, "container/k8s")
    files = sorted(f for f in os.listdir(kdir) if f.endswith((".yaml", ".yml")) and
                   (a.only is None or f == a.only))
    if not files and a.only not in ("torchx", "Dockerfile"):
        report("FAIL", "manifests", "container/k8s has no YAML")
    for fname in files:
        try:
            docs = [d for d in yaml.safe_load_all(open(os.path.join(kdir, fname),
                                                        encoding="utf-8")) if d is not None]
        except yaml.YAMLError as e:
            report("FAIL", f"yaml {fname}", str(e).replace("\n", " "))
            continue
        bad = [i for i, d in enumerate(docs) if not isinstance(d, dict) or
               not d.get("apiVersion") or not d.get("kind")]
        if bad or not docs:
            report("FAIL", f"yaml {fname}", f"documents {bad} lack apiVersion/kind")
            continue
        report("PASS", f"yaml {fname} ({len(docs)} documents)")
        for doc in docs:
            if doc["kind"] in POLICY_KINDS:
                errs = check_policy(doc)
                label = f"policy {fname} {doc['kind']}/{doc['metadata']['name']}"
                report("FAIL" if errs else "PASS", label, "; ".join(errs))
        pods = [(d, p, t) for doc in docs for d, p, t in workloads(doc)]
        if not pods and not any(d["kind"] in POLICY_KINDS for d in docs):
            report("FAIL", f"manifest {fname}", "no pod template")
        rbac = [f"{d['kind']}/{d['metadata']['name']}" for d in docs if d["kind"] in RBAC_KINDS]
        job_ids = {}
        for doc, path, tpl in pods:
            label = f"{fname} {doc['kind']}/{doc['metadata']['name']} {path}"
            errs, meet = check_pod(fname, doc, path, tpl, docs)
            if wants_no_rbac(tpl, meet):
                if tpl["spec"].get("automountServiceAccountToken") is not False:
                    errs.append("MPI over gxboot rsh: set automountServiceAccountToken: false "
                                "(no API access needed)")
                if rbac:
                    errs.append(f"MPI over gxboot rsh needs no RBAC, found {', '.join(rbac)}")
            if errs:
                report("FAIL", f"manifest {label}", "; ".join(errs))
            else:
                report("PASS", f"manifest {label}")
            dry_run_pod(gxboot, fname, doc, path, tpl, meet, skip, job_ids)
        for (job, group), ids in sorted(job_ids.items()):
            name = f"job id {fname} {job}{' ' + group if group else ''}"
            if len(set(ids.values())) > 1:
                report("FAIL", name, "pods disagree: " + ", ".join(
                    f"{k.split(' ', 1)[1]}={v[:12]}" for k, v in sorted(ids.items())))
            elif len(ids) > 1:
                report("PASS", f"{name} ({len(ids)} command lines agree)")
    if a.only in (None, "torchx"):
        check_torchx(a.root, gxboot, skip)
    print(f"check_manifests: {results['PASS']} passed, {results['FAIL']} failed, "
          f"{results['SKIP']} skipped")
    return 1 if results["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
