package main

import "syscall"

// syscallRusage is the process's CPU time so far.
type syscallRusage struct{ ru syscall.Rusage }

func (r *syscallRusage) read() { _ = syscall.Getrusage(syscall.RUSAGE_SELF, &r.ru) }

func (r *syscallRusage) seconds() float64 {
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(r.ru.Utime) + tv(r.ru.Stime)
}
