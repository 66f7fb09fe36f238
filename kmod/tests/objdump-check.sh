#!/bin/sh
# Checks the built module's code: every MWAIT must follow a VERW (the CPU
# buffer clear that the kernel's idle path runs before MWAIT) in the same
# function, with no other MWAIT between them.  Prints one ok/not ok line.
set -eu
ko=$1
objdump -d --no-show-raw-insn "$ko" | awk '
	/^[0-9a-f]+ <.*>:$/ { verw = 0; fn = $2; next }
	$2 ~ /^verw/ { verw = 1; next }
	$2 ~ /^mwait/ {
		n++
		if (!verw) { bad++; print "# objdump: mwait without verw in " fn }
		verw = 0
	}
	END {
		if (n > 0 && !bad)
			printf "ok objdump: a verw before each of %d mwait\n", n
		else
			printf "not ok objdump: %d mwait, %d without verw\n", n, bad
	}'
