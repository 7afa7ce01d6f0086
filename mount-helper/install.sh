#!/bin/sh
# Installs podfs so that `podfs`, `man podfs`, `mount -t fuse.podfs` and
# fstab lines work: the binary in PREFIX/bin, the man page in
# PREFIX/share/man/man1, and (only where the fuse3 package did not provide
# /sbin/mount.fuse) a mount.fuse.podfs link to mount.fuse3.
#
#   mount-helper/install.sh [--prefix DIR] [--destdir DIR] [--binary PATH] [--uninstall]
#
# PREFIX (default /usr/local) and DESTDIR (default empty: the real root)
# may also come from the environment. --binary defaults to
# .build/release/podfs (build it with `swift build -c release`).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
prefix=${PREFIX:-/usr/local}
destdir=${DESTDIR:-}
binary=""
uninstall=no
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#*=}; shift ;;
    --destdir) destdir=$2; shift 2 ;;
    --destdir=*) destdir=${1#*=}; shift ;;
    --binary) binary=$2; shift 2 ;;
    --binary=*) binary=${1#*=}; shift ;;
    --uninstall) uninstall=yes; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
case "$prefix" in /*) ;; *) echo "install.sh: --prefix must be an absolute path, not '$prefix'" >&2; exit 2 ;; esac
bin_dir="$destdir$prefix/bin"
man_dir="$destdir$prefix/share/man/man1"
helper_link="$destdir/usr/sbin/mount.fuse.podfs"

if [ "$uninstall" = yes ]; then
  rm -f "$bin_dir/podfs" "$man_dir/podfs.1"
  [ -L "$helper_link" ] && rm -f "$helper_link"
  echo "install.sh: removed podfs from $destdir$prefix"
  exit 0
fi

[ -n "$binary" ] || binary="$root/.build/release/podfs"
if [ ! -x "$binary" ]; then
  echo "install.sh: no podfs binary at $binary; build it first (swift build -c release) or pass --binary PATH" >&2
  exit 1
fi
install -d "$bin_dir" "$man_dir"
install -m 0755 "$binary" "$bin_dir/podfs"
install -m 0644 "$here/podfs.1" "$man_dir/podfs.1"
echo "install.sh: installed $bin_dir/podfs and $man_dir/podfs.1"

# mount(8) runs /sbin/mount.fuse.podfs, else /sbin/mount.fuse (from fuse3),
# which runs `podfs SOURCE MOUNTPOINT -o OPTIONS`.
if ! command -v fusermount3 >/dev/null 2>&1 && [ ! -x /usr/bin/fusermount3 ]; then
  echo "install.sh: warning: fuse3 is not installed (sudo apt-get install fuse3); podfs cannot mount without it" >&2
elif [ ! -e /sbin/mount.fuse ] && [ ! -e /usr/sbin/mount.fuse ] && [ -x /sbin/mount.fuse3 ]; then
  install -d "$(dirname "$helper_link")"
  ln -sf /sbin/mount.fuse3 "$helper_link"
  echo "install.sh: linked $helper_link -> /sbin/mount.fuse3"
fi

# mount(8) looks for the program on a fixed PATH; say so when it is elsewhere.
case "$prefix/bin" in
  /usr/local/sbin|/usr/local/bin|/usr/sbin|/usr/bin|/sbin|/bin) ;;
  *) echo "install.sh: note: mount -t fuse.podfs and fstab find podfs only in /usr/local/bin, /usr/bin and" \
          "the sbin directories; from $prefix/bin use 'podfs mount' (or the systemd user unit in the README)" >&2 ;;
esac
