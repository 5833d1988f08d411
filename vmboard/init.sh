#!/bin/busybox sh
# /init of the hilrig virtual board (vmboard). It prepares the board
# (filesystems, a gpio-sim chip, the network), runs the tests under
# /hilrig/tests in order and reports over the console with lines
#   HILRIG <nonce> READY chip=/dev/gpiochipN
#   HILRIG <nonce> BEGIN <index> <name>
#   HILRIG <nonce> EXIT <index> <status>
#   HILRIG <nonce> SETUP-FAILED <reason>
#   HILRIG <nonce> DONE
# then powers off. A test marked stdio gets the virtio-serial port hilrig.stdio
# (whose host end is a unix socket) as stdin/stdout: the rack's agent channel. <nonce> comes from the kernel command line (hilrig.nonce)
# so a test's own output cannot forge a marker by accident.
/bin/busybox mkdir -p /proc /sys /dev /tmp /run /bin /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
export PATH=/bin:/sbin:/usr/bin:/usr/sbin HOME=/tmp TMPDIR=/tmp

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t configfs configfs /sys/kernel/config
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm

nonce=none lines=16 ip= hostname=board
for w in $(cat /proc/cmdline); do
	case "$w" in
	hilrig.nonce=*) nonce=${w#hilrig.nonce=} ;;
	hilrig.lines=*) lines=${w#hilrig.lines=} ;;
	hilrig.ip=*) ip=${w#hilrig.ip=} ;;
	hilrig.hostname=*) hostname=${w#hilrig.hostname=} ;;
	esac
done
say() { echo "HILRIG $nonce $*"; }
finish() {
	say DONE
	sync
	poweroff -f
	reboot -f
	sleep 1000000
}
fail() {
	say SETUP-FAILED "$*"
	finish
}
hostname "$hostname"

# The gpio-sim chip: one bank of $lines lines named L0..L<n-1>.
g=/sys/kernel/config/gpio-sim/hilrig
mkdir "$g" "$g/bank0" || fail "cannot create gpio-sim device in configfs (CONFIG_GPIO_SIM, configfs mounted?)"
echo hilrig-board > "$g/bank0/label" || fail "gpio-sim label"
echo "$lines" > "$g/bank0/num_lines" || fail "gpio-sim num_lines $lines"
i=0
while [ "$i" -lt "$lines" ]; do
	mkdir "$g/bank0/line$i" && echo "L$i" > "$g/bank0/line$i/name" || fail "gpio-sim line $i name"
	i=$((i + 1))
done
echo 1 > "$g/live" || fail "gpio-sim live"
chip=/dev/$(cat "$g/bank0/chip_name")
[ -c "$chip" ] || fail "gpio-sim chip $chip has no device node"
export HILRIG_BOARD=1 HILRIG_GPIO_CHIP="$chip"

ip link set lo up
if [ -n "$ip" ]; then
	ip addr add "$ip" dev eth0 || fail "ip addr add $ip dev eth0 (no virtio-net device?)"
	ip link set eth0 up || fail "ip link set eth0 up"
fi

say READY "chip=$chip"
idx=0
for d in /hilrig/tests/*; do
	[ -f "$d/cmd" ] || continue
	name=$(cat "$d/name")
	cmd=$(cat "$d/cmd")
	set --
	if [ -f "$d/args" ]; then
		while IFS= read -r a || [ -n "$a" ]; do set -- "$@" "$a"; done < "$d/args"
	fi
	say BEGIN "$idx" "$name"
	if [ -f "$d/stdio" ]; then
		# The virtio-serial port named hilrig.stdio: a plain byte pipe (not
		# a tty), which allows one open, hence <> and a dup for stdout.
		n=$(grep -l '^hilrig.stdio$' /sys/class/virtio-ports/*/name 2>/dev/null | head -n 1)
		[ -n "$n" ] || fail "no virtio-serial port hilrig.stdio"
		port=/dev/$(basename "$(dirname "$n")")
		(cd /tmp && exec "$cmd" "$@" <>"$port" >&0)
	else
		(cd /tmp && exec "$cmd" "$@")
	fi
	say EXIT "$idx" "$?"
	idx=$((idx + 1))
done
finish
