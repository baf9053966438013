# shellcheck shell=sh
# The setup script's helpers for dnf hosts (rpm's database under $SETUP_ROOT). Sourced text:
# neuronctl pastes it into each script after the variables; shellcheck reads it alone in CI.
installed() {
  if v=$(rpm --root="${SETUP_ROOT:-/}" -q --qf '%{VERSION}' "$1" 2>/dev/null); then printf '%s' "$v"; fi
}
has_version() { [ "$(installed "$1")" = "$2" ]; }
all_held() {
  while [ $# -gt 1 ]; do
    if [ "$2" != - ]; then
      "$DNF" versionlock list 2>/dev/null | grep -q "^$1-\([0-9]*:\)\{0,1\}$2-" || return 1
    fi
    shift 2
  done
}
remove_installed() {
  for p in "$@"; do if [ -n "$(installed "$p")" ]; then "$DNF" remove -y "$p"; fi; done
}
