"""Registration of the stand-in `neuron` backend (see the package docstring)."""

from __future__ import annotations

import sys
import warnings

import torch
import torch.utils.backend_registration as registration

from torch_neuronx import _compile, _device, _standin


def register() -> bool:
    """Register the backend once; False (and a warning) where PrivateUse1 already has a name."""
    taken = torch._C._get_privateuse1_backend_name()
    if taken == _standin.DEVICE:
        return True
    if taken != "privateuseone":
        warnings.warn(f"torch_neuronx: PrivateUse1 is already registered as {taken!r}; the neuron "
                      "device is not registered and torch.neuron is not created", stacklevel=2)
        return False
    module = _device.module()
    # rename_privateuse1_backend, generate_methods_for_privateuse1_backend,
    # _register_device_module, and the PrivateUse1 hooks and device guard, in that order
    registration._setup_privateuseone_for_python_backend(
        _standin.DEVICE, backend_module=module, hook=_device.Hooks())
    _standin.register_kernels()
    _compile.register()
    sys.modules.setdefault("torch.neuron", module)
    return True
