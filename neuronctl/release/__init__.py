"""The release model: what each Neuron release pins, the documented rules and where every value
came from. Its modules import downward only, so none imports back:

- `model`: the data types (Release, Framework, Artifact, Manifest, Rule, Source); it imports
  nothing else from this package.
- `provenance` (each value's source) and `rules` (the rules' parser and their evaluation):
  import `model`; `source_checks` (the sources' URL and date checks) imports none of them.
- `manifest`: the parser and the loaders (bundled, stored, --manifest).
- `aws_import` (AWS's n2 manifest), `merge` and `rollback` (`releases update`), `stack_rules`
  (the hook lock and install call): import the modules above.

The bundled data stays in neuronctl/data/releases.json. This module imports nothing, so importing
one of them loads only what it needs.
"""
