package vmboard

import (
	_ "embed"
	"fmt"
	"runtime"
)

// Arch is a board's CPU architecture, named like GOARCH (the name racks
// use in `arch:` and `hilrig version` reports).
type Arch string

// Architectures a board can have.
const (
	ArchAMD64 Arch = "amd64" // x86_64 guest: QEMU's default PC machine, PVH boot of vmlinux
	ArchARM64 Arch = "arm64" // aarch64 guest: QEMU's virt machine, Cortex-A53, boot of Image
)

//go:embed kernel/board-arm64.config
var fragmentARM64 []byte

// DefaultBusyboxARM64 is where .ci/test puts the aarch64 busybox-static
// (Debian's busybox-static:arm64, unpacked: it cannot be installed beside
// the host's own busybox-static).
const DefaultBusyboxARM64 = "/usr/local/lib/hilrig/arm64/busybox"

// archSpec is everything that differs between the boards' architectures.
type archSpec struct {
	arch Arch
	// kernelArch is the kernel's ARCH=; crossCompile its CROSS_COMPILE=
	// ("" for a native build).
	kernelArch, crossCompile string
	// fragment is the kernel config fragment.
	fragment []byte
	// target is the make target; kernelFile the file it produces (at the
	// top of the tree, or under arch/<kernelArch>/boot/) that QEMU boots.
	target, kernelFile string
	// srcSuffix keeps each architecture's extracted, built tree apart
	// (the kernel builds in its source tree).
	srcSuffix string
	// busybox is the default static busybox; elfMachine the e_machine
	// every binary put into the board must have.
	busybox    string
	elfMachine uint16
	// qemu is the emulator, machine its machine and CPU arguments, console
	// the serial console device inside the guest.
	qemu    string
	machine []string
	console string
	// packages names the Debian packages that provide the tools.
	packages string
}

func specFor(a Arch) (*archSpec, error) {
	switch a {
	case ArchAMD64, "":
		return &archSpec{
			arch: ArchAMD64, kernelArch: "x86_64", fragment: fragment,
			target: "vmlinux", kernelFile: "vmlinux",
			busybox: DefaultBusybox, elfMachine: 62, // EM_X86_64
			qemu: "qemu-system-x86_64", console: "ttyS0",
			packages: "qemu-system-x86, busybox-static",
		}, nil
	case ArchARM64:
		return &archSpec{
			arch: ArchARM64, kernelArch: "arm64", crossCompile: crossPrefix(ArchARM64),
			fragment: fragmentARM64,
			// arm64 has no PVH-like ELF entry: QEMU's Linux loader wants the
			// flat Image (uncompressed, so no decompressor runs either).
			target: "Image", kernelFile: "arch/arm64/boot/Image",
			srcSuffix: "-arm64",
			busybox:   DefaultBusyboxARM64, elfMachine: 183, // EM_AARCH64
			qemu: "qemu-system-aarch64",
			// Cortex-A53: the i.MX8M Plus's core and the RK3399's little
			// core; ARMv8.0 without LSE atomics, so Go's sync/atomic runs
			// its LDAXR/STLXR loops as on those boards. (-cpu max would also
			// emulate pointer authentication, which is slow under TCG.)
			machine:  []string{"-M", "virt", "-cpu", "cortex-a53"},
			console:  "ttyAMA0",
			packages: "qemu-system-arm, gcc-aarch64-linux-gnu, busybox-static:arm64 (see .ci/test)",
		}, nil
	}
	return nil, fmt.Errorf("%w: architecture %q (want %s or %s)", ErrInvalidOptions, a, ArchAMD64, ArchARM64)
}

// crossPrefix is the CROSS_COMPILE prefix for building a kernel for a on
// this host: none when the host is that architecture.
func crossPrefix(a Arch) string {
	if string(a) == runtime.GOARCH {
		return ""
	}
	return "aarch64-linux-gnu-"
}

// makeArgs are the arguments every make of the kernel gets.
func (s *archSpec) makeArgs() []string {
	args := []string{"ARCH=" + s.kernelArch}
	if s.crossCompile != "" {
		args = append(args, "CROSS_COMPILE="+s.crossCompile)
	}
	return args
}

// ValidArch returns nil for an architecture a board can have ("" means
// amd64), else an error wrapping ErrInvalidOptions that names it.
func ValidArch(a Arch) error {
	_, err := specFor(a)
	return err
}
