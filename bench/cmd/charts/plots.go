package main

import (
	"fmt"
	"image/color"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// palette colours the peers in table order: admit's two groups in blues,
// the peers in distinct hues, the naive floor in grey.
var palette = []color.Color{
	color.RGBA{0x1f, 0x4e, 0x9a, 0xff},
	color.RGBA{0x6a, 0x9f, 0xdb, 0xff},
	color.RGBA{0xd9, 0x5f, 0x02, 0xff},
	color.RGBA{0x1b, 0x9e, 0x77, 0xff},
	color.RGBA{0xe7, 0x29, 0x8a, 0xff},
	color.RGBA{0x66, 0xa6, 0x1e, 0xff},
	color.RGBA{0xe6, 0xab, 0x02, 0xff},
	color.RGBA{0x80, 0x80, 0x80, 0xff},
}

func colour(i int) color.Color { return palette[i%len(palette)] }

// barsByCase draws one group of bars per case and one bar per peer (the
// bare handler left out), at the median of unit.
func barsByCase(r *results, unit, title, file string) error {
	p := plot.New()
	p.Title.Text = title
	p.Y.Label.Text = unit
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	peers := slices.DeleteFunc(slices.Clone(r.peers), func(s string) bool { return s == "none" })
	var labels []string
	for _, c := range cases {
		labels = append(labels, c.label()+"\n"+c.run)
	}
	width := vg.Points(7)
	most := 0.0
	for i, peer := range peers {
		vs := make(plotter.Values, len(cases))
		for j, c := range cases {
			vs[j], _ = r.median(c, peer, unit) // 0 where the peer sits out
			most = max(most, vs[j])
		}
		bc, err := plotter.NewBarChart(vs, width)
		if err != nil {
			return err
		}
		bc.Color = colour(i)
		bc.LineStyle.Width = 0
		bc.Offset = vg.Length(float64(i)-float64(len(peers)-1)/2) * width
		p.Add(bc)
		p.Legend.Add(peer, bc)
	}
	p.Y.Max = most * 1.4 // room for the legend
	p.Legend.Top = true
	p.Legend.Left = true
	p.NominalX(labels...)
	return p.Save(30*vg.Centimeter, 13*vg.Centimeter, file)
}

// heapBars draws each peer's heap growth as a horizontal bar.
func heapBars(rows []heapRow, file string) error {
	p := plot.New()
	if len(rows) > 0 {
		p.Title.Text = "Heap growth after " + commas(rows[0].clients) + " distinct clients"
	}
	p.X.Label.Text = "MiB"
	p.X.Min = 0
	p.Add(plotter.NewGrid())
	labels := make([]string, len(rows))
	var at plotter.XYs
	var texts []string
	most := 0.0
	for i, x := range rows {
		j := len(rows) - 1 - i // top to bottom in table order
		mib := float64(x.growth) / (1 << 20)
		vs := make(plotter.Values, len(rows))
		vs[j] = mib
		bc, err := plotter.NewBarChart(vs, vg.Points(16))
		if err != nil {
			return err
		}
		bc.Horizontal = true
		bc.Color = colour(i)
		bc.LineStyle.Width = 0
		p.Add(bc)
		labels[j] = x.peer
		at = append(at, plotter.XY{X: mib, Y: float64(j)})
		texts = append(texts, fmt.Sprintf(" %.1f MiB", mib))
		most = max(most, mib)
	}
	values, err := plotter.NewLabels(plotter.XYLabels{XYs: at, Labels: texts})
	if err != nil {
		return err
	}
	for i := range values.TextStyle {
		values.TextStyle[i].YAlign = -0.5
	}
	p.Add(values)
	p.X.Max = most * 1.2
	p.NominalY(labels...)
	return p.Save(18*vg.Centimeter, 10*vg.Centimeter, file)
}

// storeBars draws every store figure as a horizontal bar, the bare
// statements' ceilings in grey.
func storeBars(rows []storeRow, file string) error {
	p := plot.New()
	p.Title.Text = rows[0].store + ": admit's decisions against the bare statement"
	p.X.Label.Text = "per second"
	p.X.Min = 0
	p.Add(plotter.NewGrid())
	lib := make(plotter.Values, len(rows))
	bare := make(plotter.Values, len(rows))
	var labels []string
	most := 0.0
	for i, s := range rows {
		most = max(most, s.perSec)
		j := len(rows) - 1 - i // top to bottom in file order
		if s.bare {
			bare[j] = s.perSec
		} else {
			lib[j] = s.perSec
		}
		labels = append([]string{s.label}, labels...)
	}
	for _, b := range []struct {
		vs    plotter.Values
		c     color.Color
		label string
	}{{lib, palette[0], "admit"}, {bare, palette[7], "bare statement"}} {
		bc, err := plotter.NewBarChart(b.vs, vg.Points(12))
		if err != nil {
			return err
		}
		bc.Horizontal = true
		bc.Color = b.c
		bc.LineStyle.Width = 0
		p.Add(bc)
		p.Legend.Add(b.label, bc)
	}
	p.X.Max = most * 1.3 // room for the legend
	p.Legend.Top = true
	p.NominalY(labels...)
	return p.Save(24*vg.Centimeter, vg.Length(4+0.8*float64(len(rows)))*vg.Centimeter, file)
}
