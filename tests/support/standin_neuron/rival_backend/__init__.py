"""A competing PrivateUse1 backend named "rival" (TEST DOUBLE for neuronctl's tests): its
autoload entry point registers it, and with it the PrivateUse1 name, before torch_neuronx."""

import types

import torch


def autoload() -> None:
    if torch._C._get_privateuse1_backend_name() != "privateuseone":
        return
    torch.utils.rename_privateuse1_backend("rival")
    module = types.ModuleType("torch.rival")
    module.is_available = lambda: True
    module.device_count = lambda: 1
    module.current_device = lambda: 0
    torch._register_device_module("rival", module)
