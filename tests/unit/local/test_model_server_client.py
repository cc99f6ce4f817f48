"""The engine's client of a model server once the engine stops that server."""

import socket

import pytest

from batchinfer.engine.http_client import ModelServerClient
from batchinfer.engine.transform_engine import _stop_all
from batchinfer.transform.record_errors import InvocationError


def test_a_closed_client_sends_nothing_more_not_even_to_whatever_now_listens_on_its_port_c10():
    """Once the engine stops an instance, a request not yet sent fails at once and is not
    retried; it never reaches the port, which another process may hold by then."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = ModelServerClient(
            listener.getsockname()[1], content_type="text/csv", accept="text/csv", timeout=5.0
        )
        client.close()
        with pytest.raises(InvocationError, match="not sent: the instance is stopped") as caught:
            client.invoke(b"1,2\n")
        assert not caught.value.retryable
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):  # no connection is waiting to be accepted
            listener.accept()


def test_the_transform_engine_closes_its_clients_as_it_stops_its_servers_c10():
    client = ModelServerClient(1, content_type="text/csv", accept="text/csv", timeout=5.0)
    _stop_all([], [client])
    with pytest.raises(InvocationError, match="not sent: the instance is stopped"):
        client.invoke(b"1,2\n")
