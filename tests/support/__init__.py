"""Shared test helpers: loopback servers, wheels, venvs, sysroots, the stand-in backend."""
