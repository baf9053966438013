"""A stand-in for AWS's torch-neuronx (TorchNeuron): a TEST DOUBLE, never part of neuronctl.

It lives under tests/, is built into a wheel by tests/support/standin.py for the test session only, and
never reaches neuronctl's wheel. It registers a `neuron` device the way AWS documents that
torch_neuronx does ("torch.neuron and torch.accelerator" reference page), with PyTorch's public
extension points only:

- autoload: a `torch.backends` entry point, so `import torch` loads it (PyTorch's backend
  autoload); an explicit `import torch_neuronx` registers it as well;
- `torch.utils.rename_privateuse1_backend("neuron")`, unless another PrivateUse1 backend was
  registered first: then, as AWS documents, it leaves the registration to that backend and
  `torch.neuron` is not created;
- `torch._register_device_module("neuron", ...)` (is_available, device_count, current_device,
  set_device, synchronize, memory_allocated, max_memory_allocated, reset_peak_memory_stats,
  memory_stats, manual_seed, manual_seed_all), PrivateUse1 hooks and a device guard, and
  `torch.utils.generate_methods_for_privateuse1_backend()` (`.neuron()`, `.is_neuron`), through
  torch.utils.backend_registration's Python-backend support (a tensor's values live in CPU
  memory, on its storage: see _standin);
- aten kernels registered for PrivateUse1 with torch.library (`_standin.NATIVE_OPS`) and a boxed
  fallback for every other op that runs it on CPU and copies the result back (CPU_FALLBACK);
- a `torch.compile` backend named `neuron` (torch._dynamo's register_backend) that honours
  TORCH_NEURONX_DISABLE_FALLBACK_EXECUTION as AWS documents: a failed compile raises unless it
  is 0, and then falls back to eager.

Its version, 2.13.3.0, is the native TorchNeuron that the default release (Neuron 2.33.1) pins
for torch 2.13, the torch the test venv holds.

Switches, read from the environment when it loads (tests set them; nobody else should):
- NEURON_STANDIN_AUTOLOAD_FAIL=1: importing it raises, so autoload makes `import torch` fail
  ("Failed to load the backend extension: torch_neuronx"), and `import torch_neuronx` with
  TORCH_DEVICE_BACKEND_AUTOLOAD=0 shows its own error.
- NEURON_STANDIN_EXPLICIT_IMPORT=1: the autoload entry point does nothing; the backend is
  registered only by an explicit `import torch_neuronx`.
- NEURON_STANDIN_COMPILE_FAIL=1: every `torch.compile(backend="neuron")` graph fails to compile.
- NEURON_STANDIN_DEVICE_COUNT=N: the devices it reports (default 2); 0 makes is_available False.
- NEURON_STANDIN_LOG_FALLBACK=1: each op sent to the CPU fallback is printed.
No switch makes `torch.accelerator` report something other than neuron: on a CPU build of torch
a renamed PrivateUse1 backend is the accelerator (with or without hooks), and no public API
changes that; the verdict for that case is tested at the unit level.
A competing backend is not a switch here: the `rival_backend` package (tests/support/standin_neuron)
registers PrivateUse1 as "rival" through its own autoload entry point; installed in a folder
earlier on sys.path, its entry point runs first.
"""

from __future__ import annotations

import os

if os.environ.get("NEURON_STANDIN_AUTOLOAD_FAIL") == "1":
    raise RuntimeError("neuron stand-in: the Neuron runtime could not be initialised "
                       "(NEURON_STANDIN_AUTOLOAD_FAIL=1)")


from torch_neuronx import _register

__version__ = "2.13.3.0"
REGISTERED = _register.register()
"""False where another PrivateUse1 backend held the registration first."""
