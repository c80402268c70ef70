"""deploy/Dockerfile: no image can be pulled or built here, so the file is parsed and checked.

It must build on Debian 12 with the same steps as a checkout (scripts/setup.sh, then
`make build`) rather than a package list of its own; every path it copies must exist and survive
.dockerignore; it runs as a non-root user, exposes 8080 and 9464, and sets only ISOLANE_* names
isolane reads; setup.sh installs make (the image runs it on a bare Debian) and what this check runs
(nginx, python3-yaml, systemd). The user, ports, env and base it finds are returned for the
Kubernetes checks to compare with the Deployment.
"""

import fnmatch
import json
import os
import re

from .common import R, read


def check_dockerfile(root, server):
    path = os.path.join(root, "deploy", "Dockerfile")
    info = {}
    if not R.check(os.path.isfile(path), "deploy/Dockerfile exists"):
        return info
    text = re.sub(r"\\\n", " ", "\n".join(l for l in read(path).splitlines()
                                           if not l.lstrip().startswith("#")))
    steps = []
    for line in text.splitlines():
        if line.strip():
            op, _, rest = line.strip().partition(" ")
            steps.append((op.upper(), rest.strip()))
    froms = [r.split()[0] for op, r in steps if op == "FROM"]
    info["from"] = froms[0] if froms else ""
    R.check(len(froms) >= 1 and all(re.fullmatch(r"debian:(12|bookworm)(-slim)?(@sha256:[0-9a-f]{64})?",
                                                  f) for f in froms),
            "based on Debian 12 (debian:12-slim or debian:bookworm)", str(froms))
    runs = [r for op, r in steps if op == "RUN"]
    setup_at = next((i for i, (op, r) in enumerate(steps)
                     if op == "RUN" and re.search(r"(^|[\s;&|/])scripts/setup\.sh\b", r)), None)
    make_at = next((i for i, (op, r) in enumerate(steps)
                    if op == "RUN" and re.search(r"(^|[\s;&|])make\s+(\S+\s+)*build\b", r)), None)
    R.check(setup_at is not None, "a RUN step runs scripts/setup.sh (the same set-up script)")
    R.check(make_at is not None, "a RUN step runs `make build` (the Makefile's build target)")
    R.check(not any(re.search(r"apt-get\s+install|apt\s+install|npm\s+(i|install|ci)\b", r)
                    for r in runs), "no package list of its own (no apt-get install, no npm)")
    # COPY sources exist and are not excluded by .dockerignore.
    ignore_path = os.path.join(root, ".dockerignore")
    patterns = [l.strip() for l in read(ignore_path).splitlines()
                if l.strip() and not l.startswith("#")] if os.path.isfile(ignore_path) else []
    R.check({"build", "node_modules"} <= set(patterns),
            ".dockerignore keeps build/ and node_modules/ out of the context", str(patterns))

    def ignored(rel):
        parts = rel.split("/")
        return any(fnmatch.fnmatch("/".join(parts[:i]), p.lstrip("/").rstrip("/").replace("**/", "*"))
                   for p in patterns if not p.startswith("!") for i in range(1, len(parts) + 1))

    copied = []
    copied_before_setup = set()
    for i, (op, rest) in enumerate(steps):
        if op not in ("COPY", "ADD"):
            continue
        words = [w for w in (json.loads(rest) if rest.startswith("[") else rest.split())
                 if not w.startswith("--")]
        for src in words[:-1]:
            copied.append(src)
            if setup_at is not None and i < setup_at:
                copied_before_setup.add(os.path.normpath(src))
    bad = [s for s in copied if s not in (".", "./")
           and (not os.path.exists(os.path.join(root, s)) or ignored(os.path.normpath(s)))]
    R.check(copied and not bad, "every path COPY names exists and is in the build context",
            ", ".join(bad))
    R.check(setup_at is not None and ("scripts/setup.sh" in copied_before_setup
                                      or "." in copied_before_setup),
            "scripts/setup.sh is copied before the RUN that calls it")
    users = [r.split(":")[0] for op, r in steps if op == "USER"]
    R.check(bool(users) and users[-1] not in ("root", "0"), "runs as a user other than root",
            str(users))
    if users and users[-1].isdigit():
        info["uid"] = int(users[-1])
    info["expose"] = {int(p.split("/")[0]) for op, r in steps if op == "EXPOSE" for p in r.split()}
    R.check({8080, 9464} <= info["expose"], "EXPOSE 8080 9464", str(info["expose"]))
    info["env"] = {}
    for op, r in steps:
        if op == "ENV":
            for m in re.finditer(r"(\w+)=(\S+)", r):
                info["env"][m.group(1)] = m.group(2)
    for name in info["env"]:
        if name.startswith("ISOLANE_"):
            R.check(server.reads_env(name), f"the image's {name} is read by isolane")
    entry = [json.loads(r) for op, r in steps if op == "ENTRYPOINT" and r.startswith("[")]
    workdir = [r for op, r in steps if op == "WORKDIR"]
    R.check(bool(entry) and bool(workdir)
            and entry[-1][:2] == [os.path.join(workdir[-1], "build", "isolane"), "serve"],
            "ENTRYPOINT (exec form) is the built isolane's `serve`", str(entry))
    # setup.sh installs what the image and this check need.
    packages = re.search(r"^PACKAGES=\(\n(.*?)^\)", read(os.path.join(root, "scripts", "setup.sh")),
                         re.S | re.M)
    names = set(re.sub(r"#[^\n]*", "", packages.group(1)).split()) if packages else set()
    for pkg, why in (("make", "the Dockerfile runs make on a bare Debian"),
                     ("nginx", "nginx -t here"), ("python3-yaml", "this check parses YAML"),
                     ("systemd", "systemd-analyze here")):
        R.check(pkg in names, f"scripts/setup.sh installs {pkg} ({why})")
    return info
