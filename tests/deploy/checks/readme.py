"""deploy/README.md: every deploy/ (and tests/deploy/) path it names exists, so that the guide
does not send an operator to a file that was renamed or removed.
"""

import os
import re

from .common import R, read


def check_readme(root):
    path = os.path.join(root, "deploy", "README.md")
    if not R.check(os.path.isfile(path), "deploy/README.md exists"):
        return
    named = set(re.findall(r"\b(deploy/[\w./-]*\w|tests/deploy/[\w./-]*\w)", read(path)))
    missing = [n for n in sorted(named) if not os.path.exists(os.path.join(root, n))]
    R.check(not missing, "every deploy/ path deploy/README.md names exists", ", ".join(missing))
