"""The typed contract of :mod:`ferroq.typing`: every client kind satisfies its protocols, with the same signatures.

Two checks: mypy --strict runs on this file (``make lint``; see ``[tool.mypy] files``), so the assignments in
:func:`_static_conformance` fail the lint when a native class (per its stub) or a pure one stops satisfying a
protocol; and the tests below compare, for every public method of every handle, the parameter names, order,
kinds and defaults of the native stub, the pure classes and the protocols.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest

import ferroq
import ferroq._ferroq as native
import ferroq.pure
from ferroq import typing as ft

#: (protocol, native class, pure class) of every handle, sync and async.
HANDLES: list[tuple[type, type, type]] = [
    (ft.ClientProtocol, ferroq.Client, ferroq.pure.Client),
    (ft.TopicProtocol, ferroq.Topic, ferroq.pure.Topic),
    (ft.RsmqQueueProtocol, ferroq.RsmqQueue, ferroq.pure.RsmqQueue),
    (ft.StreamProtocol, ferroq.Stream, ferroq.pure.Stream),
    (ft.ConsumerGroupProtocol, ferroq.ConsumerGroup, ferroq.pure.ConsumerGroup),
    (ft.AsyncClientProtocol, ferroq.AsyncClient, ferroq.pure.AsyncClient),
    (ft.AsyncTopicProtocol, ferroq.AsyncTopic, ferroq.pure.AsyncTopic),
    (ft.AsyncRsmqQueueProtocol, ferroq.AsyncRsmqQueue, ferroq.pure.AsyncRsmqQueue),
    (ft.AsyncStreamProtocol, ferroq.AsyncStream, ferroq.pure.AsyncStream),
    (ft.AsyncConsumerGroupProtocol, ferroq.AsyncConsumerGroup, ferroq.pure.AsyncConsumerGroup),
]
#: The dunder methods that are part of the API (the context managers); ``__init__`` is compared apart.
API_DUNDERS = ('__enter__', '__exit__', '__aenter__', '__aexit__')


def _static_conformance(
    native_client: ferroq.Client,
    pure_client: ferroq.pure.Client,
    native_async: ferroq.AsyncClient,
    pure_async: ferroq.pure.AsyncClient,
) -> None:
    """Never called: mypy checks that each class satisfies its protocol (the handles through the clients)."""
    sync_clients: list[ft.ClientProtocol] = [native_client, pure_client]
    async_clients: list[ft.AsyncClientProtocol] = [native_async, pure_async]
    topics: list[ft.TopicProtocol] = [native_client.topic('t'), pure_client.topic('t')]
    async_topics: list[ft.AsyncTopicProtocol] = [native_async.topic('t'), pure_async.topic('t')]
    queues: list[ft.RsmqQueueProtocol] = [native_client.rsmq('q'), pure_client.rsmq('q')]
    async_queues: list[ft.AsyncRsmqQueueProtocol] = [native_async.rsmq('q'), pure_async.rsmq('q')]
    streams: list[ft.StreamProtocol] = [native_client.stream('s'), pure_client.stream('s')]
    async_streams: list[ft.AsyncStreamProtocol] = [native_async.stream('s'), pure_async.stream('s')]
    groups: list[ft.ConsumerGroupProtocol] = [native_client.stream('s').group('g'), pure_client.stream('s').group('g')]
    async_groups: list[ft.AsyncConsumerGroupProtocol] = [
        native_async.stream('s').group('g'),
        pure_async.stream('s').group('g'),
    ]
    either: list[ft.AnyClient] = [*sync_clients, *async_clients]
    del topics, async_topics, queues, async_queues, streams, async_streams, groups, async_groups, either


class Param(NamedTuple):
    name: str
    kind: str
    default: Any  # the value, or EMPTY


EMPTY = '<no default>'


class Method(NamedTuple):
    kind: str  # 'def', 'async def' or 'property'
    params: tuple[Param, ...]


def _stub_path() -> Path:
    """The stub of the installed wheel, else the one of the source tree."""
    installed = Path(native.__file__).with_name('_ferroq.pyi')
    return installed if installed.is_file() else Path(__file__).resolve().parents[2] / 'python/ferroq/_ferroq.pyi'


def _stub_params(args: ast.arguments) -> tuple[Param, ...]:
    positional = [*args.posonlyargs, *args.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    params = [
        Param(a.arg, 'positional-only' if a in args.posonlyargs else 'positional', d)
        for a, d in zip(positional, defaults)
    ]
    params += [Param(a.arg, 'keyword-only', d) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.vararg:
        params.append(Param(args.vararg.arg, 'var-positional', None))
    if args.kwarg:
        params.append(Param(args.kwarg.arg, 'var-keyword', None))
    return tuple(
        Param(p.name, p.kind, EMPTY if p.default is None else ast.literal_eval(p.default)) for p in params[1:]
    )  # without self


def _stub_classes() -> dict[str, dict[str, Method]]:
    """Each class of the stub: its public methods and properties (and API dunders, ``__init__``)."""
    tree = ast.parse(_stub_path().read_text())
    out: dict[str, dict[str, Method]] = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        members = out.setdefault(cls.name, {})
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _is_api(fn.name):
                continue
            if any(isinstance(d, ast.Name) and d.id == 'property' for d in fn.decorator_list):
                members[fn.name] = Method('property', ())
            else:
                kind = 'async def' if isinstance(fn, ast.AsyncFunctionDef) else 'def'
                members[fn.name] = Method(kind, _stub_params(fn.args))
    return out


def _is_api(name: str) -> bool:
    return not name.startswith('_') or name in API_DUNDERS or name == '__init__'


_KINDS = {
    inspect.Parameter.POSITIONAL_ONLY: 'positional-only',
    inspect.Parameter.POSITIONAL_OR_KEYWORD: 'positional',
    inspect.Parameter.KEYWORD_ONLY: 'keyword-only',
    inspect.Parameter.VAR_POSITIONAL: 'var-positional',
    inspect.Parameter.VAR_KEYWORD: 'var-keyword',
}


def _members(cls: type, constructor: bool = True) -> dict[str, Method]:
    """The public methods and properties of a Python class (a pure client's, or a protocol), as in the stub;
    ``__init__`` too when ``constructor`` and the class has its own."""
    out: dict[str, Method] = {}
    for name in dir(cls):
        if not _is_api(name) or (
            name == '__init__' and (not constructor or inspect.getattr_static(cls, '__init__') is object.__init__)
        ):
            continue
        member = inspect.getattr_static(cls, name)
        if isinstance(member, property):
            out[name] = Method('property', ())
        elif inspect.isfunction(member):
            params = tuple(
                Param(p.name, _KINDS[p.kind], EMPTY if p.default is p.empty else p.default)
                for p in list(inspect.signature(member).parameters.values())[1:]
            )
            out[name] = Method('async def' if inspect.iscoroutinefunction(member) else 'def', params)
    return out


def _typed(method: Method) -> tuple[Any, ...]:
    """A method with the type of each default too: ``30`` and ``30.0`` are different defaults."""
    return (method.kind, tuple((p.name, p.kind, type(p.default).__name__, p.default) for p in method.params))


def _ids() -> Iterator[str]:
    return (native_cls.__name__ for _, native_cls, _ in HANDLES)


@pytest.mark.parametrize(('protocol', 'native_cls', 'pure_cls'), HANDLES, ids=list(_ids()))
def test_pure_signatures_match_the_native_stub(protocol: type, native_cls: type, pure_cls: type) -> None:
    stub = _stub_classes()[native_cls.__name__]
    pure = _members(pure_cls, constructor='__init__' in stub)  # a handle is made by its client: no constructor
    assert sorted(pure) == sorted(stub), 'the pure class and the native stub have different public members'
    for name, method in stub.items():
        assert _typed(pure[name]) == _typed(method), f'{pure_cls.__qualname__}.{name}'


@pytest.mark.parametrize(('protocol', 'native_cls', 'pure_cls'), HANDLES, ids=list(_ids()))
def test_protocol_signatures_match_the_native_stub(protocol: type, native_cls: type, pure_cls: type) -> None:
    stub = {name: m for name, m in _stub_classes()[native_cls.__name__].items() if name != '__init__'}
    declared = _members(protocol, constructor=False)
    assert sorted(declared) == sorted(stub), 'the protocol and the native stub have different public members'
    for name, method in stub.items():
        assert _typed(declared[name]) == _typed(method), f'{protocol.__qualname__}.{name}'


@pytest.mark.parametrize(('protocol', 'native_cls', 'pure_cls'), HANDLES, ids=list(_ids()))
def test_native_runtime_signatures_match_the_stub(protocol: type, native_cls: type, pure_cls: type) -> None:
    """What the extension module reports (``__text_signature__``): the same names, order, kinds and defaults as
    its stub, so the stub (which the other tests compare with) describes the built classes."""
    stub = _stub_classes()[native_cls.__name__]
    checked = 0
    for name, method in stub.items():
        if method.kind == 'property':
            assert isinstance(inspect.getattr_static(native_cls, name), types.GetSetDescriptorType), name
            continue
        if name in API_DUNDERS:
            continue  # PyO3 reports ``(*_args)`` for these: the stub is the reference
        signature = inspect.signature(native_cls if name == '__init__' else getattr(native_cls, name))
        params = [p for p in signature.parameters.values() if p.name != 'self']
        got = Method(
            method.kind,
            tuple(Param(p.name, _KINDS[p.kind], EMPTY if p.default is p.empty else p.default) for p in params),
        )
        assert _typed(got) == _typed(method), f'{native_cls.__name__}.{name}'
        checked += 1
    assert checked, f'no method of {native_cls.__name__} has a runtime signature to compare'


def test_every_public_handle_has_a_protocol() -> None:
    classes = {name for name in _stub_classes() if name in ferroq.__all__}
    assert classes == {native_cls.__name__ for _, native_cls, _ in HANDLES}
    assert set(ferroq.pure.__all__) == {pure_cls.__name__ for _, _, pure_cls in HANDLES}


def test_pure_methods_take_their_docstrings_from_the_protocols() -> None:
    for protocol, _, pure_cls in HANDLES:
        for name, method in _members(protocol, constructor=False).items():
            documented = inspect.getattr_static(protocol, name)
            doc = (documented.fget if isinstance(documented, property) else documented).__doc__
            if doc and method.kind != 'property':
                assert inspect.getdoc(getattr(pure_cls, name)), f'{pure_cls.__qualname__}.{name} has no docstring'


def test_every_client_kind_satisfies_its_protocols(redis_url: str) -> None:
    """At run time too (``runtime_checkable``: the members are there), for real instances of every kind."""
    sync_clients: list[Any] = [ferroq.Client(redis_url), ferroq.pure.Client(redis_url)]
    async_clients: list[Any] = [ferroq.AsyncClient(redis_url), ferroq.pure.AsyncClient(redis_url)]
    try:
        for client, handles in [(c, ft.ClientProtocol) for c in sync_clients] + [
            (c, ft.AsyncClientProtocol) for c in async_clients
        ]:
            sync = handles is ft.ClientProtocol
            assert isinstance(client, ft.ClientProtocol if sync else ft.AsyncClientProtocol)
            assert not isinstance(client, ft.AsyncClientProtocol if sync else ft.ClientProtocol)  # the dunders differ
            assert isinstance(client.topic('t'), ft.TopicProtocol if sync else ft.AsyncTopicProtocol)
            assert isinstance(client.rsmq('q'), ft.RsmqQueueProtocol if sync else ft.AsyncRsmqQueueProtocol)
            stream = client.stream('s')
            assert isinstance(stream, ft.StreamProtocol if sync else ft.AsyncStreamProtocol)
            group = stream.group('g')
            assert isinstance(group, ft.ConsumerGroupProtocol if sync else ft.AsyncConsumerGroupProtocol)
    finally:
        for client in sync_clients:
            client.close()

        async def close_all() -> None:
            for client in async_clients:
                await client.close()

        asyncio.run(close_all())
