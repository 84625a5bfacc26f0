"""Error mapping: redis-py exceptions and unexpected replies as :mod:`ferroq.exceptions` classes."""

from __future__ import annotations

import re

from redis import exceptions as rex

from ferroq import connection
from ferroq.exceptions import (
    CommandTimeout,
    ConnectionFailed,
    FerroqError,
    OutOfMemory,
    PermissionDenied,
    ProtocolError,
    ServerError,
    TlsError,
)
from ferroq.pure._settings import Settings, scrub

# --- errors --------------------------------------------------------------------------------------

_CODES: dict[type[Exception], str] = {
    rex.NoScriptError: 'NOSCRIPT',
    rex.OutOfMemoryError: 'OOM',
    rex.NoPermissionError: 'NOPERM',
    rex.ReadOnlyError: 'READONLY',
    rex.ExecAbortError: 'EXECABORT',
    rex.BusyLoadingError: 'LOADING',
}


#: Redis's words when a script calls a command its ACL user may not run (``SCRIPT_NOPERM`` in src/errors.rs).
_SCRIPT_NOPERM = "user executing the script can't run this command"
#: Redis 6.2's wrapping of an error raised inside a script: ``Error running script (call to f_<sha1>):
#: @user_script:<line>: <error>``, where ``<error>`` is ``CODE detail`` (an error reply of ``redis.call``)
#: or ``@user_script: <line>: -CODE detail`` (an error Redis raised before running the command: OOM, NOPERM).
_SCRIPT_ERROR = re.compile(
    r'Error running script[^:]*\): (?:\s*@user_script: ?\d+:)*\s*-?([A-Z]+)(?: (.*))?$', re.DOTALL
)


def unwrap_script_error(text: str) -> tuple[str, str] | None:
    """``(code, message)`` of the error inside Redis 6.2's ``Error running script``, so the code is the same
    as on Redis 7 and Valkey; ``None`` for any other text, or a script error without a code (a Lua error).
    The native core does the same (``unwrap_script_error`` in src/errors.rs)."""
    m = _SCRIPT_ERROR.match(text.removeprefix('ERR '))
    return (m[1], f'{m[1]} {m[2]}' if m[2] else m[1]) if m else None


def _error_text(exc: rex.RedisError) -> tuple[str, str]:
    """(code, full message) of an error reply; redis-py strips the code of the errors it knows."""
    text = str(exc)
    code = getattr(exc, 'status_code', None) or _CODES.get(type(exc))
    if not code:
        first = text.split(' ', 1)[0]
        code = first if first.isupper() and first.isalpha() else 'ERR'
    if code == 'ERR' and (inner := unwrap_script_error(text)):
        return inner
    return code, text if text.startswith(code) else f'{code} {text}'


def map_error(exc: BaseException, ctx: Settings) -> FerroqError:
    """The ferroq exception for a redis-py one: the only place where redis-py errors are translated."""
    if isinstance(exc, FerroqError):
        return exc
    url = ctx.shown_url
    if isinstance(exc, (rex.AuthenticationError, rex.AuthorizationError)):
        return PermissionDenied(f'authentication to Redis at {url} failed (wrong user or password)')
    if isinstance(exc, rex.BusyLoadingError):
        return ConnectionFailed(f'Redis at {url} is loading its dataset')
    if isinstance(exc, rex.ConnectionError):
        text = scrub(ctx, str(exc))
        tls = tls_failure(text, ctx.endpoint)
        if tls is not None:
            return TlsError(f'TLS handshake with Redis at {url} failed: {tls} ({text})')
        return ConnectionFailed(f'connection to Redis at {url} failed: {text}')
    if isinstance(exc, rex.TimeoutError):
        return CommandTimeout(f'Redis at {url} did not answer in time')
    if isinstance(exc, rex.ResponseError):
        code, text = _error_text(exc)
        if code == 'OOM':
            return OutOfMemory(text)
        if code in ('NOPERM', 'NOAUTH', 'WRONGPASS') or _SCRIPT_NOPERM in text:
            return PermissionDenied(text)
        return ServerError(text, code)
    if isinstance(exc, rex.InvalidResponse):
        # A reply that is not RESP: redis-py's parsers (hiredis or not) raise this for nothing else, and a
        # Redis server never sends it (the Rust core words it the same: Error::not_redis).
        return ConnectionFailed(f'the server at {url} does not speak the Redis protocol (not a Redis server?)')
    if isinstance(exc, UnicodeDecodeError):
        return ProtocolError(f'unreadable reply from Redis at {url}: {exc}')
    if isinstance(exc, rex.RedisError):
        return ServerError(scrub(ctx, str(exc)), 'ERR')
    return FerroqError(f'{type(exc).__name__}: {exc}')


#: OpenSSL's words for a failed handshake -> what to fix (the same words as the native client's).
_TLS_REASONS = (
    (('unable to get local issuer', 'self-signed certificate', 'self signed certificate', 'unknown ca'),
     "the server's certificate is not signed by a trusted CA (give the CA with tls_ca_file)"),
    (('certificate has expired',), "the server's certificate has expired"),
    (('mismatch', 'not valid for'), "the server's certificate is not valid for this host name"),
    (('certificate is not yet valid',), "the server's certificate is not valid yet"),
    (('CERTIFICATE_REQUIRED', 'HANDSHAKE_FAILURE'),
     'the server requires a client certificate (give tls_cert_file and tls_key_file)'),
)  # fmt: skip


#: How redis-py reports a TLS connection the server closed (see :func:`tls_failure`).
_CLOSED_AFTER_HANDSHAKE = ('EOF occurred in violation of protocol', 'Connection reset by peer', 'Broken pipe')
_NO_CLIENT_CERTIFICATE = (
    'the server closed the connection (when it does so at every connect, it requires a client certificate: '
    'give tls_cert_file and tls_key_file)'
)


def tls_failure(text: str, endpoint: connection.Endpoint) -> str | None:
    """What went wrong in a TLS handshake that redis-py reported as ``text``; None when it is not TLS."""
    if not endpoint.tls:
        return None
    if '[SSL' in text:
        for words, reason in _TLS_REASONS:
            if any(w in text for w in words):
                return reason
        return 'the TLS handshake failed'
    if endpoint.tls_cert_file is None and any(w in text for w in _CLOSED_AFTER_HANDSHAKE):
        # TLS 1.3: the server checks the client's certificate after the client has finished its part of the
        # handshake, then closes; the client's first write may meet the close before the server's alert.
        return _NO_CLIENT_CERTIFICATE
    return None


def reply_error(ctx: Settings, what: str, reply: object) -> ProtocolError:
    return ProtocolError(f'unexpected reply to {what} from Redis at {ctx.shown_url}: {reply!r:.200}')
