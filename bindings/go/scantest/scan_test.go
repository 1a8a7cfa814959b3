// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors

// Package scantest holds the root scan of the Go binding: this test reads
// every readable mapping of a child process (this test binary again, in
// child mode) through /proc/PID/mem, as test/scan.c does for the C tests.
//
// The child holds three 32-byte keys, each read from a file with os.File
// (unbuffered: the kernel copies straight into the slice):
//
//	key     read into a Secret's Bytes()                       - must NOT be found
//	control read into a Secret, then copied with append        - must be found
//	string  read into a Secret, then converted with string(b)  - must be found
//
// The control proves that the scan sees the Go heap; "string" shows the
// trap README.md warns of.  The key's page must be refused to the scanner
// with EIO (the scan reached it).  Needs root; skipped otherwise, or a
// failure when SECRETMEM_TEST_STRICT_SCAN=1 (set by test/t_go_scan).
package scantest

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"secretmem"
)

const frag = 16

func TestMain(m *testing.M) {
	if os.Getenv("SECRETMEM_GO_SCAN_CHILD") == "1" {
		if err := child(os.Args[len(os.Args)-3:]); err != nil {
			fmt.Fprintln(os.Stderr, "scan child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func readInto(path string, s *secretmem.Secret) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.ReadFull(f, s.Bytes())
	return err
}

// child: the process that is scanned.  Args: KEY CONTROL STRING files.
func child(paths []string) error {
	var s [3]*secretmem.Secret
	for i := range s {
		var err error
		if s[i], err = secretmem.New(32); err != nil {
			return err
		}
		if err = readInto(paths[i], s[i]); err != nil {
			return err
		}
	}
	control := append([]byte(nil), s[1].Bytes()...) // the control: a Go heap copy
	str := string(s[2].Bytes())                     // the trap: another copy
	fmt.Printf("ready %#x %#x %s\n", secretAddr(s[0]), bytesAddr(control), s[0].Backend())
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	check, err := secretmem.New(32)
	if err != nil {
		return err
	}
	if err := readInto(paths[0], check); err != nil {
		return err
	}
	fmt.Printf("intact %v %d %d\n", s[0].Equal(check), len(control), len(str))
	runtime.KeepAlive(control)
	runtime.KeepAlive(str)
	for _, x := range s {
		x.Destroy()
	}
	return nil
}

type hit struct {
	needle, frag int
	addr         uint64
	mapping      string
}

type refused struct {
	lo, hi  uint64
	err     error
	mapping string
}

// scan reads every readable mapping of pid and finds the fragments of the
// needles.
func scan(pid int, needles [][]byte) (hits []hit, ref []refused, regions int, nbytes uint64, err error) {
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return
	}
	mem, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return
	}
	defer mem.Close()
	const chunk = 4 << 20
	buf := make([]byte, chunk+frag)
	for _, line := range strings.Split(strings.TrimSpace(string(maps)), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[1][0] != 'r' {
			continue
		}
		lohi := strings.SplitN(f[0], "-", 2)
		lo, _ := strconv.ParseUint(lohi[0], 16, 64)
		hi, _ := strconv.ParseUint(lohi[1], 16, 64)
		if hi-lo > 64<<30 {
			continue
		}
		regions++
		for at := lo; at < hi; {
			want := hi - at
			if want > chunk+frag {
				want = chunk + frag
			}
			n, rerr := mem.ReadAt(buf[:want], int64(at))
			if rerr != nil && !errors.Is(rerr, io.EOF) {
				ref = append(ref, refused{lo, hi, rerr, line})
				break
			}
			nbytes += uint64(n)
			data := buf[:n]
			for i, nd := range needles {
				for k := 0; k+frag <= len(nd); k += frag {
					for off := 0; ; {
						j := bytes.Index(data[off:], nd[k:k+frag])
						if j < 0 {
							break
						}
						a := at + uint64(off+j)
						dup := false
						for _, h := range hits {
							dup = dup || (h.needle == i && h.frag == k/frag && h.addr == a)
						}
						if !dup {
							hits = append(hits, hit{i, k / frag, a, line})
						}
						off += j + 1
					}
				}
			}
			if uint64(n) < want || at+uint64(n) >= hi {
				break
			}
			at += uint64(n - frag) // overlap by one fragment
		}
	}
	return
}

// whole reports whether needle i (32 bytes: 2 fragments) is found whole at a.
func whole(hits []hit, i int, a uint64) bool {
	var f0, f1 bool
	for _, h := range hits {
		f0 = f0 || (h.needle == i && h.frag == 0 && h.addr == a)
		f1 = f1 || (h.needle == i && h.frag == 1 && h.addr == a+frag)
	}
	return f0 && f1
}

func skipOrFail(t *testing.T, reason string) {
	if os.Getenv("SECRETMEM_TEST_STRICT_SCAN") == "1" {
		t.Fatalf("%s (and SECRETMEM_TEST_STRICT_SCAN=1)", reason)
	}
	t.Skip(reason)
}

func TestScanSecretOnlyInSecretMemory(t *testing.T) {
	if os.Geteuid() != 0 {
		skipOrFail(t, "needs root: the scan reads another process's memory")
	}
	if err := secretmem.Supported(); err != nil {
		skipOrFail(t, "no secret memory here: "+err.Error())
	}
	dir := t.TempDir()
	names := []string{"key", "control", "string"}
	needles := make([][]byte, 3)
	var paths []string
	for i, name := range names {
		needles[i] = make([]byte, 32)
		if _, err := rand.Read(needles[i]); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, needles[i], 0o600); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	cmd := exec.Command(os.Args[0], append([]string{"-test.run=^$"}, paths...)...)
	cmd.Env = append(os.Environ(), "SECRETMEM_GO_SCAN_CHILD=1")
	cmd.Stderr = os.Stderr
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outPipe)
	line, _ := out.ReadString('\n')
	var keyAddr, copyAddr uint64
	var backend string
	if _, err := fmt.Sscanf(line, "ready %v %v %s", &keyAddr, &copyAddr, &backend); err != nil {
		cmd.Process.Kill()
		t.Fatalf("the child did not start: %q: %v", line, err)
	}
	hits, ref, regions, nbytes, err := scan(cmd.Process.Pid, needles)
	io.WriteString(in, "go\n")
	in.Close()
	after, _ := io.ReadAll(out)
	werr := cmd.Wait()
	if err != nil {
		t.Fatal("scan:", err)
	}
	count := make([]int, 3)
	for _, h := range hits {
		count[h.needle]++
		t.Logf("hit: %s fragment %d at %#x in %s", names[h.needle], h.frag, h.addr, h.mapping)
	}
	t.Logf("scan of pid %d: %d readable mappings, %d bytes read, %d refused; fragments of %d bytes found: key %d, control %d, string %d",
		cmd.Process.Pid, regions, nbytes, len(ref), frag, count[0], count[1], count[2])
	if werr != nil || strings.TrimSpace(string(after)) != "intact true 32 32" {
		t.Fatalf("the child: %v, %q", werr, after)
	}
	if backend != "secret" {
		t.Fatalf("the key's Secret is in %q memory", backend)
	}
	if !whole(hits, 1, copyAddr) {
		t.Fatal("control: the append copy was not found: the scan does not work")
	}
	if count[2] < 2 {
		t.Fatal("the string(b) copy was not found")
	}
	if count[0] != 0 {
		t.Fatal("the key held in a Secret was found in readable memory")
	}
	var kr *refused
	for i := range ref {
		if ref[i].lo <= keyAddr && keyAddr < ref[i].hi {
			kr = &ref[i]
		}
	}
	if kr == nil || !errors.Is(kr.err, syscall.EIO) || !strings.Contains(kr.mapping, "/secretmem") {
		t.Fatalf("the key's mapping was not refused with EIO: %+v", kr)
	}
}
