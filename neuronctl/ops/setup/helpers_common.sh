# shellcheck shell=sh disable=SC2034
# The setup script's helpers for every host; KEY_AWK is replaced by neuronctl with
# ops/setup/repos.py's key listing (one awk program for this script and the Dockerfile).
all_versions() {
  while [ $# -gt 1 ]; do
    if [ "$2" = - ]; then [ -n "$(installed "$1")" ] || return 1
    else has_version "$1" "$2" || return 1; fi
    shift 2
  done
}
none_installed() { for p in "$@"; do [ -z "$(installed "$p")" ] || return 1; done; }
key_fprs() {
  gpg --batch --no-autostart --with-colons --show-keys "$1" 2>/dev/null \
    | awk -F: '{KEY_AWK}'
}
key_ok() { [ -s "$KEYRING" ] && [ "$(key_fprs "$KEYRING")" = "$NEURON_KEY_FPR" ]; }
headers_present() {
  [ -e "$SETUP_ROOT/lib/modules/$KERNEL/build" ] || [ -d "$SETUP_ROOT/usr/src/linux-headers-$KERNEL" ] \
    || [ -d "$SETUP_ROOT/usr/src/kernels/$KERNEL" ]
}
neuron_holders() {
  for fd in "$SETUP_ROOT"/proc/[0-9]*/fd/*; do
    t=$(readlink "$fd" 2>/dev/null) || continue
    case "$t" in /dev/neuron*) p=${fd#"$SETUP_ROOT"/proc/}; echo "${p%%/*}" ;; esac
  done | sort -u
}
loaded_driver() { cat "$SETUP_ROOT/sys/module/neuron/version" 2>/dev/null || true; }
