// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors

// secretmem_test.go - the API of the Go binding: New, Random, Bytes,
// Destroy and its panics, Equal, Supported, Stats, and that a secret's
// bytes stay where they are through garbage collections.
//
// Where the kernel has no secret memory the tests still run (on the
// fallback backend) and say so; with SECRETMEM_TEST_REQUIRE_KERNEL=1 (CI)
// that is a failure.
package secretmem

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

func wantBackend(t *testing.T) string {
	if err := Supported(); err != nil {
		if os.Getenv("SECRETMEM_TEST_REQUIRE_KERNEL") == "1" {
			t.Fatalf("no secret memory (%v) and SECRETMEM_TEST_REQUIRE_KERNEL=1", err)
		}
		t.Logf("no secret memory here (%v): checked on the fallback", err)
		return "fallback"
	}
	return "secret"
}

func mustPanic(t *testing.T, want string, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Fatalf("no panic; want %q", want)
		}
		if msg, _ := r.(string); !strings.Contains(msg, want) {
			t.Fatalf("panic %v; want %q", r, want)
		}
	}()
	f()
}

func TestSupportedAndStats(t *testing.T) {
	b := wantBackend(t)
	if DefaultBackend() != b {
		t.Fatalf("DefaultBackend %q, want %q", DefaultBackend(), b)
	}
	s, err := Random(32)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Destroy()
	st, err := Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.LiveAllocations < 1 || st.BytesInUse < 32 || st.Backend != b {
		t.Fatalf("stats: %+v", st)
	}
	if b == "secret" && st.SecretBytes == 0 {
		t.Fatalf("no secret bytes: %+v", st)
	}
	if Version() != "1.1.0" {
		t.Fatalf("version %q", Version())
	}
}

func TestNewBytesDestroy(t *testing.T) {
	b := wantBackend(t)
	s, err := New(64)
	if err != nil {
		t.Fatal(err)
	}
	buf := s.Bytes()
	if len(buf) != 64 || cap(buf) != 64 || s.Len() != 64 {
		t.Fatalf("len %d cap %d", len(buf), cap(buf))
	}
	for i, x := range buf {
		if x != 0 {
			t.Fatalf("byte %d is %d, not zero", i, x)
		}
	}
	copy(buf, "a key in secret memory")
	if string(s.Bytes()[:5]) != "a key" {
		t.Fatal("write through Bytes() lost")
	}
	if s.Backend() != b {
		t.Fatalf("backend %q, want %q", s.Backend(), b)
	}
	p := unsafe.Pointer(&buf[0])
	if !owns(p) {
		t.Fatal("the bytes are not a libsecretmem block")
	}
	s.Destroy()
	if owns(p) {
		t.Fatal("the block is still live after Destroy")
	}
	mustPanic(t, "Bytes on a destroyed Secret (use after Destroy)", func() { s.Bytes() })
	mustPanic(t, "Destroy on a destroyed Secret", func() { s.Destroy() })
	mustPanic(t, "Len on a destroyed Secret", func() { s.Len() })
	o, _ := New(1)
	defer o.Destroy()
	mustPanic(t, "Equal on a destroyed Secret", func() { o.Equal(s) })

	z, err := New(0)
	if err != nil || len(z.Bytes()) != 0 {
		t.Fatalf("New(0): %v", err)
	}
	z.Destroy()
}

func TestErrors(t *testing.T) {
	if _, err := New(-1); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("New(-1): %v", err)
	}
	if _, err := New(1 << 60); !errors.Is(err, syscall.ENOMEM) {
		t.Fatalf("New(1<<60): %v", err)
	}
}

func TestEqual(t *testing.T) {
	wantBackend(t)
	a, _ := Random(32)
	b, _ := Random(32)
	c, _ := New(32)
	d, _ := Random(31)
	defer func() { a.Destroy(); b.Destroy(); c.Destroy(); d.Destroy() }()
	copy(c.Bytes(), a.Bytes())
	if a.Equal(b) || !a.Equal(c) || a.Equal(d) || !a.Equal(a) {
		t.Fatal("Equal is wrong")
	}
	if !a.EqualBytes(c.Bytes()) || a.EqualBytes(b.Bytes()) || a.EqualBytes(nil) {
		t.Fatal("EqualBytes is wrong")
	}
	zero := 0
	for _, x := range a.Bytes() {
		if x == 0 {
			zero++
		}
	}
	if zero == 32 {
		t.Fatal("Random gave zeros")
	}
}

// The GC never moves or copies a secret: its address and contents survive
// collections and stack growth of the goroutine that holds it.
func TestNotMovedByGC(t *testing.T) {
	wantBackend(t)
	s, _ := Random(32)
	defer s.Destroy()
	addr := uintptr(unsafe.Pointer(&s.Bytes()[0]))
	want := append([]byte(nil), s.Bytes()...) // a test's copy, on purpose
	var grow func(int) byte
	grow = func(n int) byte {
		var pad [256]byte
		pad[n%256] = byte(n)
		if n == 0 {
			return pad[0]
		}
		return grow(n-1) + pad[n%256]
	}
	for i := 0; i < 20; i++ {
		garbage := make([][]byte, 1000)
		for j := range garbage {
			garbage[j] = make([]byte, 1024)
		}
		grow(2000) // moves this goroutine's stack
		runtime.GC()
	}
	if uintptr(unsafe.Pointer(&s.Bytes()[0])) != addr || !s.EqualBytes(want) {
		t.Fatal("the secret moved or changed")
	}
}

// The finalizer frees a Secret that was dropped without Destroy (a safety
// net only: when it runs is up to the GC).
func TestFinalizerIsASafetyNet(t *testing.T) {
	wantBackend(t)
	before, _ := Stats()
	func() {
		for i := 0; i < 100; i++ {
			if _, err := New(100); err != nil {
				t.Fatal(err)
			}
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		st, _ := Stats()
		if st.LiveAllocations <= before.LiveAllocations {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("finalizers did not free the secrets: %d live, %d before", st.LiveAllocations, before.LiveAllocations)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// codeLines: the code of each line (before a // comment), trimmed.
func codeLines(text string) map[string]bool {
	out := map[string]bool{}
	for _, l := range strings.Split(text, "\n") {
		if l = strings.TrimSpace(strings.SplitN(l, "//", 2)[0]); l != "" {
			out[l] = true
		}
	}
	return out
}

// The Go example of the top README.md is made of lines of Example() in
// example_test.go, which go test runs.
func TestReadmeExample(t *testing.T) {
	top, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skipf("../../README.md: %v (not in the source tree)", err)
	}
	m := regexp.MustCompile("(?s)\n## Go\n.*?```go\n(.*?)```").FindSubmatch(top)
	if m == nil {
		t.Fatal("no go example in README.md's Go section")
	}
	ex, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	ours := codeLines(string(ex))
	lines := codeLines(string(m[1]))
	if len(lines) < 3 || len(lines) > 10 {
		t.Fatalf("README.md's Go example has %d lines", len(lines))
	}
	for l := range lines {
		if !ours[l] {
			t.Errorf("README.md's Go example line %q is not in example_test.go", l)
		}
	}
}

// A Secret copied by value would own the same C block twice: go vet reports
// the copy (the noCopy field), run here on a module that makes one.
func TestVetReportsACopy(t *testing.T) {
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module copier\n\ngo 1.19\n\nrequire secretmem v0.0.0\n\nreplace secretmem => " + here + "\n",
		"main.go": "package main\n\nimport \"secretmem\"\n\nfunc main() {\n\ts, _ := secretmem.New(8)\n\tc := *s\n\t_ = c\n}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "vet", ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "copies lock value") {
		t.Fatalf("go vet did not report the copy of a Secret (%v):\n%s", err, out)
	}
}
