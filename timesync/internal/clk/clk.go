// Package clk reads kernel clocks with clock_gettime(2). It is the only
// place in timesync that makes the raw syscall.
package clk
