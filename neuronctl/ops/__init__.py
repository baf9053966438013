"""The operations (doctor, install, lock, env, detect, releases import, init): each takes typed
inputs and a reporter and returns a frozen outcome. No click, no rich, no neuronctl.cli here."""
