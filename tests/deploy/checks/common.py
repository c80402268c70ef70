"""What every check shares: the report and the small helpers they all parse with.

One Report (R) collects the verdicts of every module, so that check_deploy.py prints one list and
one closing count: "ok - what", "FAIL - what: detail", "NOT RUN - what: why", and exits 1 on a
failure. Addresses are "host:port" in isolane's config, nginx and the Kubernetes env alike.
"""

import re


class Report:
    def __init__(self):
        self.passed = 0
        self.failed = 0
        self.not_run = []

    def check(self, ok, what, detail=""):
        if ok:
            self.passed += 1
            print(f"ok - {what}")
        else:
            self.failed += 1
            print(f"FAIL - {what}" + (f": {detail}" if detail else ""))
        return ok

    def skip(self, what, why):
        self.not_run.append(what)
        print(f"NOT RUN - {what}: {why}")


R = Report()


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def port_of(address):
    m = re.match(r"^(?:\[[^\]]+\]|[^:]+):(\d+)$", address or "")
    return int(m.group(1)) if m else None


def host_of(address):
    m = re.match(r"^(\[[^\]]+\]|[^:]+):\d+$", address or "")
    return m.group(1) if m else None
