"""The package universe the lock and install tests resolve against: three loopback indexes laid
out like PyPI, the PyTorch CPU index and the Neuron repo, with the traps the real ones have."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from support.index_server import IndexState, index_server
from support.wheels import build_wheel

LINUX = "manylinux_2_28_x86_64"
OLD_LINUX = "manylinux_2_17_x86_64.manylinux2014_x86_64"


def _cp(minor: int, plat: str = LINUX) -> str:
    return f"cp3{minor}-cp3{minor}-{plat}"


def build_universe(root: Path, *, big_compiler: int = 0) -> dict[str, list[tuple[Path, dict]]]:
    """Wheels per index kind; each entry (wheel, options for IndexState.add)."""
    torch_dir, neuron_dir, pypi_dir = root / "torch", root / "neuron", root / "pypi"
    torch = []
    for version, deps in (("2.14.0+cpu", ("filelock", "typing-extensions>=4.10")),
                          ("2.13.0+cpu", ("filelock", "typing-extensions>=4.8")),
                          ("2.15.0+cpu", ("filelock", "typing-extensions>=4.10"))):
        for minor in (12, 13):
            torch.append((build_wheel(torch_dir, "torch", version, requires=deps, tag=_cp(minor),
                                      requires_python=">=3.10"), {"requires_python": ">=3.10"}))
    neuron = []
    for version, torch_req in (("2.14.3.0", "torch==2.14.*"), ("2.13.3.0", "torch==2.13.*"),
                               ("2.14.4.0", "torch==2.14.*")):
        for minor in (12, 13):
            neuron.append((build_wheel(
                neuron_dir, "torch-neuronx", version, tag=_cp(minor), requires_python=">=3.12",
                requires=(torch_req, "neuronx-cc>=2.28", "nki>=0.7")), {}))
    neuron.append((build_wheel(neuron_dir, "torch-neuronx", "2.9.0.2.15.32035", tag=_cp(12),
                               requires=("torch==2.9.0", "torch-xla==2.9.0", "libneuronxla")), {}))
    for minor in (12, 13):
        neuron.append((build_wheel(neuron_dir, "neuronx-cc", "2.28.7631.0", tag=_cp(minor, OLD_LINUX),
                                   requires=("numpy>=1.24",), blob_size=big_compiler), {}))
    neuron.append((build_wheel(neuron_dir, "nki", "0.7.0", requires_python=">=3.12"), {}))
    pypi = [
        (build_wheel(pypi_dir, "filelock", "3.16.1"), {}),
        (build_wheel(pypi_dir, "filelock", "3.17.0"), {"yanked": "broken release"}),
        (build_wheel(pypi_dir, "typing-extensions", "4.12.2", requires_python=">=3.8"),
         {"requires_python": ">=3.8"}),
        (build_wheel(pypi_dir, "typing-extensions", "4.9.0"), {}),
        (build_wheel(pypi_dir, "typing-extensions", "5.0.0", requires_python=">=3.13"),
         {"requires_python": ">=3.13"}),
        (build_wheel(pypi_dir, "transformers", "4.50.0", requires=("filelock", "numpy>=1.17"),
                     extras={"torch": ("accelerate>=1.0",)}), {}),
        (build_wheel(pypi_dir, "accelerate", "1.0.0", requires=("numpy",)), {}),
        # The traps: PyPI placeholders and an attacker's higher version of Neuron names.
        (build_wheel(pypi_dir, "torch-neuronx", "1.0"), {}),
        (build_wheel(pypi_dir, "torch-neuronx", "99.0.0", tag=_cp(12)), {}),
        (build_wheel(pypi_dir, "neuronx-cc", "99.0.0"), {}),
        (build_wheel(pypi_dir, "nki", "99.0.0"), {}),
        (build_wheel(pypi_dir, "torch", "99.0.0"), {}),
    ]
    for minor in (12, 13):
        pypi.append((build_wheel(pypi_dir, "numpy", "2.1.0", tag=_cp(minor, OLD_LINUX)), {}))
    return {"html": torch, "neuron": neuron, "json": pypi}


@dataclass
class Universe:
    pypi: IndexState
    torch: IndexState
    neuron: IndexState
    urls: dict[str, str]

    def index_flags(self) -> list[str]:
        return [f"--index=pypi={self.urls['pypi']}", f"--index=pytorch-cpu={self.urls['pytorch-cpu']}",
                f"--index=neuron={self.urls['neuron']}"]

    def all_hits(self) -> list[tuple[str, str, str]]:
        return self.pypi.hits + self.torch.hits + self.neuron.hits

    def bytes_sent(self) -> int:
        return self.pypi.bytes_sent + self.torch.bytes_sent + self.neuron.bytes_sent


@contextmanager
def running(wheels: dict[str, list[tuple[Path, dict]]], *, neuron_ranges: bool = True) -> Iterator[Universe]:
    states = {"json": IndexState("json"), "html": IndexState("html"),
              "neuron": IndexState("neuron", ranges=neuron_ranges)}
    for kind, entries in wheels.items():
        for wheel, opts in entries:
            states[kind].add(wheel, **opts)
    with ExitStack() as stack:
        urls = {name: stack.enter_context(index_server(states[kind])) + "/simple"
                for name, kind in (("pypi", "json"), ("pytorch-cpu", "html"), ("neuron", "neuron"))}
        yield Universe(states["json"], states["html"], states["neuron"], urls)


# A PyTorch-CUDA-like index (download.pytorch.org/whl/cu130): torch's CUDA build with its
# nvidia-* and triton dependencies, which that index lists as well.

CUDA_LINUX = "manylinux_2_28_x86_64"
NVIDIA_TAG = "py3-none-manylinux_2_27_x86_64"
CUDA_DEPS = {  # name -> version, as torch 2.9+cu130's own Requires-Dist pins them
    "nvidia-cuda-runtime": "13.0.96", "nvidia-cublas": "13.1.0.3", "nvidia-cudnn-cu13": "9.15.1.9",
    "nvidia-nccl-cu13": "2.28.9", "triton": "3.6.0"}
_LINUX_X86 = '; platform_system == "Linux" and platform_machine == "x86_64"'


def build_cuda_universe(root: Path) -> list[tuple[Path, dict]]:
    """Wheels for the CUDA-like index: torch 2.14.0+cu130 (and a +cu128 build the cu130 lock
    must not take), nvidia-* (one depending on another) and triton."""
    out = []
    deps = tuple(f"{n}=={v}{_LINUX_X86}" for n, v in CUDA_DEPS.items())
    for local in ("cu130", "cu128"):
        for minor in (12, 13):
            torch_deps = deps if local == "cu130" else ("filelock",)
            out.append((build_wheel(root, "torch", f"2.14.0+{local}", tag=_cp(minor, CUDA_LINUX),
                                    requires=("filelock", "typing-extensions>=4.10", *torch_deps),
                                    requires_python=">=3.10"), {"requires_python": ">=3.10"}))
    for name, version in CUDA_DEPS.items():
        if name == "triton":
            for minor in (12, 13):
                out.append((build_wheel(root, name, version, tag=_cp(minor, CUDA_LINUX)), {}))
            continue
        requires = ("nvidia-cublas",) if name == "nvidia-cudnn-cu13" else ()
        out.append((build_wheel(root, name, version, tag=NVIDIA_TAG, requires=requires), {}))
    return out


@dataclass
class CudaUniverse:
    uni: Universe
    cuda: IndexState
    url: str
    upstream: IndexState
    """Where the nvidia-* files live (pypi.nvidia.com's part): the CUDA index only links there."""
    upstream_url: str

    def index_flags(self) -> list[str]:
        return [*self.uni.index_flags(), f"--index=pytorch-cuda={self.url}"]


def _upstream_page(project: str, entries: list, files_url: str) -> str:
    """The project page as download.pytorch.org/whl/cuXYZ serves it for an nvidia-* package: a
    copy of the upstream page with its links made absolute (pytorch/test-infra
    s3_management/update_dependencies.py), so the files come from the upstream host."""
    links = [f'<a href="{files_url}/{quote(e.filename)}#sha256={e.sha256}">{e.filename}</a><br/>'
             for e in entries]
    return (f"<!DOCTYPE html><html><body><h1>Links for {project}</h1>\n" + "\n".join(links)
            + "\n</body></html>\n")


@contextmanager
def running_with_cuda(wheels: dict[str, list[tuple[Path, dict]]],
                      cuda_wheels: list[tuple[Path, dict]]) -> Iterator[CudaUniverse]:
    """The three indexes of `running` plus a PyTorch-CUDA-like one (HTML, no sidecars) whose
    nvidia-* pages link to the files on an upstream host, as the real one does."""
    cuda, upstream = IndexState("html"), IndexState("html")
    for wheel, opts in cuda_wheels:
        cuda.add(wheel, **opts)
        if wheel.name.startswith("nvidia_"):
            upstream.add(wheel, **opts)
    with running(wheels) as uni, index_server(cuda) as url, index_server(upstream) as up_url:
        for project, entries in upstream.projects.items():
            # Served verbatim in place of the generated page.
            cuda.corrupt_page[project] = _upstream_page(project, entries, up_url + "/files")
        yield CudaUniverse(uni, cuda, url + "/simple", upstream, up_url)
