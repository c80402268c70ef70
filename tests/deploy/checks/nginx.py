"""deploy/nginx/isolane.conf, the balancer in front of the replicas.

`nginx -t` judges the syntax: it runs on a minimal nginx.conf that includes the file, with a
temporary prefix (any user, nothing written outside it). Then the settings isolane relies on:
least_conn, passive health checks, upstream keep-alive shorter than drain_idle_ms and
idle_timeout_ms (else nginx reuses a connection the draining replica closes), retries only where
safe, unbuffered streaming, the forwarded client address, the body cap, nginx's own 502 turned
into 503 + Retry-After, and deploy/isolane.toml's listen and trusted_proxies agreeing with it.
"""

import os
import re
import shutil
import subprocess

from .common import R, host_of, read


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
