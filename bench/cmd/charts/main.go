// Command charts turns the raw outputs of bench/run into the committed
// results: Markdown tables of the peer comparison, SVG charts, and the
// measured section of docs/performance.md.
//
// Usage:
//
//	go run ./cmd/charts -bench out/bench.txt -heap out/heap.tsv \
//		-stores out/postgres.txt,out/redis.txt -machine out/machine.txt \
//		-img ../docs/img -summary results/summary.md -doc ../docs/performance.md
//
// Missing store outputs are skipped. In -doc, only the text between the
// lines "<!-- bench:begin -->" and "<!-- bench:end -->" is replaced.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

func main() {
	benchPath := flag.String("bench", "out/bench.txt", "raw go test -bench output")
	heapPath := flag.String("heap", "out/heap.tsv", "heap table as written by cmd/heap -tsv")
	stores := flag.String("stores", "", "comma-separated store benchmark outputs; missing files are skipped")
	machine := flag.String("machine", "", "a file describing the machine, quoted in the tables")
	img := flag.String("img", "../docs/img", "directory for the charts")
	summary := flag.String("summary", "results/summary.md", "Markdown tables of the comparison")
	doc := flag.String("doc", "", "a document whose bench:begin/bench:end section gets the tables")
	format := flag.String("format", "svg", "chart format: svg or png")
	flag.Parse()
	ext = "." + *format
	if err := run(*benchPath, *heapPath, *stores, *machine, *img, *summary, *doc); err != nil {
		fmt.Fprintln(os.Stderr, "charts:", err)
		os.Exit(1)
	}
}

// ext is the charts' file extension, which picks their format.
var ext = ".svg"

func run(benchPath, heapPath, stores, machinePath, img, summaryPath, docPath string) error {
	res, err := readBench(benchPath)
	if err != nil {
		return err
	}
	heap, err := readHeap(heapPath)
	if err != nil {
		return err
	}
	var machine string
	if machinePath != "" {
		b, err := os.ReadFile(machinePath)
		if err != nil {
			return err
		}
		machine = strings.Join(strings.Split(strings.TrimSpace(string(b)), "\n"), "; ")
	}
	if err := os.MkdirAll(img, 0o755); err != nil {
		return err
	}
	charts := []struct {
		file string
		draw func(string) error
	}{
		{"peers-ns", func(f string) error { return barsByCase(res, "ns/op", "ns per request (median)", f) }},
		{"peers-allocs", func(f string) error { return barsByCase(res, "allocs/op", "allocations per request (median)", f) }},
		{"peers-heap", func(f string) error { return heapBars(heap, f) }},
	}
	for _, c := range charts {
		if err := c.draw(filepath.Join(img, c.file+ext)); err != nil {
			return fmt.Errorf("%s: %w", c.file+ext, err)
		}
	}
	var storeRows []storeRow
	var storeCharts []string
	for _, path := range strings.Split(stores, ",") {
		if path == "" {
			continue
		}
		rows, err := readStore(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			fmt.Fprintf(os.Stderr, "charts: %s: no figures recognised\n", path)
			continue
		}
		name := "stores-" + rows[0].store + ext
		if err := storeBars(rows, filepath.Join(img, name)); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		storeRows = append(storeRows, rows...)
		storeCharts = append(storeCharts, name)
	}
	var body bytes.Buffer
	writeSummary(&body, res, heap, storeRows, machine, 3)
	for _, name := range storeCharts {
		fmt.Fprintf(&body, "![Shared store against the bare statement](img/%s)\n\n", name)
	}
	var sum bytes.Buffer
	sum.WriteString("# Peer comparison: measured figures\n\n")
	sum.WriteString("Written by bench/run; see docs/performance.md for the method.\n\n")
	writeSummary(&sum, res, heap, storeRows, machine, 2)
	if err := os.WriteFile(summaryPath, append(bytes.TrimRight(sum.Bytes(), "\n"), '\n'), 0o644); err != nil {
		return err
	}
	if docPath != "" {
		return splice(docPath, body.Bytes())
	}
	return nil
}

// splice replaces the lines between the bench:begin and bench:end markers of
// the file at path with body.
func splice(path string, body []byte) error {
	const begin, end = "<!-- bench:begin -->\n", "<!-- bench:end -->\n"
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	i, j := bytes.Index(old, []byte(begin)), bytes.Index(old, []byte(end))
	if i < 0 || j < i {
		return fmt.Errorf("%s: no %q ... %q section", path, strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	var b bytes.Buffer
	b.Write(old[:i+len(begin)])
	b.WriteString("\n")
	b.Write(bytes.TrimRight(body, "\n"))
	b.WriteString("\n\n")
	b.Write(old[j:])
	return os.WriteFile(path, b.Bytes(), 0o644)
}
