/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * bindrun.h - run the Rust and Go bindings' own test suites (cargo test in
 * bindings/rust, go test in bindings/go) against the library of
 * $SECRETMEM_BUILD, with every output under the build directory and no
 * network.  Used by t_rust_binding, t_rust_scan, t_go_binding, t_go_scan.
 */
#ifndef SECRETMEM_BINDRUN_H
#define SECRETMEM_BINDRUN_H

/*
 * Run `cargo test --offline ARGS...` (args: NULL-terminated) in
 * bindings/rust, echo its output and exit: 0 when it passed, 1 when it
 * failed, 77 (the last line says why) in a sanitizer build, when no cargo
 * runs here, or when the library is not built.  With clippy non-zero, then
 * `cargo clippy --all-targets -- -D warnings` when clippy is installed.
 * Never returns.
 */
__attribute__((noreturn)) void bindrun_cargo(const char *const args[], int clippy);

/* The same for `go test -v PKG` in bindings/go (pkg: "." or "./scantest"). */
__attribute__((noreturn)) void bindrun_go(const char *pkg);

#endif
