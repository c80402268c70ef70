"""The checks of tests/deploy/check_deploy.py, one module per engine that judges a deploy/ file.

common: the report (ok / FAIL / NOT RUN lines, the counts) and small parsing helpers.
server: what isolane reads and exports (its sources and README), which the files must match.
config, nginx, systemd, docker, k8s (+ k8s_pod), readme: one per deploy/ file or folder.
"""
