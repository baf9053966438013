"""One redaction for everything neuronctl shows: messages, hints, reports, the env dump.

Text only, regular expressions only: redaction must never raise, whatever it is given (a URL
with a non-numeric port or a broken IPv6 host makes `urllib.parse` raise; these do not).
Redacting too much is a lesser harm than printing a secret, so the patterns err wide.
"""

from __future__ import annotations

import re

MASK = "***"

# Every pattern may start only where a run of its leading characters starts (the lookbehinds):
# a pattern that could start anywhere inside a long word rescans the word from every position,
# quadratic time on untrusted text (a 10,000-character token took 36 s).
# scheme://USERINFO@ : userinfo is everything up to the last '@' before the authority ends ('/',
# '?', '#' or whitespace), so a password holding an unescaped '@' is still covered whole. The
# "scheme" is the whole run before '://', so "0http://u:p@" is covered too.
_URL_USERINFO = re.compile(r"(?<![A-Za-z0-9+.\-])(?P<scheme>[A-Za-z0-9+.\-]+://)[^/?#\s]*@")
# USER:PASS@host without a scheme (a value that lost its scheme, or "url=user:pass@host"); the
# password part is bounded so that text full of ':' and delimiters stays linear.
_BARE_USERINFO = re.compile(r"(?<![^\s?#'\"=,;])[^\s/?#@:'\"=,;]+:[^\s/?#]{0,1024}@(?=[\w\[])")
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


# name=value where the name says it holds a secret: "?token=abc", "--password=x", "API_KEY=y", and
# the config and JSON forms: 'token = "abc"', '"password": "x"', '{"HF_TOKEN": "hf_abc"}'. A name
# is a whole run of name characters, optionally quoted, then '=' or ':' with optional spaces; the
# value is masked when is_secret_name says so, and a value is never read as a name, but
# "A=token=x" still finds "token=x". The name run is possessive and the spaces and quoted values
# bounded, so each start costs at most its own run: linear overall.
_ASSIGNED_NAME = re.compile(r"(?<![\w.\-])(?P<open>[\"']?)(?P<name>[\w.\-]++)(?P<close>[\"']?)"
                            r"[ \t]{0,16}(?P<sep>[=:])(?P<gap>[ \t]{0,16})")
# A value: quoted (the quote possibly backslash-escaped, as inside a JSON string) up to the same
# quote on that line, at most 4096 characters; else a bare run (an unclosed quote included).
_ASSIGNED_VALUE = re.compile(r"(?P<q>\\?[\"'])(?P<body>.{0,4096}?)(?P=q)|(?:\\?[\"'])?[^\s&,;\"'\\]+")


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


def _mask_assignments(text: str) -> str:
    out: list[str] = []
    done = 0
    for name in _ASSIGNED_NAME.finditer(text):
        if name.start() < done or not is_secret_name(name["name"]):
            continue
        value = _ASSIGNED_VALUE.match(text, name.end())
        if value is None:
            continue
        bare_name = not (name["open"] or name["close"])
        if name["sep"] == ":" and bare_name and not name["gap"] and not value["q"]:
            continue  # "tokenizer.py:12", "auth:basic": a file and line or a label, not a secret
        if value["q"]:  # keeps its quotes, so a JSON or TOML document stays one
            mask = f"{value['q']}{MASK}{value['q']}"
        elif name["open"] and name["open"] == name["close"]:  # a JSON-style name, a bare value
            if value[0][0] in "{[" or value[0] in ("true", "false", "null"):
                continue  # a structure (its strings are masked on their own) or a constant
            mask = f'"{MASK}"'  # a number: still a JSON value after masking
        else:
            mask = MASK
        out += [text[done:name.end()], mask]
        done = value.end()
    out.append(text[done:])
    return "".join(out)


def redact(text: str) -> str:
    """`text` with URL credentials, authorization tokens and secret-named assignments masked.
    Never raises; anything that is not a str is turned into one first."""
    if not isinstance(text, str):
        text = str(text)
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _BARE_USERINFO.sub(f"{MASK}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['name']}{MASK}", text)
    text = _AUTH_SCHEME.sub(lambda m: f"{m['scheme']}{m['sep']}{MASK}", text)
    return _mask_assignments(text)
