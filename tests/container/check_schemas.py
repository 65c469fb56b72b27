#!/usr/bin/python3
"""check_schemas.py - every document of container/k8s against its upstream schema.

The schemas are vendored in tests/container/schemas/ (vendor.py; sources and commits in
tests/container/UPSTREAM.md): the CRDs' openAPIV3Schema for the custom kinds, the Kubernetes
OpenAPI v2 definitions for Service, StatefulSet, Job, NetworkPolicy and Pod, and ObjectMeta
for every document's metadata. Unknown fields are errors (what `kubectl apply
--validate=strict` reports), except under x-kubernetes-preserve-unknown-fields. Objects that
AppWrappers embed (spec.components[].template, spec.resources.GenericItems[].generictemplate)
are validated against their own kind's schema too.

  check_schemas.py [--root DIR]          PASS/FAIL lines, exit 1 on a failure
  check_schemas.py --self-test           break each manifest once in memory: must FAIL
"""
import argparse
import copy
import glob
import json
import os
import sys

import jsonschema
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
CORE_KINDS = {
    ("v1", "Pod"): "io.k8s.api.core.v1.Pod",
    ("v1", "Service"): "io.k8s.api.core.v1.Service",
    ("apps/v1", "StatefulSet"): "io.k8s.api.apps.v1.StatefulSet",
    ("batch/v1", "Job"): "io.k8s.api.batch.v1.Job",
    ("networking.k8s.io/v1", "NetworkPolicy"): "io.k8s.api.networking.v1.NetworkPolicy",
}
# where an AppWrapper carries the objects it wraps
EMBEDDED = {
    "workload.codeflare.dev/v1beta2": (("spec", "components"), "template"),
    "workload.codeflare.dev/v1beta1": (("spec", "resources", "GenericItems"), "generictemplate"),
}


def strict_core(node):
    """Kubernetes OpenAPI v2: objects with properties admit nothing else."""
    if isinstance(node, list):
        return [strict_core(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict_core(v) for k, v in node.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def core_definitions():
    with open(os.path.join(HERE, "schemas/k8s-core.json"), encoding="utf-8") as f:
        defs = json.load(f)["definitions"]
    defs = {k: strict_core(v) for k, v in defs.items()}
    # string formats the API server decodes from JSON numbers too
    defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] = {
        "anyOf": [{"type": "integer"}, {"type": "string"}]}
    defs["io.k8s.apimachinery.pkg.api.resource.Quantity"] = {
        "anyOf": [{"type": "number"}, {"type": "string"}]}
    return defs


def strict_crd(node, root=False):
    """A CRD's structural schema as the API server applies it, unknown fields = errors."""
    if isinstance(node, list):
        return [strict_crd(v) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: strict_crd(v) for k, v in node.items() if not k.startswith("x-kubernetes-")}
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if out.pop("nullable", False) and "type" in out:
        out["type"] = [out["type"], "null"]
    if node.get("x-kubernetes-preserve-unknown-fields") or node.get(
            "x-kubernetes-embedded-resource"):
        return out
    if out.get("type") == "object" and "additionalProperties" not in out:
        out["additionalProperties"] = False
    if root: # the API server owns these three on every object, whatever the CRD says
        props = out.setdefault("properties", {})
        props["metadata"] = {"$ref": "#/definitions/" + META}
        props.setdefault("apiVersion", {"type": "string"})
        props.setdefault("kind", {"type": "string"})
    return out


def load_schemas():
    defs = core_definitions()
    schemas = {}
    for (api, kind), name in CORE_KINDS.items():
        schemas[(api, kind)] = ("kubernetes " + name, jsonschema.Draft4Validator(
            {"$ref": "#/definitions/" + name, "definitions": defs}))
    for path in sorted(glob.glob(os.path.join(HERE, "schemas/crd-*.json"))):
        with open(path, encoding="utf-8") as f:
            crd = json.load(f)
        s = strict_crd(crd["schema"], root=True)
        s["definitions"] = defs
        src = crd["source"]
        schemas[(crd["apiVersion"], crd["kind"])] = (
            f"{src['repo']}@{src['commit'][:8]} {src['path']}", jsonschema.Draft7Validator(s))
    return schemas


def where(err):
    return "/".join(str(p) for p in err.absolute_path) or "(document)"


def validate(schemas, doc, label, out):
    """Validate doc (and the objects it embeds); append (label, error text) to out."""
    key = (doc.get("apiVersion"), doc.get("kind"))
    if key not in schemas:
        out.append((label, f"no vendored schema for {key[0]} {key[1]}"))
        return
    errs = sorted(schemas[key][1].iter_errors(doc), key=lambda e: list(e.absolute_path))
    for e in errs[:5]:
        out.append((label, f"{where(e)}: {e.message[:300]}"))
    if key[0] in EMBEDDED:
        path, field = EMBEDDED[key[0]]
        items = doc
        for p in path:
            items = items.get(p, {}) if isinstance(items, dict) else {}
        for i, item in enumerate(items if isinstance(items, list) else []):
            inner = item.get(field) if isinstance(item, dict) else None
            if isinstance(inner, dict):
                name = inner.get("metadata", {}).get("name", "?")
                validate(schemas, inner, f"{label} {path[-1]}[{i}] {inner.get('kind')}/{name}",
                         out)


def manifests(root, only=None):
    for path in sorted(glob.glob(os.path.join(root, "container/k8s/*.yaml"))):
        fname = os.path.basename(path)
        if only and fname != only:
            continue
        with open(path, encoding="utf-8") as f:
            for i, doc in enumerate(d for d in yaml.safe_load_all(f) if d is not None):
                yield fname, i, doc


def check(root, schemas):
    fails = n = 0
    for fname, i, doc in manifests(root):
        label = f"{fname} {doc.get('kind')}/{doc.get('metadata', {}).get('name', '?')}"
        out = []
        validate(schemas, doc, label, out)
        n += 1
        if out:
            fails += 1
            for lab, msg in out:
                print(f"FAIL schema {lab}: {msg}")
        else:
            print(f"PASS schema {label} ({schemas[(doc['apiVersion'], doc['kind'])][0]})")
    if n == 0:
        print("FAIL schema: container/k8s has no documents")
        return 1
    print(f"check_schemas: {n} documents, {fails} rejected")
    return 1 if fails else 0


# Each mutation breaks one manifest document in memory; the schemas must reject it.
# (file, document index, path, value): value None deletes the key
MUTATIONS = [
    ("statefulset-init.yaml", 1, ["spec", "template", "spec", "containers", 0, "imagePullPolicyy"],
     "Always"),
    ("statefulset-init.yaml", 1, ["spec", "replicas"], "four"),
    ("statefulset-init.yaml", 0, ["spec", "publishNotReadyAdresses"], True),
    ("check-job.yaml", 1, ["spec", "backoffLimit"], "none"),
    ("indexed-job-tcp.yaml", 1, ["metadata", "lables"], {"a": "b"}),
    ("indexed-job-tcp.yaml", 1, ["spec", "template", "spec", "securityContext", "runAsUserr"], 1),
    ("networkpolicy.yaml", 0, ["spec", "ingress", 0, "port"], 29410),
    ("networkpolicy.yaml", 1, ["spec", "podSelectorr"], {}),
    ("pytorchjob.yaml", 0, ["spec", "pytorchReplicaSpecs", "Worker", "replicass"], 3),
    ("pytorchjob.yaml", 0, ["spec", "pytorchReplicaSpecs", "Worker", "template", "spec",
                            "containers", 0, "securityContext", "capabilities", "add"], "IPC_LOCK"),
    ("mpijob.yaml", 0, ["spec", "slotsPerWorkerr"], 8),
    ("mpijob-intelmpi.yaml", 0, ["spec", "mpiImplementationn"], "Intel"),
    ("mpijob-serve.yaml", 0, ["spec", "mpiReplicaSpecs", "Launcher", "template", "spec",
                              "initContainers", 0, "volumeMount"], []),
    ("jobset.yaml", 0, ["spec", "network", "publishNotReadyAddresses"], "yes"),
    ("jobset.yaml", 0, ["spec", "replicatedJobs", 0, "template", "spec", "template", "spec",
                        "initContainers", 1, "volumeMounts", 0, "mountPath"], None),
    ("volcano-job.yaml", 0, ["spec", "taskss"], []),
    ("lws.yaml", 0, ["spec", "leaderWorkerTemplate", "sizee"], 2),
    ("lws-ray.yaml", 0, ["spec", "leaderWorkerTemplate", "workerTemplate", "spec", "volumes", 0,
                         "emptyDirr"], {}),
    ("trainjob.yaml", 0, ["spec", "trainer", "numNodess"], 4),
    ("trainjob.yaml", 0, ["spec", "podTemplateOverrides"], []),
    ("appwrapper-v1beta2.yaml", 0, ["spec", "components", 0, "template", "spec",
                                    "pytorchReplicaSpecs", "Master", "replicass"], 1),
    ("appwrapper-v1beta2.yaml", 0, ["spec", "componentss"], []),
    ("appwrapper-pytorchjob.yaml", 0, ["spec", "resources", "GenericItems", 0, "generictemplate",
                                       "spec", "runPolicyy"], {}),
    ("raycluster-appwrapper.yaml", 0, ["spec", "components", 0, "template", "spec",
                                       "headGroupSpec", "rayStartParamss"], {}),
    ("statefulset-mpi.yaml", 1, ["spec", "template", "spec", "automountServiceAccountToken"],
     "false"),
]


def set_path(doc, path, value):
    node = doc
    for p in path[:-1]:
        node = node[p]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value


def self_test(root, schemas):
    docs = {(f, i): d for f, i, d in manifests(root)}
    bad = 0
    for fname, i, path, value in MUTATIONS:
        name = f"schema self-test {fname}[{i}] {'/'.join(map(str, path))}"
        if (fname, i) not in docs:
            print(f"FAIL {name}: no such document")
            bad += 1
            continue
        doc = copy.deepcopy(docs[(fname, i)])
        try:
            set_path(doc, path, value)
        except (KeyError, IndexError, TypeError):
            print(f"FAIL {name}: mutation does not apply (manifest changed?)")
            bad += 1
            continue
        out = []
        validate(schemas, doc, name, out)
        if out:
            print(f"PASS {name}")
        else:
            print(f"FAIL {name}: the schema accepted it")
            bad += 1
    covered = {f for f, _, _, _ in MUTATIONS}
    for f in sorted({f for f, _ in docs} - covered):
        print(f"FAIL schema self-test: {f} has no mutation")
        bad += 1
    print(f"check_schemas self-test: {len(MUTATIONS)} mutations, {bad} not caught")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(HERE)))
    ap.add_argument("--self-test", action="store_true")
    a, _ = ap.parse_known_args()
    schemas = load_schemas()
    return self_test(a.root, schemas) if a.self_test else check(a.root, schemas)


if __name__ == "__main__":
    sys.exit(main())
