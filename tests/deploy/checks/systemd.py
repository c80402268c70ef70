"""deploy/systemd/isolane.service, the unit that runs a replica on a host.

`systemd-analyze verify` judges the syntax on a copy whose ExecStart names an executable that
exists here (this build's isolane, else /bin/true: the unit's /opt/isolane/build/isolane does not
exist on this machine and verify refuses a missing one); any message fails, since verify exits 0
on unknown keys and bad values. `systemd-analyze security --offline=true` must rate it 2.0 or
lower. Where systemd-analyze is missing, both are reported NOT RUN and the settings are still
checked: Type=notify, the stop signal and timeout against the drain, restarts, the user, the state
directory, the ISOLANE_* names, and hardening that leaves V8 (no MemoryDenyWriteExecute) and the
workers (AF_UNIX, seccomp) what they need.
"""

import os
import re
import shlex
import shutil
import subprocess

from .common import R, read


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
    # RestrictNamespaces=yes holds while isolane makes no namespace of its own (the worker
    # sandbox's sources name them only to refuse them, and are not searched).
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
