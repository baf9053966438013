"""One redaction for everything neuronctl shows: messages, hints, reports, the env dump.

Text only, regular expressions only: redaction must never raise, whatever it is given (a URL
with a non-numeric port or a broken IPv6 host makes `urllib.parse` raise; these do not).
Redacting too much is a lesser harm than printing a secret, so the patterns err wide.
"""

from __future__ import annotations

import functools
import itertools
import re

MASK = "***"

_ATOMIC = itertools.count()


def _run(body: str) -> str:
    """`body`, matched once and never given back: what a possessive quantifier or an atomic group
    says, which Python's re has only from 3.11 on. A lookahead is atomic in every version: it
    captures the run, and a backreference consumes exactly that (each use its own group name)."""
    name = f"_atomic{next(_ATOMIC)}"
    return f"(?=(?P<{name}>{body}))(?P={name})"


# Every pattern may start only where a run of its leading characters starts (the lookbehinds):
# a pattern that could start anywhere inside a long word rescans the word from every position,
# quadratic time on untrusted text (a 10,000-character token took 36 s).
# scheme://USERINFO@ : userinfo is everything up to the last '@' before the authority ends ('/',
# '?', '#' or whitespace), so a password holding an unescaped '@' is still covered whole. The
# "scheme" is the whole run before '://', so "0http://u:p@" is covered too.
# A URL that went through a path ("https:/u:p@h": pathlib folds '//') is covered the same way.
_URL_USERINFO = re.compile(r"(?<![A-Za-z0-9+.\-])(?P<scheme>[A-Za-z0-9+.\-]+:/{1,2})[^/?#\s]*@")
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
# "tokenizer", "tokenize", "TOKENIZERS_PARALLELISM": about text tokens, not credentials.
_NOT_SECRET = re.compile(r"(?i)tokeniz")


# name=value where the name says it holds a secret: "?token=abc", "--password=x", "API_KEY=y", and
# the config and JSON forms: 'token = "abc"', '"password": "x"', '{"HF_TOKEN": "hf_abc"}'. A name
# is a whole run of name characters, optionally quoted, then '=' or ':' with optional spaces; the
# value is masked when is_secret_name says so, and a value is never read as a name, but
# "A=token=x" still finds "token=x". The name run is matched once and never given back (_run) and
# the spaces and quoted values bounded, so each start costs at most its own run: linear overall.
_ASSIGNED_NAME = re.compile(r"(?<![\w.\-])(?P<open>[\"']?)(?P<name>" + _run(r"[\w.\-]+") + ")"
                            r"(?P<close>[\"']?)[ \t]{0,16}(?P<sep>[=:])(?P<gap>[ \t]{0,16})")
# A value: quoted (the quote possibly backslash-escaped, as inside a JSON string) up to the same
# quote on that line, at most 4096 characters; else a bare run (an unclosed quote included).
_ASSIGNED_VALUE = re.compile(r"(?P<q>\\?[\"'])(?P<body>.{0,4096}?)(?P=q)|(?:\\?[\"'])?[^\s&,;\"'\\]+")


def is_secret_name(name: str) -> bool:
    """True when a variable, option or field name says its value is a secret: TOKEN, SECRET,
    PASSWORD, PASSWD, PASSPHRASE, KEY (and *_KEY, *_APIKEY, *KEY), AUTH*, CREDENTIAL, COOKIE,
    SESSION, SIGNATURE, PRIVATE."""
    lowered = _NOT_SECRET.sub("", name.lower())
    if any(word in lowered for word in _SECRET_SUBSTRINGS):
        return True
    singular = lowered.removesuffix("s")
    if singular.endswith(tuple(_SECRET_PARTS)):  # "XSESSIONS", "deploykey": glued to a prefix
        return True
    parts = [p.lower().removesuffix("s") for p in _NAME_PARTS.findall(_NOT_SECRET.sub(" ", name))]
    return any(p in _SECRET_PARTS or p.endswith("key") for p in parts)


# What a path's last part follows: "/etc/", "./", "~/", "~/x/", "../a/b/", from a word's start.
_PATH_BEFORE = re.compile(r"(?<![^\s'\"(=:])(?:(?:~|\.\.?)?(?:/[^\s/'\"]+)+|~|\.\.?)/\Z")


def _names_a_secret(text: str, name: re.Match[str]) -> bool:
    """Whether an assignment's name says its value is a secret, judged by the text's structure:
    a dotted name by its last part ("tool.index.token" is a key, "tokenizer_test.py" and
    "password.txt" are files), and a colon after a path ("/etc/passwd: not executable") or
    after an option ("Invalid value for '--tokens': '2e9'") is a message about that file or
    option, never a key and its value."""
    word = name["name"]
    if not is_secret_name(word.rsplit(".", 1)[-1] if "." in word.strip(".") else word):
        return False
    if name["sep"] == ":":
        # click quotes the option it names ("Invalid value for '--tokens': '2e9'"): a quoted
        # option outside a mapping is a message; a bare "--token: x" is a value, masked
        if word.startswith("--") and name["open"] and not text[
                max(0, name.start() - 16):name.start()].rstrip().endswith(("{", ",")):
            return False  # an option named in a message, not a mapping's key ({'--token': 'x'})
        if not (name["open"] or name["close"]) and _PATH_BEFORE.search(
                text, max(0, name.start() - 256), name.start()):
            return False
    return True


def _mask_assignments(text: str) -> str:
    out: list[str] = []
    done = 0
    for name in _ASSIGNED_NAME.finditer(text):
        if name.start() < done or not _names_a_secret(text, name):
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


# netrc's fields (`machine H login U password P account A`, one line or one pair a line): the
# values of login, password and account are masked. An entry is found where `machine NAME` or
# `default` starts one (in a message quoting a netrc line too); a line made only of netrc pairs
# is one on its own ("  password hunter2"). Runs that never give back (_run) keep both linear.
_NETRC_KEY = r"(?:machine|login|password|account|port)"
_QUOTED = r'(?:[^"\\\n]|\\.)*'
"""Inside a double-quoted value (netrc allows spaces and escapes in one)."""
def _gap() -> str:
    return _run(r"[ \t]+")


def _value() -> str:
    """A value: a double-quoted token or a run of non-space."""
    quoted, bare = _run(_QUOTED), _run(r"\S+")
    return f'(?:"{quoted}"|{bare})'


def _pair() -> str:
    return f"{_NETRC_KEY}{_gap()}{_value()}"


def netrc_sources() -> tuple[str, str, str]:
    """The netrc patterns' sources (entry, line, secret), flags inline; public for the test that
    compiles every pattern of the package on the oldest Python it supports."""
    entry = (r"(?i)(?<![\w.\-])" + f"(?:machine{_gap()}{_value()}|default)"
             + _run(f"(?:{_gap()}{_pair()})+"))
    indent = r"[ \t]*"
    line = ("(?im)^" + _run(indent) + f"(?:{_pair()}|default)"
            + _run(f"(?:{_gap()}(?:{_pair()}|default))*") + _run(indent) + "$")
    secret = r"(?i)(?<!\S)(?P<key>login|password|account)" + f"(?P<gap>{_gap()})" + _value()
    return entry, line, secret


@functools.cache
def _netrc_patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(entry, line, secret): compiled the first time a text holds a netrc word, not at import
    (about 1 ms of every run, whose lines almost never do: issue 36)."""
    entry, line, secret = netrc_sources()
    return re.compile(entry), re.compile(line), re.compile(secret)


def _mask_netrc(text: str) -> str:
    lowered = text.lower()
    if not any(word in lowered for word in ("login", "password", "account")):
        return text  # the common case: nothing netrc-like, no regular expression run
    entry, line, secret = _netrc_patterns()

    def fields(found: re.Match[str]) -> str:
        return secret.sub(lambda m: f"{m['key']}{m['gap']}{MASK}", found[0])

    return line.sub(fields, entry.sub(fields, text))


def redact(text: str) -> str:
    """`text` with URL credentials, authorization tokens, netrc fields and secret-named
    assignments masked.
    Never raises; anything that is not a str is turned into one first."""
    if not isinstance(text, str):
        text = str(text)
    text = _URL_USERINFO.sub(lambda m: f"{m['scheme']}{MASK}@", text)
    text = _BARE_USERINFO.sub(f"{MASK}@", text)
    text = _AUTH_HEADER.sub(lambda m: f"{m['name']}{MASK}", text)
    text = _AUTH_SCHEME.sub(lambda m: f"{m['scheme']}{m['sep']}{MASK}", text)
    return _mask_assignments(_mask_netrc(text))
