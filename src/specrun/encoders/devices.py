"""Where and in what a model computes: devices (checked before any work) and dtypes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from specrun.core import registry
from specrun.core.errors import ModelError

DEVICE_PATTERN = re.compile(r"(cpu|cuda|mps|xpu)(?::(\d+))?")


def parse_devices(requested: str | None) -> list[str]:
    """'cuda:0,cuda:1' -> two devices; 'auto' or nothing -> cuda when there is one, else cpu."""
    if requested and requested != "auto":
        devices = [d.strip() for d in requested.split(",") if d.strip()]
        if devices:
            return devices
    import torch

    return ["cuda" if torch.cuda.is_available() else "cpu"]


def check_devices(requested: str | None) -> None:
    """Refuse, before any work and whether or not the vectors are cached, a device that is misspelt or absent.
    torch is imported only for an explicit accelerator: `auto` and `cpu` keep a fully cached run torch-free."""
    if not requested or requested == "auto":
        return
    devices = [d.strip() for d in requested.split(",")]
    for device in devices:
        match = DEVICE_PATTERN.fullmatch(device)
        if match is None:
            raise ModelError(f"--device {requested}: unknown device {device!r}; expected auto, cpu, cuda, cuda:N, "
                             "mps or xpu (several separated by commas)")
        kind, index = match.group(1), match.group(2)
        if kind == "cpu":
            continue
        import torch

        if kind == "mps":
            backend = getattr(torch.backends, "mps", None)
            count = 1 if backend is not None and backend.is_available() else 0
        else:
            module = getattr(torch, kind, None)
            count = module.device_count() if module is not None and module.is_available() else 0
        if count == 0:
            raise ModelError(f"--device {device}: no {kind} device is available on this machine; "
                             "pass --device cpu or --device auto")
        if index is not None and int(index) >= count:
            raise ModelError(f"--device {device}: this machine has {count} {kind} device(s), numbered from 0")


DTYPES = ("float32", "float16", "bfloat16")


def torch_dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[name]


def check_dtype(adapter: str, dtype: str) -> None:
    """--dtype is a choice of how a model computes; the hashing adapter has no model, so anything else is refused."""
    if dtype not in DTYPES:
        raise ModelError(f"--dtype {dtype}: expected one of {', '.join(DTYPES)}")
    entry = registry.ADAPTERS[adapter]
    if dtype not in entry.dtypes:
        why = " has no model and" if not entry.needs_model else ""
        raise ModelError(f"--dtype {dtype}: the {adapter} adapter{why} computes in {', '.join(entry.dtypes)}; "
                         f"pass --dtype {entry.dtypes[0]}")


def dtype_warning(dtype: str, devices: Sequence[str]) -> str | None:
    """float16 works on a CPU but without fast kernels (about 10x slower than float32 for MiniLM on 2 cores)."""
    if dtype == "float16" and any(device.startswith("cpu") for device in devices):
        return ("--dtype float16 on cpu is slow (no fast float16 kernels there, about 10x float32); "
                "bfloat16 is the CPU's half precision")
    return None
