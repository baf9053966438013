"""One redaction for everything neuronctl shows: messages, hints, reports, the env dump.

Text only, regular expressions only: redaction must never raise, whatever it is given (a URL
with a non-numeric port or a broken IPv6 host makes `urllib.parse` raise; these do not).
Redacting too much is a lesser harm than printing a secret, so the patterns err wide.
"""

from __future__ import annotations

import re

MASK = "***"

# scheme://USERINFO@ : userinfo is everything up to the last '@' before the authority ends ('/',
# '?', '#' or whitespace), so a password holding an unescaped '@' is still covered whole.
_URL_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)[^/?#\s]*@")
# USER:PASS@host without a scheme (a value that lost its scheme, or "url=user:pass@host").
_BARE_USERINFO = re.compile(r"(?<![\w/:@%.\-])[^\s/?#@:'\"=,;]+:[^\s/?#]*@(?=[\w\[])")
# An HTTP authorization: "Bearer abc", "Basic dXNlcjpwYXNz", "Authorization: Token abc".
_AUTH_SCHEME = re.compile(r"(?i)(?P<scheme>bearer|basic)(?P<sep>\s+|\s*[=:]\s*)"
                          r"(?P<token>[A-Za-z0-9._~+/\-]+=*)")
_AUTH_HEADER = re.compile(r"(?i)(?P<name>(?:proxy-)?authorization\s*[:=]\s*)(?P<value>[^\r\n,;]+)")
# Substrings that mark a name as secret wherever they occur in it ("MYAPITOKEN", "dbPassword").
_SECRET_SUBSTRINGS = ("token", "secret", "passw", "passphrase", "credential", "cookie",
                      "signature", "apikey", "auth", "private")
# Name parts (split at "_", "-", ".", digits and camelCase; a plural "s" dropped) that mark it secret
# whole or as its end: "key" as a substring would catch "keyboard".
_SECRET_PARTS = frozenset({"key", "session", "sessionid", "pass", "pwd", "sig", "sas"})
_NAME_PARTS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")


# name=value where the name says it holds a secret: "?token=abc", "--password=x", "API_KEY=y".
# Only names holding a secret word are candidates, so "A=token=x" still finds "token=x".
_SECRET_ASSIGNMENT = re.compile(
    r"(?i)(?P<name>[\w.\-]*(?:" + "|".join(_SECRET_SUBSTRINGS + tuple(sorted(_SECRET_PARTS)))
    + r")[\w.\-]*)(?P<eq>=)(?P<value>\"[^\"]*\"|'[^']*'|[^\s&,;\"']+)")


def is_secret_name(name: str) -> bool:
    """True when a variable, option or field name says its value is a secret: TOKEN, SECRET,
    PASSWORD, PASSWD, PASSPHRASE, KEY (and *_KEY, *_APIKEY, *KEY), AUTH*, CREDENTIAL, COOKIE,
    SESSION, SIGNATURE, PRIVATE."""
    lowered = name.lower()
    if any(word in lowered for word in _SECRET_SUBSTRINGS):
        return True
    singular = lowered.removesuffix("s")
    if singular.endswith(tuple(_SECRET_PARTS)):  # "XSESSIONS", "deploykey": glued to a prefix
        return True
    parts = [p.lower().removesuffix("s") for p in _NAME_PARTS.findall(name)]
    return any(p in _SECRET_PARTS or p.endswith("key") for p in parts)


def _assignment(match: re.Match[str]) -> str:
    if not is_secret_name(match["name"]):
        return match[0]
    return f"{match['name']}{match['eq']}{MASK}"


def redact(text: str) -> str:
    """`text` with URL credentials, authorization tokens and secret-named assignments masked.
    Never raises; anything that is not a str is turned into one first."""
    if not isinstance(text, str):
        text = str(text)
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _BARE_USERINFO.sub(f"{MASK}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['name']}{MASK}", text)
    text = _AUTH_SCHEME.sub(lambda m: f"{m['scheme']}{m['sep']}{MASK}", text)
    return _SECRET_ASSIGNMENT.sub(_assignment, text)
