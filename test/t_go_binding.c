/* SPDX-License-Identifier: MIT */
/* Copyright (c) 2026 the secretmem authors */
/*
 * t_go_binding - the Go binding's API tests (bindings/go, `go test .`):
 * New, Random, Bytes, Destroy and the panics after it, Equal, Supported,
 * Stats, a secret's address through garbage collections, the finalizer.
 * Skipped when no go runs here.
 */
#include "bindrun.h"

int main(void)
{
	bindrun_go(".");
}
