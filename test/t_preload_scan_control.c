/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * The scanner works: without the preload module - and with it in mode off -
 * a root process reading /proc/PID/mem of `openssl s_server` after a real
 * TLS handshake finds the private key (RSA d, p, q; the Ed25519 key), and so
 * do scans of gcore's dump and of the core file of a real crash.  Without
 * this control, "nothing found" under the module would prove nothing.
 */
#include <stdio.h>
#include "scan.h"
#include "tlib.h"

int main(void)
{
	rig_need("openssl");
	rig_need("gcore");
	rig_server_scan("rsa", NULL, 1);
	rig_server_scan("ed25519", NULL, 1);
	/* SECRETMEM_OPENSSL=off: the module is loaded but changes nothing. */
	rig_server_scan("rsa", "off", 1);
	printf("control: the scanner finds the keys of an unprotected s_server and in its cores\n");
	return 0;
}
