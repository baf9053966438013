"""Scripts that run inside a target interpreter, by path, never imported by neuronctl.

Each stands alone (the standard library only, no neuronctl import) and runs on any Python from
3.6 on, so a legacy environment can be inspected too. Each takes the number of a private pipe as
its first argument and writes its results there, one JSON document a line, starting with a hello
line; whatever the target's own code prints on stdout is never read as a result.
"""
