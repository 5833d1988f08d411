package pmc_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/facebook/time/ptp/protocol"
	"github.com/hilrig/hilrig/timesync/internal/pmc"
)

func response(t testing.TB, req *protocol.Management, seq uint16) []byte {
	req.SetSequence(seq)
	req.ActionField = protocol.RESPONSE
	b, err := req.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func errorStatus(t testing.TB, seq uint16, id protocol.ManagementID) []byte {
	p := &protocol.ManagementMsgErrorStatus{}
	p.SetSequence(seq)
	p.ActionField = protocol.RESPONSE
	p.TLVHead = protocol.TLVHead{TLVType: protocol.TLVManagementErrorStatus, LengthField: 8}
	p.ManagementErrorID = protocol.ErrorNoSuchID
	p.ManagementID = id
	p.MessageLength = 56
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDecodeMatchesSequenceAndID(t *testing.T) {
	good := response(t, protocol.CurrentDataSetRequest(), 7)
	if m, match, err := pmc.Decode(good, 7, protocol.IDCurrentDataSet); !match || err != nil || m == nil {
		t.Fatalf("own reply: match %t err %v", match, err)
	}
	if _, match, _ := pmc.Decode(good, 6, protocol.IDCurrentDataSet); match {
		t.Error("late reply (older sequence) matched")
	}
	if _, match, _ := pmc.Decode(good, 7, protocol.IDTimeStatusNP); match {
		t.Error("reply for another management id matched")
	}
	req := protocol.CurrentDataSetRequest()
	req.SetSequence(7)
	b, _ := req.MarshalBinary()
	if _, match, _ := pmc.Decode(b, 7, protocol.IDCurrentDataSet); match {
		t.Error("a GET (not a RESPONSE) matched")
	}
	_, match, err := pmc.Decode(errorStatus(t, 9, protocol.IDPortStatsNP), 9, protocol.IDPortStatsNP)
	if !match || !errors.Is(err, pmc.ErrManagementError) {
		t.Errorf("error status: match %t err %v, want ErrManagementError", match, err)
	}
}

// FuzzDecode: a datagram from the socket must never panic the reader.
// Crashers found are kept under testdata/fuzz/FuzzDecode.
func FuzzDecode(f *testing.F) {
	for _, r := range []*protocol.Management{protocol.CurrentDataSetRequest(), protocol.ParentDataSetRequest(),
		protocol.DefaultDataSetRequest(), protocol.TimeStatusNPRequest(), protocol.PortPropertiesNPRequest()} {
		f.Add(response(f, r, 1), uint16(1))
	}
	f.Add(errorStatus(f, 1, protocol.IDPortStatsNP), uint16(1))
	f.Add([]byte{}, uint16(0))
	f.Add(bytes.Repeat([]byte{0xff}, 64), uint16(0xffff))
	f.Fuzz(func(t *testing.T, b []byte, seq uint16) {
		for _, id := range []protocol.ManagementID{protocol.IDCurrentDataSet, protocol.IDTimeStatusNP, protocol.IDPortPropertiesNP, pmc.IDSynchronizationUncertainNP} {
			_, _, _ = pmc.Decode(b, seq, id)
		}
	})
}

func TestDialErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := pmc.Dial(t.Context(), filepath.Join(dir, "none"), 0)
	if !errors.Is(err, pmc.ErrNoSocket) {
		t.Errorf("missing socket: %v", err)
	}
	// Something that is not a socket says what it is, instead of
	// blaming a dead ptp4l.
	f := filepath.Join(dir, "file")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, what string }{
		{f, "is a regular file, not a socket"},
		{dir, "is a directory, not a socket"},
		{"/dev/null", "is a character device, not a socket"},
	} {
		_, err := pmc.Dial(t.Context(), tc.path, 0)
		if !errors.Is(err, pmc.ErrNotSocket) || !strings.Contains(err.Error(), tc.path+" "+tc.what) {
			t.Errorf("dial %s: %v, want ErrNotSocket saying it %s", tc.path, err, tc.what)
		}
		if errors.Is(err, pmc.ErrNotListening) {
			t.Errorf("dial %s: %v reported as not listening (did ptp4l die?)", tc.path, err)
		}
	}
}
