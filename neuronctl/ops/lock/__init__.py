"""lock: the request, the resolution of every target, the --check comparison."""
