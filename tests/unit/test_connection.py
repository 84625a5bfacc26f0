"""ferroq.connection.resolve (where credentials and TLS settings come from) and ferroq.acl's rules, without a server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ferroq import acl
from ferroq.connection import resolve
from ferroq.exceptions import InvalidArgument

README = Path(__file__).resolve().parents[2] / 'README.md'


def test_the_first_source_wins(tmp_path, monkeypatch):
    ca, other = tmp_path / 'ca.pem', tmp_path / 'other.pem'
    ca.write_text('x')
    other.write_text('y')
    monkeypatch.setenv('FERROQ_TLS_CA_FILE', str(other))
    assert resolve('rediss://h:1/0').tls_ca_file == str(other)
    assert resolve(f'rediss://h:1/0?tls_ca_file={ca}').tls_ca_file == str(ca)
    endpoint = resolve(f'rediss://h:1/0?tls_ca_file={other}&protocol=3', tls_ca_file=ca)
    assert endpoint.tls_ca_file == str(ca)
    assert endpoint.url == 'rediss://h:1/0?protocol=3'  # ferroq's parameters never reach the driver
    assert resolve('redis://h:1/0').tls_ca_file is None  # the variables apply to rediss:// only
    monkeypatch.setenv('FERROQ_USERNAME', 'env-user')
    monkeypatch.setenv('FERROQ_PASSWORD', 'env-secret')
    assert (resolve('redis://h:1/0').username, resolve('redis://h:1/0').password) == ('env-user', 'env-secret')
    assert resolve('redis://h:1/0', username='u', password='p').username == 'u'
    in_url = resolve('redis://u:p@h:1/0')
    assert (in_url.username, in_url.password, in_url.url) == (None, None, 'redis://u:p@h:1/0')
    assert 'env-secret' not in repr(resolve('redis://h:1/0'))


def test_bad_combinations(tmp_path):
    with pytest.raises(InvalidArgument, match='needs a password'):
        resolve('redis://h:1/0', username='u')
    with pytest.raises(InvalidArgument, match='must be true or false'):
        resolve('rediss://h:1/0', tls_insecure_skip_verify='perhaps')  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match='must be a file path'):
        resolve('rediss://h:1/0', tls_ca_file=3)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match='url must be a str'):
        resolve(b'redis://h:1/0')  # type: ignore[arg-type]


def test_the_readme_shows_the_generated_acl_rules():
    text = README.read_text()
    block = text.split('<!-- acl-rules -->\n', 1)[1].split('<!-- /acl-rules -->', 1)[0]
    assert block.strip() == acl.readme_section(), 'regenerate the block with ferroq.acl.readme_section()'


def test_acl_rules_name_every_script_of_a_role_with_its_commands():
    line = acl.setuser('u', 'consumer', 'rfq', 'jobs')
    shas = [a.split('|', 1)[1] for a in line if a.startswith('+evalsha|')]
    assert len(shas) == len(acl.RULES['rfq']['consumer'].scripts)
    assert {'+lpush', '+lrem', '+zadd', '+hgetall'} <= set(line)  # claim's commands, and peek's
    assert '+evalsha' not in line and '+eval' not in line
    assert acl.script_commands('rsmq/receive-4') >= {'zrem', 'hdel', 'zadd', 'hset'}  # through call_in_slices
    with pytest.raises(InvalidArgument, match='prefix'):
        acl.setuser('u', 'producer', 'rfq', 'jobs*')
    with pytest.raises(InvalidArgument, match='unknown'):
        acl.setuser('u', 'reader', 'rfq', 'jobs')  # type: ignore[arg-type]
    assert re.fullmatch(r'#[0-9a-f]{64}', acl.setuser('u', 'admin', 'rsmq', password='#' + 'a' * 64)[5])


def test_acl_command_line(capsys):
    assert acl.main(['producer', 'streams', 'events', 'writer']) == 0
    out = capsys.readouterr().out
    assert out.startswith('ACL SETUSER writer reset on ><password> ') and '~ferroq:stream:events*' in out
    assert acl.main(['producer', 'streams']) == 2
    assert acl.main(['producer', 'streams', 'bad*', 'writer']) == 2
