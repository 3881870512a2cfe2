package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/k1s/k1s/tests/bench/benchenv"
)

// monitor is `nft monitor new rules` inside a namespace: the kernel
// announces each rule of a transaction as it commits it, and nft prints
// it whole (anonymous maps inlined) on a line of its own, e.g.
//
//	add rule ip k1s-proxy service-…-bench/svc-7/tcp/http meta l4proto tcp dnat ip to numgen random mod 10 map { 0 : 10.244.0.71 . 8080, … }
//
// Each line is stamped when the benchmark reads it.
type monitor struct {
	proc  *benchenv.Child
	lines chan monLine
}

type monLine struct {
	at   time.Time
	text string
}

func startMonitor(ns *benchenv.Netns, log string) (*monitor, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	proc, err := benchenv.StartChildOut("nft monitor", log, w, ns.Exec("nft", "monitor", "new", "rules")...)
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	m := &monitor{proc: proc, lines: make(chan monLine, 1<<16)}
	go func() {
		defer r.Close()
		defer close(m.lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			m.lines <- monLine{at: time.Now(), text: sc.Text()}
		}
	}()
	// nft has subscribed once it runs; give it a moment to get there.
	time.Sleep(200 * time.Millisecond)
	if proc.Exited() {
		return nil, fmt.Errorf("nft monitor exited: %s", proc.Tail())
	}
	return m, nil
}

// drain drops the lines read so far.
func (m *monitor) drain() {
	for {
		select {
		case _, ok := <-m.lines:
			if !ok {
				return
			}
		default:
			return
		}
	}
}

// wait returns when a line matching match was read, or the zero time
// after timeout.
func (m *monitor) wait(ctx context.Context, timeout time.Duration, match func(string) bool) (time.Time, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-t.C:
			return time.Time{}, nil
		case l, ok := <-m.lines:
			if !ok {
				return time.Time{}, fmt.Errorf("nft monitor ended: %s", m.proc.Tail())
			}
			if strings.HasPrefix(l.text, "add rule ") && match(l.text) {
				return l.at, nil
			}
		}
	}
}
