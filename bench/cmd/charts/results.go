package main

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// A benchmark case: the column of the tables and the group of the charts.
type benchCase struct {
	name string // "clients=1024", "churn", "rejecting"
	run  string // "serial" or "parallel"
}

func (c benchCase) label() string {
	switch {
	case strings.HasPrefix(c.name, "clients="):
		n, _ := strconv.ParseInt(strings.TrimPrefix(c.name, "clients="), 10, 64)
		return commas(n)
	}
	return c.name
}

// cases is the order of columns and chart groups.
var cases = func() []benchCase {
	var cs []benchCase
	for _, run := range []string{"serial", "parallel"} {
		for _, n := range []string{"clients=1", "clients=1024", "clients=65536", "churn", "rejecting"} {
			cs = append(cs, benchCase{n, run})
		}
	}
	return cs
}()

// results holds every sample of every metric, by case and peer.
type results struct {
	peers   []string // in order of first appearance
	samples map[benchCase]map[string]map[string][]float64
	header  []string // goos, goarch, cpu lines
}

// median returns the median of the samples of unit for peer in case c, and
// false when there are none.
func (r *results) median(c benchCase, peer, unit string) (float64, bool) {
	s := slices.Clone(r.samples[c][peer][unit])
	if len(s) == 0 {
		return 0, false
	}
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2], true
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2, true
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+(.+)$`)

// readBench reads go test -bench output named as in bench_test.go.
func readBench(path string) (*results, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := &results{samples: map[benchCase]map[string]map[string][]float64{}}
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		for _, h := range []string{"goos:", "goarch:", "cpu:"} {
			if strings.HasPrefix(line, h) && !slices.Contains(r.header, line) {
				r.header = append(r.header, line)
			}
		}
		m := benchLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		c, peer, ok := parseName(m[1])
		if !ok {
			continue
		}
		if !seen[peer] {
			seen[peer] = true
			r.peers = append(r.peers, peer)
		}
		f := strings.Fields(m[2])
		for i := 0; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			if r.samples[c] == nil {
				r.samples[c] = map[string]map[string][]float64{}
			}
			if r.samples[c][peer] == nil {
				r.samples[c][peer] = map[string][]float64{}
			}
			r.samples[c][peer][f[i+1]] = append(r.samples[c][peer][f[i+1]], v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(r.peers) == 0 {
		return nil, fmt.Errorf("%s: no benchmark results", path)
	}
	return r, nil
}

// parseName splits "BenchmarkAllowed/clients=1024/run=serial/peer=httprate".
func parseName(name string) (benchCase, string, bool) {
	parts := strings.Split(name, "/")
	kv := map[string]string{}
	for _, p := range parts[1:] {
		k, v, ok := strings.Cut(p, "=")
		if !ok {
			return benchCase{}, "", false
		}
		kv[k] = v
	}
	c := benchCase{run: kv["run"]}
	switch parts[0] {
	case "BenchmarkAllowed":
		c.name = "clients=" + kv["clients"]
	case "BenchmarkChurn":
		c.name = "churn"
	case "BenchmarkRejecting":
		c.name = "rejecting"
	default:
		return benchCase{}, "", false
	}
	return c, kv["peer"], kv["peer"] != "" && c.run != ""
}

// heapRow is one line of cmd/heap's TSV.
type heapRow struct {
	peer, version     string
	bounded           bool
	clients, admitted int64
	growth            int64
}

func readHeap(path string) ([]heapRow, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var rows []heapRow
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if i == 0 {
			continue // header
		}
		if len(f) != 6 {
			return nil, fmt.Errorf("%s:%d: want 6 fields, got %d", path, i+1, len(f))
		}
		clients, err1 := strconv.ParseInt(f[3], 10, 64)
		admitted, err2 := strconv.ParseInt(f[4], 10, 64)
		growth, err3 := strconv.ParseInt(f[5], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil {
			return nil, fmt.Errorf("%s:%d: bad number", path, i+1)
		}
		rows = append(rows, heapRow{f[0], f[1], f[2] == "true", clients, admitted, growth})
	}
	return rows, nil
}

// commas formats n with thousands separators: 1,048,576.
func commas(n int64) string {
	if n < 0 {
		return "-" + commas(-n)
	}
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
