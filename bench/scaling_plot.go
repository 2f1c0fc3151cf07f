package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// plotPanelWidth and plotHeight size a scaling PNG: one panel of this width
// per chart, at plotDPI.
const (
	plotPanelWidth = 6 * vg.Inch
	plotHeight     = 5.5 * vg.Inch
	plotDPI        = 110
)

// WriteScalingPNG draws s's panels from the medians of files, the runs of
// its points, side by side with one legend below them, as a PNG.
func WriteScalingPNG(w io.Writer, s *Scaling, files []RunFile) error {
	labels, styles := legendOrder(s)
	plots := make([]*plot.Plot, len(s.Panels))
	for i, pn := range s.Panels {
		p, err := panelPlot(s, pn, files, styles)
		if err != nil {
			return err
		}
		plots[i] = p
	}

	lg := plot.NewLegend()
	lg.Left, lg.Top = true, true
	lg.TextStyle.Font.Size = vg.Points(11)
	lg.Padding = vg.Points(4)
	for _, l := range labels {
		line, points := lineStyle(l, styles[l])
		lg.Add(l, line, points)
	}
	titleH := vg.Points(30)
	legendH := vg.Points(19*float64(len(labels)) + 16)

	img := vgimg.NewWith(vgimg.UseWH(plotPanelWidth*vg.Length(len(plots)), plotHeight+legendH+titleH), vgimg.UseDPI(plotDPI))
	dc := draw.New(img)
	title := plot.New().Title.TextStyle
	title.Font.Size = vg.Points(14)
	title.XAlign = draw.XCenter
	title.YAlign = draw.YTop
	dc.FillText(title, vg.Point{X: (dc.Min.X + dc.Max.X) / 2, Y: dc.Max.Y - vg.Points(6)}, scalingFigureTitle(s))

	charts := draw.Crop(dc, 0, 0, legendH, -titleH)
	tiles := draw.Tiles{Rows: 1, Cols: len(plots), PadX: vg.Points(20), PadLeft: vg.Points(8), PadRight: vg.Points(12), PadTop: vg.Points(4), PadBottom: vg.Points(4)}
	for i, p := range plots {
		p.Draw(tiles.At(charts, i, 0))
	}
	legend := draw.Crop(dc, vg.Points(60), 0, 0, -(plotHeight + titleH))
	lg.Draw(legend)

	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// scalingFigureTitle is the headline of s's PNG.
func scalingFigureTitle(s *Scaling) string {
	return fmt.Sprintf("minibus scaling: %s", s.Title)
}

// legendOrder lists the distinct line labels of s's panels in order, each
// with its style index, so that a label looks the same in every panel.
func legendOrder(s *Scaling) ([]string, map[string]int) {
	var labels []string
	styles := map[string]int{}
	for _, pn := range s.Panels {
		for _, l := range pn.Lines {
			if _, ok := styles[l.Label]; !ok {
				styles[l.Label] = len(labels)
				labels = append(labels, l.Label)
			}
		}
	}
	return labels, styles
}

// lineStyle is the line and the points of the line labelled label, style
// i: the baseline's lines dashed, minibus's solid.
func lineStyle(label string, i int) (*plotter.Line, *plotter.Scatter) {
	xy := plotter.XYs{{X: 1, Y: 1}}
	line, points, _ := plotter.NewLinePoints(xy)
	line.Color = plotutil.Color(i)
	line.Width = vg.Points(2)
	if strings.HasPrefix(label, BtreePeer{}.Name()) {
		line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	points.Color = plotutil.Color(i)
	points.Shape = plotutil.Shape(i)
	points.Radius = vg.Points(3.5)
	return line, points
}

// panelPlot draws one panel: x on a log scale, one line per Line of the
// panel that has figures.
func panelPlot(s *Scaling, pn Panel, files []RunFile, styles map[string]int) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.Title
	p.Title.TextStyle.Font.Size = vg.Points(12)
	p.X.Label.Text = "n = " + s.Variable + " (log scale)"
	p.Y.Label.Text = pn.YLabel
	if pn.LogY {
		p.Y.Label.Text += ", log scale"
	}
	grid := plotter.NewGrid()
	grid.Vertical.Color = color.Gray{Y: 215}
	grid.Horizontal.Color = color.Gray{Y: 215}
	p.Add(grid)
	var xs []float64
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, l := range pn.Lines {
		xy := seriesPoints(files, l.Peer, l.Key)
		if len(xy) == 0 {
			continue
		}
		line, points := lineStyle(l.Label, styles[l.Label])
		line.XYs, points.XYs = xy, xy
		p.Add(line, points)
		for _, pt := range xy {
			xs = append(xs, pt.X)
			lo, hi = min(lo, pt.Y), max(hi, pt.Y)
		}
	}
	if len(xs) == 0 {
		p.Title.Text += " (no figures)"
		return p, nil
	}
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = pointTicks(xs)
	p.X.Min, p.X.Max = minOf(xs)/1.4, maxOf(xs)*1.4
	if pn.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
		p.Y.Min, p.Y.Max = lo/1.5, hi*1.5
	} else {
		p.Y.Min, p.Y.Max = 0, hi*1.1
	}
	return p, nil
}

// seriesPoints is (x, median) for every point of files with a figure for
// key from peer, in the order of x.
func seriesPoints(files []RunFile, peer, key string) plotter.XYs {
	var xy plotter.XYs
	for _, f := range sortedPoints(files) {
		st := collect(f, peer, key)
		if len(st.vals) == 0 {
			continue
		}
		if v := median(st.vals); v > 0 && !math.IsInf(v, 0) {
			xy = append(xy, plotter.XY{X: float64(f.X), Y: v})
		}
	}
	return xy
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// pointTicks labels the x axis at the points themselves.
type pointTicks []float64

func (t pointTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for _, x := range t {
		if x >= lo && x <= hi {
			ticks = append(ticks, plot.Tick{Value: x, Label: shortNumber(x)})
		}
	}
	return ticks
}

// logTicks marks a log axis at 1, 2 and 5 times each power of ten, with
// labels at each of them when the axis spans less than three decades and
// at the powers of ten otherwise.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	wide := hi/lo > 1000
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || !wide {
				t.Label = shortNumber(v)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

// shortNumber prints v as 500, 2k, 1.5M.
func shortNumber(v float64) string {
	switch {
	case v >= 1e6:
		return trimFloat(v/1e6) + "M"
	case v >= 1e3:
		return trimFloat(v/1e3) + "k"
	case v >= 1:
		return trimFloat(v)
	default:
		return fmt.Sprintf("%.2g", v)
	}
}

func trimFloat(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
