"""Where `make run` listens (issue 40, item 6): this machine only, unless `ADDRESS=0.0.0.0` shares it."""

import shlex
import subprocess
import time
import tomllib

import httpx
import pytest

from tests.browser import free_port
from tests.conftest import ROOT


def run_command(*make_args: str) -> list[str]:
    """The command `make run` starts, as make prints it (`make -n`: nothing is installed or started)."""
    dry = subprocess.run(["make", "-n", "run", *make_args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    return shlex.split(next(line for line in dry.stdout.splitlines() if "streamlit run" in line))


def listening_addresses(port: int) -> set[str]:
    """The local addresses of the sockets listening on `port` (Linux /proc/net: state 0A is LISTEN)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for line in lines:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:
                found.add(address)
    return found


@pytest.mark.slow  # starts make run's real streamlit server: in make test, not in make test-fast
def test_make_run_serves_this_machine_only():
    port = free_port()
    command = run_command(f"PORT={port}")
    assert command[-4:] == ["--server.port", str(port), "--server.address", "127.0.0.1"]
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/_stcore/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "make run's server did not start"
            time.sleep(0.2)
        assert listening_addresses(port) == {"0100007F"}  # 127.0.0.1 only: no 0.0.0.0, no IPv6 wildcard
    finally:
        proc.terminate()
        proc.wait(10)


def test_address_shares_it_on_the_network_and_the_config_says_the_same_by_default():
    assert run_command("ADDRESS=0.0.0.0")[-2:] == ["--server.address", "0.0.0.0"]
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"  # `streamlit run app.py` by hand listens the same way
