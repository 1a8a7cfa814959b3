// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors

// example_test.go - the example of README.md, run by go test (with a key
// file of its own).
package secretmem_test

import (
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"

	"secretmem"
)

func Example() {
	dir, _ := os.MkdirTemp("", "secretmem-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "key.bin")
	os.WriteFile(path, []byte("0123456789abcdef0123456789abcdef"), 0o600)

	key, err := secretmem.New(32) // 32 zero bytes in secret memory
	if err != nil {
		log.Fatal(err)
	}
	defer key.Destroy()         // zeroed and freed
	f, _ := os.Open(path)       // os.File is unbuffered:
	io.ReadFull(f, key.Bytes()) // file -> secret memory, no copy in Go's heap
	other, _ := secretmem.Random(32)
	fmt.Println(key.Equal(other)) // constant-time comparison
	// Output: false
}
