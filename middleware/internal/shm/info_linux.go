package shm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Inspect reads one segment file without changing it.
func Inspect(path string) Info {
	in := Info{Path: path}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		in.Err = err
		return in
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		in.Err = err
		return in
	}
	in.Size, in.UID, in.Mode = st.Size, int(st.Uid), os.FileMode(st.Mode&0o777)
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) == nil {
		unix.Flock(fd, unix.LOCK_UN)
	} else {
		in.InUse = true
	}
	hdr := offTable + MaxSubscribers*subEntrySize
	if st.Size < int64(hdr) {
		_, in.Err = ParseHeader(nil, st.Size, path)
		return in
	}
	mem, err := unix.Mmap(fd, 0, hdr, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		in.Err = err
		return in
	}
	defer unix.Munmap(mem)
	if err := guard(path, func() error { return inspectMapped(&in, fd, mem, st.Size, path) }); err != nil {
		in.Err = err
	}
	return in
}

// inspectMapped fills in from the header mapped at mem. It runs under
// guard: the file may shrink while we read it.
func inspectMapped(in *Info, fd int, mem []byte, size int64, path string) error {
	hi, err := ParseHeader(mem, size, path)
	if err != nil {
		return err
	}
	r := &Region{mem: mem, base: unsafe.Pointer(&mem[0]), P: hi.Params, G: hi.Geometry}
	in.Params = hi.Params
	r.name = path
	// Liveness is the lease (lease.go); our descriptor holds no byte
	// locks, so it sees every holder.
	owner := atomic.LoadUint64(r.u64(offPubOwner))
	if owner != 0 {
		in.PublisherPID = int(owner >> 32)
		held, err := ofdHeld(fd, offPubOwner)
		in.PublisherAlive = held || err != nil
	}
	// Slot versions are read with pread, not through a mapping: a read
	// fault on a tmpfs hole allocates a page (and raises SIGBUS when the
	// filesystem is full), and a file that shrinks while we look would
	// fault too. pread of a hole returns zeros and allocates nothing.
	var ver [8]byte
	for k := 0; k < hi.PoolLen; k++ {
		if n, err := unix.Pread(fd, ver[:], int64(hi.SlotsOff+k*hi.SlotSize+slVer)); err == nil && n == 8 && binary.LittleEndian.Uint64(ver[:])&1 == 1 {
			in.WritingSlots++
		}
	}
	in.Epoch = atomic.LoadUint32(r.u32(offEpoch))
	in.Head = atomic.LoadUint64(r.u64(offHead)) >> posShift
	in.Writer = WriterStats{
		Published: atomic.LoadUint64(r.u64(offPublished)),
		BlockedNs: atomic.LoadUint64(r.u64(offBlockedNs)),
		Timeouts:  atomic.LoadUint64(r.u64(offTimeouts)),
		Dropped:   atomic.LoadUint64(r.u64(offDropped)),
	}
	for i := 0; i < MaxSubscribers; i++ {
		so := r.sub(i)
		stw := atomic.LoadUint64(r.u64(so + subState))
		if uint32(stw) == stFree {
			continue
		}
		held, err := ofdHeld(fd, so+subState)
		in.Subscribers = append(in.Subscribers, SubInfo{
			PID:   int(atomic.LoadUint64(r.u64(so + subPID))),
			Alive: held || err != nil,
			Name:  subNameAt(r, i),
			Acked: atomic.LoadUint64(r.u64(so + subAcked)),
			ReaderStats: ReaderStats{
				Delivered:   atomic.LoadUint64(r.u64(so + subDelivered)),
				Lost:        atomic.LoadUint64(r.u64(so + subLost)),
				Overruns:    atomic.LoadUint64(r.u64(so + subOverruns)),
				TornRetries: atomic.LoadUint64(r.u64(so + subTorn)),
				Epochs:      atomic.LoadUint64(r.u64(so + subEpochs)),
			},
		})
	}
	return nil
}

// RemoveIfStale removes the segment at path if no process holds it open
// (it takes the exclusive flock while unlinking, so a process opening it
// concurrently either keeps it or re-creates a fresh one). It reports
// whether it removed the file.
func RemoveIfStale(path string) (bool, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return false, nil
		}
		return false, fmt.Errorf("%s: %w", path, err)
	}
	defer unix.Close(fd)
	if err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return false, nil // in use
	}
	var st, pst unix.Stat_t
	if unix.Fstat(fd, &st) != nil || unix.Stat(path, &pst) != nil || st.Ino != pst.Ino {
		return false, nil
	}
	if err := unix.Unlink(path); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}
