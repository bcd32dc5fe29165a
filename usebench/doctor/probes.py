"""``bench doctor``'s quick probes: library versions, the device's precisions, the FAISS build, the matmul rate."""
from __future__ import annotations

import platform
import time
from typing import Any

import numpy as np

from usebench.doctor.common import Size, device_name, sync


def _version(module: str) -> str | None:
    try:
        mod = __import__(module)
    except ImportError:
        return None
    return str(getattr(mod, "__version__", "?"))


def versions(device: str) -> dict[str, Any]:
    """Python, torch (+ CUDA), the libraries the suite leans on, the installed usebench, the device."""
    import torch

    from importlib.metadata import PackageNotFoundError, version

    try:
        usebench = version("usebench")
    except PackageNotFoundError:
        usebench = None
    return {"python": platform.python_version(), "torch": torch.__version__, "cuda": torch.version.cuda,
            "transformers": _version("transformers"), "sentence_transformers": _version("sentence_transformers"),
            "numpy": np.__version__, "faiss": _version("faiss"), "bm25s": _version("bm25s"), "usebench": usebench,
            "device": device, "device_name": device_name(device), "cpu_threads": torch.get_num_threads()}


def precision(device: str) -> dict[str, Any]:
    """What the device computes in: bf16/fp16 autocast and TF32 tensor cores (compute capability >= 8.0)."""
    import torch

    if device.startswith("cuda"):
        from usebench.fp32_policy import tf32_matmuls_on

        major, minor = torch.cuda.get_device_capability(torch.device(device))
        return {"bf16": bool(torch.cuda.is_bf16_supported()), "fp16": True, "tf32": major >= 8,
                "compute_capability": f"{major}.{minor}",
                "tf32_enabled_by_default": tf32_matmuls_on()}
    ok = {}
    for name, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        try:
            with torch.autocast("cpu", dtype=dtype):
                ok[name] = (torch.ones(4, 4) @ torch.ones(4, 4)).dtype == dtype
        except (RuntimeError, TypeError):
            ok[name] = False
    return {**ok, "tf32": False}


def faiss_info() -> dict[str, Any]:
    """Whether FAISS is installed, a GPU build, usable on a GPU, and how many GPUs it sees."""
    from usebench.eval.retrieval import faiss_status

    has, gpu = faiss_status()
    gpus = 0
    if has:
        import faiss

        gpus = int(faiss.get_num_gpus()) if hasattr(faiss, "get_num_gpus") else 0
    return {"installed": has, "gpu_build": has and hasattr(__import__("faiss"), "StandardGpuResources"),
            "usable_on_gpu": gpu, "visible_gpus": gpus,
            "note": "no FAISS GPU wheel exists for CUDA 13: torch is the GPU search backend, FAISS GPU optional"}


def matmul_tflops(device: str, dtype_name: str, n: int, reps: int = 10) -> float:
    """Warmed-up TFLOP/s of an (n x n) @ (n x n) matmul; ``tf32`` = float32 with TF32 allowed."""
    import torch

    from usebench.fp32_policy import fp32_matmul_policy

    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "tf32": torch.float32}[dtype_name]
    with fp32_matmul_policy(tf32=dtype_name == "tf32"):
        a = torch.randn(n, n, device=device, dtype=dtype)
        b = torch.randn(n, n, device=device, dtype=dtype)
        for _ in range(3):
            a @ b
        sync(device)
        t0 = time.perf_counter()
        for _ in range(reps):
            a @ b
        sync(device)
        seconds = (time.perf_counter() - t0) / reps
    return 2 * n**3 / seconds / 1e12


def matmul(device: str, size: Size) -> dict[str, Any]:
    """The matmul rate per precision the device has (fp16 and TF32 on a GPU only): MFU's measured yardstick."""
    names = ("bf16", "fp16", "fp32", "tf32") if device.startswith("cuda") else ("bf16", "fp32")
    reps = 10 if device.startswith("cuda") else 3
    return {f"tflops_{p}": matmul_tflops(device, p, size.matmul_n, reps) for p in names} | {"n": size.matmul_n}
