/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_go_scan - the Go binding's root scan (bindings/go/scantest): a key read
 * into a Secret is not found in a /proc/PID/mem scan of the process, and its
 * page answers EIO; the control (an append copy of a second key) and a
 * string(b) copy of a third are found.  Needs root and secret memory;
 * SECRETMEM_TEST_STRICT_SCAN=1 makes a skip inside go test a failure.
 */
#include <stdlib.h>
#include "bindrun.h"
#include "tlib.h"

int main(void)
{
	tl_need_root("the scan reads another process's memory");
	tl_need_secretmem();
	setenv("SECRETMEM_TEST_STRICT_SCAN", "1", 1);
	bindrun_go("./scantest");
}
