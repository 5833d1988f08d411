// Package vmcli is the "hilrig vm" command line: build the virtual board
// image and boot it with a test binary. The board itself is package
// vmboard.
package vmcli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/vmboard"
)

// ErrUsage marks command-line mistakes (exit status 2): the binary's one
// usage error, cli.ErrUsage.
var ErrUsage = cli.ErrUsage

const usage = `usage:
  hilrig vm build [-arch amd64|arm64] [-kernel-source TARBALL] [-cache DIR] [-j N] [-cached-only] [-v]
      build (or find in the cache) the board kernel and initramfs; print
      their paths and the accelerator a run would use; -cached-only fails
      instead of building a kernel the cache lacks
  hilrig vm run [-arch amd64|arm64] [-test BIN] [-timeout D] [-net GROUP -ip CIDR] [-v] [-- ARGS...]
      boot a board (building the image first if needed) and run BIN (a static
      binary, e.g. CGO_ENABLED=0 GOARCH=arm64 go test -c) with ARGS inside
      it; without -test, print the board's GPIO chip and PTP clock
  -arch arm64 builds the kernel with gcc-aarch64-linux-gnu and boots it with
  qemu-system-aarch64 (virt machine, Cortex-A53, TCG)`

// Run runs "hilrig vm" with args (without the "vm"). Blocks until the build
// or the board run ends; the console goes to stdout.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Set{Prog: "hilrig vm", Usage: usage, Commands: []cli.Command{
		{Name: "build", Run: build},
		{Name: "run", Run: run},
	}}.Run(ctx, args, stdout, stderr)
}

func buildFlags(name string, stderr io.Writer) (*flag.FlagSet, *vmboard.BuildOptions, *bool) {
	fs := flag.NewFlagSet("hilrig vm "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := &vmboard.BuildOptions{}
	fs.Func("arch", "board CPU architecture: amd64 (default) or arm64", func(v string) error {
		o.Arch = vmboard.Arch(v)
		return vmboard.ValidArch(o.Arch)
	})
	fs.StringVar(&o.KernelSource, "kernel-source", vmboard.DefaultKernelSource, "kernel source tarball (Debian linux-source-6.1)")
	fs.StringVar(&o.CacheDir, "cache", "", "cache directory (default: user cache dir/hilrig/vm)")
	fs.IntVar(&o.Jobs, "j", 0, "make -j for the kernel build (default: number of CPUs)")
	v := fs.Bool("v", false, "show the kernel build output and progress")
	if name == "build" {
		fs.BoolVar(&o.CachedOnly, "cached-only", false, "fail (exit 1) instead of building a kernel that is not in the cache")
	}
	return fs, o, v
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return fmt.Errorf("%w: %s", ErrUsage, fs.Name())
		}
		return fmt.Errorf("%w: %v", ErrUsage, err)
	}
	return nil
}

func buildImage(ctx context.Context, o *vmboard.BuildOptions, verbose bool, stderr io.Writer) (*vmboard.Image, error) {
	if verbose {
		o.Log = stderr
		o.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	return vmboard.Build(ctx, *o)
}

func build(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, o, v := buildFlags("build", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", ErrUsage, fs.Args())
	}
	img, err := buildImage(ctx, o, *v, stderr)
	if err != nil {
		return err
	}
	state := "hit (no kernel build)"
	if !img.Cached {
		state = "built; log " + img.BuildLog
	}
	fmt.Fprintf(stdout, "arch       %s\nkernel     %s\nconfig     %s\ninitramfs  %s\nhash       %s\ncache      %s, %v\naccel      %s\n",
		img.Arch, img.Vmlinux, img.Config, img.Initramfs, img.Hash, state, img.Elapsed.Round(time.Millisecond), vmboard.DetectAccelFor(img.Arch))
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, o, v := buildFlags("run", stderr)
	test := fs.String("test", "", "static test binary to run inside the board")
	timeout := fs.Duration("timeout", 5*time.Minute, "fail the run after this long")
	group := fs.String("net", "", "join a virtio-net segment on this loopback multicast group (e.g. 230.0.0.1:1234)")
	ip := fs.String("ip", "", "the board's eth0 address with -net (e.g. 10.233.9.1/24)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if (*group == "") != (*ip == "") {
		return fmt.Errorf("%w: -net and -ip go together", ErrUsage)
	}
	img, err := buildImage(ctx, o, *v, stderr)
	if err != nil {
		return err
	}
	t := vmboard.Test{Binary: *test, Args: fs.Args()}
	if *test == "" {
		if fs.NArg() > 0 {
			return fmt.Errorf("%w: arguments %q need -test", ErrUsage, fs.Args())
		}
		t = vmboard.Test{Name: "board-info", Command: "/bin/sh", Args: []string{"-c",
			"uname -a; ls -l /dev/gpiochip* /dev/ptp*; for c in /sys/class/ptp/ptp*; do echo $c $(cat $c/clock_name); done; cat /sys/devices/system/clocksource/clocksource0/current_clocksource"}}
	}
	ro := vmboard.RunOptions{Tests: []vmboard.Test{t}, Console: stdout, Timeout: *timeout}
	if *group != "" {
		ro.Net = &vmboard.NetOptions{Group: *group, IP: *ip}
	}
	if *v {
		ro.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	res, err := vmboard.Run(ctx, img, ro)
	if res != nil {
		var st []string
		for _, tr := range res.Tests {
			st = append(st, fmt.Sprintf("%s=%d", tr.Name, tr.Status))
		}
		fmt.Fprintf(stderr, "board: accel %s; boot %v; total %v; exit %s\n", res.Accel, res.Boot.Round(time.Millisecond), res.Total.Round(time.Millisecond), strings.Join(st, " "))
	}
	return err
}
