# Sourced, not run:  . scripts/use-debs.sh DIR [PREFIX]
# Unpacks the .deb files of DIR (see scripts/fetch-debs.sh) under PREFIX
# (default /tmp/xflow-debs; never /) and points the build at them: PATH
# (after the machine's own tools), LD_LIBRARY_PATH, PKG_CONFIG_PATH (with
# the .pc files' prefix rewritten to PREFIX) and CMAKE_PREFIX_PATH.
# Returns non-zero, saying why, when DIR holds no .deb or one cannot be
# unpacked.
xf_use_debs() {
  local dir=$1 prefix=${2:-/tmp/xflow-debs} f n=0 tmp
  case "$prefix" in /|"") echo "use-debs: refusing to unpack into '$prefix'" >&2; return 1 ;; esac
  mkdir -p "$prefix" || return 1
  for f in "$dir"/*.deb; do
    [ -e "$f" ] || break
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$f" "$prefix" || { echo "use-debs: cannot unpack $f" >&2; return 1; }
    else
      # no dpkg: a .deb is an ar archive holding data.tar.*
      tmp=$(mktemp -d) || return 1
      f=$(cd "$(dirname "$f")" && pwd)/$(basename "$f")
      (cd "$tmp" && ar x "$f") && tar -xf "$tmp"/data.tar.* -C "$prefix" ||
        { echo "use-debs: cannot unpack $f (no dpkg-deb; ar and tar failed)" >&2; rm -rf "$tmp"; return 1; }
      rm -rf "$tmp"
    fi
    n=$((n + 1))
  done
  [ "$n" -gt 0 ] || { echo "use-debs: no .deb files in $dir (make them with scripts/fetch-debs.sh)" >&2; return 1; }
  local lib="$prefix/usr/lib/x86_64-linux-gnu" pc
  for pc in "$lib"/pkgconfig/*.pc "$prefix"/usr/share/pkgconfig/*.pc; do
    [ -e "$pc" ] && sed -i "s|^prefix=/usr\$|prefix=$prefix/usr|; s|^exec_prefix=/usr\$|exec_prefix=$prefix/usr|" "$pc"
  done
  export PATH="$PATH:$prefix/usr/bin"
  export LD_LIBRARY_PATH="$lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PKG_CONFIG_PATH="$lib/pkgconfig:$prefix/usr/share/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
  export CMAKE_PREFIX_PATH="$prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  echo "use-debs: $n packages from $dir unpacked under $prefix"
}
xf_use_debs "$@"
