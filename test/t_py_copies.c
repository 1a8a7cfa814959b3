/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_py_copies - the table "Which calls copy a secret" of python/README.md,
 * row by row: each call in it runs in a child interpreter on a fresh key in
 * a Secret, and a root scan (/proc/PID/mem) must find what the row says -
 * nothing (hmac.digest, pbkdf2_hmac, readinto, recv_into, os.write, ...),
 * the key (bytes(view), hex(), str decoding, a kept hash object, an
 * Ed25519 key object, ...), or a TypeError (hmac.new, PyNaCl's SecretBox);
 * the rows that say an object keeps the view are checked for close()
 * refused while it lives (python/tests/test_copies.py).
 */
#include <stddef.h>
#include "pyrun.h"

int main(void)
{
	static const char *const modules[] = { "test_copies", NULL };

	pyrun_unittest(modules);
}
