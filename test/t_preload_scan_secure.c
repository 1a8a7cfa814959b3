/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * SECRETMEM_OPENSSL=secure (the default): OpenSSL's secure heap is secret
 * memory and RSA keys keep no cached Montgomery copies of p and q (see
 * preload/rsa.c); after a real TLS handshake, a root process reading every
 * readable region of `openssl s_server` (RSA-2048 and Ed25519 keys) finds
 * no private key material, and neither gcore's dump nor the core file
 * of a real crash (SIGSEGV) contains any.  t_preload_scan_control proves that
 * the same scans find the keys without the module.
 */
#include <stdio.h>
#include "scan.h"
#include "tlib.h"

int main(void)
{
	rig_need("openssl");
	rig_need("gcore");
	tl_need_secretmem();
	int found = rig_server_scan("rsa", "secure", 0);
	found += rig_server_scan("ed25519", "secure", 0);
	TL_CHECK(found == 0, "mode secure: %d copies of key material found (listed above)", found);
	printf("secure: no key material in s_server's memory or core dumps\n");
	return 0;
}
