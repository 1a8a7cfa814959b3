/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_rust_binding - the Rust binding's tests (bindings/rust): `cargo test
 * --offline` without the root scan (t_rust_scan runs it): the safe API
 * (secretmem/tests/api.rs) and alloc-fork, a program whose global allocator
 * is secretmem::Allocator, which threads and forks
 * (secretmem-check/tests/global_alloc.rs); then `cargo clippy -D warnings`
 * when clippy is installed.  Skipped when no cargo runs here.
 */
#include <stddef.h>
#include "bindrun.h"

int main(void)
{
	static const char *const args[] = { "--", "--skip", "scan_", NULL };

	bindrun_cargo(args, 1);
}
