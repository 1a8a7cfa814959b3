/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/* t_inst_prefix - runs test/inst_prefix.sh (see there). */
#include "tlib.h"

int main(void)
{
	return tl_run_script("test/inst_prefix.sh");
}
