#!/usr/bin/env bash
# run.sh - lint container/ (Dockerfile, k8s manifests, TorchX component) and dry-run every
# gxboot command line in them; then the checker's self-test (each rule broken once in a
# copy of the tree must FAIL). PASS/FAIL/SKIP lines; exit 1 on failure, 77 = skipped.
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
exit $rc
