// SPDX-License-Identifier: MIT
// Copyright (c) 2026 the secretmem authors

// Command bench times the Go binding (not run by make check): New(32) +
// Destroy against make([]byte, 32) + zeroing, in interleaved rounds.
//
//	go run ./bench [ROUNDS]      (from bindings/go; environment in README.md)
//
// Each round runs both sides once, in alternating order, and gives the
// ratio secretmem/baseline of that round, in CPU time (getrusage: the
// process's, the GC's work included) and in wall time.  Printed: the median
// and the range (min..max) over the rounds of the time per operation and of
// the ratio.  Never a best-of-N.
package main

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"syscall"
	"time"

	"secretmem"
)

var sink []byte // makes the baseline's slice escape to the heap

func cpuNow() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type sample struct{ cpu, wall float64 } // ns per operation

func timeit(iters int, f func()) sample {
	c0, t0 := cpuNow(), time.Now()
	for i := 0; i < iters; i++ {
		f()
	}
	wall, cpu := time.Since(t0), cpuNow()-c0
	return sample{float64(cpu) / float64(iters), float64(wall) / float64(iters)}
}

func secret() {
	s, err := secretmem.New(32)
	if err != nil {
		panic(err)
	}
	s.Bytes()[31] = 1
	s.Destroy()
}

func plain() {
	b := make([]byte, 32)
	b[31] = 1
	for i := range b {
		b[i] = 0
	}
	sink = b
}

func medianRange(v []float64) (med, lo, hi float64) {
	sort.Float64s(v)
	n := len(v)
	med = v[n/2]
	if n%2 == 0 {
		med = (v[n/2-1] + v[n/2]) / 2
	}
	return med, v[0], v[n-1]
}

func main() {
	rounds := 21
	if len(os.Args) > 1 {
		rounds, _ = strconv.Atoi(os.Args[1])
	}
	if err := secretmem.Supported(); err != nil {
		fmt.Fprintf(os.Stderr, "bench: no secret memory here (%v): the figures would be the fallback's\n", err)
		os.Exit(1)
	}
	const iters = 1000000
	timeit(iters/10, secret)
	timeit(iters/10, plain)
	var s, p []sample
	for r := 0; r < rounds; r++ {
		if r%2 == 0 {
			s = append(s, timeit(iters, secret))
			p = append(p, timeit(iters, plain))
		} else {
			p = append(p, timeit(iters, plain))
			s = append(s, timeit(iters, secret))
		}
	}
	fmt.Printf("secretmem %s (Go binding), %d rounds, interleaved\n", secretmem.Version(), rounds)
	fmt.Printf("new32: New(32)+Destroy vs make([]byte, 32)+zeroing (%d rounds):\n", rounds)
	for _, what := range []string{"CPU", "wall"} {
		get := func(x sample) float64 { return x.cpu }
		if what == "wall" {
			get = func(x sample) float64 { return x.wall }
		}
		var a, b, ratio []float64
		for i := range s {
			a = append(a, get(s[i]))
			b = append(b, get(p[i]))
			ratio = append(ratio, get(s[i])/get(p[i]))
		}
		am, al, ah := medianRange(a)
		bm, bl, bh := medianRange(b)
		rm, rl, rh := medianRange(ratio)
		fmt.Printf("  %-4s %-16s %9.1f ns/op (range %.1f..%.1f)\n", what, "New+Destroy", am, al, ah)
		fmt.Printf("       %-16s %9.1f ns/op (range %.1f..%.1f)\n", "make+zeroing", bm, bl, bh)
		fmt.Printf("       ratio            %9.2fx (range %.2f..%.2f), per round\n", rm, rl, rh)
	}
}
