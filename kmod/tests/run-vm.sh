#!/bin/sh
# Builds the module and the C test, boots them in a QEMU TCG guest with the
# Debian cloud kernel matching the installed headers, and checks the log.
# Needs: qemu-system-x86 busybox-static cpio linux-headers-cloud-amd64 gcc.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/tmp/mwait-vm}
KVER=$(dpkg-query -W -f='${Depends}' linux-headers-cloud-amd64 |
	sed -E 's/^linux-headers-([^ ,]+).*/\1/')
mkdir -p "$work/root/bin" "$work/root/proc" "$work/root/sys" "$work/root/dev"
cd "$work"
[ -f "kimg/boot/vmlinuz-$KVER" ] || { rm -rf kimg; apt-get download "linux-image-$KVER" &&
	dpkg-deb -x linux-image-"${KVER}"_*.deb kimg; }
rm -rf kb && cp -r "$here" kb
make -s -C "/usr/src/linux-headers-$KVER" M="$work/kb" W=1 modules
cp kb/mwait.ko root/
sh "$here/tests/objdump-check.sh" kb/mwait.ko > objdump.log
gcc -O2 -Wall -Wextra -static -pthread -o root/mwait_test \
	"$here/tests/mwait_test.c"
# A 32-bit caller (through compat_ptr_ioctl); needs gcc-multilib.
gcc -m32 -O2 -Wall -Wextra -static -pthread -o root/mwait_test32 \
	"$here/tests/mwait_test.c"
(cd "$here/.." && RUSTFLAGS='-C target-feature=+crt-static' cargo build -q \
	--release -p mwait-vm-guest --features counters --target x86_64-unknown-linux-gnu \
	--target-dir target/vm-guest)
cp "$here/../target/vm-guest/x86_64-unknown-linux-gnu/release/mwait-vm-guest" \
	root/mwait_guest
cp /bin/busybox root/bin/ && ln -sf busybox root/bin/sh
for c in mount insmod rmmod dmesg grep cat poweroff; do
	ln -sf busybox root/bin/$c
done
cp "$here/tests/init" root/init && chmod +x root/init
(cd root && find . | cpio -o -H newc 2>/dev/null | gzip) > initramfs.gz
# What the kernel prints when something went wrong (the serial log and dmesg).
KERNEL_COMPLAINTS='WARNING:|BUG:|Oops|soft lockup|self-detected stall|rcu: INFO|blocked for more than|still pinned'
# boot NAME CPU [INIT-ENV]: one guest run; its serial log is serial-NAME.log.
# A word "k=v" on the kernel command line that the kernel does not know
# reaches init as an environment variable.
boot() {
	timeout 240 qemu-system-x86_64 -nographic -no-reboot -smp 2 -m 512 \
		-accel tcg -cpu "$2" -kernel "kimg/boot/vmlinuz-$KVER" \
		-initrd initramfs.gz \
		-append "console=ttyS0 panic=-1 quiet ${3:-}" \
		> "serial-$1.log" 2>&1 || true
}
# The whole suite on a CPU with MONITOR/MWAIT, then the refusals on one
# without it (CPUID.1:ECX[3] cleared): the module must load and say so.
# The whole suite again under full preemption, where the interrupt that ends
# MWAIT can preempt the waiter before it looks at need_resched().  Then
# idle=nomwait, which the module must honour like a CPU without MWAIT.
boot mwait max
boot preempt max preempt=full
boot nomwait max,-monitor mwait_mode=nomwait
boot idlenomwait max "idle=nomwait mwait_mode=idle_nomwait"
pass=0
fail=0
echo "# host: module code"
cat objdump.log
pass=$((pass + $(grep -c '^ok' objdump.log || true)))
fail=$((fail + $(grep -c '^not ok' objdump.log || true)))
for run in mwait preempt nomwait idlenomwait; do
	log=serial-$run.log
	echo "# guest: $run"
	grep -E '^(ok|not ok|#)' "$log" | tr -d '\r'
	pass=$((pass + $(grep -c '^ok' "$log" || true)))
	fail=$((fail + $(grep -c '^not ok' "$log" || true)))
	# Any kernel complaint on the console fails the run.
	if grep -E "$KERNEL_COMPLAINTS" "$log"; then
		echo "not ok the $run guest's serial log has a kernel complaint"
		fail=$((fail + 1))
	else
		echo "ok the $run guest's serial log is clean"
		pass=$((pass + 1))
	fi
	# The last step of init; without it the guest died or hung part-way.
	if ! grep -q '^ok dmesg clean' "$log"; then
		echo "not ok the $run guest did not reach its last step (see $work/$log)"
		fail=$((fail + 1))
	fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
