package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// writeSummary writes the measured figures as Markdown, with headings at the
// given level.
func writeSummary(w io.Writer, r *results, heap []heapRow, stores []storeRow, machine string, level int) {
	h := strings.Repeat("#", level)
	runs := 0
	for _, byPeer := range r.samples {
		for _, byUnit := range byPeer {
			runs = max(runs, len(byUnit["ns/op"]))
		}
	}
	fmt.Fprintf(w, "Medians of %d runs of each benchmark", runs)
	if machine != "" {
		fmt.Fprintf(w, "; %s", machine)
	}
	fmt.Fprint(w, ". Columns are the number of rotating clients, then the churn case (every request a new client) and the rejecting case (one client over its budget); peer none is the handler alone. A dash: the peer sits out that case.\n\n")
	for _, t := range []struct{ unit, title, format string }{
		{"ns/op", "Nanoseconds per request", "%.0f"},
		{"allocs/op", "Allocations per request", "%.0f"},
		{"B/op", "Bytes allocated per request", "%.0f"},
	} {
		for _, run := range []string{"serial", "parallel"} {
			fmt.Fprintf(w, "%s %s, %s\n\n", h, t.title, run)
			cells := [][]string{{"peer"}}
			for _, c := range cases {
				if c.run == run {
					cells[0] = append(cells[0], c.label())
				}
			}
			for _, p := range r.peers {
				row := []string{p}
				for _, c := range cases {
					if c.run != run {
						continue
					}
					v, ok := r.median(c, p, t.unit)
					if !ok {
						row = append(row, "-")
						continue
					}
					row = append(row, fmt.Sprintf(t.format, v))
				}
				cells = append(cells, row)
			}
			writeTable(w, 1, cells)
			fmt.Fprintln(w)
		}
	}
	if len(heap) > 0 {
		fmt.Fprintf(w, "%s Heap growth after %s distinct clients\n\n", h, commas(heap[0].clients))
		cells := [][]string{{"peer", "version", "bounded by design", "admitted", "heap growth (MiB)", "bytes per client"}}
		for _, x := range heap {
			bounded := "no"
			if x.bounded {
				bounded = "yes"
			}
			cells = append(cells, []string{
				x.peer, x.version, bounded, commas(x.admitted),
				fmt.Sprintf("%.1f", float64(x.growth)/(1<<20)),
				strconv.FormatInt(x.growth/x.clients, 10),
			})
		}
		writeTable(w, 3, cells)
		fmt.Fprintln(w)
	}
	if len(stores) > 0 {
		fmt.Fprintf(w, "%s Store throughput against the bare statement\n\n", h)
		cells := [][]string{{"store", "measurement", "per second"}}
		for _, s := range stores {
			cells = append(cells, []string{s.store, s.label, commas(int64(s.perSec))})
		}
		writeTable(w, 2, cells)
		fmt.Fprintln(w)
	}
}

// writeTable writes cells as a Markdown table with padded columns; the first
// left columns are left-aligned, the others (numbers) right-aligned.
func writeTable(w io.Writer, left int, cells [][]string) {
	width := make([]int, len(cells[0]))
	for _, row := range cells {
		for i, c := range row {
			width[i] = max(width[i], len(c), 3)
		}
	}
	line := func(row []string) {
		for i, c := range row {
			pad := strings.Repeat(" ", width[i]-len(c))
			if i < left {
				fmt.Fprintf(w, "| %s%s ", c, pad)
			} else {
				fmt.Fprintf(w, "| %s%s ", pad, c)
			}
		}
		fmt.Fprintln(w, "|")
	}
	line(cells[0])
	for i := range width {
		if i < left {
			fmt.Fprintf(w, "| %s ", strings.Repeat("-", width[i]))
		} else {
			fmt.Fprintf(w, "| %s: ", strings.Repeat("-", width[i]-1))
		}
	}
	fmt.Fprintln(w, "|")
	for _, row := range cells[1:] {
		line(row)
	}
}
