# Sourced by the scripts that fetch from Debian (sid-chroot.sh, sid-nvrtc.sh): the mirror this
# machine's apt uses, so that a machine that reaches only its own Debian mirror (CI) is served.
#
# apt_mirror: the first http(s) URI of a Debian archive (".../debian", not -security) in
# /etc/apt/sources.list or sources.list.d, one-line or deb822; else deb.debian.org.
apt_mirror() {
  local f uri
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [[ -r "$f" ]] || continue
    uri=$(sed -n -E \
      -e 's/^[[:space:]]*deb[[:space:]]+(\[[^]]*\][[:space:]]+)?(https?:\/\/[^[:space:]]+\/debian)\/?[[:space:]].*/\2/p' \
      -e 's/^[[:space:]]*URIs:[[:space:]]*(https?:\/\/[^[:space:]]+\/debian)\/?([[:space:]].*)?$/\1/p' \
      "$f" | head -1)
    if [[ -n "$uri" ]]; then echo "$uri"; return; fi
  done
  echo "http://deb.debian.org/debian"
}
