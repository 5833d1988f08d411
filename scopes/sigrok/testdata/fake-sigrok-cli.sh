#!/bin/sh
# A stand-in for sigrok-cli in the conformance test: `--version` prints a
# version; a capture waits (polling, at most 0.5 s) for $FAKE_SIGROK_DIR/ready,
# then prints $FAKE_SIGROK_DIR/capture.vcd, or an empty capture on timeout.
case "$1" in
--version) echo "sigrok-cli 0.7.2 (conformance fake)"; exit 0 ;;
esac
i=0
while [ $i -lt 50 ] && [ ! -f "$FAKE_SIGROK_DIR/ready" ]; do sleep 0.01; i=$((i + 1)); done
if [ -f "$FAKE_SIGROK_DIR/ready" ]; then
	cat "$FAKE_SIGROK_DIR/capture.vcd"
	rm -f "$FAKE_SIGROK_DIR/ready"
else
	printf '$timescale 1 ns $end\n$var wire 1 ! D0 $end\n$var wire 1 " D1 $end\n$enddefinitions $end\n'
fi
