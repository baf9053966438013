# shellcheck shell=sh
# The setup script's helpers for apt hosts (dpkg's database under $SETUP_ROOT). Sourced text:
# neuronctl pastes it into each script after the variables; shellcheck reads it alone in CI.
installed() {
  # shellcheck disable=SC2016
  dpkg-query --root="${SETUP_ROOT:-/}" -W -f='${db:Status-Status} ${Version}\n' "$1" 2>/dev/null \
    | sed -n 's/^installed //p'
}
has_version() { v=$(installed "$1"); [ -n "$v" ] && [ "${v%%-*}" = "$2" ]; }
is_held() {
  # shellcheck disable=SC2016
  [ "$(dpkg-query --root="${SETUP_ROOT:-/}" -W -f='${db:Status-Want}' "$1" 2>/dev/null)" = hold ]
}
all_held() { for p in "$@"; do is_held "$p" || return 1; done; }
remove_installed() {
  for p in "$@"; do if [ -n "$(installed "$p")" ]; then "$APT_GET" remove -y "$p"; fi; done
}
refresh() { "$APT_GET" update; }
