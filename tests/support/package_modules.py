"""Every module of the package, as the project tests that import them all in a child interpreter
walk it: a source fragment that defines `names` (probes/scripts run in a target interpreter and
are never imported here)."""

WALK = """
import importlib, pkgutil
import neuronctl, neuronctl.backend, neuronctl.probes, neuronctl.resolvers
roots = (neuronctl, neuronctl.backend, neuronctl.probes, neuronctl.resolvers)
names = {m.name for r in roots for m in pkgutil.walk_packages(r.__path__, r.__name__ + ".")
         if ".scripts" not in m.name}
"""
