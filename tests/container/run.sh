#!/usr/bin/env bash
# run.sh - lint container/ (Dockerfile, k8s manifests, TorchX component) and dry-run every
# gxboot command line in them; then the checker's self-test (each rule broken once in a
# copy of the tree must FAIL); then every document against its upstream schema
# (check_schemas.py, with its own self-test); then the job env tables (job_env.json:
# UPSTREAM.md's section up to date, gxboot's detection with them: check_job_env.py).
# PASS/FAIL/SKIP lines; exit 1 on failure, 77 = skipped.
# Arguments go to the check_manifests and check_job_env runs, e.g. tests/container/run.sh --gxboot build-k8s/release/gxboot
set -uo pipefail
cd "$(dirname "$0")/../.."
if ! /usr/bin/python3 -c 'import yaml' 2>/dev/null; then
  echo "SKIP container manifests: python3-yaml is not installed (make deps)"
  exit 77
fi
rc=0
/usr/bin/python3 tests/container/check_manifests.py "$@" || rc=1
/usr/bin/python3 tests/container/check_manifests.py --self-test "$@" || rc=1
# the env tables: UPSTREAM.md's section is job_env_md.py's rendering of job_env.json; gxboot's
# peer detection in each container position with exactly that env (GXBOOT_UPSTREAM_MIRROR=DIR:
# also each citation against the fetched upstream repositories)
/usr/bin/python3 tests/container/job_env_md.py --check || rc=1
/usr/bin/python3 tests/container/check_job_env.py "$@" \
  ${GXBOOT_UPSTREAM_MIRROR:+--mirror "$GXBOOT_UPSTREAM_MIRROR"} || rc=1
/usr/bin/python3 tests/container/check_job_env.py --self-test "$@"
r=$?
[ $r -eq 0 ] || [ $r -eq 77 ] || rc=1
# every document against its vendored upstream schema (tests/container/schemas, UPSTREAM.md)
if /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
  /usr/bin/python3 tests/container/check_schemas.py || rc=1
  /usr/bin/python3 tests/container/check_schemas.py --self-test || rc=1
else
  echo "FAIL container schemas: python3-jsonschema is not installed (make deps)"
  rc=1
fi
exit $rc
