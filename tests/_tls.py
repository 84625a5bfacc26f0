"""A throwaway CA and TLS redis-servers on loopback, for the TLS tests.

:func:`make_pki` writes a CA, server certificates (valid for 127.0.0.1 and localhost; one for another host
only; one expired) and a client certificate signed by it, with the ``cryptography`` package.
:class:`TlsRedisServer` runs ``redis-server --port 0 --tls-port P`` with one of those server certificates;
it requires a client certificate signed by the CA (``tls-auth-clients yes``, Redis's default).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from _redis import RedisServer


@dataclass(frozen=True)
class Pki:
    """PEM files: ``ca``, and ``<name>.crt`` / ``<name>.key`` for server, wronghost, expired, client."""

    directory: Path

    @property
    def ca(self) -> Path:
        return self.directory / 'ca.crt'

    def cert(self, name: str) -> Path:
        return self.directory / f'{name}.crt'

    def key(self, name: str) -> Path:
        return self.directory / f'{name}.key'


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey) -> None:
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    path.write_bytes(pem)


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def make_pki(directory: Path) -> Pki:
    """A CA and the certificates the tests need, valid from an hour ago (clock margins) for a day."""
    directory.mkdir(parents=True, exist_ok=True)
    now = dt.datetime.now(dt.timezone.utc)
    ca_key = _key()
    ca = (
        x509.CertificateBuilder()
        .subject_name(_name('ferroq test CA'))
        .issuer_name(_name('ferroq test CA'))
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # key_cert_sign, crl_sign
        .sign(ca_key, hashes.SHA256())
    )
    pki = Pki(directory)
    pki.ca.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    loopback = [x509.IPAddress(ipaddress.ip_address('127.0.0.1')), x509.DNSName('localhost')]
    specs = {
        'server': (loopback, ExtendedKeyUsageOID.SERVER_AUTH, now - dt.timedelta(hours=1), now + dt.timedelta(days=1)),
        'wronghost': (
            [x509.DNSName('redis.elsewhere.invalid')],
            ExtendedKeyUsageOID.SERVER_AUTH,
            now - dt.timedelta(hours=1),
            now + dt.timedelta(days=1),
        ),
        'expired': (loopback, ExtendedKeyUsageOID.SERVER_AUTH, now - dt.timedelta(days=3), now - dt.timedelta(days=2)),
        'client': ([], ExtendedKeyUsageOID.CLIENT_AUTH, now - dt.timedelta(hours=1), now + dt.timedelta(days=1)),
    }
    for name, (alt_names, usage, start, end) in specs.items():
        key = _key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(f'ferroq test {name}'))
            .issuer_name(ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if alt_names:
            builder = builder.add_extension(x509.SubjectAlternativeName(alt_names), critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        pki.cert(name).write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        _write_key(pki.key(name), key)
    return pki


def _tls_ping(port: int, pki: Pki) -> bool:
    """True when the server answers PING over TLS (checking nothing but the chain: any server cert)."""
    context = ssl.create_default_context(cafile=str(pki.ca))
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the expired and wrong-host servers must pass this readiness probe
    context.load_cert_chain(str(pki.cert('client')), str(pki.key('client')))
    try:
        with socket.create_connection(('127.0.0.1', port), timeout=0.5) as raw, context.wrap_socket(raw) as s:
            s.sendall(b'PING\r\n')
            return s.recv(64).startswith(b'+PONG')
    except OSError:
        return False


class TlsRedisServer(RedisServer):
    """``redis-server`` listening only on a loopback TLS port, presenting ``pki.cert(cert)``."""

    def __init__(self, directory: Path, pki: Pki, cert: str = 'server') -> None:
        self.pki = pki
        tls = ('--tls-cert-file', str(pki.cert(cert)), '--tls-key-file', str(pki.key(cert)))
        super().__init__(directory, *tls, '--tls-ca-cert-file', str(pki.ca))

    def _listen(self) -> list[str]:
        return ['--port', '0', '--tls-port', str(self.port), '--bind', '127.0.0.1']

    def _ready(self) -> bool:
        return _tls_ping(self.port, self.pki)

    @property
    def url(self) -> str:
        return f'rediss://127.0.0.1:{self.port}/0'
