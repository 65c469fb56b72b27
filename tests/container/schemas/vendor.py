#!/usr/bin/python3
"""vendor.py - (re)make the vendored schemas in this directory from upstream files.

Each SOURCES entry names an upstream repository, commit and file (tests/container/UPSTREAM.md
lists the same). The script reads them with `git show COMMIT:PATH` from local clones found at
MIRROR/<owner>+<name>/repo or MIRROR/<owner>/<name> (--mirror, default /work/.mirror), and writes

  crd-<group>-<version>-<kind>.json  the CRD's openAPIV3Schema of that version
  k8s-core.json                      the Kubernetes OpenAPI v2 definitions reachable from
                                     Pod, Service, StatefulSet, Job, NetworkPolicy, ObjectMeta

with every "description" dropped (most of the bytes; validation does not use them) and
"source" = {repo, commit, path}. Nothing else is changed: strictness (unknown fields are
errors) is applied by check_schemas.py when it loads them, so the files stay upstream's.

  tests/container/schemas/vendor.py [--mirror DIR]
"""
import argparse
import json
import os
import subprocess
import sys

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))

# (repo, commit, path, [(group, version, kind)])
CRDS = [
    ("kubeflow/training-operator", "078ec30ff26649a07d2e28893c332d4cef70e233",
     "manifests/base/crds/kubeflow.org_pytorchjobs.yaml", [("kubeflow.org", "v1", "PyTorchJob")]),
    ("kubeflow/mpi-operator", "caa3c47fc42eb762635f78045ec0fcd1a89eb038",
     "manifests/base/kubeflow.org_mpijobs.yaml", [("kubeflow.org", "v2beta1", "MPIJob")]),
    ("kubernetes-sigs/jobset", "08dfbdfd682714a9ab929633eca8dc95315187e7",
     "config/components/crd/bases/jobset.x-k8s.io_jobsets.yaml",
     [("jobset.x-k8s.io", "v1alpha2", "JobSet")]),
    ("volcano-sh/volcano", "ed72c7c815a9fd547a787134676f73d42e9d049c",
     "config/crd/volcano/bases/batch.volcano.sh_jobs.yaml",
     [("batch.volcano.sh", "v1alpha1", "Job")]),
    ("kubernetes-sigs/lws", "060ab4da17eea1f0865fcbd3236bb1075e2cea32",
     "config/crd/bases/leaderworkerset.x-k8s.io_leaderworkersets.yaml",
     [("leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet")]),
    ("kubeflow/trainer", "8c0f5059bd51ec3ba6d6a6a7b2e1471de7bc13b3",
     "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml",
     [("trainer.kubeflow.org", "v1alpha1", "TrainJob")]),
    ("kubeflow/trainer", "8c0f5059bd51ec3ba6d6a6a7b2e1471de7bc13b3",
     "manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml",
     [("trainer.kubeflow.org", "v1alpha1", "ClusterTrainingRuntime")]),
    ("project-codeflare/appwrapper", "b47a99ee8e289ddd9f968069f1fe61decbb5ef8c",
     "config/crd/bases/workload.codeflare.dev_appwrappers.yaml",
     [("workload.codeflare.dev", "v1beta2", "AppWrapper")]),
    ("project-codeflare/multi-cluster-app-dispatcher", "d47de4a43faeb18c1dd2eac884cde597580a45fa",
     "config/crd/bases/workload.codeflare.dev_appwrappers.yaml",
     [("workload.codeflare.dev", "v1beta1", "AppWrapper")]),
    ("ray-project/kuberay", "feeaf72facab4881ba2b179248bb67315634e229",
     "ray-operator/config/crd/bases/ray.io_rayclusters.yaml", [("ray.io", "v1", "RayCluster")]),
    ("k8snetworkplumbingwg/multi-networkpolicy", "f1873dc329c687c4a2cd236b55284a380b77c6b8",
     "scheme.yml", [("k8s.cni.cncf.io", "v1beta1", "MultiNetworkPolicy")]),
]
# kubernetes/kubernetes is too large to clone here; kubernetes-client/python carries its
# api/openapi-spec/swagger.json unchanged as kubernetes/swagger.json.unprocessed
# (scripts/constants.py: KUBERNETES_BRANCH = "release-1.36").
CORE = ("kubernetes-client/python", "024658493d124f046fc0a9827a2a3165cf2aee28",
        "kubernetes/swagger.json.unprocessed")
CORE_ROOTS = ["io.k8s.api.core.v1.Pod", "io.k8s.api.core.v1.Service",
              "io.k8s.api.apps.v1.StatefulSet", "io.k8s.api.batch.v1.Job",
              "io.k8s.api.networking.v1.NetworkPolicy",
              "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]


def git_show(mirror, repo, commit, path):
    owner, name = repo.split("/")
    for d in (os.path.join(mirror, f"{owner}+{name}", "repo"), os.path.join(mirror, owner, name)):
        if os.path.isdir(d):
            return subprocess.run(["git", "-C", d, "show", f"{commit}:{path}"], check=True,
                                  capture_output=True, text=True).stdout
    sys.exit(f"vendor: no clone of {repo} under {mirror}")


def strip(node):
    if isinstance(node, dict):
        return {k: strip(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [strip(v) for v in node]
    return node


def write(name, obj):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(obj, f, sort_keys=True, separators=(",", ":"))
        f.write("\n")


def refs(node, out):
    if isinstance(node, dict):
        r = node.get("$ref")
        if isinstance(r, str) and r.startswith("#/definitions/"):
            out.add(r[len("#/definitions/"):])
        for v in node.values():
            refs(v, out)
    elif isinstance(node, list):
        for v in node:
            refs(v, out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror", default="/work/.mirror")
    a = ap.parse_args()
    for repo, commit, path, wanted in CRDS:
        docs = [d for d in yaml.safe_load_all(git_show(a.mirror, repo, commit, path)) if d]
        for group, version, kind in wanted:
            crd = [d for d in docs if d.get("kind") == "CustomResourceDefinition" and
                   d["spec"]["group"] == group and d["spec"]["names"]["kind"] == kind]
            if len(crd) != 1:
                sys.exit(f"vendor: {repo} {path}: no single CRD for {group} {kind}")
            vers = [v for v in crd[0]["spec"]["versions"] if v["name"] == version]
            if len(vers) != 1 or "schema" not in vers[0]:
                sys.exit(f"vendor: {repo} {path}: {kind} has no schema for {version}")
            write(f"crd-{group}-{version}-{kind}.json", {
                "source": {"repo": repo, "commit": commit, "path": path},
                "apiVersion": f"{group}/{version}", "kind": kind,
                "schema": strip(vers[0]["schema"]["openAPIV3Schema"])})
    repo, commit, path = CORE
    defs = json.loads(git_show(a.mirror, repo, commit, path))["definitions"]
    keep, todo = set(), list(CORE_ROOTS)
    while todo:
        n = todo.pop()
        if n in keep:
            continue
        keep.add(n)
        found = set()
        refs(defs[n], found)
        todo.extend(sorted(found - keep))
    write("k8s-core.json", {"source": {"repo": repo, "commit": commit, "path": path,
                                       "kubernetes": "api/openapi-spec/swagger.json, release-1.36"},
                            "definitions": {n: strip(defs[n]) for n in sorted(keep)}})
    print(f"vendor: {len(CRDS)} CRD files, {len(keep)} core definitions")


if __name__ == "__main__":
    main()
