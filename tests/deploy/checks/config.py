"""deploy/isolane.toml, the replicas' config: it parses, every key is one isolane reads (it ignores
unknown keys silently, so a typo would change nothing and say nothing), admin_listen is set, and
the modules it names exist in this checkout (/opt/isolane stands for it). The other checks read
its figures (listen, drain, timeouts, body cap) from the dict it returns.
"""

import os
import tomllib

from .common import R, port_of


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
