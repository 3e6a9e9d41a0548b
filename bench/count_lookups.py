"""Calls into the preset and engine modules (specmodel/model/presets.py, engines.py) during one What-if
rerun after an α move to a value not seen before: `python bench/count_lookups.py [ROOT]` (ROOT: another
checkout to count, e.g. an older commit's; default this one). Not a bench_* module: a count, not a ratio."""

import collections
import sys
import threading
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1]).resolve()
sys.path.insert(0, str(ROOT))

NAME_READERS = {"find_gpu", "find_model", "find_method", "find_engine", "stated_tp", "parse_hardware", "parse_model",
                "parse_method", "parse_engine", "named_engine", "normalise_engine", "match_model",
                "with_version", "gpus_named", "engine_in_text"}


def main() -> None:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception, at.exception
    at.slider(key="alpha").set_value(0.63)
    counts: collections.Counter = collections.Counter()

    def count(frame, event, _arg):  # every thread: AppTest runs the script on its own
        if event == "call" and frame.f_code.co_filename.endswith(("model/presets.py", "model/engines.py")):
            name = frame.f_code.co_name
            if not name.startswith("<"):
                counts[f"{Path(frame.f_code.co_filename).stem}.{name}"] += 1

    threading.setprofile(count)
    sys.setprofile(count)
    at.run()
    sys.setprofile(None)
    threading.setprofile(None)
    assert not at.exception, at.exception
    lookups = {k: v for k, v in counts.items() if k.split(".")[1] in NAME_READERS}
    for key, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"{n:6d}  {key}")
    print(f"name lookups (find_*, stated_tp, parse_*, match_*, named/normalise_engine): {sum(lookups.values())}; "
          f"every call into presets/engines (Engine's methods included): {sum(counts.values())}")


if __name__ == "__main__":
    main()
