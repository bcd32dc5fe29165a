"""What a GPU can do on paper: dense datasheet peaks by product and precision, for MFU against the datasheet
(``bench doctor``, ``scripts/bench_train.py``); MFU against the measured matmul rate is the other yardstick.

Dense (no 2:4 sparsity) tensor-core TFLOP/s from NVIDIA's datasheets; fp16 = bf16 on these parts; ``tf32`` is the
tensor-core rate of float32 matmuls with TF32 allowed, ``fp32`` the plain (CUDA-core) float32 rate. The SXM, PCIe
and NVL variants of one product differ (clocks, power), so the most specific name fragment is matched first.
"""
from __future__ import annotations

# (device-name fragment, {precision: dense TFLOP/s}), most specific first.
DATASHEET_PEAKS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H100 PCIe", {"fp32": 51.2, "tf32": 378.0, "bf16": 756.0, "fp16": 756.0}),
    ("H100 NVL", {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5}),
    ("H100", {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4}),  # SXM5
    ("H200 NVL", {"fp32": 60.0, "tf32": 417.5, "bf16": 835.5, "fp16": 835.5}),
    ("H200", {"fp32": 66.9, "tf32": 494.7, "bf16": 989.4, "fp16": 989.4}),  # SXM5
    ("A100", {"fp32": 19.5, "tf32": 156.0, "bf16": 312.0, "fp16": 312.0}),  # SXM4 and PCIe alike
    ("L40S", {"fp32": 91.6, "tf32": 183.0, "bf16": 362.0, "fp16": 362.0}),
    ("L40", {"fp32": 90.5, "tf32": 90.5, "bf16": 181.0, "fp16": 181.0}),
    ("L4", {"fp32": 30.3, "tf32": 60.0, "bf16": 121.0, "fp16": 121.0}),
    ("A10", {"fp32": 31.2, "tf32": 62.5, "bf16": 125.0, "fp16": 125.0}),
    ("V100", {"fp32": 15.7, "fp16": 125.0}),  # SXM2; no bf16 tensor cores
)
PRECISION_ALIASES = {"off": "fp32", "float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def datasheet_peak(device_name: str, precision: str) -> tuple[str, float] | None:
    """(matched product, dense peak TFLOP/s) of ``device_name`` at ``precision`` (fp32, tf32, bf16, fp16), or
    None for a device or precision not in :data:`DATASHEET_PEAKS`."""
    precision = PRECISION_ALIASES.get(precision, precision)
    for fragment, peaks in DATASHEET_PEAKS:
        if fragment in device_name:
            return (fragment, peaks[precision]) if precision in peaks else None
    return None
