/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_rust_scan - the Rust binding's root scan (bindings/rust/secretmem-check/
 * tests/scan.rs): a key read straight into a SecretBox is not found in a
 * /proc/PID/mem scan of the process, and its page answers EIO; the control,
 * a Vec<u8> copy of a second key, is found.  Needs root and secret memory;
 * SECRETMEM_TEST_STRICT_SCAN=1 makes a skip inside cargo test a failure.
 */
#include <stddef.h>
#include <stdlib.h>
#include "bindrun.h"
#include "tlib.h"

int main(void)
{
	static const char *const args[] = { "-p", "secretmem-check", "--test", "scan", "--", "--nocapture", NULL };

	tl_need_root("the scan reads another process's memory");
	tl_need_secretmem();
	setenv("SECRETMEM_TEST_STRICT_SCAN", "1", 1);
	bindrun_cargo(args, 0);
}
