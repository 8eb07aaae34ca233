"""Public NKI kernels with published hardware timings, extracted at run time.

truth-cost (benchmarks/calibration/) and truth-check (benchmarks/public_kernels_check.py)
share this table and its extraction helpers; either may extend it (add rows, fields with
defaults, helpers) without changing what an existing name means.

No public kernel is stored in this repository: each is read from its repository at a pinned
commit, out of a local git mirror (`fetch github:OWNER/NAME` makes one under
/work/.mirror/OWNER+NAME/repo; NKIRUN_MIRRORS=DIR points elsewhere), with `git show`.
Sources of the numbers: ../docs/cost.md and the URLs in each row.

    from benchmarks.public_kernels import KERNELS, kernel_source, input_shapes
    src = kernel_source(KERNELS["nkibench silu"])          # the kernel file's text
    shapes = input_shapes(KERNELS["nkibench silu"])       # [("float32", (128, 32, 7168))]
"""
from __future__ import annotations

import ast
import os
import subprocess
import tarfile
import io
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

ACCELOPT, ACCELOPT_AT = "zhang677/AccelOpt", "47e29a7c"
SDK, SDK_AT = "aws-neuron/aws-neuron-sdk", "81ce03ae"
NKILIB, NKILIB_AT = "aws-neuron/nki-library", "d2ad3a57"
SAMPLES, SAMPLES_AT = "aws-neuron/nki-samples", "6905a68a"

DOCS = "https://awsdocs-neuron.readthedocs-hosted.com/en/latest/nki/"
OPT_GUIDE = DOCS + "guides/tutorials/kernel-optimization.html"
MATMUL_TUT = DOCS + "guides/tutorials/matrix_multiplication.html"
MAMBA_TUT = DOCS + "guides/tutorials/fused_mamba.html"
NKIBENCH = "https://github.com/zhang677/AccelOpt/tree/47e29a7c/NKIBench"


class MirrorMissing(RuntimeError):
    """The git mirror of a repository (or the pinned commit in it) is not on this machine."""


@dataclass(frozen=True)
class PublicKernel:
    name: str                  # the key of KERNELS
    repo: str                  # owner/name on GitHub
    commit: str                # pinned
    path: str                  # the kernel's file (a .py, or the .rst page holding it)
    function: str              # the @nki.jit function
    target: str                # trn1 | trn2 (what was measured)
    # positional inputs as (dtype, shape); None: read from `reference` (NKIBench)
    shapes: tuple | None = None
    reference: str | None = None    # NKIBench: reference/*.py (get_inputs + transform)
    section: str | None = None      # .rst: the heading of the section whose code block it is
    measured_ms: float | None = None
    method: str = ""                # timing method (see ../shared docs: NCL, total_time, ...)
    toolchain: str = ""
    source_url: str = ""
    family: str = ""                # variants of one kernel at one shape share a family
    spill_save_mb: float | None = None  # the profile's spill_save_bytes / 1e6, if published
    # A kernel of a package (nki-library): `package` is the folder to extract (its parent
    # goes on sys.path), `driver` names a function here that imports the kernel and returns
    # (kernel, args, kwargs) with nkirun.shape() for tensors; `lnc` its launch.
    package: str | None = None
    driver: str | None = None
    lnc: int = 1
    notes: str = ""
    extra: dict = field(default_factory=dict)   # keyword arguments (--arg)


def mirror(repo: str) -> Path:
    """The git directory of repo's local mirror."""
    base = Path(os.environ.get("NKIRUN_MIRRORS", "/work/.mirror"))
    git_dir = base / repo.replace("/", "+") / "repo"
    if not git_dir.exists():
        raise MirrorMissing(f"no mirror of {repo} at {git_dir}: fetch github:{repo} first "
                            "(or set NKIRUN_MIRRORS)")
    return git_dir


def _git(repo: str, *args: str) -> bytes:
    try:
        return subprocess.run(["git", "--git-dir", str(mirror(repo)), *args], check=True,
                              capture_output=True, timeout=300).stdout
    except subprocess.CalledProcessError as e:
        raise MirrorMissing(f"git {' '.join(args)} in {repo}: "
                            f"{e.stderr.decode(errors='replace').strip()}") from None


def extract(repo: str, commit: str, path: str) -> str:
    """The text of `path` in `repo` at `commit` (git show COMMIT:PATH on the mirror)."""
    return _git(repo, "show", f"{commit}:{path}").decode()


def extract_tree(repo: str, commit: str, path: str, dest: str | Path) -> Path:
    """Writes the folder `path` of repo at commit under dest (for packages whose kernels
    import each other, e.g. nki-library's src/nkilib_src); returns dest/path."""
    data = _git(repo, "archive", "--format=tar", commit, path)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(dest, filter="data")
    return Path(dest) / path


def rst_code_block(text: str, section: str, function: str) -> str:
    """The first `.. code-block:: python` under the heading `section` of an .rst page that
    defines `function`, dedented."""
    lines = text.splitlines()
    in_section = False
    i = 0
    while i < len(lines):
        line = lines[i]
        if i + 1 < len(lines) and set(lines[i + 1].strip()) <= set("=-~^") and \
                lines[i + 1].strip() and line.strip():
            in_section = line.strip() == section
        if in_section and line.strip().startswith(".. code-block:: python"):
            indent = len(line) - len(line.lstrip())
            j = i + 1
            block = []
            while j < len(lines) and (not lines[j].strip()
                                      or len(lines[j]) - len(lines[j].lstrip()) > indent):
                block.append(lines[j])
                j += 1
            code = textwrap.dedent("\n".join(block)).strip("\n") + "\n"
            if f"def {function}(" in code:
                return code
            i = j
            continue
        i += 1
    raise LookupError(f"no python code block defining {function} under '{section}'")


def kernel_source(k: PublicKernel) -> str:
    """The kernel's Python source, as published."""
    text = extract(k.repo, k.commit, k.path)
    if k.section is not None:
        return rst_code_block(text, k.section, k.function)
    return text


class _Shape:
    """A NumPy array's shape only: NKIBench's get_inputs/transform_to_nki_inputs run on it
    without allocating gigabytes."""

    def __init__(self, shape, dtype="float32"):
        self.shape, self.dtype = tuple(int(n) for n in shape), dtype

    def astype(self, dtype):
        import numpy as np
        return _Shape(self.shape, np.dtype(dtype).name)

    def reshape(self, *shape):
        shape = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
        return _Shape(shape, self.dtype)

    def __abs__(self):
        return self


class _ShapeNumpy:
    """The part of numpy NKIBench's reference inputs use, on _Shape."""

    def __init__(self):
        import numpy as np
        self._np = np
        self.random = self

    def normal(self, loc=0.0, scale=1.0, size=()):
        return _Shape(size if isinstance(size, tuple) else (size,), "float64")

    rand = randn = uniform = normal

    @staticmethod
    def abs(x):
        return x

    @staticmethod
    def reshape(x, shape):
        return x.reshape(shape)

    def __getattr__(self, name):
        return getattr(self._np, name)


def nkibench_shapes(reference_source: str) -> list[tuple]:
    """The kernel's positional inputs [(dtype, shape)] from an NKIBench reference file:
    its get_inputs() and transform_to_nki_inputs() run over shapes, not data. A scalar
    input is ("scalar", value)."""
    ns: dict = {"__name__": "nkibench_reference"}
    exec(compile(reference_source, "<nkibench reference>", "exec"), ns)
    ns["np"] = ns["numpy"] = _ShapeNumpy()
    inputs = ns["get_inputs"]()
    if "transform_to_nki_inputs" in ns:
        inputs = ns["transform_to_nki_inputs"](list(inputs))
    return [(x.dtype, x.shape) if isinstance(x, _Shape) else ("scalar", x) for x in inputs]


def input_shapes(k: PublicKernel) -> list[tuple]:
    """[(dtype, shape) or ("scalar", value)], the kernel's positional inputs."""
    if k.shapes is not None:
        return [(d, tuple(s)) for d, s in k.shapes]
    return nkibench_shapes(extract(k.repo, k.commit, k.reference))


def param_names(source: str, function: str) -> list[str]:
    """The positional parameter names of `function` in source."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == function:
            return [a.arg for a in node.args.posonlyargs + node.args.args]
    raise LookupError(f"no function {function}")


def shape_options(k: PublicKernel, source: str | None = None) -> list[str]:
    """`--shape NAME=DTYPE[D0,...]` options for `nkirun check/cost` (plus `--arg`s)."""
    source = kernel_source(k) if source is None else source
    names = param_names(source, k.function)
    out = []
    for name, (dtype, shape) in zip(names, input_shapes(k)):
        if dtype == "scalar":
            out += ["--arg", f"{name}={shape!r}"]
        else:
            out += ["--shape", f"{name}={dtype}[{','.join(map(str, shape))}]"]
    if k.driver is None:
        for key, v in k.extra.items():
            out += ["--arg", f"{key}={v}"]
    return out


def write_kernel(k: PublicKernel, folder: str | Path) -> Path:
    """Writes the kernel's source to folder/<safe name>.py; returns the path."""
    path = Path(folder) / (k.name.replace(" ", "_").replace("/", "_") + ".py")
    path.write_text(kernel_source(k))
    return path


def package_call(k: PublicKernel, root: str | Path):
    """(kernel, args, kwargs) of a package kernel's driver, the package extracted under
    root (its parent put on sys.path)."""
    import sys
    import nkirun  # noqa: F401  (its nki modules, before the package imports nki)
    top = str(Path(root) / Path(k.package).parent)
    if top not in sys.path:
        sys.path.insert(0, top)
    return globals()[k.driver](**k.extra)


def package_front(k: PublicKernel, root: str | Path):
    """The pipeline's Front of a package kernel (what `commands.check` takes)."""
    from nkirun.pipeline.front import call_front
    kernel, args, kwargs = package_call(k, root)
    return call_front(kernel, args, kwargs, target=k.target, lnc=k.lnc)


def rmsnorm_quant(seqlen: int, quant_only: bool, hidden: int = 16384):
    """nki-library's rmsnorm_quant_kernel as its LNC test calls it: bf16 [1, seqlen, hidden]
    to fp8 row quantization, with RMSNorm unless quant_only."""
    import nkirun
    from nkilib_src.nkilib.core.rmsnorm.rmsnorm_quant import (RmsNormQuantKernelArgs,
                                                             rmsnorm_quant_kernel)
    from nkilib_src.nkilib.core.utils.common_types import NormType, QuantizationType
    kargs = RmsNormQuantKernelArgs(
        quantization_type=QuantizationType.ROW, lower_bound=0.0, eps=1e-6,
        norm_type=NormType.NO_NORM if quant_only else NormType.RMS_NORM)
    args = (nkirun.shape("bfloat16", 1, seqlen, hidden), nkirun.shape("bfloat16", 1, hidden))
    return rmsnorm_quant_kernel, args, {"kargs": kargs, "input_dequant_scale": None}


def attention_cte(bs: int, seqlen_kv: int, seqlen_q: int, d: int, scale: float, dtype: str,
                  causal: bool):
    """nki-library's attention_cte as test_attention_cte_no_cp_unit calls it: q
    [bs, seqlen_q, d] (tp_q), k [bs, d, seqlen_kv], v [bs, seqlen_kv, d]."""
    import nkirun
    from nkilib_src.nkilib.core.attention.attention_cte import attention_cte as kernel
    args = (nkirun.shape(dtype, bs, seqlen_q, d), nkirun.shape(dtype, bs, d, seqlen_kv),
            nkirun.shape(dtype, bs, seqlen_kv, d))
    return kernel, args, {"scale": scale, "causal_mask": causal, "tp_q": True,
                          "tp_out": False}


def mlp_cte(batch: int, seqlen: int, hidden: int, intermediate: int, norm: str):
    """nki-library's mlp_cte (context encoding: SiLU gate, up and down projections, the
    norm fused) at a test_mlp_cte unit point, bf16. Its public entry `core/mlp/mlp.py` does
    not parse at the pinned commit, so a small kernel here does what that entry does on the
    CTE path: MLPParameters, the HBM output, mlp_cte."""
    import nki
    import nki.language as nl
    import nkirun
    from nkilib_src.nkilib.core.mlp.mlp_cte.mlp_cte import mlp_cte as body
    from nkilib_src.nkilib.core.mlp.mlp_parameters import (MLPParameters,
                                                          validate_mlp_arguments)
    from nkilib_src.nkilib.core.utils.common_types import ActFnType, NormType

    @nki.jit
    def mlp_cte_entry(hidden_tensor, gate_w, up_w, down_w, norm_w):
        params = MLPParameters(
            hidden_tensor=hidden_tensor, gate_proj_weights_tensor=gate_w,
            up_proj_weights_tensor=up_w, down_proj_weights_tensor=down_w,
            normalization_weights_tensor=norm_w, activation_fn=ActFnType.SiLU,
            normalization_type=getattr(NormType, norm), output_dtype=nl.bfloat16,
            force_cte_mode=True)
        validate_mlp_arguments(params)
        out = nl.ndarray((batch, seqlen, hidden), dtype=nl.bfloat16, buffer=nl.shared_hbm)
        body(params, out, None)
        return out

    bf = "bfloat16"
    args = (nkirun.shape(bf, batch, seqlen, hidden), nkirun.shape(bf, hidden, intermediate),
            nkirun.shape(bf, hidden, intermediate), nkirun.shape(bf, intermediate, hidden),
            nkirun.shape(bf, 1, hidden))
    return mlp_cte_entry, args, {}


# ---- the table ------------------------------------------------------------------------------
def _f32(*dims):
    return ("float32", dims)


def _bf16(*dims):
    return ("bfloat16", dims)


_NKIBENCH_MS = {  # NKIBench/kernels/<file>: (latency ms: profile total_time, mean of 10;
    # spill save MB), trn1; AccelOpt experiments/full_complete_local/profile_results.csv
    "swiglu_M4096_N3072_K1024_0": (4.222, 67),
    "matmul_add_rmsnorm_M4096_N2048_K2048_0": (2.667, 0),
    "add_rmsnorm_matmul_M4096_N2048_K1024_0": (1.222, 0),
    "matmul_M4096_N12288_K5120_0": (35.200, 0),
    "gqa_full_B1_N4096_QH16_KH8_D128_0": (19.111, 1099),
    "rmsnorm_matmul_M4096_N2048_K1024_0": (1.056, 0),
    "rope_single_freq_apply_B1_H64_N4096_D128_0": (4.333, 0),
    "bmm_B16_M4096_K64_N4096_0": (4.611, 13),
    "bmm_softmax_B16_K64_M4096_N4096_0": (12.000, 754),
    "transpose_matmul_M4096_K2048_N10944_0": (9.610, 0),
    "lora_M4096_N12288_K5120_R128_0": (30.166, 1068),
    "adamw_M10944_N2048_0": (2.000, 0),
    "silu_M4096_N7168_0": (1.333, 0),
    "mamba_M7168_C256_S16_0": (2.889, 55),
}
_NKIBENCH_REF = {  # kernel file -> reference file (the numpy_N suffix differs per op)
    "gqa_full_B1_N4096_QH16_KH8_D128_0": "gqa_full_B1_N4096_QH16_KH8_D128_numpy_2",
    "matmul_M4096_N12288_K5120_0": "matmul_M4096_N12288_K5120_numpy_2",
    "silu_M4096_N7168_0": "silu_M4096_N7168_numpy_0",
    "swiglu_M4096_N3072_K1024_0": "swiglu_M4096_N3072_K1024_numpy_2",
}


def _nkibench() -> list[PublicKernel]:
    out = []
    for stem, (ms, spill_mb) in _NKIBENCH_MS.items():
        op = stem.split("_M")[0].split("_B1")[0].split("_B16")[0]
        ref = _NKIBENCH_REF.get(stem, stem[:-2] + "_numpy_1")
        out.append(PublicKernel(
            name=f"nkibench {op}", repo=ACCELOPT, commit=ACCELOPT_AT,
            path=f"NKIBench/kernels/{stem}.py", function="kernel", target="trn1",
            reference=f"NKIBench/reference/{ref}.py", measured_ms=ms,
            method="neuron-profile total_time, mean of 10", toolchain="AccelOpt 2026 (trn1)",
            source_url=NKIBENCH, family=f"nkibench {op}", spill_save_mb=spill_mb))
    return out


def _optimization_guide() -> list[PublicKernel]:
    sections = (("v2", "Writing the kernel", 39.89),
                ("v3", "Analyzing the kernel", 28.20),
                ("v4", "Overlapping data and compute through blocking", 28.41),
                ("v5", "Optimizing DMA through blocking the contraction dimension", 28.30))
    return [PublicKernel(
        name=f"optguide matmul {v}", repo=SDK, commit=SDK_AT,
        path="nki/guides/tutorials/kernel-optimization.rst", function="matrix_multiply_kernel",
        section=title, target="trn2", shapes=(_f32(8192, 4096), _f32(8192, 8192)),
        measured_ms=ms, method="profile timeline (screenshots)", toolchain="SDK 2.27+ (2025-12)",
        source_url=OPT_GUIDE, family="optguide matmul fp32")
        for v, title, ms in sections]


def _matmul_tutorial() -> list[PublicKernel]:
    versions = (("v1", "nki_matmul_tiled_", 51.80), ("v2", "nki_matmul_hoist_load_", 42.96),
                ("v3", "nki_matmul_block_free_dimension_", 22.07),
                ("v4", "nki_matmul_fully_optimized_", 6.97))
    return [PublicKernel(
        name=f"matmul tutorial {v}", repo=SDK, commit=SDK_AT,
        path="nki/examples/matrix_multiplication/matrix_multiplication_nki_kernels.py",
        function=fn, target="trn1", shapes=(_bf16(8192, 4096), _bf16(8192, 8192)),
        measured_ms=ms, method="tutorial table", toolchain="SDK 2.26.1",
        source_url=MATMUL_TUT, family="matmul tutorial bf16")
        for v, fn, ms in versions]


def _mamba(channels, seq, state=16):
    return (_f32(1, channels, seq), _f32(1, channels, seq), _f32(channels, state),
            _f32(1, state, seq), _f32(1, state, seq))


def _fused_mamba() -> list[PublicKernel]:
    points = [("v1", 4096, 512, 2.34), ("v2", 4096, 512, 1.61), ("v3", 4096, 512, 1.6),
              ("v2", 4096, 8192, 52.2), ("v3", 4096, 8192, 27.8)]
    return [PublicKernel(
        name=f"fused mamba {v} c{c} s{s}", repo=SDK, commit=SDK_AT,
        path="nki/examples/fused_mamba/mamba_nki_kernels.py", function=f"mamba_{v}",
        target="trn1", shapes=_mamba(c, s), measured_ms=ms, method="tutorial text/table",
        toolchain="SDK (tutorial)", source_url=MAMBA_TUT, family=f"fused mamba c{c} s{s}")
        for v, c, s, ms in points]


def _nkilib() -> list[PublicKernel]:
    """nki-library's QoR values (test/integration/nkilib/core/rmsnorm/test_rmsnorm_quant.py,
    `tpbSgCyclesSum`: profiler ticks of 1 ps, the slowest core; trn2, LNC2)."""
    points = ((2, True, 51_564_336), (2, False, 89_102_777), (160, False, 106_546_750),
              (2048, False, 683_281_265))
    return [PublicKernel(
        name=f"nkilib rmsnorm_quant s{s}{' quant-only' if q else ''}", repo=NKILIB,
        commit=NKILIB_AT, path="src/nkilib_src/nkilib/core/rmsnorm/rmsnorm_quant.py",
        function="rmsnorm_quant_kernel", target="trn2", measured_ms=ticks / 1e9,
        method="neuron-profile CycleCount (1 ps ticks), max over cores",
        toolchain="nki-library d2ad3a57 QoR (2026-02)",
        source_url="https://github.com/aws-neuron/nki-library", family=f"rmsnorm_quant s{s}",
        package="src/nkilib_src", driver="rmsnorm_quant", lnc=2,
        extra={"seqlen": s, "quant_only": q}) for s, q, ticks in points] + [
        # attention_cte: test_attention_cte_no_cp_unit's rows (bs, seqlen_kv, seqlen_q, d,
        # scale, dtype, causal; tp_q, not tp_out); QoR tpbSgCyclesSum; one core
        PublicKernel(
            name=f"nkilib attention_cte {dt} q{sq} kv{skv}{' causal' if causal else ''}",
            repo=NKILIB, commit=NKILIB_AT,
            path="src/nkilib_src/nkilib/core/attention/attention_cte.py",
            function="attention_cte", target="trn2", measured_ms=ticks / 1e9,
            method="neuron-profile CycleCount (1 ps ticks), max over cores",
            toolchain="nki-library d2ad3a57 QoR (2026-02)",
            source_url="https://github.com/aws-neuron/nki-library",
            family=f"attention_cte q{sq} kv{skv}", package="src/nkilib_src",
            driver="attention_cte", lnc=1,
            extra={"bs": 1, "seqlen_kv": skv, "seqlen_q": sq, "d": 64, "scale": scale,
                   "dtype": dt, "causal": causal})
        for skv, sq, scale, dt, causal, ticks in ((9216, 4096, 0.5, "float32", False, 580e6),
                                                  (9216, 9216, 1.0, "bfloat16", True, 694e6))
    ] + [
        # mlp_cte: test_mlp_cte's unit rows (vnc 2, batch 1, seqlen, hidden, intermediate,
        # norm; SiLU, no quantization, no bias)
        PublicKernel(
            name=f"nkilib mlp_cte s{s} h{h} i{i} {norm.lower()}", repo=NKILIB, commit=NKILIB_AT,
            path="src/nkilib_src/nkilib/core/mlp/mlp_cte/mlp_cte.py", function="mlp_cte",
            target="trn2", measured_ms=ticks / 1e9,
            method="neuron-profile CycleCount (1 ps ticks), max over cores",
            toolchain="nki-library d2ad3a57 QoR (2026-02)",
            source_url="https://github.com/aws-neuron/nki-library",
            family=f"mlp_cte s{s} h{h} i{i}", package="src/nkilib_src", driver="mlp_cte",
            lnc=2, extra={"batch": 1, "seqlen": s, "hidden": h, "intermediate": i,
                          "norm": norm})
        for s, h, i, norm, ticks in ((4096, 8192, 448, "RMS_NORM", 1_176_746_495),
                                     (2048, 8448, 1408, "NO_NORM", 1_437_844_003))]


KERNELS: dict[str, PublicKernel] = {
    k.name: k for k in (*_nkibench(), *_optimization_guide(), *_matmul_tutorial(),
                        *_fused_mamba(), *_nkilib())}


# ---- loading for the calibration (benchmarks/calibration/public.py) ----------------------
# A point names (repo, path) and is read at the commit PINNED here; a kernel file is written
# unmodified into a temporary folder outside the tree and imported from there under
# nkirun's `nki`. CS149's kernels are the assignment's files with the one constant the
# assignment asks its reader to change (with_constants).
import atexit  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

# repository -> the commit the benchmarks read (hw-measurements: the commits the published
# figures were taken at)
PINNED = {
    "zhang677/AccelOpt": "47e29a7c",
    "aws-neuron/aws-neuron-sdk": "81ce03ae",
    "aws-neuron/nki-library": "d2ad3a57",
    "aws-neuron/nki-samples": "6905a68a",
    "stanford-cs149/asst4-trainium2": "aee34672",
    "stanford-cs149/asst4-trainium": "859c0e3",
}

_TMP: str | None = None


def mirrors_root() -> str:
    return os.environ.get("NKIRUN_MIRRORS", "/work/.mirror")


def git_dir(repo: str) -> str | None:
    """The bare mirror of `repo` ("owner/name"), or None when there is none."""
    d = os.path.join(mirrors_root(), repo.replace("/", "+"), "repo")
    return d if os.path.isdir(d) else None


def _run_git(repo: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "--git-dir", git_dir(repo), *args], capture_output=True,
                          text=True, timeout=60)


def missing(repo: str, path: str, commit: str | None = None) -> str | None:
    """Why `repo`'s `path` at `commit` (default: the pinned one) cannot be read, or None."""
    commit = commit or PINNED[repo]
    if git_dir(repo) is None:
        return (f"no mirror of {repo} under {mirrors_root()} (git clone --bare "
                f"https://github.com/{repo} {mirrors_root()}/{repo.replace('/', '+')}/repo)")
    if _run_git(repo, "cat-file", "-e", f"{commit}:{path}").returncode != 0:
        return f"{repo} @ {commit} has no {path}"
    return None


def read(repo: str, path: str, commit: str | None = None) -> str:
    """The text of `path` in `repo` at `commit` (default: the pinned one)."""
    r = _run_git(repo, "show", f"{commit or PINNED[repo]}:{path}")
    if r.returncode != 0:
        raise FileNotFoundError(missing(repo, path, commit) or r.stderr.strip())
    return r.stdout


def _tmp() -> str:
    global _TMP
    if _TMP is None:
        _TMP = tempfile.mkdtemp(prefix="nkirun-public-")
        atexit.register(shutil.rmtree, _TMP, True)
    return _TMP


def extract_file(repo: str, path: str, commit: str | None = None) -> str:
    """`path` written unmodified into a temporary folder (its own name kept); the file's path."""
    dest = os.path.join(_tmp(), repo.replace("/", "+"), os.path.basename(path))
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "w") as f:
        f.write(read(repo, path, commit))
    return dest


def code_block(text: str, function: str) -> str:
    """The code block of a documentation page (reStructuredText `.. code-block:: python` or
    Markdown fences) that defines `function`, dedented; the last such block when the
    function is defined several times, each version in its own block: see `occurrence`."""
    return code_blocks(text, function)[-1]


def code_blocks(text: str, function: str) -> list[str]:
    """Every code block of `text` that defines `function` (`def function(`), in page order."""
    import re
    import textwrap
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        line = lines[i]
        if line.strip().startswith(".. code-block:: python"):
            indent = len(line) - len(line.lstrip())
            j = i + 1
            body = []
            while j < len(lines) and (not lines[j].strip()
                                      or len(lines[j]) - len(lines[j].lstrip()) > indent):
                body.append(lines[j])
                j += 1
            blocks.append(textwrap.dedent("\n".join(body)))
            i = j
        elif line.strip().startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].strip().startswith("```"):
                j += 1
            blocks.append(textwrap.dedent("\n".join(lines[i + 1:j])))
            i = j + 1
        else:
            i += 1
    pat = re.compile(rf"^\s*def {re.escape(function)}\(", re.M)
    return [b + "\n" for b in blocks if pat.search(b)]


def with_constants(source: str, function: str, constants: dict) -> str:
    """`source` with `NAME = value` assignments inside `function` set to new values: the
    edit a tutorial asks its reader to make (CS149's ROW_CHUNK, FREE_DIM). Each NAME must be
    assigned there once with a literal (else ValueError: the source changed)."""
    import re
    start = re.search(rf"^def {re.escape(function)}\(", source, re.M)
    if start is None:
        raise ValueError(f"no function {function}")
    nxt = re.search(r"^(def |@)", source[start.end():], re.M)
    end = start.end() + nxt.start() if nxt else len(source)
    body = source[start.start():end]
    for name, value in constants.items():
        body, n = re.subn(rf"^(\s+{name}\s*=\s*)[0-9.]+[ \t]*$", rf"\g<1>{value!r}", body,
                          count=1, flags=re.M)
        if n != 1:
            raise ValueError(f"{function} assigns no literal to {name}")
    return source[:start.start()] + body + source[end:]


def write_module(name: str, text: str) -> str:
    """`text` written as a module file `name`.py in the temporary folder; its path."""
    dest = os.path.join(_tmp(), "modules", name + ".py")
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "w") as f:
        f.write(text)
    return dest


def import_path(path: str):
    """Import a kernel file with nkirun's `nki` package (also `neuronxcc.nki`)."""
    from nkirun.source.kernel.loader import import_kernel_module
    from nkirun.source.kernel.modules import install_fallback_finder
    install_fallback_finder()
    return import_kernel_module(path)


def load(repo: str, path: str, function: str, commit: str | None = None):
    """The kernel `function` of the extracted file, imported with nkirun's `nki` package."""
    return getattr(import_path(extract_file(repo, path, commit)), function)
