/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * `openssl genrsa -out FILE 2048` under gdb, stopped when it reaches
 * exit_group (everything written and freed, nothing unmapped yet); a root
 * process scans its memory for the key it wrote (numbers in both byte
 * orders, the PEM text).  Control (no module): the PEM text is found (freed
 * stdio buffer and encoder buffers).  Heap mode: nothing outside the stack.
 */
#include <stdio.h>
#include <string.h>
#include "heapscan.h"
#include "tlib.h"

static int run(int heap)
{
	const char *m = heap ? "heap" : "plain";
	char outkey[300], label[80];
	struct scan_key key;
	struct gdbstop g;
	struct heap_hits h;

	snprintf(outkey, sizeof(outkey), "%s/genrsa-%s.pem", rig_tmpdir(), m);
	char *prog[] = { "openssl", "genrsa", "-out", outkey, "2048", NULL };
	heap_gdbstop_start(&g, "genrsa", heap, "catch syscall exit_group", prog);
	if (scan_key_load(&key, outkey) != 0)
		TL_FAIL("genrsa %s: cannot read the key it wrote", m);
	snprintf(label, sizeof(label), "genrsa %s, at exit_group", m);
	h = heap_scan_pid(&key, g.pid, label, heap ? NULL : "pem", heap);
	TL_CHECK(!rig_file_has(g.log, "secretmem-heap:"), "genrsa %s: the heap module complained", m);
	gdbstop_end(&g);
	scan_key_free(&key);
	fprintf(stderr, "genrsa %s: %d copies outside the stack, %d on the stack\n", m, h.other, h.stack);
	return h.other;
}

int main(void)
{
	rig_need("openssl");
	rig_need("gdb");
	run(0);
	heap_need_module("t_heap_genrsa");
	int found = run(1);
	TL_CHECK(found == 0, "heap mode: %d copies of the written key found in openssl genrsa (listed above)", found);
	printf("openssl genrsa -out: the written key found without the module, nothing under heap mode\n");
	return 0;
}
