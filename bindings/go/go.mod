// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors
// bindings/go/go.mod - the Go binding of libsecretmem: cgo and the standard
// library only, no module to download.
module secretmem

go 1.19
