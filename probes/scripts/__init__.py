"""Scripts that run inside a target interpreter, by path, never imported by neuronctl.

Each stands alone (the standard library only, no neuronctl import) and runs on any Python from
3.6 on, so a legacy environment can be inspected too. Each takes the number of a private pipe as
its first argument and writes its results there, one JSON document a line, starting with a hello
line; whatever the target's own code prints on stdout is never read as a result. A script's
helpers are files beside it that it loads by path, never by name (smoke_run.py: smoke_compare.py,
descendants.py, reference_model.py; inspect_env.py, when held: inspect_hold.py).
"""
