"""How every command prints JSON: indented, and never NaN (a number that is not known is null)."""

from __future__ import annotations

import json


def print_json(obj) -> None:
    print(json.dumps(obj, indent=2, allow_nan=False))
