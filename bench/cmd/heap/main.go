// Command heap measures how much each peer's heap grows after one request
// from each of 1,048,576 distinct client addresses, and prints a table.
//
// Each peer runs in a child process of its own, so that one peer's garbage,
// goroutines and map sizes never show in another's figure.
//
// Usage:
//
//	go run ./cmd/heap [-clients 1048576] [-tsv out/heap.tsv] > results/heap.md
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/admitgo/admit/bench"
)

func main() {
	clients := flag.Int("clients", 1<<20, "distinct client addresses, one request each")
	peer := flag.String("peer", "", "measure this peer in this process and print one TSV row (used by the parent)")
	tsv := flag.String("tsv", "", "also write the table as tab-separated values to this file")
	flag.Parse()
	if *peer != "" {
		if err := measure(os.Stdout, *peer, *clients); err != nil {
			fmt.Fprintln(os.Stderr, "heap:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(os.Stdout, *clients, *tsv); err != nil {
		fmt.Fprintln(os.Stderr, "heap:", err)
		os.Exit(1)
	}
}

// row is one peer's result, as a child prints it.
type row struct {
	peer     string
	version  string
	bounded  bool
	growth   int64 // bytes
	admitted int
}

// run measures every peer in a child process and prints the table.
func run(out io.Writer, clients int, tsvPath string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var rows []row
	for _, p := range bench.Peers() {
		cmd := exec.Command(self, "-peer", p.Name, "-clients", strconv.Itoa(clients))
		cmd.Stderr = os.Stderr
		b, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		r, err := parse(string(b))
		if err != nil {
			return fmt.Errorf("%s: %w", p.Name, err)
		}
		rows = append(rows, r)
	}
	if tsvPath != "" {
		var sb strings.Builder
		sb.WriteString("peer\tversion\tbounded\tclients\tadmitted\tgrowth_bytes\n")
		for _, r := range rows {
			fmt.Fprintf(&sb, "%s\t%s\t%t\t%d\t%d\t%d\n", r.peer, r.version, r.bounded, clients, r.admitted, r.growth)
		}
		if err := os.WriteFile(tsvPath, []byte(sb.String()), 0o644); err != nil {
			return err
		}
	}
	return table(out, rows, clients)
}

// table prints rows as a Markdown document with one aligned table.
func table(out io.Writer, rows []row, clients int) error {
	head := []string{"peer", "version", "bounded by design", "admitted", "heap growth", "bytes per address"}
	cells := [][]string{head}
	for _, r := range rows {
		bounded := "no"
		if r.bounded {
			bounded = "yes"
		}
		cells = append(cells, []string{
			r.peer, r.version, bounded, commas(int64(r.admitted)),
			fmt.Sprintf("%.1f MiB", float64(r.growth)/(1<<20)),
			strconv.FormatInt(r.growth/int64(clients), 10),
		})
	}
	w := bufio.NewWriter(out)
	fmt.Fprintf(w, "# Heap growth after %s distinct clients\n\n", commas(int64(clients)))
	fmt.Fprintf(w, "One request from each address; runtime.GC and ReadMemStats before and after, %s, %s/%s.\n\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH)
	writeTable(w, cells, []bool{false, false, false, true, true, true})
	return w.Flush()
}

// writeTable writes cells as a Markdown table with padded columns; right
// aligns the columns marked true.
func writeTable(w io.Writer, cells [][]string, right []bool) {
	width := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], len(c), 3)
		}
	}
	line := func(row []string) {
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-len(c))
			if right[i] {
				fmt.Fprintf(w, "| %s%s ", pad, c)
			} else {
				fmt.Fprintf(w, "| %s%s ", c, pad)
			}
		}
		fmt.Fprintln(w, "|")
	}
	line(cells[0])
	for i := range width {
		dashes := strings.Repeat("-", width[i])
		if right[i] {
			dashes = dashes[1:] + ":"
		}
		fmt.Fprintf(w, "| %s ", dashes)
	}
	fmt.Fprintln(w, "|")
	for _, row := range cells[1:] {
		line(row)
	}
}

// measure sends one request from each of n addresses through the named peer
// at an ample budget and prints one TSV row: peer, version, bounded,
// admitted, heap growth in bytes.
func measure(out io.Writer, name string, n int) error {
	var p bench.Peer
	for _, q := range bench.Peers() {
		if q.Name == name {
			p = q
		}
	}
	if p.New == nil {
		return fmt.Errorf("no peer %q", name)
	}
	h, stop, err := p.New(bench.OK, bench.Ample)
	if err != nil {
		return err
	}
	w := bench.NewDiscard()
	r := bench.Request("")
	admitted := 0
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range n {
		r.RemoteAddr = bench.Client(uint32(i))
		w.Reset()
		h.ServeHTTP(w, r)
		if w.Status() == http.StatusOK {
			admitted++
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(h)
	stop()
	growth := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	_, err = fmt.Fprintf(out, "%s\t%s\t%t\t%d\t%d\n", p.Name, version(p.Module), p.Bounded, admitted, growth)
	return err
}

// parse reads the row measure printed.
func parse(s string) (row, error) {
	f := strings.Split(strings.TrimSpace(s), "\t")
	if len(f) != 5 {
		return row{}, fmt.Errorf("unexpected output %q", s)
	}
	admitted, err1 := strconv.Atoi(f[3])
	growth, err2 := strconv.ParseInt(f[4], 10, 64)
	if err1 != nil || err2 != nil {
		return row{}, fmt.Errorf("unexpected output %q", s)
	}
	return row{peer: f[0], version: f[1], bounded: f[2] == "true", admitted: admitted, growth: growth}, nil
}

// version returns the version of module path in this binary, "(this
// module)" for admit itself, replaced by the checkout.
func version(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "?"
	}
	for _, m := range info.Deps {
		if m.Path == path {
			if m.Replace != nil {
				return "(this checkout)"
			}
			return m.Version
		}
	}
	return "?"
}

// commas formats n with thousands separators: 1,048,576.
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + commas(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
