#!/usr/bin/env bash
# run.sh - lint container/ (Dockerfile, k8s manifests, TorchX component) and dry-run every
# gxboot command line in them; then the checker's self-test (each rule broken once in a
# copy of the tree must FAIL); then every document against its upstream schema
# (check_schemas.py, with its own self-test). PASS/FAIL/SKIP lines; exit 1 on failure, 77 = skipped.
# Arguments go to both runs, e.g. tests/container/run.sh --gxboot build-k8s/release/gxboot
set -uo pipefail
cd "$(dirname "$0")/../.."
if ! /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
  echo "SKIP container manifests: python3-yaml is not installed (make deps)"
  exit 77
fi
rc=0
/usr/bin/python3 tests/container/check_manifests.py "$@" || rc=1
/usr/bin/python3 tests/container/check_manifests.py --self-test "$@" || rc=1
# every document against its vendored upstream schema (tests/container/schemas, UPSTREAM.md)
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
  /usr/bin/python3 tests/container/check_schemas.py || rc=1
  /usr/bin/python3 tests/container/check_schemas.py --self-test || rc=1
else
  echo "FAIL container schemas: python3-jsonschema is not installed (make deps)"
  rc=1
fi
exit $rc
