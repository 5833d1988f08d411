// Package ros2cli implements "hilrig ros2": for now "msg show|encode|
// decode", the ROS 2 message codec (ros2/rosmsg) for a person at a
// terminal. cmd/hilrig only forwards to Run.
package ros2cli

import (
	"bytes"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/ros2/rosmsg"
)

// ErrUsage marks command-line mistakes (exit status 2).
var ErrUsage = cli.ErrUsage

// maxInput bounds what encode and decode read from stdin.
const maxInput = 64 << 20

const usage = `usage:
  hilrig ros2 msg show   [--msg-path DIR ...] [TYPE]
  hilrig ros2 msg encode [--msg-path DIR ...] [--raw] TYPE [JSON|-]
  hilrig ros2 msg decode [--msg-path DIR ...] [--raw] TYPE [HEX|-]

TYPE is pkg/Name or pkg/msg/Name (sensor_msgs/Imu). show without TYPE
lists the known types; with TYPE it prints the DDS type name, the size
when fixed, and the definition with every type it uses.
encode reads the message as JSON (int64/uint64 as strings or numbers,
fields left out take their defaults) and prints the XCDR1 payload,
header included, as hex (--raw: the bytes). decode does the reverse
(--raw: reads bytes from stdin). Without JSON/HEX, or with -, they read
stdin. --msg-path adds every <pkg>/msg/<Name>.msg under DIR to the
shipped definitions (docs/ros2.md).`

// Run executes "hilrig ros2 <sub> …" reading stdin from os.Stdin.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return RunWithInput(ctx, os.Stdin, args, stdout, stderr)
}

// RunWithInput is Run with stdin given. It does not block beyond reading
// stdin.
func RunWithInput(ctx context.Context, stdin io.Reader, args []string, stdout, stderr io.Writer) error {
	msg := cli.Set{Prog: "hilrig ros2 msg", Usage: usage, Commands: []cli.Command{
		{Name: "show", Run: func(_ context.Context, a []string, o, e io.Writer) error { return show(a, o, e) }},
		{Name: "encode", Run: func(_ context.Context, a []string, o, e io.Writer) error { return encode(stdin, a, o, e) }},
		{Name: "decode", Run: func(_ context.Context, a []string, o, e io.Writer) error { return decode(stdin, a, o, e) }},
	}}
	return cli.Set{Prog: "hilrig ros2", Usage: usage, Commands: []cli.Command{
		{Name: "msg", Run: msg.Run},
	}}.Run(ctx, args, stdout, stderr)
}

type pathList []string

func (p *pathList) String() string     { return strings.Join(*p, ",") }
func (p *pathList) Set(s string) error { *p = append(*p, s); return nil }

type opts struct {
	reg  *rosmsg.Registry
	raw  bool
	args []string
}

func parse(name string, args []string, stderr io.Writer, withRaw bool) (*opts, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), usage) }
	var paths pathList
	fs.Var(&paths, "msg-path", "directory of <pkg>/msg/<Name>.msg files (repeatable)")
	o := &opts{}
	if withRaw {
		fs.BoolVar(&o.raw, "raw", false, "binary payload instead of hex")
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	o.args = fs.Args()
	reg, err := rosmsg.Shipped()
	if err != nil {
		return nil, err
	}
	for _, dir := range paths {
		if err := addDir(reg, dir); err != nil {
			return nil, err
		}
	}
	o.reg = reg
	return o, nil
}

// addDir adds every .msg file under dir.
func addDir(reg *rosmsg.Registry, dir string) error {
	n := 0
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() || filepath.Ext(p) != ".msg" {
			return err
		}
		n++
		return reg.AddFile(p)
	})
	if err != nil {
		return fmt.Errorf("--msg-path %s: %w", dir, err)
	}
	if n == 0 {
		return fmt.Errorf("--msg-path %s: no .msg files", dir)
	}
	return nil
}

func show(args []string, stdout, stderr io.Writer) error {
	o, err := parse("show", args, stderr, false)
	if err != nil {
		return err
	}
	switch len(o.args) {
	case 0:
		for _, n := range o.reg.Names() {
			fmt.Fprintln(stdout, n)
		}
		return nil
	case 1:
	default:
		return fmt.Errorf("%w: show takes one TYPE, got %d arguments", ErrUsage, len(o.args))
	}
	c, err := o.reg.Codec(o.args[0])
	if err != nil {
		return err
	}
	text, err := o.reg.FullText(c.Name())
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "# %s (DDS type %s)\n", c.Name(), rosmsg.DDSTypeName(c.Name()))
	if n, ok := c.FixedSize(); ok {
		fmt.Fprintf(stdout, "# fixed size: %d bytes with the header\n", n)
	} else {
		fmt.Fprintln(stdout, "# variable size (strings or sequences)")
	}
	_, err = io.WriteString(stdout, text)
	return err
}

// input is the one positional argument after TYPE, or stdin.
func input(stdin io.Reader, o *opts, what string) ([]byte, error) {
	switch {
	case len(o.args) == 0:
		return nil, fmt.Errorf("%w: missing TYPE", ErrUsage)
	case len(o.args) > 2:
		return nil, fmt.Errorf("%w: want TYPE [%s|-], got %d arguments", ErrUsage, what, len(o.args))
	case len(o.args) == 2 && o.args[1] != "-":
		return []byte(o.args[1]), nil
	}
	b, err := io.ReadAll(io.LimitReader(stdin, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("reading stdin: %w", err)
	}
	if len(b) > maxInput {
		return nil, fmt.Errorf("stdin holds more than %d bytes", maxInput)
	}
	return b, nil
}

// codecInput parses cmd's flags (with --raw), reads its input (what names
// the input in usage errors: JSON or HEX) and looks up the codec of TYPE.
func codecInput(cmd string, stdin io.Reader, args []string, stderr io.Writer, what string) (*opts, *rosmsg.Codec, []byte, error) {
	o, err := parse(cmd, args, stderr, true)
	if err != nil {
		return nil, nil, nil, err
	}
	in, err := input(stdin, o, what)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := o.reg.Codec(o.args[0])
	if err != nil {
		return nil, nil, nil, err
	}
	return o, c, in, nil
}

func encode(stdin io.Reader, args []string, stdout, stderr io.Writer) error {
	o, c, in, err := codecInput("encode", stdin, args, stderr, "JSON")
	if err != nil {
		return err
	}
	m, err := c.FromJSON(in)
	if err != nil {
		return err
	}
	b, err := c.Append(nil, m)
	if err != nil {
		return err
	}
	if o.raw {
		_, err = stdout.Write(b)
		return err
	}
	_, err = fmt.Fprintln(stdout, hex.EncodeToString(b))
	return err
}

func decode(stdin io.Reader, args []string, stdout, stderr io.Writer) error {
	o, c, in, err := codecInput("decode", stdin, args, stderr, "HEX")
	if err != nil {
		return err
	}
	b := in
	if !o.raw {
		// Hex as printed by encode, tcpdump -X or Wireshark: spaces,
		// newlines and colons between the digits are allowed.
		clean := bytes.Map(func(r rune) rune {
			if r == ' ' || r == '\n' || r == '\r' || r == '\t' || r == ':' {
				return -1
			}
			return r
		}, in)
		if b, err = hex.DecodeString(string(clean)); err != nil {
			return fmt.Errorf("%w: payload is not hex (--raw for bytes): %w", ErrUsage, err)
		}
	}
	m, err := c.Decode(b)
	if err != nil {
		return err
	}
	j, err := c.ToJSON(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", j)
	return err
}
