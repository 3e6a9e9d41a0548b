"""The package's version: `python -m specmodel --version` prints it, pyproject.toml reads it (one place)."""

VERSION = "0.1.0"  # specmodel.__version__ too
