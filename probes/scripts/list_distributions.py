"""Run by `neuronctl bundle` inside the target interpreter (by path, isolated): the interpreter's
version and prefix, then one `name==version` line per installed distribution. Standard library
only; Python 3.8+."""

import sys
from importlib import metadata


def main() -> None:
    print("python", sys.version.replace("\n", " "))
    print("prefix", sys.prefix)
    seen: dict[str, str] = {}  # a local annotation: never evaluated, so 3.8 runs it
    for dist in metadata.distributions():
        name = dist.metadata["Name"] or "?"
        seen.setdefault(name.lower(), f"{name}=={dist.version}")
    for key in sorted(seen):
        print(seen[key])


if __name__ == "__main__":
    main()
