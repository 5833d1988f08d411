package report

import hdr "github.com/HdrHistogram/hdrhistogram-go"

// LibraryEncodeForTest is hdrhistogram-go's own V2 encoding of h, the
// reference the pooled encoder is checked against.
func LibraryEncodeForTest(h *Histogram) []byte {
	b, err := h.h.Encode(hdr.V2CompressedEncodingCookieBase)
	if err != nil {
		panic(err)
	}
	return b
}

// CountsReadInPlaceForTest reports whether the encoder reads counts
// without copying them.
func CountsReadInPlaceForTest() bool { return countsDirect }
