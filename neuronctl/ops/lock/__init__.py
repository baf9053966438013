"""lock: the request, the resolution of every platform target, the --check comparison, and the
choice of which lock a host installs (choice.py)."""
