"""`python -m specmodel`: the router (build_parser, main), the shared flags (args), JSON output
(output) and one module per command."""

from specmodel.cli.router import build_parser, main

__all__ = ["build_parser", "main"]
