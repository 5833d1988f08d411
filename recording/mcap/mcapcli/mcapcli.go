// Package mcapcli implements "hilrig mcap info|cat|recover": MCAP
// recordings (recording/mcap) for a person at a terminal. ROS 2 payloads
// (schema encoding ros2msg, message encoding cdr) are decoded to JSON
// with ros2/rosmsg. cmd/hilrig only forwards to Run.
package mcapcli

import (
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hilrig/hilrig/internal/bytesize"
	"github.com/hilrig/hilrig/internal/cli"
	"github.com/hilrig/hilrig/recording/mcap"
	"github.com/hilrig/hilrig/recording/mcap/ros2mcap"
	"github.com/hilrig/hilrig/ros2/rosmsg"
)

const usage = `usage:
  hilrig mcap info [--check] FILE
  hilrig mcap cat [--topic TOPIC ...] [--limit N] [--hex] [--max-array N] FILE
  hilrig mcap recover IN OUT
  hilrig mcap sample [--duration D] [--seed N] [--compression none|zstd|lz4] OUT

info prints the header, the message count and time range, the chunks by
compression, the channels with their message counts and the schemas,
from the summary (a file without one is read whole). --check also reads
every record and checks every CRC.
cat prints one line per message in file order: log time (ns), topic,
sequence, and the payload: ROS 2 CDR (schema ros2msg) as JSON (arrays
cut to their first --max-array elements, default 16, 0: whole), JSON as
is, anything else (or with --hex) as hex, the first 64 bytes.
recover writes to OUT (which must not exist) IN's data section up to its
last complete chunk, with a new summary: a recording cut short by a killed
run becomes a whole file.
sample writes OUT (which must not exist): a ROS 2 recording of a small
robot, IMU 200 Hz, camera 15 Hz (160x120 rgb8), lidar 10 Hz (16x256
points), cmd_vel 20 Hz, for D (default 10s); the replay suite's default
load. The same flags give the same bytes.`

// Run executes "hilrig mcap <sub> …". Commands block on file I/O only.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cli.Set{Prog: "hilrig mcap", Usage: usage, Commands: []cli.Command{
		{Name: "info", Run: info},
		{Name: "cat", Run: cat},
		{Name: "recover", Run: recoverCmd},
		{Name: "sample", Run: sample},
	}}.Run(ctx, args, stdout, stderr)
}

func flags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("hilrig mcap "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(fs.Output(), usage) }
	return fs
}

func parse(fs *flag.FlagSet, args []string, nargs int) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("%w: %v", cli.ErrUsage, err)
	}
	if fs.NArg() != nargs {
		fmt.Fprintln(fs.Output(), usage)
		return nil, fmt.Errorf("%w: %s takes %d file argument(s), got %d", cli.ErrUsage, fs.Name(), nargs, fs.NArg())
	}
	return fs.Args(), nil
}

// parseOpen parses the flags and nargs file arguments and opens the first
// one for reading (see open); the caller closes f.
func parseOpen(fs *flag.FlagSet, args []string, nargs int) (files []string, f *os.File, size int64, err error) {
	if files, err = parse(fs, args, nargs); err != nil {
		return nil, nil, 0, err
	}
	f, size, err = open(files[0])
	return files, f, size, err
}

// open opens a regular file for reading.
func open(name string) (*os.File, int64, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = fmt.Errorf("%s: not a regular file", name)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// summary is what info prints, from the summary or from a scan.
type summary struct {
	header   mcap.Header
	channels []*mcap.Channel
	schemas  []*mcap.Schema
	counts   map[uint16]uint64
	messages uint64
	start    uint64
	end      uint64
	chunks   map[mcap.Compression]mcap.ChunkTally
	attach   int
	meta     int
	source   string
}

func info(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("info", stderr)
	check := fs.Bool("check", false, "read every record and check every CRC")
	files, f, size, err := parseOpen(fs, args, 1)
	if err != nil {
		return err
	}
	defer f.Close()
	s, err := fromSummary(f, size)
	var scanErr error
	if err != nil || *check {
		if err != nil && !errors.Is(err, mcap.ErrNoSummary) {
			fmt.Fprintf(stderr, "summary unreadable (%v): reading the file whole\n", err)
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return err
		}
		var scanned *summary
		scanned, scanErr = scan(ctx, f)
		if scanned == nil {
			return fmt.Errorf("%s: %w", files[0], scanErr)
		}
		if s == nil {
			s = scanned
		}
	}
	printInfo(stdout, files[0], size, s)
	if scanErr != nil {
		if errors.Is(scanErr, mcap.ErrTruncated) {
			return fmt.Errorf("%s: %w (hilrig mcap recover writes a whole copy)", files[0], scanErr)
		}
		return fmt.Errorf("%s: %w", files[0], scanErr)
	}
	if *check {
		fmt.Fprintln(stdout, "check:     every record read, every CRC checked: ok")
	}
	return nil
}

func fromSummary(f *os.File, size int64) (*summary, error) {
	x, err := mcap.NewIndexedReader(f, size, mcap.Limits{})
	if err != nil {
		return nil, err
	}
	defer x.Close()
	st := x.Statistics()
	if st == nil {
		return nil, fmt.Errorf("the summary has no statistics: %w", mcap.ErrNoSummary)
	}
	s := &summary{header: x.Header(), channels: x.Channels(), schemas: x.Schemas(), counts: st.ChannelMessageCounts,
		messages: st.MessageCount, start: st.MessageStartTime, end: st.MessageEndTime,
		chunks: map[mcap.Compression]mcap.ChunkTally{}, attach: int(st.AttachmentCount), meta: int(st.MetadataCount), source: "summary"}
	for _, ci := range x.ChunkIndexes() {
		t := s.chunks[ci.Compression]
		t.Count++
		t.CompressedSize += ci.CompressedSize
		t.UncompressedSize += ci.UncompressedSize
		s.chunks[ci.Compression] = t
	}
	return s, nil
}

// scan reads the file whole; on an error it returns what it read before
// it, and the error.
func scan(ctx context.Context, r io.Reader) (*summary, error) {
	sr, err := mcap.NewStreamReader(r, mcap.Limits{})
	if err != nil {
		return nil, err
	}
	defer sr.Close()
	for n := 0; ; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			err = ctx.Err()
			break
		}
		if _, err = sr.Next(); err != nil {
			break
		}
	}
	if err == io.EOF {
		err = nil
	}
	seen := sr.Seen()
	src := "scan of the whole file (no summary)"
	if err != nil {
		src = fmt.Sprintf("scan up to offset %d (the file is cut short or damaged there)", sr.Offset())
	}
	return &summary{header: sr.Header(), channels: sr.Channels(), schemas: sr.Schemas(), counts: seen.ChannelMessages,
		messages: seen.Messages, start: seen.StartTime, end: seen.EndTime, chunks: seen.Chunks,
		attach: seen.Attachments, meta: seen.Metadata, source: src}, err
}

func printInfo(w io.Writer, name string, size int64, s *summary) {
	fmt.Fprintf(w, "file:      %s (%s)\n", filepath.Base(name), bytesize.Approx(size, " "))
	fmt.Fprintf(w, "profile:   %q, library %q\n", s.header.Profile, s.header.Library)
	fmt.Fprintf(w, "from:      %s\n", s.source)
	fmt.Fprintf(w, "messages:  %d", s.messages)
	if s.messages > 0 {
		fmt.Fprintf(w, ", log time %s to %s (%v)", stamp(s.start), stamp(s.end), time.Duration(s.end-s.start))
	}
	fmt.Fprintln(w)
	if len(s.chunks) == 0 {
		fmt.Fprintln(w, "chunks:    none (messages outside chunks)")
	}
	for _, c := range sortedCompressions(s.chunks) {
		t := s.chunks[c]
		fmt.Fprintf(w, "chunks:    %d %v, %s of records in %s\n", t.Count, c,
			bytesize.Approx(int64(t.UncompressedSize), " "), bytesize.Approx(int64(t.CompressedSize), " "))
	}
	if s.attach+s.meta > 0 {
		fmt.Fprintf(w, "other:     %d attachments, %d metadata records\n", s.attach, s.meta)
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "channels:\n  ID\tTOPIC\tMESSAGES\tENCODING\tSCHEMA")
	names := map[uint16]string{}
	for _, sc := range s.schemas {
		names[sc.ID] = sc.Name
	}
	for _, c := range s.channels {
		schema := "-"
		if c.SchemaID != 0 {
			schema = fmt.Sprintf("%d %s", c.SchemaID, names[c.SchemaID])
		}
		fmt.Fprintf(tw, "  %d\t%s\t%d\t%s\t%s\n", c.ID, c.Topic, s.counts[c.ID], c.MessageEncoding, schema)
	}
	fmt.Fprintln(tw, "schemas:\n  ID\tNAME\tENCODING\tSIZE")
	for _, sc := range s.schemas {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", sc.ID, sc.Name, sc.Encoding, bytesize.Approx(int64(len(sc.Data)), " "))
	}
	_ = tw.Flush()
}

func sortedCompressions(m map[mcap.Compression]mcap.ChunkTally) []mcap.Compression {
	var out []mcap.Compression
	for _, c := range []mcap.Compression{mcap.CompressNone, mcap.CompressZstd, mcap.CompressLZ4} {
		if _, ok := m[c]; ok {
			out = append(out, c)
		}
	}
	return out
}

// stamp renders a log time: UTC wall time when it looks like ns since the
// Unix epoch (after 2001), else seconds (a boot-time epoch).
func stamp(ns uint64) string {
	if ns > 1e18 && ns < 1<<63 {
		return time.Unix(0, int64(ns)).UTC().Format("2006-01-02T15:04:05.000000000Z")
	}
	return fmt.Sprintf("%.9fs", float64(ns)/1e9)
}

type topics []string

func (t *topics) String() string     { return strings.Join(*t, ",") }
func (t *topics) Set(s string) error { *t = append(*t, s); return nil }

func cat(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("cat", stderr)
	var only topics
	fs.Var(&only, "topic", "print only this topic (repeatable)")
	limit := fs.Int("limit", 0, "stop after N messages (0: all)")
	asHex := fs.Bool("hex", false, "payloads as hex, undecoded")
	maxArray := fs.Int("max-array", 16, "print at most N elements of each array of a decoded message (0: all)")
	files, f, _, err := parseOpen(fs, args, 1)
	if err != nil {
		return err
	}
	defer f.Close()
	sr, err := mcap.NewStreamReader(f, mcap.Limits{})
	if err != nil {
		return fmt.Errorf("%s: %w", files[0], err)
	}
	defer sr.Close()
	d := decoders{codecs: map[uint16]*rosmsg.Codec{}, failed: map[uint16]error{}, maxArray: *maxArray}
	printed := 0
	for n := 0; *limit == 0 || printed < *limit; n++ {
		if n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		m, err := sr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if errors.Is(err, mcap.ErrTruncated) {
				return fmt.Errorf("%s: %w (every message before the cut was printed; hilrig mcap recover writes a whole copy)", files[0], err)
			}
			return fmt.Errorf("%s: %w", files[0], err)
		}
		ch, _ := sr.Channel(m.ChannelID)
		if len(only) > 0 && !contains(only, ch.Topic) {
			continue
		}
		printed++
		fmt.Fprintf(stdout, "%d %s [%d] %s\n", m.LogTime, ch.Topic, m.Sequence, d.payload(sr, ch, m.Data, *asHex))
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// decoders caches one codec per schema.
type decoders struct {
	codecs   map[uint16]*rosmsg.Codec
	failed   map[uint16]error
	maxArray int
}

const hexBytes = 64

func (d *decoders) payload(sr *mcap.StreamReader, ch *mcap.Channel, data []byte, asHex bool) string {
	if !asHex {
		switch ch.MessageEncoding {
		case ros2mcap.MessageEncoding:
			if c, err := d.codec(sr, ch.SchemaID); err != nil {
				return fmt.Sprintf("<%v> %s", err, hexOf(data))
			} else if m, err := c.Decode(data); err != nil {
				return fmt.Sprintf("<%v> %s", err, hexOf(data))
			} else if js, err := c.ToJSON(m); err == nil {
				if short, err := shortenJSON(js, d.maxArray); err == nil {
					return string(short)
				}
				return string(js)
			}
		case "json":
			return strings.TrimSpace(string(data))
		}
	}
	return hexOf(data)
}

func (d *decoders) codec(sr *mcap.StreamReader, id uint16) (*rosmsg.Codec, error) {
	if c, ok := d.codecs[id]; ok {
		return c, nil
	}
	if err, ok := d.failed[id]; ok {
		return nil, err
	}
	s, ok := sr.Schema(id)
	if !ok {
		d.failed[id] = fmt.Errorf("no schema %d", id)
		return nil, d.failed[id]
	}
	c, err := ros2mcap.Codec(s)
	if err != nil {
		d.failed[id] = err
		return nil, err
	}
	d.codecs[id] = c
	return c, nil
}

func hexOf(b []byte) string {
	if len(b) <= hexBytes {
		return hex.EncodeToString(b)
	}
	return fmt.Sprintf("%s… (%d bytes)", hex.EncodeToString(b[:hexBytes]), len(b))
}

func recoverCmd(_ context.Context, args []string, stdout, stderr io.Writer) error {
	files, in, size, err := parseOpen(flags("recover", stderr), args, 2)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(files[1], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	rep, err := mcap.Recover(out, in, mcap.Limits{})
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(files[1])
		return fmt.Errorf("%s: %w", files[0], err)
	}
	fmt.Fprintf(stdout, "kept %d of %d bytes: %d chunks, %d messages\n", rep.Kept, size, rep.Chunks, rep.Messages)
	if rep.Stop != nil {
		fmt.Fprintf(stdout, "dropped the rest: %v\n", rep.Stop)
	} else {
		fmt.Fprintln(stdout, "the data section was whole; summary rewritten")
	}
	fmt.Fprintf(stdout, "wrote %s\n", files[1])
	return nil
}

func sample(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flags("sample", stderr)
	o := ros2mcap.MixOptions{Compression: mcap.CompressZstd}
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "length of the recording")
	fs.Uint64Var(&o.Seed, "seed", 1, "jitter and sensor noise seed")
	fs.TextVar(&o.Compression, "compression", mcap.CompressZstd, "chunk compression: none, zstd or lz4")
	files, err := parse(fs, args, 1)
	if err != nil {
		return err
	}
	if o.Duration <= 0 || o.Duration > time.Hour {
		return fmt.Errorf("%w: --duration %v: want 0 < D <= 1h", cli.ErrUsage, o.Duration)
	}
	out, err := os.OpenFile(files[0], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	st, err := ros2mcap.WriteMix(out, o)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(files[0])
		return err
	}
	for _, t := range ros2mcap.MixTopics {
		fmt.Fprintf(stdout, "%-20s %-28s %5d messages, %s\n", t.Topic, t.Type, st.Messages[t.Topic], bytesize.Approx(int64(st.Bytes[t.Topic]), " "))
	}
	fmt.Fprintf(stdout, "wrote %s\n", files[0])
	return nil
}
