"""Is the Hugging Face hub reachable? One short check before anything would wait on huggingface_hub's retries
(about 20 s of backoff and a dozen log lines when offline): offline is normal here, and must answer in one line
within seconds, naming the flag that avoids the network."""

from __future__ import annotations

import os
import socket
import threading
from urllib.parse import urlsplit

TIMEOUT_S = 5.0  # for the name lookup and for the connection, each


def quiet_hub_logging() -> None:
    """huggingface_hub's own retry warnings and progress bars off: rich shows our progress, errors are ours."""
    from huggingface_hub.utils import disable_progress_bars
    from huggingface_hub.utils import logging as hub_logging

    hub_logging.set_verbosity_error()
    disable_progress_bars()


def hub_offline_flag() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def hub_endpoint() -> tuple[str, str, int]:
    """(shown, host, port) of HF_ENDPOINT or the default hub; `shown` drops any user:password in the URL.
    Raises ValueError for an endpoint that is not an http(s) URL."""
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parts = urlsplit(endpoint)
    host, port = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    if not host or parts.scheme not in ("http", "https"):
        raise ValueError("HF_ENDPOINT is not an http(s) URL")
    return f"{parts.scheme}://{host}:{port}", host, port


def hub_unreachable() -> str | None:
    """None when a TCP connection to the hub succeeds within the timeout; else "at URL (why)"."""
    if hub_offline_flag():
        return "(HF_HUB_OFFLINE is set)"
    try:
        shown, host, port = hub_endpoint()
    except ValueError as exc:
        return f"({exc})"
    found: list[object] = []

    def resolve() -> None:  # name lookup has no timeout of its own; a thread bounds it
        try:
            found.append(socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][4])
        except (OSError, IndexError) as exc:
            found.append(exc)

    lookup = threading.Thread(target=resolve, daemon=True)
    lookup.start()
    lookup.join(TIMEOUT_S)
    try:
        if not found:
            return f"at {shown} (no address for {host} within {TIMEOUT_S:g} s)"
        if isinstance(found[0], BaseException):
            raise found[0]
        address = found[0]
        assert isinstance(address, tuple)
        socket.create_connection(address[:2], timeout=TIMEOUT_S).close()
    except (OSError, IndexError) as exc:
        return f"at {shown} ({(exc.strerror if isinstance(exc, OSError) else None) or type(exc).__name__})"
    return None
