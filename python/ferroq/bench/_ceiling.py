"""The server's ceiling for each operation: its exact command stream pushed through ``redis-cli --pipe``.

For N messages with ids known in advance, the stream of commands a protocol sends per message is written
to a file, then timed through ``redis-cli --pipe`` (a C client that writes and reads at once, about 1 µs
of CPU per message), so redis-server is the limit. Queues are FIFO, so the claim and receive streams can
be built beforehand too: the producer stream runs first and the consumer stream drains what it wrote.
``redis-benchmark -P 1 -c 1 -t ping_mbulk`` gives the round-trip rate, the ceiling of one message per call.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from ferroq.bench._common import LEASE, REDIS_ERRORS, Admin, BenchError, Config, Meter, Progress, payload
from ferroq.bench._wire import RSMQ_RECEIVE, rfq_claim_side_keys, rfq_ids, rfq_keys, rsmq_ids, rsmq_keys, stream_key
from ferroq.protocol import keys, script_source

__all__ = [
    'CEILINGS',
    'CLAIM_ONE_REDIS_RS',
    'PUBLISH_ONE',
    'PUBLISH_ONE_REDIS_RS',
    'ROUND_TRIP',
    'Ceiling',
    'measure_ceilings',
    'measure_one_ceiling',
    'one_ceiling_steps',
    'other_persistence',
    'resp',
    'tool_target',
]

ROUND_TRIP = 'round trip'
#: One single-message publish per round trip at the server's floor: the script call a ``publish`` of one
#: message sends (rfq/publish_one-3, a new id each call), sent once the previous reply was read. By
#: redis-benchmark -P 1 -c 1 (a C client), and by redis-rs alone (``ferroq._ferroq.bench_round_trips``:
#: the library under the native client, no Python in the loop): a single publish's rate against the
#: latter is the native client's own overhead per call, the server's work being the same.
PUBLISH_ONE = 'publish script per round trip'
PUBLISH_ONE_REDIS_RS = 'publish script per round trip (redis-rs)'
#: One single claim per round trips at the server's floor, by redis-rs alone: the calls a ``claim()`` of one
#: message makes (EVALSHA rfq/claim-8n with a new token, then HGETALL of a body), each sent once the previous
#: reply was read; a single claim's rate against it is the native client's own overhead per call.
CLAIM_ONE_REDIS_RS = 'claim script and body read per round trip (redis-rs)'
#: The placeholder that both tools replace with a new random number each call.
RANDOM = '__rand_int__'
#: redis-benchmark's ``-r``: the range of its random numbers (it must fit a C int).
RANDOM_SPACE = 2_000_000_000
#: Why a ceiling measured by redis-benchmark was not.
NO_REDIS_BENCHMARK = 'redis-benchmark not found on PATH (Debian: apt-get install redis-tools)'
#: The raw server ceiling of one write command with a deep pipeline (redis-benchmark -P 64 LPUSH).
LPUSH_P64 = 'lpush -P 64'


def resp(*args: str | bytes | int) -> bytes:
    """One command in RESP, as redis-cli --pipe wants it."""
    parts = [b'*%d\r\n' % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        parts.append(b'$%d\r\n%s\r\n' % (len(b), b))
    return b''.join(parts)


def rfq_publish_stream(topic: str, ids: Sequence[str], body: str, batch: int = 1000) -> bytes:
    """rfq publish at the server's floor: HSET message:<id> payload <body> per message, one LPUSH per batch.

    Not idempotent (a resent batch is pushed twice): the least a publish can cost the server.
    """
    backlog, _, prefix = rfq_keys(topic)
    out = []
    for s in range(0, len(ids), batch):
        chunk = ids[s : s + batch]
        out += [resp('HSET', prefix + i, 'payload', body) for i in chunk]
        out.append(resp('LPUSH', backlog, *chunk))
    return b''.join(out)


def rfq_claim_commit_stream(topic: str, ids: Sequence[str], batch: int = 1000) -> bytes:
    """rfq claim+commit in batches: LMOVE backlog nextlog RIGHT LEFT, HGETALL per message, then LREM -1 + DEL.

    The ids come out of the backlog in publish order (LPUSH at the head, LMOVE from the tail).
    """
    backlog, nextlog, prefix = rfq_keys(topic)
    out = []
    for s in range(0, len(ids), batch):
        chunk = ids[s : s + batch]
        out += [resp('LMOVE', backlog, nextlog, 'RIGHT', 'LEFT') for _ in chunk]
        out += [resp('HGETALL', prefix + i) for i in chunk]
        out += [resp('LREM', nextlog, -1, i) + resp('DEL', prefix + i) for i in chunk]
    return b''.join(out)


def ferroq_publish_stream(topic: str, ids: Sequence[str], body: str, batch: int = 1000) -> bytes:
    """ferroq's own publish, as publish_batch sends it: per chunk of ``batch`` messages, WATCH + GET of the chunk's
    record, then MULTI, HSET per message, one LPUSH, SET of the record, EXEC, then DEL of the record (which the client
    sends ahead of its next request; docs/protocol.md, "publish and publish_batch")."""
    backlog, _, prefix = rfq_keys(topic)
    out = []
    for s in range(0, len(ids), batch):
        chunk = ids[s : s + batch]
        record = f'rfq:{topic}:published:{chunk[0]}'
        out += [resp('WATCH', record), resp('GET', record), resp('MULTI')]
        out += [resp('HSET', prefix + i, 'payload', body) for i in chunk]
        out += [resp('LPUSH', backlog, *chunk), resp('SET', record, len(chunk), 'PX', 120_000), resp('EXEC')]
        out.append(resp('DEL', record))  # sent once the EXEC reply is read, ahead of the client's next request
    return b''.join(out)


def ferroq_claim_commit_stream(
    topic: str, ids: Sequence[str], claim_sha: str, commit_sha: str, batch: int = 1000
) -> bytes:
    """ferroq's own claim+commit: EVALSHA claim(count=batch), HGETALL of each body (what the clients fetch after a
    claim), then EVALSHA commit of the whole claim, fenced by its token.

    The ids come out in publish order, so each batch's claim is known beforehand; its token is made here.
    """
    backlog, nextlog, prefix = rfq_keys(topic)
    side = rfq_claim_side_keys(topic)
    leases, deliveries, _, claims, claim_leases, inflight = side
    out = []
    for n, s in enumerate(range(0, len(ids), batch)):
        chunk = ids[s : s + batch]
        token = f'bench{n:011d}'
        # claim-8n: count, lease ms, no id moved by a blocking claim, no owner, the claim's token
        out.append(resp('EVALSHA', claim_sha, 8, backlog, nextlog, *side, len(chunk), 300_000, '', '', token))
        out += [resp('HGETALL', prefix + i) for i in chunk]
        keys = [prefix + i for i in chunk]
        commit_keys = (nextlog, leases, deliveries, claims, claim_leases, inflight, *keys)
        out.append(resp('EVALSHA', commit_sha, len(commit_keys), *commit_keys, len(prefix), token, len(chunk)))
    return b''.join(out)


def rsmq_send_stream(qname: str, ids: Sequence[str], body: str, now_ms: int) -> bytes:
    """RSMQ sendMessage per message: MULTI, ZADD <q> <ts> <id>, HSET <q>:Q <id> <body>, HINCRBY totalsent, EXEC."""
    zset, q = rsmq_keys(qname)
    multi, exec_ = resp('MULTI'), resp('EXEC')
    incr = resp('HINCRBY', q, 'totalsent', 1)
    return b''.join(multi + resp('ZADD', zset, now_ms, i) + resp('HSET', q, i, body) + incr + exec_ for i in ids)


def rsmq_receive_delete_stream(qname: str, ids: Sequence[str], sha: str, now_ms: int) -> bytes:
    """RSMQ receiveMessage (EVALSHA of its script) then deleteMessage (MULTI ZREM HDEL EXEC) per message."""
    zset, q = rsmq_keys(qname)
    receive = resp('EVALSHA', sha, 3, zset, now_ms, now_ms + 30_000)
    multi, exec_ = resp('MULTI'), resp('EXEC')
    return b''.join(
        receive + multi + resp('ZREM', zset, i) + resp('HDEL', q, i, f'{i}:rc', f'{i}:fr') + exec_ for i in ids
    )


def xadd_stream(key: str, n: int, body: str) -> bytes:
    """Streams publish: XADD with explicit increasing ids."""
    return b''.join(resp('XADD', key, f'{i + 1}-1', 'payload', body) for i in range(n))


def xread_ack_stream(key: str, n: int, batch: int = 1000) -> bytes:
    """Streams read+ack in batches: XREADGROUP GROUP g c COUNT batch, then XACK of the batch's ids."""
    out = []
    for s in range(0, n, batch):
        k = min(batch, n - s)
        out.append(resp('XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', k, 'STREAMS', key, '>'))
        out.append(resp('XACK', key, 'g', *(f'{i + 1}-1' for i in range(s, s + k))))
    return b''.join(out)


@dataclass(frozen=True)
class Ceiling:
    """A producer stream and the consumer stream that drains it, measured one after the other."""

    family: str
    produce: str  # the operation names they are the ceiling of
    consume: str
    commands: tuple[str, str]  # what each stream sends per message (for the table)


CEILINGS = (
    Ceiling(
        'rfq',
        'rfq publish',
        'rfq claim+commit',
        ('HSET, one LPUSH per 1000', 'LMOVE, HGETALL, LREM -1, DEL (batches of 1000)'),
    ),
    # Not a target: what ferroq's own scripts (leases, delivery counts, fencing) cost the server per message.
    Ceiling(
        'rfq',
        'ferroq publish',
        'ferroq claim+commit',
        (
            'WATCH+GET, MULTI HSET.. LPUSH SET EXEC, DEL, 1000 per chunk',
            'EVALSHA claim(1000), HGETALL per message, EVALSHA commit(1000)',
        ),
    ),
    Ceiling(
        'rsmq',
        'rsmq send',
        'rsmq receive+delete',
        ('MULTI ZADD HSET HINCRBY EXEC', 'EVALSHA receive + MULTI ZREM HDEL EXEC'),
    ),
    Ceiling('stream', 'stream publish', 'stream read+ack', ('XADD', 'XREADGROUP COUNT 1000 + XACK of 1000')),
)


def _url_parts(url: str) -> tuple[list[str], str, str, str]:
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if parts.scheme == 'unix':
        conn = ['-s', unquote(parts.path)]
        db = (query.get('db') or ['0'])[0]
    elif parts.scheme == 'redis':
        conn = ['-h', parts.hostname or '127.0.0.1', '-p', str(parts.port or 6379)]
        db = parts.path.strip('/') or (query.get('db') or ['0'])[0]
    else:
        raise BenchError(f'{parts.scheme}:// URLs are not supported by redis-cli --pipe / redis-benchmark here')
    password = unquote(parts.password or (query.get('password') or [''])[0])
    return conn, db, password, unquote(parts.username or '')


def tool_target(url: str, tool: str) -> list[str]:
    """Connection options of ``redis-cli`` or ``redis-benchmark`` for a redis:// or unix:// URL."""
    conn, db, password, user = _url_parts(url)
    args = list(conn)
    if password:
        args += ['-a', password] + (['--user', user] if user else [])
        if tool == 'redis-cli':
            args.append('--no-auth-warning')
    if db and db != '0':
        args += ['-n' if tool == 'redis-cli' else '--dbnum', db]
    return args


def _pipe(exe: str, target: list[str], stream: bytes, admin: Admin, n: int, timeout: float) -> dict[str, Any]:
    """Time one stream through redis-cli --pipe; the stream is on disk before the clock starts."""
    with tempfile.TemporaryFile() as f:
        f.write(stream)
        f.flush()
        f.seek(0)
        meter = Meter(admin)
        meter.start()
        proc = subprocess.run([exe, *target, '--pipe'], stdin=f, capture_output=True, timeout=timeout, check=False)
        sample = meter.stop(n)
    text = (proc.stdout + proc.stderr).decode(errors='replace')
    m = re.search(r'errors: (\d+), replies: (\d+)', text)
    if proc.returncode != 0 or m is None or int(m.group(1)):
        raise BenchError(f'redis-cli --pipe failed ({proc.returncode}): {text.strip()[-200:]}')
    row = sample.row('', 1000, 'redis-cli --pipe', n)
    return {
        'messages': n,
        'seconds': row.seconds,
        'msgs_per_s': row.msgs_per_s,
        'client_us_per_msg': row.client_us_per_msg,
        'server_us_per_msg': row.server_us_per_msg,
        'bg_cores': row.bg_cores,
        'replies': int(m.group(2)),
    }


def _streams(c: Ceiling, name: str, n: int, body: str, admin: Admin) -> tuple[bytes, Callable[[], None], bytes]:
    """The producer stream, what to do between the two (untimed), and the consumer stream."""
    if c.produce == 'ferroq publish':
        from ferroq.protocol import script_source

        ids = rfq_ids(n)
        claim_sha, commit_sha = (str(admin.r.script_load(script_source(f'rfq/{s}'))) for s in ('claim-8n', 'commit-6n'))
        claim_commit = ferroq_claim_commit_stream(name, ids, claim_sha, commit_sha)
        return ferroq_publish_stream(name, ids, body), lambda: None, claim_commit
    if c.family == 'rfq':
        ids = rfq_ids(n)
        return rfq_publish_stream(name, ids, body), lambda: None, rfq_claim_commit_stream(name, ids)
    if c.family == 'rsmq':
        now = int(time.time() * 1000)
        ids = rsmq_ids(n)
        sha = str(admin.r.script_load(RSMQ_RECEIVE))
        return rsmq_send_stream(name, ids, body, now), lambda: None, rsmq_receive_delete_stream(name, ids, sha, now)
    key = stream_key(name)

    def group() -> None:
        admin.r.xgroup_create(key, 'g', id='0')

    return xadd_stream(key, n, body), group, xread_ack_stream(key, n)


def _redis_benchmark(exe: str, url: str, args: list[str], timeout: float) -> dict[str, Any]:
    proc = subprocess.run(
        [exe, *tool_target(url, 'redis-benchmark'), *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    rates = re.findall(r'([0-9.]+) requests per second', proc.stdout)
    if proc.returncode != 0 or not rates:
        raise BenchError(f'redis-benchmark failed ({proc.returncode}): {(proc.stderr or proc.stdout).strip()[:200]}')
    return {'command': 'redis-benchmark ' + ' '.join(args), 'msgs_per_s': float(rates[-1])}


def _round_trip(exe: str, url: str, n: int, timeout: float) -> dict[str, Any]:
    args = ['-P', '1', '-c', '1', '-n', str(n), '-q', '-t', 'ping_mbulk']
    return {**_redis_benchmark(exe, url, args, timeout), 'messages': n}


def _publish_one_command(admin: Admin, topic: str, body: str) -> list[str]:
    """A single publish's script call on ``topic`` (the script loaded), :data:`RANDOM` for its id."""
    sha = admin.r.script_load(script_source('rfq/publish_one-3'))
    backlog, _, prefix = rfq_keys(topic)
    record = keys.rfq_published(topic, RANDOM)
    ttl = str(keys.STREAM_PUBLISH_TOKEN_MS)
    return ['EVALSHA', sha, '3', backlog, record, prefix + RANDOM, '0', ttl, RANDOM, 'payload', body]


def _publish_one_round_trips(cfg: Config, admin: Admin, key: str, topic: str, n: int) -> dict[str, Any]:
    """:data:`PUBLISH_ONE` or :data:`PUBLISH_ONE_REDIS_RS`: ``n`` calls on ``topic``, swept after.

    Every call writes a new record, message and id, as the client's new ids do. redis-benchmark draws each
    placeholder apart (below :data:`RANDOM_SPACE`; a repeated record, about one run in ten, makes one call
    write nothing: no visible change in the rate); redis-rs uses one number per call.
    """
    exe = shutil.which('redis-benchmark')
    if key == PUBLISH_ONE and exe is None:
        return {'reason': NO_REDIS_BENCHMARK}
    command = _publish_one_command(admin, topic, payload(cfg.size))
    shown = ' '.join([*command[:-1], '<body>'])
    try:
        if key == PUBLISH_ONE and exe is not None:
            args = ['-P', '1', '-c', '1', '-n', str(n), '-r', str(RANDOM_SPACE), '-q']
            out = _redis_benchmark(exe, cfg.url, [*args, *command], cfg.time_limit + 60)
            return {**out, 'command': f'redis-benchmark {" ".join(args)} {shown}', 'messages': n}
        from ferroq._ferroq import bench_round_trips

        seconds = bench_round_trips(cfg.url, [command], n)
        return {'command': f'redis-rs, one call per round trip: {shown}', 'msgs_per_s': n / seconds, 'messages': n}
    finally:
        admin.sweep(f'rfq:{topic}:*')


def _claim_one_round_trips(cfg: Config, admin: Admin, topic: str, n: int) -> dict[str, Any]:
    """:data:`CLAIM_ONE_REDIS_RS`: ``n`` single claims of ``topic``'s ``n`` messages (published first), each the
    claim script's call and an HGETALL of a body of the same size, swept after."""
    import ferroq
    from ferroq._ferroq import bench_round_trips

    backlog, nextlog, prefix = rfq_keys(topic)
    side = rfq_claim_side_keys(topic)
    try:
        with ferroq.Client(cfg.url) as writer:
            for i in range(0, n, 1000):
                writer.topic(topic).publish_batch([{'payload': payload(cfg.size)}] * min(1000, n - i))
        oldest = admin.r.lindex(backlog, -1)  # the first claimed: its body stays (claims are not committed)
        if not isinstance(oldest, str):
            raise BenchError(f'{backlog} is empty after publishing {n} messages')
        sha = admin.r.script_load(script_source('rfq/claim-8n'))
        # claim-8n: count 1, the bench's lease, no id moved by a blocking claim, no owner, a new token (with a letter)
        claim = ['EVALSHA', sha, '8', backlog, nextlog, *side, '1', str(int(LEASE * 1000)), '', '', f'tok{RANDOM}']
        body = ['HGETALL', f'{prefix}{oldest}']
        seconds = bench_round_trips(cfg.url, [claim, body], n)
        shown = f'{" ".join(claim[:2])} 8 <keys> 1 {claim[-4]} "" "" <token>; HGETALL <message>'
        return {'command': f'redis-rs, one call per round trip: {shown}', 'msgs_per_s': n / seconds, 'messages': n}
    finally:
        admin.sweep(f'rfq:{topic}:*')


def _lpush_pipelined(exe: str, url: str, key: str, n: int, timeout: float, admin: Admin) -> dict[str, Any]:
    """LPUSH of a 32-character id into a key of this run (never redis-benchmark's own ``mylist``)."""
    args = ['-P', '64', '-n', str(n), '-q', 'LPUSH', key, '0' * 32]
    try:
        return {**_redis_benchmark(exe, url, args, timeout), 'messages': n}
    finally:
        admin.r.delete(key)


def _measure_ceiling(cfg: Config, admin: Admin, c: Ceiling, name: str, progress: Progress) -> dict[str, Any]:
    """Both streams of ``c`` (the consumer drains what the producer wrote), on keys named after ``name``."""
    out: dict[str, Any] = {}
    cli = shutil.which('redis-cli')
    for key in (c.produce, c.consume):
        out[key] = {'reason': 'redis-cli not found on PATH (Debian: apt-get install redis-tools)'}
    if cli is None:
        return out
    n = cfg.ceiling_messages
    try:
        target = tool_target(cfg.url, 'redis-cli')
        produce, between, consume = _streams(c, name, n, payload(cfg.size), admin)
        for key, stream, cmds in ((c.produce, produce, c.commands[0]), (c.consume, consume, c.commands[1])):
            progress.begin(f'ceiling {key}', n)
            out[key] = {**_pipe(cli, target, stream, admin, n, cfg.time_limit + 60), 'commands': cmds}
            progress.end(f'{out[key]["msgs_per_s"]:,.0f} msgs/s (redis-cli --pipe)')
            if key == c.produce:
                between()
    except (BenchError, subprocess.TimeoutExpired, *REDIS_ERRORS) as exc:
        for key in (c.produce, c.consume):
            if out[key].get('msgs_per_s') is None:
                out[key] = {'reason': str(exc)}
    finally:
        for pattern in (f'rfq:{name}:*', f'rsmq:{name}*', stream_key(name)):
            admin.sweep(pattern)
    return out


#: Persistence waits: an AOF switched on is rewritten in the background first (bounded).
AOF_SWITCH_WAIT = 300.0


def persistence(admin: Admin) -> str:
    """The server's persistence as the ceilings' labels name it: 'AOF <appendfsync>' or 'no AOF'."""
    conf = admin.r.config_get('append*')
    return f'AOF {conf.get("appendfsync", "?")}' if conf.get('appendonly') == 'yes' else 'no AOF'


def _wait_aof_settled(admin: Admin) -> None:
    deadline = time.monotonic() + AOF_SWITCH_WAIT
    while time.monotonic() < deadline:
        info = admin.info('persistence')
        if not int(info.get('aof_rewrite_in_progress', 0)) and not int(info.get('aof_rewrite_scheduled', 0)):
            return
        time.sleep(0.1)
    raise BenchError(f'the AOF rewrite after switching appendonly took over {AOF_SWITCH_WAIT:.0f} s')


@contextlib.contextmanager
def other_persistence(admin: Admin) -> Iterator[str]:
    """Switches the server's AOF (on when off, off when on) for the block; yields the new persistence's label."""
    was = str(admin.r.config_get('appendonly').get('appendonly', 'no'))
    admin.r.config_set('appendonly', 'no' if was == 'yes' else 'yes')
    try:
        _wait_aof_settled(admin)
        yield persistence(admin)
    finally:
        admin.r.config_set('appendonly', was)
        _wait_aof_settled(admin)


def _measure_other_persistence(cfg: Config, admin: Admin, progress: Progress) -> dict[str, Any]:
    """The rfq ceilings again with the AOF switched (CONFIG SET appendonly), keyed '<op> (<persistence>)'."""
    wanted = [c for c in CEILINGS if c.family == 'rfq']
    out: dict[str, Any] = {}
    try:
        with other_persistence(admin) as label:
            for seq, c in enumerate(wanted):
                got = _measure_ceiling(cfg, admin, c, f'fqb-{cfg.run_id}-persist{seq}', progress)
                out.update({f'{key} ({label})': {**entry, 'persistence': label} for key, entry in got.items()})
    except (BenchError, *REDIS_ERRORS) as exc:
        for c in wanted:
            for key in (c.produce, c.consume):
                out.setdefault(f'{key} (AOF switched)', {'reason': f'cannot switch the AOF: {exc}'})
    return out


def _measure_round_trip(cfg: Config, progress: Progress) -> dict[str, Any]:
    bench = shutil.which('redis-benchmark')
    if bench is None:
        return {'reason': NO_REDIS_BENCHMARK}
    try:
        progress.begin('round-trip rate', 0)
        out = _round_trip(bench, cfg.url, 2_000 if cfg.quick else 20_000, cfg.time_limit + 60)
        progress.end(f'{out["msgs_per_s"]:,.0f} round trips/s (redis-benchmark -P 1 -c 1)')
        return out
    except (BenchError, subprocess.TimeoutExpired, OSError) as exc:
        return {'reason': str(exc)}


def _measure_publish_one(
    cfg: Config, admin: Admin, key: str, tag: str, progress: Progress, calls: int | None = None
) -> dict[str, Any]:
    try:
        progress.begin(key, 0)
        n = calls or (2_000 if cfg.quick else 20_000)
        out = _publish_one_round_trips(cfg, admin, key, f'fqb-{cfg.run_id}-{tag}', n)
        if 'msgs_per_s' in out:
            progress.end(f'{out["msgs_per_s"]:,.0f} calls/s (EVALSHA rfq/publish_one-3)')
        return out
    except (BenchError, subprocess.TimeoutExpired, OSError, ImportError, *REDIS_ERRORS) as exc:
        return {'reason': str(exc)}


def _measure_claim_one(
    cfg: Config, admin: Admin, tag: str, progress: Progress, calls: int | None = None
) -> dict[str, Any]:
    try:
        progress.begin(CLAIM_ONE_REDIS_RS, 0)
        n = calls or (1_000 if cfg.quick else 10_000)
        out = _claim_one_round_trips(cfg, admin, f'fqb-{cfg.run_id}-{tag}', n)
        progress.end(f'{out["msgs_per_s"]:,.0f} claims/s (EVALSHA rfq/claim-8n, HGETALL)')
        return out
    except (BenchError, OSError, ImportError, *REDIS_ERRORS) as exc:
        return {'reason': str(exc)}


def measure_ceilings(cfg: Config, admin: Admin, families: Iterable[str], progress: Progress) -> dict[str, Any]:
    """Ceilings keyed by operation name (and ``round trip``); an entry with ``reason`` when it was not measured."""
    out: dict[str, Any] = {}
    wanted = set(families)
    try:
        label = persistence(admin)
    except REDIS_ERRORS:
        label = 'persistence unknown (no CONFIG)'
    for seq, c in enumerate(x for x in CEILINGS if x.family in wanted):
        got = _measure_ceiling(cfg, admin, c, f'fqb-{cfg.run_id}-ceiling{seq}', progress)
        out.update({key: {**entry, 'persistence': label} for key, entry in got.items()})
    if 'rfq' in wanted:
        out.update(_measure_other_persistence(cfg, admin, progress))
    out[ROUND_TRIP] = _measure_round_trip(cfg, progress)
    if 'rfq' in wanted:
        for seq, key in enumerate((PUBLISH_ONE, PUBLISH_ONE_REDIS_RS)):
            out[key] = {**_measure_publish_one(cfg, admin, key, f'publish-one{seq}', progress), 'persistence': label}
        out[CLAIM_ONE_REDIS_RS] = {**_measure_claim_one(cfg, admin, 'claim-one', progress), 'persistence': label}
    bench = shutil.which('redis-benchmark')
    if bench is None:
        out[LPUSH_P64] = {'reason': NO_REDIS_BENCHMARK}
    else:
        try:
            progress.begin('LPUSH -P 64 (redis-benchmark)', 0)
            n_lpush = 100_000 if cfg.quick else 1_000_000
            key = f'fqb-{cfg.run_id}-lpush'
            out[LPUSH_P64] = _lpush_pipelined(bench, cfg.url, key, n_lpush, cfg.time_limit + 60, admin)
            progress.end(f'{out[LPUSH_P64]["msgs_per_s"]:,.0f} LPUSH/s (redis-benchmark -P 64)')
        except (BenchError, subprocess.TimeoutExpired, OSError, *REDIS_ERRORS) as exc:
            out[LPUSH_P64] = {'reason': str(exc)}
    return out


def measure_one_ceiling(
    cfg: Config, admin: Admin, key: str, tag: str, progress: Progress, calls: int | None = None
) -> float | None:
    """msgs/s of the ceiling ``key`` (an operation's stream, or the round trip) measured again now, else None.

    A consumer stream needs its producer stream first, so both are run; the one asked for is returned.
    ``calls``: how many calls a single call's ceiling makes (else its own count); the others ignore it.
    """
    if key == ROUND_TRIP:
        entry = _measure_round_trip(cfg, progress)
    elif key in (PUBLISH_ONE, PUBLISH_ONE_REDIS_RS):
        entry = _measure_publish_one(cfg, admin, key, tag, progress, calls)
    elif key == CLAIM_ONE_REDIS_RS:
        entry = _measure_claim_one(cfg, admin, tag, progress, calls)
    else:
        c = next((x for x in CEILINGS if key in (x.produce, x.consume)), None)
        if c is None:
            return None
        entry = _measure_ceiling(cfg, admin, c, f'fqb-{cfg.run_id}-{tag}', progress).get(key, {})
    rate = entry.get('msgs_per_s')
    return float(rate) if rate else None


def one_ceiling_steps(key: str) -> int:
    """Progress steps of :func:`measure_one_ceiling` for ``key``: a pipe stream runs its producer stream too."""
    return 2 if any(key in (c.produce, c.consume) for c in CEILINGS) else 1


def ceiling_count(families: Iterable[str]) -> int:
    """How many progress steps :func:`measure_ceilings` takes."""
    wanted = set(families)
    # the rfq ceilings run twice: as the server is, and with its AOF switched
    # then the round trip, LPUSH -P 64 and (rfq) the publish script per round trip by both clients and the
    # single claim's calls by redis-rs
    return 2 * sum(1 + (c.family == 'rfq') for c in CEILINGS if c.family in wanted) + 2 + 3 * ('rfq' in wanted)
