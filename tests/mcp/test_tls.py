"""WSS with client certificates (mutual TLS), in process and through the serve command."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

from heron.mcp import (
    MCPClient,
    MCPConnectionError,
    MCPServer,
    MemoryStorage,
    TLSFiles,
    WebSocketConnection,
)

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class PKI:
    """A throwaway CA, a server certificate for 127.0.0.1 and a client certificate."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def openssl(*args: str | Path) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    d = tmp_path_factory.mktemp("pki")
    ca_cert, ca_key = d / "ca.pem", d / "ca.key"
    openssl(
        *("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=test CA"),
        *("-keyout", ca_key, "-out", ca_cert),
    )
    issued: dict[str, tuple[Path, Path]] = {}
    uses = {
        "server": "subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n",
        "client": "extendedKeyUsage=clientAuth\n",
    }
    for who, extensions in uses.items():
        key, csr, cert, ext = (d / f"{who}.{suffix}" for suffix in ("key", "csr", "pem", "ext"))
        openssl(
            *("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={who}"),
            *("-keyout", key, "-out", csr),
        )
        ext.write_text(extensions)
        openssl(
            *("x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial"),
            *("-days", "1", "-out", cert, "-extfile", ext),
        )
        issued[who] = (cert, key)
    return PKI(ca_cert, *issued["server"], *issued["client"])


async def test_mutual_tls_serves_a_client_with_a_certificate_and_refuses_one_without(
    pki: PKI, served: ModuleType
) -> None:
    listening = WebSocketConnection(
        mode="server",
        port=0,
        token="t",
        tls=TLSFiles(cert=pki.server_cert, key=pki.server_key, ca=pki.ca),
    )
    async with MCPServer(listening, MemoryStorage()) as server:
        server.register_tool(served.echo)
        with_cert = TLSFiles(cert=pki.client_cert, key=pki.client_key, ca=pki.ca)
        trusted = WebSocketConnection(mode="client", url=listening.url, token="t", tls=with_cert)
        async with MCPClient("me", trusted, MemoryStorage()) as client:
            assert (await client.call_tool("echo", {"text": "mutual"})).text == "mutual"

        anonymous = WebSocketConnection(
            mode="client", url=listening.url, token="t", tls=TLSFiles(ca=pki.ca)
        )
        client = MCPClient("me", anonymous, MemoryStorage())
        with pytest.raises(MCPConnectionError, match="client certificate"):
            await client.start()
        await client.close()


async def test_the_serve_command_serves_wss_with_client_certificates(
    pki: PKI, server_process: type, free_port: int
) -> None:
    server_process(
        *("--websocket", f"127.0.0.1:{free_port}"),
        *("--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key)),
        *("--tls-ca", str(pki.ca)),
        env={"HERON_MCP_TOKEN": "tok"},
    ).start()
    url = f"wss://127.0.0.1:{free_port}"
    with_cert = TLSFiles(cert=pki.client_cert, key=pki.client_key, ca=pki.ca)
    connection = WebSocketConnection(mode="client", url=url, token="tok", tls=with_cert)
    async with MCPClient("me", connection, MemoryStorage()) as client:
        assert (await client.call_tool("echo", {"text": "over wss"})).text == "over wss"
    anonymous = WebSocketConnection(mode="client", url=url, token="tok", tls=TLSFiles(ca=pki.ca))
    client = MCPClient("me", anonymous, MemoryStorage())
    with pytest.raises(MCPConnectionError, match="may require a client certificate"):
        await client.start()
    await client.close()
