"""The client tests take Heron's own clients as ``client`` and ``aclient`` (the daemon and
scripts fixtures come from ``tests/support/plugin.py``)."""

from tests.support.clients import aclient, client

__all__ = ["aclient", "client"]
