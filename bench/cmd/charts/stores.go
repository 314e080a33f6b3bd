package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// storeRow is one throughput figure from a store benchmark's output.
type storeRow struct {
	store  string  // the output file's name without extension: "postgres", "redis"
	label  string  // what was measured
	perSec float64 // median decisions, transactions or requests a second
	bare   bool    // the bare statement (pgbench, redis-benchmark): the ceiling
}

var (
	// A Go benchmark line reporting decisions/s (quota store benchmarks).
	decisionsLine = regexp.MustCompile(`^Benchmark(\S+?)(?:-\d+)?\s+\d+\s.*?([\d.e+]+) decisions/s`)
	// pgbench: "tps = 8312.456 (without initial connection time)".
	pgbenchLine = regexp.MustCompile(`^tps = ([\d.]+)`)
	// redis-benchmark, plain or --csv: "EVALSHA ...: 55012.34 requests per
	// second" or "\"EVALSHA ...\",\"55012.34\",...".
	redisLine    = regexp.MustCompile(`^\s*([^:]+?):\s+([\d.]+) requests per second`)
	redisCSVLine = regexp.MustCompile(`^"([^"]+)","([\d.]+)"`)
	// A side-by-side summary as scripts/bench-postgres and
	// scripts/bench-redis print it: an indented header whose first column
	// names the bare tool in parentheses and whose others name the store's
	// runs, each maybe followed by a ratio or share column; then rows of a
	// label, the bare rate, and each run's rate with its ratio.
	//
	//	               bare (pgbench)         single    ratio        batched    ratio
	//	distinct keys           17176          10083    0.59x          81733    4.76x
	sideHeader = regexp.MustCompile(`^\s{2,}(\S[^()]*\([^)]*\))\s{2,}(\S.*?)\s*$`)
	sideRow    = regexp.MustCompile(`^(\S.*?)\s{2,}([\d.]+(?:\s+[\d.]+[x%]?)+)\s*$`)
	columnGap  = regexp.MustCompile(`\s{2,}`)
	// Sections as scripts/bench-redis prints them: a "-- tool  unit" line,
	// then rows of a label and a rate. requests/s sections are the bare
	// tool's, decisions/s sections the store's.
	//
	//	-- redis-benchmark                              requests/s
	//	fixed script, 1 client                             41000.00
	sectionLine = regexp.MustCompile(`^-- (\S.*?)\s{2,}(requests/s|decisions/s)\s*$`)
	sectionRow  = regexp.MustCompile(`^(\S.*?)\s{2,}([\d.]+)(?:\s+\(.*\))?\s*$`)
)

// readStore reads what it recognises in one store output: Go benchmark lines
// with a decisions/s metric, and the bare tools' summary lines. Repeated
// figures with the same label give their median.
func readStore(path string) ([]storeRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	store := strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	type key struct {
		label string
		bare  bool
	}
	var order []key
	samples := map[key][]float64{}
	add := func(label string, bare bool, v string) {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return
		}
		k := key{label, bare}
		if _, ok := samples[k]; !ok {
			order = append(order, k)
		}
		samples[k] = append(samples[k], x)
	}
	var side []string    // the columns of a side-by-side summary, once seen
	var section []string // the tool and unit of the current section
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "=") || strings.HasPrefix(line, "-- ") {
			section = nil
		}
		if m := sectionLine.FindStringSubmatch(line); m != nil {
			section = m[1:]
			continue
		}
		if m := sectionRow.FindStringSubmatch(line); m != nil && section != nil {
			if section[1] == "requests/s" {
				add(section[0]+": "+m[1], true, m[2])
			} else {
				add(m[1], false, m[2])
			}
			continue
		}
		if m := sideHeader.FindStringSubmatch(line); m != nil {
			side = []string{m[1]}
			for _, c := range columnGap.Split(m[2], -1) {
				if c != "ratio" && c != "share" {
					side = append(side, c)
				}
			}
			continue
		}
		if m := sideRow.FindStringSubmatch(line); m != nil && side != nil {
			var rates []string
			for _, f := range strings.Fields(m[2]) {
				if !strings.HasSuffix(f, "x") && !strings.HasSuffix(f, "%") {
					rates = append(rates, f)
				}
			}
			for i, r := range rates[:min(len(rates), len(side))] {
				add(m[1]+", "+side[i], i == 0, r)
			}
			continue
		}
		if m := decisionsLine.FindStringSubmatch(line); m != nil {
			add(m[1], false, m[2])
		} else if m := pgbenchLine.FindStringSubmatch(line); m != nil {
			add("pgbench (bare statement)", true, m[1])
		} else if m := redisCSVLine.FindStringSubmatch(line); m != nil && m[1] != "test" {
			add("redis-benchmark "+m[1], true, m[2])
		} else if m := redisLine.FindStringSubmatch(line); m != nil {
			add("redis-benchmark "+m[1], true, m[2])
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	var rows []storeRow
	for _, k := range order {
		s := samples[k]
		slices.Sort(s)
		m := s[len(s)/2]
		if len(s)%2 == 0 {
			m = (s[len(s)/2-1] + s[len(s)/2]) / 2
		}
		rows = append(rows, storeRow{store, k.label, m, k.bare})
	}
	return rows, nil
}
