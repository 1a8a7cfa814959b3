// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors

// Package secretmem keeps keys, passwords and tokens in Linux secret memory
// (memfd_secret(2)) through libsecretmem: memory that no other process, root
// included, can read through /proc/PID/mem, process_vm_readv or ptrace, and
// that never reaches a core dump, swap or a hibernation image.
//
// This file owns the whole binding: Secret (New, Bytes, Destroy, Equal),
// Supported, Stats and the process-wide settings.  A Secret's bytes are C
// memory from secretmem_malloc: the Go garbage collector never moves or
// copies them.  Where the kernel or a sandbox refuses secret memory,
// libsecretmem uses its fallback backend (mlock'ed, out of core dumps, but
// readable by root): Backend and DefaultBackend tell, and one warning on
// stderr says so when secret memory stops working after it worked in the
// process (a sandbox installed later); SetRequire(true) or
// SECRETMEM_REQUIRE=1 forbids the fallback.
//
// Go makes copies the binding cannot see; README.md lists them.  In short:
// string(b) and append(b, ...) beyond cap copy into the Go heap; a key held
// in an array (a [32]byte value) lives on a goroutine stack, which the
// runtime copies when it grows; keep the *Secret reachable (runtime.KeepAlive)
// for as long as its Bytes() are used, and call Destroy - the finalizer is a
// safety net, not the way to free.
package secretmem

/*
#cgo LDFLAGS: -lsecretmem
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <secretmem.h>

// getrandom(2) into p, whole; 0 or -errno.
static int sm_go_random(void *p, size_t n)
{
	size_t done = 0;
	while (done < n) {
		ssize_t r = getrandom((char *)p + done, n - done, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)r;
	}
	return 0;
}
*/
import "C"

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"
)

// Secret is a block of secret memory of a fixed size.  It is not safe to
// call Destroy concurrently with any other method; the other methods may be
// called from several goroutines.  Use it through the *Secret that New and
// Random return: a copy of the struct (c := *s) would own the same block,
// and freeing it twice aborts the program; go vet reports such copies.
type Secret struct {
	_   noCopy
	ptr unsafe.Pointer // nil once destroyed
	n   int
}

// noCopy makes go vet's copylocks check report a copied Secret (its
// methods are never called).
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

func errno(rc C.int) error { return syscall.Errno(-rc) }

// New returns n zero bytes of secret memory (libsecretmem's allocator: many
// small secrets share a page).  Errors (syscall.Errno, wrapped): EINVAL for
// n < 0; ENOMEM when memory or the memory-lock limit (RLIMIT_MEMLOCK) is
// exhausted; ENOSYS or EPERM when secret memory is unavailable and the
// fallback forbidden.
func New(n int) (*Secret, error) {
	if n < 0 {
		return nil, fmt.Errorf("secretmem.New(%d): %w", n, syscall.EINVAL)
	}
	p, err := C.secretmem_malloc(C.size_t(n))
	if p == nil {
		if err == nil {
			err = syscall.ENOMEM
		}
		return nil, fmt.Errorf("secretmem.New(%d): %w", n, err)
	}
	s := &Secret{ptr: p, n: n}
	runtime.SetFinalizer(s, (*Secret).finalize)
	return s, nil
}

// Random returns n random bytes (getrandom(2)) written straight into secret
// memory: no copy passes through the Go heap.
func Random(n int) (*Secret, error) {
	s, err := New(n)
	if err != nil {
		return nil, err
	}
	if rc := C.sm_go_random(s.ptr, C.size_t(n)); rc < 0 {
		s.Destroy()
		return nil, fmt.Errorf("secretmem.Random(%d): getrandom: %w", n, errno(rc))
	}
	return s, nil
}

func (s *Secret) live(what string) {
	if s == nil || s.ptr == nil {
		panic("secretmem: " + what + " on a destroyed Secret (use after Destroy)")
	}
}

// Bytes returns the secret's memory as a slice (len and cap n).  Writing to
// it writes secret memory.  The slice is valid until Destroy, and only while
// s stays reachable: the GC does not know that the slice belongs to s, so
// keep s alive (runtime.KeepAlive(s) after the last use, or defer
// s.Destroy()).  Panics after Destroy.
func (s *Secret) Bytes() []byte {
	s.live("Bytes")
	if s.n == 0 {
		return []byte{}
	}
	return unsafe.Slice((*byte)(s.ptr), s.n)
}

// Len is the size given to New.  Panics after Destroy.
func (s *Secret) Len() int {
	s.live("Len")
	return s.n
}

// Equal compares the contents of s and o in a time that depends on the
// length only (secretmem_memeq(3)); secrets of different lengths are
// unequal at once (the length is not secret).  Panics if either is
// destroyed.
func (s *Secret) Equal(o *Secret) bool {
	s.live("Equal")
	o.live("Equal")
	defer runtime.KeepAlive(s)
	defer runtime.KeepAlive(o)
	if s.n != o.n {
		return false
	}
	if s.n == 0 {
		return true
	}
	return C.secretmem_memeq(s.ptr, o.ptr, C.size_t(s.n)) == 1
}

// EqualBytes compares s with plain bytes, in constant time as Equal.
func (s *Secret) EqualBytes(b []byte) bool {
	s.live("EqualBytes")
	defer runtime.KeepAlive(s)
	if s.n != len(b) {
		return false
	}
	if s.n == 0 {
		return true
	}
	return C.secretmem_memeq(s.ptr, unsafe.Pointer(&b[0]), C.size_t(s.n)) == 1
}

// Destroy zeroes and frees the secret.  Any later use of s, a second
// Destroy included, panics; slices from Bytes must not be used after it.
func (s *Secret) Destroy() {
	s.live("Destroy")
	runtime.SetFinalizer(s, nil)
	C.secretmem_free(s.ptr) // zeroes the block
	s.ptr = nil
}

// finalize is the safety net for a Secret that was never destroyed.
func (s *Secret) finalize() {
	if s.ptr != nil {
		C.secretmem_free(s.ptr)
		s.ptr = nil
	}
}

// Backend tells where the secret's memory lives: "secret" in a mapping of a
// memfd_secret file, "fallback" otherwise (read from /proc/self/maps; when
// that fails, the backend new secrets get now).
func (s *Secret) Backend() string {
	s.live("Backend")
	defer runtime.KeepAlive(s)
	return backendOf(uintptr(s.ptr))
}

func backendOf(addr uintptr) string {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return DefaultBackend()
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		lohi := strings.SplitN(strings.Fields(line)[0], "-", 2)
		lo, err1 := strconv.ParseUint(lohi[0], 16, 64)
		hi, err2 := strconv.ParseUint(lohi[1], 16, 64)
		if err1 == nil && err2 == nil && uint64(addr) >= lo && uint64(addr) < hi {
			if strings.Contains(line, "/secretmem") {
				return "secret"
			}
			return "fallback"
		}
	}
	return DefaultBackend()
}

// owns reports whether p is the start of a live libsecretmem block (for the
// tests: cgo cannot be used in _test.go files).
func owns(p unsafe.Pointer) bool { return C.secretmem_owns(p) == 1 }

// Supported returns nil when secret memory is usable in this process, else
// the reason as a syscall.Errno: ENOSYS (kernel too old or feature off),
// EPERM (a seccomp filter or LSM refuses it), or a transient EMFILE, ENFILE,
// ENOMEM, EAGAIN.  It never kills the caller, even under a seccomp filter
// that would kill a direct memfd_secret call.
func Supported() error {
	if rc := C.secretmem_supported(); rc < 0 {
		return errno(rc)
	}
	return nil
}

// DefaultBackend is the backend new secrets get: "secret", "fallback" or
// "none".
func DefaultBackend() string {
	return C.GoString(C.secretmem_backend_name(C.secretmem_default_backend()))
}

// SetRequire forbids (true) or allows (false) the fallback backend for the
// whole process, overriding SECRETMEM_REQUIRE.
func SetRequire(require bool) {
	v := C.int(0)
	if require {
		v = 1
	}
	C.secretmem_set_require(v)
}

// Version is the version of the C library that is running.
func Version() string { return C.GoString(C.secretmem_version()) }

// Statistics is a snapshot of libsecretmem's figures (struct secretmem_stats; the
// fields mean what secretmem.h says).
type Statistics struct {
	BytesInUse, LiveAllocations, BytesMapped, PagesMapped uint64
	PagesFaulted, PagesReleased, Regions, RegionsCreated  uint64
	Backend                                               string
	MemlockUnlimited                                      bool
	MemlockLimit, MemlockLeft                             uint64
	SecretBytes, FallbackBytes                            uint64
	APIRegions, APIRegionBytes                            uint64
	LastFailure, LastFailureBytes, MemlockLocked          uint64
}

// Stats returns the figures of this process (secretmem_stats(3)).
func Stats() (Statistics, error) {
	var st C.struct_secretmem_stats
	if rc := C.secretmem_stats(&st); rc < 0 {
		return Statistics{}, errno(rc)
	}
	return Statistics{
		BytesInUse: uint64(st.bytes_in_use), LiveAllocations: uint64(st.live_allocations),
		BytesMapped: uint64(st.bytes_mapped), PagesMapped: uint64(st.pages_mapped),
		PagesFaulted: uint64(st.pages_faulted), PagesReleased: uint64(st.pages_released),
		Regions: uint64(st.regions), RegionsCreated: uint64(st.regions_created),
		Backend:          C.GoString(C.secretmem_backend_name(st.backend)),
		MemlockUnlimited: st.memlock_unlimited != 0,
		MemlockLimit:     uint64(st.memlock_limit), MemlockLeft: uint64(st.memlock_left),
		SecretBytes: uint64(st.secret_bytes), FallbackBytes: uint64(st.fallback_bytes),
		APIRegions: uint64(st.api_regions), APIRegionBytes: uint64(st.api_region_bytes),
		LastFailure: uint64(st.last_failure), LastFailureBytes: uint64(st.last_failure_bytes),
		MemlockLocked: uint64(st.memlock_locked),
	}, nil
}
