// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors

// addr.go - the addresses the scan child prints (kept out of the test file
// so that its use of unsafe is in one place).
package scantest

import (
	"unsafe"

	"secretmem"
)

func secretAddr(s *secretmem.Secret) uintptr { return uintptr(unsafe.Pointer(&s.Bytes()[0])) }

func bytesAddr(b []byte) uintptr { return uintptr(unsafe.Pointer(&b[0])) }
