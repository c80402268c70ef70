"""What the server reads and exports, from its sources and README.

isolane ignores unknown config keys and environment variables silently, so a misspelt name in a
deploy/ file would go unnoticed; each file is checked against what src/ reads (config keys from
src/server/config.cc, ISOLANE_* names, metrics) and the defaults of README's configuration
reference, so that timeouts in nginx, systemd and Kubernetes follow the server's own.
"""

import os
import re


class Server:
    def __init__(self, root):
        self.root = root
        src = []
        # The worker sandbox and its probe name what it refuses (namespaces among them): kept
        # apart, so that a check of what isolane does is not misled by what it forbids.
        self.sandbox_sources = ""
        for base, _, files in os.walk(os.path.join(root, "src")):
            for f in files:
                if f.endswith((".cc", ".h")):
                    with open(os.path.join(base, f), encoding="utf-8") as fh:
                        if os.path.basename(base) == "worker" and f.startswith("sandbox"):
                            self.sandbox_sources += fh.read()
                        else:
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
