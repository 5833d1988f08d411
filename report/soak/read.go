package soak

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/hilrig/hilrig/internal/safefile"
	"github.com/hilrig/hilrig/report"
)

// Log is a checkpoint read back: the header, every window with its
// histograms dropped (summaries only, so 72 h of 10 s windows is a few tens
// of MB at most), the resumes and gaps, one merged histogram per stream over
// the PTP-locked windows, and notes about what was tolerated (a torn tail).
type Log struct {
	Path    string
	Header  Header
	Windows []Window
	Resumes []Resumption
	Gaps    []Gap
	// Totals merges every locked window's histogram per stream key
	// ("agent/stream"); StreamKeys lists the keys in first-seen order.
	Totals     map[string]*report.Histogram
	StreamKeys []string
	Notes      []string

	size, goodSize int64
	missingNewline bool
}

// Gap is a stretch of time with no window: a resume, or windows missing
// between two closed ones.
type Gap struct {
	AfterIndex int       `json:"after_index"`
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	Reason     string    `json:"reason"`
}

// NextIndex is one past the largest window index (0 for no windows).
func (l *Log) NextIndex() int {
	n := 0
	for i := range l.Windows {
		if l.Windows[i].Index >= n {
			n = l.Windows[i].Index + 1
		}
	}
	return n
}

// StreamKey names a stream across agents.
func StreamKey(agent, stream string) string { return agent + "/" + stream }

// Bounds of what Read and ReadFrom accept. A 72 h soak of 10 s windows
// with a few streams writes some hundreds of MB, each window line a few
// kB to tens of kB (compressed histograms), and Read keeps about a
// kilobyte per window in memory; so the caps leave room for soaks many
// times that long or dense, while a mistaken or hostile file (/dev/zero,
// a file of one endless line, millions of empty windows) costs at most
// the line cap and the windows cap in memory.
const (
	// MaxCheckpointFile is the largest checkpoint file Read reads (4 GiB).
	MaxCheckpointFile = 4 << 30
	// MaxCheckpointLine is the longest line ReadFrom parses (16 MiB); a
	// longer one is unparseable content (a torn tail at the end).
	MaxCheckpointLine = 16 << 20
	// MaxCheckpointWindows is the most windows ReadFrom keeps (500,000:
	// 58 days of 10 s windows).
	MaxCheckpointWindows = 500_000
)

// checkpointLimit states MaxCheckpointFile in messages.
const checkpointLimit = "the 4 GiB limit for soak checkpoints"

// open opens a checkpoint for reading: a regular file of at most
// MaxCheckpointFile bytes; a FIFO or a device is refused without blocking
// or reading (internal/safefile).
func open(path string) (*os.File, error) {
	f, _, err := safefile.Open(path, MaxCheckpointFile, checkpointLimit)
	if err != nil {
		return nil, fmt.Errorf("soak: read checkpoint: %w", err)
	}
	return f, nil
}

// Read reads a checkpoint file (see ReadFrom), which must be a regular file
// of at most MaxCheckpointFile bytes.
func Read(path string) (*Log, error) {
	f, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// One byte past the cap tells a file that grew past it while read.
	lg, err := ReadFrom(io.LimitReader(f, MaxCheckpointFile+1), path)
	if err == nil && lg.size > MaxCheckpointFile {
		return nil, fmt.Errorf("soak: read checkpoint: %s: more than %s (it grew while being read)", path, checkpointLimit)
	}
	return lg, err
}

// IsCheckpointFile reports whether the file at path looks like a
// checkpoint (see IsCheckpoint). It opens it as Read does and reads only
// its first line (at most MaxCheckpointLine bytes).
func IsCheckpointFile(path string) (bool, error) {
	f, err := open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	line, _, _, err := readLine(bufio.NewReader(f), MaxCheckpointLine)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("soak: read %s: %w", path, err)
	}
	return IsCheckpoint(line), nil
}

// readLine reads one line of r up to and including its '\n' (absent at
// the end of the input). It returns at most max bytes of it: a longer
// line is read to its end, counted in n and reported with tooLong, and
// its bytes are dropped. err is io.EOF only when nothing was left to read;
// any other read error is returned as it is.
func readLine(r *bufio.Reader, max int) (line []byte, n int64, tooLong bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		n += int64(len(chunk))
		if !tooLong {
			if len(line)+len(chunk) > max {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case err == nil:
			return line, n, tooLong, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case n > 0 && errors.Is(err, io.EOF):
			return line, n, tooLong, nil
		default:
			return nil, n, false, err
		}
	}
}

// IsCheckpoint reports whether data looks like a checkpoint (its first line
// is a header record); used to tell a checkpoint from a result file.
func IsCheckpoint(data []byte) bool {
	line, _, _ := bytes.Cut(data, []byte{'\n'})
	var r struct {
		Kind string `json:"kind"`
	}
	return json.Unmarshal(line, &r) == nil && r.Kind == "header"
}

// ReadFrom reads a checkpoint from r; name is used in errors and notes.
//
// A partial file (a soak still running or killed) reads fine. Unparseable
// content at the end of the file — a line torn by a killed writer, or
// garbage after a power cut — is ignored with a note in Notes, never fatal.
// Unparseable content followed by good lines is an error naming the line,
// as is a missing header or a header of a newer schema version.
func ReadFrom(r io.Reader, name string) (*Log, error) {
	lg := &Log{Path: name, Totals: map[string]*report.Histogram{}}
	br := bufio.NewReaderSize(r, 1<<20)
	var (
		lineNo     int
		off        int64
		badLine    int
		badErr     error
		haveHeader bool
		prevEnd    time.Time
		prevIndex  = -1
	)
	for {
		line, n, tooLong, err := readLine(br, MaxCheckpointLine)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("soak: read %s: %w", name, err)
		}
		lineNo++
		start := off
		off += n
		hasNL := len(line) > 0 && line[len(line)-1] == '\n'
		body := bytes.TrimSpace(line)
		if len(body) == 0 && !tooLong {
			if badLine == 0 {
				lg.goodSize = off
			}
			continue
		}
		var rec record
		var perr error
		if tooLong {
			perr = fmt.Errorf("line of %d bytes, longer than the %d MiB limit", n, MaxCheckpointLine>>20)
		} else if perr = json.Unmarshal(body, &rec); perr == nil && rec.Kind == "" {
			perr = errors.New(`no "kind"`)
		}
		if perr != nil {
			if badLine == 0 {
				badLine, badErr = lineNo, perr
				lg.goodSize = start
			}
			continue
		}
		if badLine != 0 {
			return nil, fmt.Errorf("%w: %s line %d: %v (followed by valid line %d, so not a torn tail)",
				ErrBadCheckpoint, name, badLine, badErr, lineNo)
		}
		lg.goodSize = off
		lg.missingNewline = !hasNL
		switch rec.Kind {
		case "header":
			if haveHeader || rec.Header == nil {
				return nil, fmt.Errorf("%w: %s line %d: unexpected header", ErrBadCheckpoint, name, lineNo)
			}
			if v := rec.Header.SchemaVersion; v < 1 || v > SchemaVersion {
				return nil, fmt.Errorf("%w: %s has schema_version %d, this hilrig reads 1..%d",
					ErrSchemaVersion, name, v, SchemaVersion)
			}
			haveHeader = true
			lg.Header = *rec.Header
			prevEnd = lg.Header.Started
		case "window", "resume":
			if !haveHeader {
				return nil, fmt.Errorf("%w: %s line %d: %s before the header", ErrBadCheckpoint, name, lineNo, rec.Kind)
			}
			if rec.Kind == "resume" {
				if rec.Resume == nil {
					return nil, fmt.Errorf("%w: %s line %d: empty resume", ErrBadCheckpoint, name, lineNo)
				}
				lg.Resumes = append(lg.Resumes, *rec.Resume)
				lg.Gaps = append(lg.Gaps, Gap{AfterIndex: rec.Resume.AfterIndex, From: rec.Resume.GapFrom, To: rec.Resume.GapTo, Reason: "resumed"})
				prevEnd = rec.Resume.GapTo
				continue
			}
			w := rec.Window
			if w == nil {
				return nil, fmt.Errorf("%w: %s line %d: empty window", ErrBadCheckpoint, name, lineNo)
			}
			if len(lg.Windows) >= MaxCheckpointWindows {
				return nil, fmt.Errorf("%w: %s line %d: more than %d windows", ErrBadCheckpoint, name, lineNo, MaxCheckpointWindows)
			}
			if w.Index <= prevIndex {
				lg.Notes = append(lg.Notes, fmt.Sprintf("%s line %d: window index %d not after %d", name, lineNo, w.Index, prevIndex))
			} else if w.Index > prevIndex+1 && !(len(lg.Gaps) > 0 && lg.Gaps[len(lg.Gaps)-1].AfterIndex == prevIndex) {
				lg.Gaps = append(lg.Gaps, Gap{AfterIndex: prevIndex, From: prevEnd, To: w.Start,
					Reason: fmt.Sprintf("windows %d..%d missing", prevIndex+1, w.Index-1)})
			}
			lg.absorb(w)
			prevIndex, prevEnd = w.Index, w.End
		default:
			lg.Notes = append(lg.Notes, fmt.Sprintf("%s line %d: unknown record kind %q ignored", name, lineNo, rec.Kind))
		}
	}
	lg.size = off
	if badLine != 0 {
		lg.Notes = append(lg.Notes, fmt.Sprintf("%s: torn tail from line %d (%d bytes) ignored: %v (a writer was killed mid-line)",
			name, badLine, lg.size-lg.goodSize, badErr))
	}
	if !haveHeader {
		return nil, fmt.Errorf("%w: %s has no header line (not a soak checkpoint?)", ErrBadCheckpoint, name)
	}
	if lg.missingNewline {
		lg.Notes = append(lg.Notes, fmt.Sprintf("%s: last line complete but without newline", name))
	}
	sort.SliceStable(lg.Gaps, func(i, j int) bool { return lg.Gaps[i].From.Before(lg.Gaps[j].From) })
	return lg, nil
}

// absorb keeps w's summaries and merges its histograms into the totals
// (locked windows only), then drops the histograms.
func (lg *Log) absorb(w *Window) {
	locked := w.Locked() && w.Fault == nil
	for i := range w.Agents {
		a := &w.Agents[i]
		for j := range a.Streams {
			s := &a.Streams[j]
			key := StreamKey(a.Agent, s.Stream)
			t, ok := lg.Totals[key]
			if !ok {
				t = report.NewHistogram()
				lg.Totals[key] = t
				lg.StreamKeys = append(lg.StreamKeys, key)
			}
			if s.Histogram != nil {
				if s.Summary.Count == 0 {
					s.Summary = s.Histogram.Summary()
				}
				if locked {
					t.Merge(s.Histogram)
				}
				s.Histogram = nil
			}
		}
	}
	lg.Windows = append(lg.Windows, *w)
}
