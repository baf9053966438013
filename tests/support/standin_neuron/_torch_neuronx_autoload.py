"""The stand-in torch_neuronx's autoload entry point (group torch.backends): a module of its
own, so NEURON_STANDIN_EXPLICIT_IMPORT=1 can leave the package unimported (test double)."""

import os


def autoload() -> None:
    if os.environ.get("NEURON_STANDIN_EXPLICIT_IMPORT") == "1":
        return
    import torch_neuronx  # noqa: F401  (registers the neuron device)
