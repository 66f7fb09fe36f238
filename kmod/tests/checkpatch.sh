#!/bin/sh
# Runs the kernel's scripts/checkpatch.pl over the module, its uapi header and
# the C test; fails on any error or warning. checkpatch.pl ships only with the
# kernel source: Debian's linux-source-X.Y package holds it in a tarball, which
# is downloaded (not installed), and the three files checkpatch reads are
# extracted once into $WORK.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/mwait-checkpatch}
mkdir -p "$work"
work=$(cd "$work" && pwd)	# the script changes directory below
cd "$work"
src=$(apt-cache depends linux-source |
	sed -n 's/.*Depends: \(linux-source-[0-9.]*\)$/\1/p' | head -n 1)
[ -n "$src" ] || { echo "no linux-source package known to apt"; exit 1; }
if [ ! -f "$src/scripts/checkpatch.pl" ]; then
	rm -f ./*.deb
	apt-get download "$src"
	dpkg-deb --fsys-tarfile "$src"_*.deb | tar -xO "./usr/src/$src.tar.xz" |
		tar -xJ "$src/scripts/checkpatch.pl" "$src/scripts/spelling.txt" \
			"$src/scripts/const_structs.checkpatch"
	rm -f ./*.deb
fi
cd "$here"
# The C test is user space, but it follows kernel style too (it defines the
# one kernel macro it needs, ARRAY_SIZE, itself).
perl "$work/$src/scripts/checkpatch.pl" --no-tree --terse --show-types -f \
	mwait.c include/uapi/linux/mwait.h tests/mwait_test.c
echo "checkpatch: clean"
