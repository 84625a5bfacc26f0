"""How a client reaches Redis: the URL, the credentials and the TLS settings, resolved in one place.

Both clients (the native one calls :func:`resolve` from Rust), the CLI, the worker and the Spark source
get their connection settings here, so every one of them reads the same options, URL parameters and
environment variables, in the same order.

## Sources, first one wins

- **URL**: :func:`ferroq.server.resolve_url` (the argument, ``FERROQ_URL``, ``RFQ_REDIS_HOST``/``PORT``,
  the embedded server).
- **Credentials**: the URL's user-info (``redis://user:password@host``); else the ``username`` /
  ``password`` / ``password_file`` arguments; else ``FERROQ_USERNAME`` / ``FERROQ_PASSWORD`` /
  ``FERROQ_PASSWORD_FILE``. Giving a password both in the URL and as an argument is an error.
- **TLS** (``rediss://`` only): the ``tls_ca_file`` / ``tls_cert_file`` / ``tls_key_file`` arguments; else
  the URL query parameters of the same names; else ``FERROQ_TLS_CA_FILE`` / ``FERROQ_TLS_CERT_FILE`` /
  ``FERROQ_TLS_KEY_FILE``. Without a CA file the system's trusted roots are used. The server's certificate
  and its host name are always checked, unless ``tls_insecure_skip_verify=True`` (or
  ``FERROQ_TLS_INSECURE_SKIP_VERIFY=1``) is given: a URL alone (``#insecure``) cannot turn checks off.

Every file is read when the client is made, so a missing or unreadable file is an
:class:`~ferroq.exceptions.InvalidArgument` before anything is sent. A password never appears in a repr,
an error or a log line: show :attr:`Endpoint.shown_url`.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from ferroq import server
from ferroq.exceptions import InvalidArgument

__all__ = ['ENV', 'TLS_PARAMS', 'Endpoint', 'InsecureTlsWarning', 'resolve']

#: The URL query parameters ferroq reads (and removes before the URL reaches redis-py or redis-rs).
TLS_PARAMS = ('tls_ca_file', 'tls_cert_file', 'tls_key_file')

#: The environment variables ferroq reads, by option.
ENV = {
    'username': 'FERROQ_USERNAME',
    'password': 'FERROQ_PASSWORD',
    'password_file': 'FERROQ_PASSWORD_FILE',
    'tls_ca_file': 'FERROQ_TLS_CA_FILE',
    'tls_cert_file': 'FERROQ_TLS_CERT_FILE',
    'tls_key_file': 'FERROQ_TLS_KEY_FILE',
    'tls_insecure_skip_verify': 'FERROQ_TLS_INSECURE_SKIP_VERIFY',
}

_TRUE = ('1', 'true', 'yes', 'on')
_FALSE = ('', '0', 'false', 'no', 'off')


class InsecureTlsWarning(UserWarning):
    """A client was made with ``tls_insecure_skip_verify``: the server's certificate is not checked."""


@dataclass(frozen=True)
class Endpoint:
    """Resolved connection settings. ``url`` and ``password`` may hold secrets: show ``shown_url`` only.

    Attributes:
        url: the URL for the driver: ferroq's query parameters and the ``#insecure`` fragment removed; it
            keeps any user-info it had.
        shown_url: the URL as given, with any password replaced by ``***``.
        username, password: credentials from the arguments, a file or the environment; None when the URL
            carries its own (or there are none).
        tls_ca_file, tls_cert_file, tls_key_file: PEM files (the key may sit in the certificate file).
        tls_insecure_skip_verify: no certificate or host name check (``rediss://`` only).
    """

    url: str = field(repr=False)
    shown_url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_insecure_skip_verify: bool = False

    @property
    def tls(self) -> bool:
        return self.url.lower().startswith('rediss://')

    def redis_py_kwargs(self) -> dict[str, Any]:
        """redis-py connection keyword arguments for these credentials and TLS settings."""
        kwargs: dict[str, Any] = {}
        if self.username is not None:
            kwargs['username'] = self.username
        if self.password is not None:
            kwargs['password'] = self.password
        if self.tls:
            kwargs['ssl_ca_certs'] = self.tls_ca_file
            kwargs['ssl_certfile'] = self.tls_cert_file
            kwargs['ssl_keyfile'] = self.tls_key_file
            if self.tls_insecure_skip_verify:
                kwargs['ssl_cert_reqs'] = 'none'
                kwargs['ssl_check_hostname'] = False
            else:
                kwargs['ssl_cert_reqs'] = 'required'
                kwargs['ssl_check_hostname'] = True
        return kwargs


def _env(name: str) -> str | None:
    return os.environ.get(ENV[name]) or None


def _flag(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
        return value.strip().lower() in _TRUE
    raise InvalidArgument(f'{where} must be true or false, got {value!r}')


def _path(value: object, name: str) -> str | None:
    if value is None:
        return None
    if isinstance(value, os.PathLike):
        value = os.fspath(value)
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f'{name} must be a file path (str), got {value!r}')
    return value


def _readable(path: str, name: str) -> bytes:
    try:
        with open(path, 'rb') as f:
            return f.read()
    except OSError as exc:
        raise InvalidArgument(f'{name} {path!r} cannot be read: {exc.strerror or exc}') from None


def _userinfo(url: str) -> str | None:
    """The user-info part of a URL (``user:password``), or None."""
    userinfo, at, _ = url.partition('://')[2].partition('/')[0].rpartition('@')
    return userinfo if at else None


def _split(url: str) -> tuple[str, dict[str, str], bool]:
    """``url`` without ferroq's query parameters and fragment; those parameters; whether ``#insecure`` was there."""
    base, _, fragment = url.partition('#')
    if fragment not in ('', 'insecure'):
        raise InvalidArgument(f'invalid Redis URL "{server.redact_url(url)}": only #insecure is known as a fragment')
    head, has_query, query = base.partition('?')
    ours: dict[str, str] = {}
    kept: list[tuple[str, str]] = []
    if has_query:
        for key, value in parse_qsl(query, keep_blank_values=True):
            if key in TLS_PARAMS:
                ours[key] = value
            elif key == 'tls_insecure_skip_verify':
                raise InvalidArgument(
                    'tls_insecure_skip_verify cannot come from the URL: pass it as an option '
                    '(tls_insecure_skip_verify=True, --tls-insecure-skip-verify or FERROQ_TLS_INSECURE_SKIP_VERIFY=1)'
                )
            else:
                kept.append((key, value))
    if ours:
        query = urlencode(kept, safe='/:@')
        has_query = '?' if kept else ''
    return head + (has_query + query if has_query else ''), ours, fragment == 'insecure'


def _tls(
    explicit: dict[str, str], insecure: bool, insecure_fragment: bool, is_tls: bool, shown: str
) -> tuple[dict[str, str | None], bool]:
    """The TLS files and switch: ``explicit`` (arguments, then the URL's query), then the environment."""
    if not is_tls:
        if explicit or insecure or insecure_fragment:
            given = ', '.join(sorted(explicit) + (['tls_insecure_skip_verify'] if insecure else []))
            raise InvalidArgument(f'{given or "#insecure"} need a rediss:// URL, got "{shown}"')
        return dict.fromkeys(TLS_PARAMS), False
    env_insecure = _env('tls_insecure_skip_verify')
    if not insecure and env_insecure is not None:
        insecure = _flag(env_insecure, ENV['tls_insecure_skip_verify'])
    files: dict[str, str | None] = {name: explicit.get(name) or _env(name) for name in TLS_PARAMS}
    if insecure_fragment and not insecure:
        raise InvalidArgument(
            f'the URL "{shown}" asks for #insecure (no certificate checks): pass tls_insecure_skip_verify=True '
            '(--tls-insecure-skip-verify, FERROQ_TLS_INSECURE_SKIP_VERIFY=1) to allow it'
        )
    if insecure and files['tls_ca_file']:
        raise InvalidArgument('tls_ca_file and tls_insecure_skip_verify conflict: a CA is only used to verify')
    if files['tls_key_file'] and not files['tls_cert_file']:
        raise InvalidArgument('tls_key_file needs tls_cert_file (the client certificate)')
    for name, path in files.items():
        if path:
            _readable(path, name)
    return files, insecure


def _credentials(
    url: str, username: str | None, password: str | None, password_file: str | None, shown: str
) -> tuple[str | None, str | None]:
    """(username, password) from the arguments, a file or the environment; (None, None) when the URL has its own."""
    in_url = _userinfo(url) is not None or any(
        k.lower() in ('password', 'pass', 'user', 'username') for k, _ in parse_qsl(url.partition('?')[2])
    )
    if password_file is not None and password is not None:
        raise InvalidArgument('password and password_file conflict: give one')
    if in_url:
        if password is not None or password_file is not None or username is not None:
            raise InvalidArgument(
                f'the URL "{shown}" has credentials already: drop username, password and password_file'
            )
        return None, None
    if password is None and password_file is None:
        password = _env('password')
        password_file = None if password is not None else _env('password_file')
    if password_file is not None:
        password = _readable(password_file, 'password_file').decode('utf-8', 'replace').rstrip('\r\n')
        if not password:
            raise InvalidArgument(f'password_file {password_file!r} is empty')
    username = username if username is not None else _env('username')
    if username is not None and password is None:
        raise InvalidArgument(f'username {username!r} needs a password (password, password_file or FERROQ_PASSWORD)')
    return username, password


def resolve(
    url: str | None = None,
    *,
    username: str | None = None,
    password: str | None = None,
    password_file: str | os.PathLike[str] | None = None,
    tls_ca_file: str | os.PathLike[str] | None = None,
    tls_cert_file: str | os.PathLike[str] | None = None,
    tls_key_file: str | os.PathLike[str] | None = None,
    tls_insecure_skip_verify: bool = False,
) -> Endpoint:
    """Resolves the URL, credentials and TLS settings of a client (see the module docs for the order).

    Raises:
        InvalidArgument: a bad or conflicting option, an unreadable file, TLS options on a URL that is not
            ``rediss://``, ``#insecure`` without ``tls_insecure_skip_verify``.
        ServerUnavailable: nothing is configured and the embedded redis-server cannot start.
    """
    if url is not None and not isinstance(url, str):
        raise InvalidArgument(f'url must be a str, got {type(url).__name__}')
    for name, value in (('username', username), ('password', password)):
        if value is not None and (not isinstance(value, str) or not value):
            raise InvalidArgument(
                f'{name} must be a non-empty str' + ('' if name == 'password' else f', got {value!r}')
            )
    insecure = _flag(tls_insecure_skip_verify, 'tls_insecure_skip_verify')
    given = {name: _path(value, name) for name, value in zip(TLS_PARAMS, (tls_ca_file, tls_cert_file, tls_key_file))}
    secret_file = _path(password_file, 'password_file')
    full = server.resolve_url(url)
    bare, from_query, insecure_fragment = _split(full)
    shown = server.redact_url(bare)
    is_tls = bare.lower().startswith('rediss://')
    explicit = {k: v for k, v in given.items() if v is not None}
    explicit.update({k: v for k, v in from_query.items() if k not in explicit})
    tls, insecure = _tls(explicit, insecure, insecure_fragment, is_tls, shown)
    user, secret = _credentials(full, username, password, secret_file, shown)
    if insecure:
        warnings.warn(
            f'TLS certificate checks are OFF for "{shown}" (tls_insecure_skip_verify): anyone on the network path '
            'can impersonate the server and read the traffic',
            InsecureTlsWarning,
            stacklevel=3,
        )
    return Endpoint(
        url=bare,
        shown_url=shown,
        username=user,
        password=secret,
        tls_ca_file=tls['tls_ca_file'],
        tls_cert_file=tls['tls_cert_file'],
        tls_key_file=tls['tls_key_file'],
        tls_insecure_skip_verify=insecure,
    )
