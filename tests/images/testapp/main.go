// Command testapp is the HTTP server of the k1s.local/testapp:1 test image,
// with knobs the end-to-end tests turn to make a container misbehave.
//
// Endpoints (on -port, default 8080):
//
//	/          the hostname
//	/healthz   200 "ok", or 500 once /fail was called or FAIL_HEALTH is set
//	/fail      make /healthz fail from now on
//	/recover   make /healthz succeed again
//	/ready     503 until -ready-after has passed, then 200
//	/env       the environment, one KEY=value a line, sorted
//	/exit      exit at once with ?code=N (default 0)
//
// Every flag can also be set by the environment variable in capitals
// (-exit-after is EXIT_AFTER): -stdout and -stderr print lines at start,
// -exit-code with -exit-after exits with that code after that many seconds,
// -alloc-mib allocates and touches that much memory and keeps it,
// -term-delay waits that many seconds after SIGTERM before exiting 0.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

type options struct {
	port       int
	stdout     string
	stderr     string
	exitCode   int
	exitAfter  float64
	allocMiB   int
	failHealth bool
	readyAfter float64
	termDelay  float64
}

// envDefault returns the value of the flag's environment variable.
func envDefault(name string) string {
	return os.Getenv(strings.ToUpper(strings.ReplaceAll(name, "-", "_")))
}

func parseOptions(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("testapp", flag.ContinueOnError)
	intFlag := func(p *int, name string, def int, usage string) {
		if v := envDefault(name); v != "" {
			if n, err := strconv.Atoi(v); err == nil {
				def = n
			}
		}
		fs.IntVar(p, name, def, usage)
	}
	floatFlag := func(p *float64, name string, usage string) {
		def := 0.0
		if v := envDefault(name); v != "" {
			if n, err := strconv.ParseFloat(v, 64); err == nil {
				def = n
			}
		}
		fs.Float64Var(p, name, def, usage)
	}
	intFlag(&o.port, "port", 8080, "HTTP port")
	fs.StringVar(&o.stdout, "stdout", envDefault("stdout"), "lines to print to stdout at start (\\n-separated)")
	fs.StringVar(&o.stderr, "stderr", envDefault("stderr"), "lines to print to stderr at start (\\n-separated)")
	intFlag(&o.exitCode, "exit-code", 0, "exit code used with -exit-after")
	floatFlag(&o.exitAfter, "exit-after", "exit after this many seconds (0: never)")
	intFlag(&o.allocMiB, "alloc-mib", 0, "MiB of memory to allocate and keep")
	fs.BoolVar(&o.failHealth, "fail-health", envDefault("fail-health") != "", "make /healthz fail from the start")
	floatFlag(&o.readyAfter, "ready-after", "seconds before /ready succeeds")
	floatFlag(&o.termDelay, "term-delay", "seconds to wait after SIGTERM before exiting")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	return o, nil
}

// server holds the state the handlers share.
type server struct {
	failing atomic.Bool
	start   time.Time
	opts    options
	exit    func(code int)
}

func (s *server) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		host, _ := os.Hostname()
		io.WriteString(w, host+"\n")
	})
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if s.failing.Load() {
			http.Error(w, "failing", http.StatusInternalServerError)
			return
		}
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, r *http.Request) {
		s.failing.Store(true)
		fmt.Println("testapp: /healthz will fail from now on")
		io.WriteString(w, "failing\n")
	})
	mux.HandleFunc("/recover", func(w http.ResponseWriter, r *http.Request) {
		s.failing.Store(false)
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		if time.Since(s.start) < seconds(s.opts.readyAfter) {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
	mux.HandleFunc("/env", func(w http.ResponseWriter, r *http.Request) {
		env := os.Environ()
		sort.Strings(env)
		io.WriteString(w, strings.Join(env, "\n")+"\n")
	})
	mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
		code, _ := strconv.Atoi(r.URL.Query().Get("code"))
		io.WriteString(w, "exiting\n")
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		fmt.Printf("testapp: exiting with code %d as asked\n", code)
		s.exit(code)
	})
	return mux
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// ballast keeps allocated memory reachable.
var ballast [][]byte

func main() {
	opts, err := parseOptions(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	s := &server{start: time.Now(), opts: opts, exit: os.Exit}
	s.failing.Store(opts.failHealth)

	for _, l := range splitLines(opts.stdout) {
		fmt.Fprintln(os.Stdout, l)
	}
	for _, l := range splitLines(opts.stderr) {
		fmt.Fprintln(os.Stderr, l)
	}
	if opts.allocMiB > 0 {
		for range opts.allocMiB {
			b := make([]byte, 1<<20)
			for i := 0; i < len(b); i += 4096 {
				b[i] = 1
			}
			ballast = append(ballast, b)
		}
		fmt.Printf("testapp: allocated %d MiB\n", opts.allocMiB)
	}
	if opts.exitAfter > 0 {
		go func() {
			time.Sleep(seconds(opts.exitAfter))
			fmt.Printf("testapp: exiting with code %d after %gs\n", opts.exitCode, opts.exitAfter)
			os.Exit(opts.exitCode)
		}()
	}

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		sig := <-sigs
		fmt.Printf("testapp: received %s, exiting\n", sig)
		time.Sleep(seconds(opts.termDelay))
		os.Exit(0)
	}()

	addr := ":" + strconv.Itoa(opts.port)
	fmt.Printf("testapp: listening on %s\n", addr)
	if err := http.ListenAndServe(addr, s.routes()); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(os.Stderr, "testapp: %v\n", err)
		os.Exit(1)
	}
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.ReplaceAll(s, `\n`, "\n"), "\n")
}
