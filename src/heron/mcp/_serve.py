"""``python -m heron.mcp serve``: run a Heron tool server as its own process."""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import os
import signal
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .._core import UserError
from ..tools import MemoryStorage, Skill, Storage, Tool
from ._connections import (
    Connection,
    StdioServerConnection,
    TLSFiles,
    UnixSocketConnection,
    WebSocketConnection,
    is_loopback,
)
from ._forward import serve_inside
from ._server import MCPServer
from ._storage import FileStorage

__all__ = ["load_tools", "main"]

TOKEN_ENV = "HERON_MCP_TOKEN"
"""Environment variable holding the WebSocket token (not an argument: ps shows those)."""


def load_tools(spec: str) -> list[Tool]:
    """The tools named by ``module:attribute`` or ``path/file.py:attribute``.

    The attribute may be a tool, a skill, a list of them, a mapping of them (a
    :class:`~heron.tools.Catalog`), or a function taking no arguments that returns
    one of those: ``heron.tools:catalog`` serves every built-in tool, and
    ``heron.tools:filesystem_tools`` and ``heron.tools:bash_tools`` the file and
    shell tools, all working in the current directory.
    """
    where, sep, attribute = spec.rpartition(":")
    if not sep or not where or not attribute:
        raise UserError(f"tool spec {spec!r} must look like module:attribute or file.py:attribute")
    if where.endswith(".py"):
        path = Path(where)
        # A name of its own: a tools file called json.py must not replace the stdlib's json.
        name = f"heron_tools_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:16]}"
        loader = importlib.util.spec_from_file_location(name, path)
        if loader is None or loader.loader is None or not path.is_file():
            raise UserError(f"tool spec {spec!r}: no such file {path}")
        module = importlib.util.module_from_spec(loader)
        sys.modules[name] = module  # before running it: dataclasses and pickling look it up
        loader.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as exc:
            raise UserError(f"tool spec {spec!r}: cannot import {where}: {exc}") from None
    try:
        value = getattr(module, attribute)
    except AttributeError:
        raise UserError(f"tool spec {spec!r}: {where} has no attribute {attribute!r}") from None
    if callable(value) and not isinstance(value, Tool):
        try:
            inspect.signature(value).bind()
        except TypeError:
            raise UserError(
                f"tool spec {spec!r}: {attribute}() needs arguments; name tools, a list of "
                "them, or a function that takes none"
            ) from None
        except ValueError:  # no signature to inspect (a builtin): just call it
            pass
        value = value()
    if isinstance(value, Mapping):  # a Catalog: tools by name
        value = list(value.values())
    if not isinstance(value, Tool | Skill | Iterable) or isinstance(value, str | bytes):
        raise UserError(f"tool spec {spec!r}: {value!r} is not a Tool, a Skill or a list of them")
    items: Iterable[object] = [value] if isinstance(value, Tool | Skill) else value
    tools: list[Tool] = []
    for item in items:
        if isinstance(item, Skill):
            tools.extend(item.tools)
        elif isinstance(item, Tool):
            tools.append(item)
        else:
            raise UserError(f"tool spec {spec!r}: {item!r} is not a Tool or Skill")
    return tools


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m heron.mcp")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="serve Heron tools over MCP")
    serve.add_argument("tools", nargs="+", help="module:attribute or file.py:attribute")
    where = serve.add_mutually_exclusive_group(required=True)
    where.add_argument("--stdio", action="store_true", help="serve one client on stdin/stdout")
    where.add_argument("--unix", metavar="PATH", help="listen on a Unix socket")
    where.add_argument("--websocket", metavar="HOST:PORT", help="listen on a WebSocket")
    serve.add_argument("--storage", metavar="DIR", help="keep tool state in DIR (default: memory)")
    serve.add_argument(
        "--forward",
        action="append",
        default=[],
        metavar="PORT=SOCKET",
        help="relay connections on the Unix socket SOCKET to 127.0.0.1:PORT (repeatable; "
        "what a sandboxed Computer's ports use)",
    )
    serve.add_argument("--tls-cert", help="PEM certificate, for WSS")
    serve.add_argument("--tls-key", help="PEM key of --tls-cert")
    serve.add_argument("--tls-ca", help="PEM CA: demand client certificates it signed")
    serve.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="accept WebSocket requests from this browser origin (repeatable; default: none)",
    )
    return parser


def _connection(args: argparse.Namespace) -> Connection:
    websocket_only = {
        "--tls-cert": args.tls_cert,
        "--tls-key": args.tls_key,
        "--tls-ca": args.tls_ca,
        "--allow-origin": args.allow_origin,
    }
    if not args.websocket:
        given = [flag for flag, value in websocket_only.items() if value]
        if given:
            raise UserError(f"{', '.join(given)} only apply to --websocket")
    if args.stdio:
        return StdioServerConnection()
    if args.unix:
        return UnixSocketConnection(mode="server", path=args.unix)
    host, sep, port = args.websocket.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise UserError(f"--websocket takes HOST:PORT, not {args.websocket!r}")
    host = host.removeprefix("[").removesuffix("]")  # [::1]:9000
    if bool(args.tls_cert) != bool(args.tls_key):
        raise UserError("--tls-cert and --tls-key go together")
    if args.tls_ca and not args.tls_cert:
        raise UserError("--tls-ca needs --tls-cert and --tls-key (client certificates need TLS)")
    tls = None
    if args.tls_cert:
        for flag, file in (("--tls-cert", args.tls_cert), ("--tls-key", args.tls_key)):
            if not Path(file).is_file():
                raise UserError(f"{flag}: no such file {file}")
        tls = TLSFiles(cert=args.tls_cert, key=args.tls_key, ca=args.tls_ca)
    token = os.environ.get(TOKEN_ENV) or None
    if not is_loopback(host):
        if token is None:
            # Whoever reaches the port could run every tool: beyond loopback, a token is a must.
            raise UserError(f"--websocket on {host} needs a token: set {TOKEN_ENV}")
        if tls is None:
            print(
                f"heron.mcp: warning: --websocket on {host} without TLS sends the token "
                "in cleartext; give --tls-cert and --tls-key",
                file=sys.stderr,
            )
    return WebSocketConnection(
        mode="server",
        host=host,
        port=int(port),
        token=token,
        tls=tls,
        allowed_origins=args.allow_origin,
    )


def _forwards(values: list[str]) -> list[tuple[int, str]]:
    """``--forward PORT=SOCKET`` values as pairs; ``UserError`` for a malformed one."""
    pairs = []
    for value in values:
        port, sep, path = value.partition("=")
        if not sep or not port.isdigit() or not 0 < int(port) < 65536 or not path:
            raise UserError(f"--forward takes PORT=SOCKET, not {value!r}")
        pairs.append((int(port), path))
    return pairs


async def _serve(args: argparse.Namespace) -> None:
    storage: Storage = FileStorage(args.storage) if args.storage else MemoryStorage()
    forwards = _forwards(args.forward)
    server = MCPServer(_connection(args), storage)
    for spec in args.tools:
        for t in load_tools(spec):
            server.register_tool(t)
    relays = [await serve_inside(port, path) for port, path in forwards]
    try:
        await _run(server)
    finally:
        for relay in relays:
            relay.close()


async def _run(server: MCPServer) -> None:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with server:
        # Announced on stderr, which never carries protocol messages.
        print(
            f"heron.mcp: serving {len(server.tools)} tools on {server.connection.describe()}",
            file=sys.stderr,
            flush=True,
        )
        done = asyncio.create_task(server.serve_forever())
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({done, stopped}, return_when=asyncio.FIRST_COMPLETED)
        for task in (done, stopped):
            task.cancel()
        await asyncio.gather(done, stopped, return_exceptions=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = _parser().parse_args(argv)
    try:
        asyncio.run(_serve(args))
    except UserError as exc:
        print(f"heron.mcp: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a port in use, an unreadable certificate...: no traceback
        print(f"heron.mcp: cannot serve: {exc}", file=sys.stderr)
        return 1
    return 0
