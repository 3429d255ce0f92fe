#!/usr/bin/env bash
# Install what the tests need into .venv (created if missing) and run every check: ruff, mypy, pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[test,ray]'  # ray: the `simulate --sweep --ray` test (a local Ray)
.venv/bin/ruff check src tests benchmarks
.venv/bin/ruff format --check src tests benchmarks
.venv/bin/mypy
# tests/live start a real etcd, kube-apiserver, kube-scheduler, kube-controller-manager v1.37.2: built on first use (20+ min
# once on 2 cores, then cached in ~/.cache/gangsched). Without them the live tests skip, except under CI=true.
if ! ./scripts/kube-binaries.sh >/dev/null; then
    [ "${CI:-}" != true ] || { echo "test.sh: scripts/kube-binaries.sh failed under CI=true" >&2; exit 1; }
    echo "test.sh: scripts/kube-binaries.sh failed: the live tests will be skipped" >&2
fi
# tests/test_deploy.py renders deploy/chart with a real helm, built once from the Go module proxy (a few minutes).
if ! ./scripts/helm-binary.sh >/dev/null; then
    [ "${CI:-}" != true ] || { echo "test.sh: scripts/helm-binary.sh failed under CI=true" >&2; exit 1; }
    echo "test.sh: scripts/helm-binary.sh failed: the chart test will be skipped" >&2
fi
# The dashboard test drives Debian's headless chromium through its chromedriver: install them where we can.
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        { apt-get install -y -q chromium chromium-driver || { apt-get update -q && apt-get install -y -q \
            chromium chromium-driver; }; } >/dev/null || echo "test.sh: could not install chromium" >&2
    fi
fi
.venv/bin/python -m pytest "$@"
