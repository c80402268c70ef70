"""deploy/k8s/deployment.yaml's pod, against the server it runs and the image it runs from.

No schema can say these: the ports named and matching ISOLANE_LISTEN and ISOLANE_ADMIN_LISTEN
(the admin listener on the pod's address, since the kubelet probes it from outside), every
ISOLANE_* variable one isolane reads, probes on /readyz and /healthz, a stop that fits the grace
period (preStop sleep + shutdown_drain_ms < terminationGracePeriodSeconds), resources from the
pool's size (CPU per executor thread, memory per heap ceiling), requests <= limits, a non-root
user that is the image's, writable mounts for a read-only root, and the image's ports and env.
"""

import os
import re

from .common import R, host_of, port_of, read


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


def check_pod(root, server, pod, dockerfile):
    """Checks the pod template; returns its container's named ports, None if it has not one
    container (then nothing after it can be checked)."""
    spec = pod["spec"]
    containers = spec.get("containers", [])
    if not R.check(len(containers) == 1, "one container"):
        return None
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
    return ports
