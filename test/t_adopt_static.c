/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* t_adopt_static - runs test/adopt_static.sh (see there). */
#include "tlib.h"

int main(void)
{
	return tl_run_script("test/adopt_static.sh");
}
