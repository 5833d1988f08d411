package mcap

import (
	"bytes"
	"cmp"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"slices"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// crcOf is the specification's CRC32 (IEEE, as zlib's crc32).
func crcOf(b []byte) uint32 { return crc32.ChecksumIEEE(b) }

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// compressor turns a chunk's records into its compressed form, reusing
// its buffers. One per Writer.
type compressor struct {
	kind Compression
	zenc *zstd.Encoder
	lzw  *lz4.Writer
	buf  bytes.Buffer // lz4's output
	zbuf []byte       // zstd's output
}

func newCompressor(kind Compression) (*compressor, error) {
	c := &compressor{kind: kind}
	switch kind {
	case CompressNone:
	case CompressZstd:
		// One goroutine-free encoder: EncodeAll with concurrency 1 runs
		// on the caller's goroutine.
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedDefault))
		if err != nil {
			return nil, fmt.Errorf("mcap: zstd encoder: %w", err)
		}
		c.zenc = enc
	case CompressLZ4:
		c.lzw = lz4.NewWriter(&c.buf)
		// 64 KiB blocks: the library pools one block buffer per block
		// size, and its default 4 MiB buffers were the writer's only
		// steady allocation (re-made after each GC).
		if err := c.lzw.Apply(lz4.BlockSizeOption(lz4.Block64Kb)); err != nil {
			return nil, fmt.Errorf("mcap: lz4 writer: %w", err)
		}
	default:
		return nil, fmt.Errorf("mcap: compression %q: want none, zstd or lz4", string(kind))
	}
	return c, nil
}

// compress returns src compressed (src itself for none); the result is
// valid until the next call.
func (c *compressor) compress(src []byte) ([]byte, error) {
	switch c.kind {
	case CompressZstd:
		c.zbuf = c.zenc.EncodeAll(src, c.zbuf[:0])
		return c.zbuf, nil
	case CompressLZ4:
		c.buf.Reset()
		c.lzw.Reset(&c.buf)
		if _, err := c.lzw.Write(src); err != nil {
			return nil, fmt.Errorf("mcap: lz4: %w", err)
		}
		if err := c.lzw.Close(); err != nil {
			return nil, fmt.Errorf("mcap: lz4: %w", err)
		}
		return c.buf.Bytes(), nil
	}
	return src, nil
}

func (c *compressor) close() {
	if c.zenc != nil {
		_ = c.zenc.Close()
	}
}

// decompressor expands chunks into the caller's buffer (*dst, grown as
// needed and kept), never past the size the chunk declares (itself capped
// by Limits.MaxChunk).
type decompressor struct {
	max  uint64
	zdec *zstd.Decoder
	lzr  *lz4.Reader
	src  bytes.Reader
}

func (d *decompressor) decompress(dst *[]byte, kind Compression, src []byte, usize uint64) ([]byte, error) {
	if usize > d.max {
		return nil, fmt.Errorf("uncompressed size %d over the cap %d (Limits.MaxChunk): %w", usize, d.max, ErrFormat)
	}
	switch kind {
	case CompressNone:
		if uint64(len(src)) != usize {
			return nil, fmt.Errorf("uncompressed chunk of %d bytes declares %d: %w", len(src), usize, ErrFormat)
		}
		return src, nil
	case CompressZstd:
		if d.zdec == nil {
			dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(max(d.max, 1<<20)))
			if err != nil {
				return nil, fmt.Errorf("zstd decoder: %w", err)
			}
			d.zdec = dec
		}
		if uint64(cap(*dst)) < usize {
			*dst = make([]byte, 0, usize)
		}
		out, err := d.zdec.DecodeAll(src, (*dst)[:0])
		if err != nil {
			return nil, fmt.Errorf("zstd: %v: %w", err, ErrFormat)
		}
		if uint64(len(out)) != usize {
			return nil, fmt.Errorf("zstd chunk expands to %d bytes, declares %d: %w", len(out), usize, ErrFormat)
		}
		*dst = out[:0]
		return out, nil
	case CompressLZ4:
		d.src.Reset(src)
		if d.lzr == nil {
			d.lzr = lz4.NewReader(&d.src)
		} else {
			d.lzr.Reset(&d.src)
		}
		if uint64(cap(*dst)) < usize {
			*dst = make([]byte, 0, usize)
		}
		out := (*dst)[:usize]
		if _, err := io.ReadFull(d.lzr, out); err != nil {
			return nil, fmt.Errorf("lz4 chunk declares %d bytes: %v: %w", usize, err, ErrFormat)
		}
		var one [1]byte
		if n, _ := d.lzr.Read(one[:]); n != 0 {
			return nil, fmt.Errorf("lz4 chunk expands past the %d bytes it declares: %w", usize, ErrFormat)
		}
		return out, nil
	}
	return nil, fmt.Errorf("compression %q is not supported (none, zstd, lz4): %w", string(kind), ErrFormat)
}

func (d *decompressor) close() {
	if d.zdec != nil {
		d.zdec.Close()
	}
}
