/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* t_adopt_memzero - runs test/adopt_memzero.sh (see there). */
#include "tlib.h"

int main(void)
{
	return tl_run_script("test/adopt_memzero.sh");
}
