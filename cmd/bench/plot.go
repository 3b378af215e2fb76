package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// writePlots writes latency.svg (histograms) and throughput.svg (answered
// questions/s by concurrency) to dir.
func writePlots(dir string, m *measured) error {
	var send, answer []time.Duration
	for _, s := range m.tgLat {
		send, answer = append(send, s.send), append(answer, s.answer)
	}
	type series struct {
		title string
		ds    []time.Duration
	}
	all := []series{
		{"Telegram: request → sendMessage", send},
		{"Telegram: tap → the agent has the answer", answer},
	}
	if len(m.web) > 0 {
		low, high := m.web[0], m.web[len(m.web)-1]
		all = append(all, series{fmt.Sprintf("Web page: ask → the agent has the answer, %d at once", low.c), low.lat})
		if high.c != low.c {
			all = append(all, series{fmt.Sprintf("Web page: ask → the agent has the answer, %d at once", high.c), high.lat})
		}
	}
	var plots [][]*plot.Plot
	for _, s := range all {
		if len(s.ds) == 0 {
			continue
		}
		p, err := histogram(s.title, s.ds)
		if err != nil {
			return err
		}
		plots = append(plots, []*plot.Plot{p})
	}
	if len(plots) > 0 {
		const w, h = 7 * vg.Inch, 2.6 * vg.Inch
		img := vgsvg.New(w, h*vg.Length(len(plots)))
		tiles := draw.Tiles{Rows: len(plots), Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
			PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 2 * vg.Millimeter}
		canvases := plot.Align(plots, tiles, draw.New(img))
		for i := range plots {
			plots[i][0].Draw(canvases[i][0])
		}
		if err := writeSVG(filepath.Join(dir, "latency.svg"), img); err != nil {
			return err
		}
	}
	if len(m.web) == 0 {
		return nil
	}
	return throughput(filepath.Join(dir, "throughput.svg"), m.web, m.redisOps)
}

// histogram of ds in milliseconds, up to the 99.5th percentile (the rest
// counted in the last bin, as the title says).
func histogram(title string, ds []time.Duration) (*plot.Plot, error) {
	top := msf(pct(ds, 99.5))
	vals := make(plotter.Values, len(ds))
	over := 0
	for i, d := range ds {
		v := msf(d)
		if v > top {
			v, over = top, over+1
		}
		vals[i] = v
	}
	if lo := msf(pct(ds, 0)); top-lo < 0.01 {
		vals = append(vals, lo+0.01) // a histogram needs a range
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("%s\n%d questions, p50 %s, p99 %s", title, len(ds), fmtDur(pct(ds, 50)), fmtDur(pct(ds, 99)))
	if over > 0 {
		p.Title.Text += fmt.Sprintf("; the %d above %s in the last bin", over, fmtMS(top))
	}
	p.X.Label.Text = "ms"
	p.Y.Label.Text = "questions"
	hist, err := plotter.NewHist(vals, 50)
	if err != nil {
		return nil, fmt.Errorf("bench: histogram: %w", err)
	}
	hist.FillColor = color.RGBA{R: 70, G: 110, B: 180, A: 255}
	p.Add(hist)
	return p, nil
}

// throughput plots answered questions/s against the agents asking at once,
// with the goal: 0.9 × the Redis-bound ceiling (redis-benchmark's ops/s ÷
// the commands per question of the best level), when known.
func throughput(path string, levels []level, redisOps float64) error {
	p := plot.New()
	p.Title.Text = "Web page path, 1 replica: answered questions/s by concurrency"
	p.X.Label.Text = "agents asking at once"
	p.Y.Label.Text = "answered questions/s"
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	xys := make(plotter.XYs, len(levels))
	goalQPS := goalCeiling * redisOps / peakLevel(levels).redis.cmds
	if math.IsNaN(goalQPS) || math.IsInf(goalQPS, 0) {
		goalQPS = 0
	}
	top := goalQPS
	for i, l := range levels {
		xys[i] = plotter.XY{X: float64(l.c), Y: l.qps()}
		ticks = append(ticks, plot.Tick{Value: float64(l.c), Label: strconv.Itoa(l.c)})
		top = max(top, l.qps())
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = float64(levels[0].c)/1.4, float64(levels[len(levels)-1].c)*1.4
	p.Y.Min, p.Y.Max = 0, top*1.3 // room for the legend above the goal
	p.Y.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		ticks := plot.DefaultTicks{}.Ticks(lo, hi)
		for i := range ticks {
			if ticks[i].Label != "" {
				ticks[i].Label = group(ticks[i].Value, 0)
			}
		}
		return ticks
	})
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("bench: throughput plot: %w", err)
	}
	goal := plotter.NewFunction(func(float64) float64 { return goalQPS })
	goal.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
	goal.Color = color.RGBA{R: 200, G: 60, B: 60, A: 255}
	p.Add(line, points, goal)
	p.Legend.Add("answered/s", line, points)
	p.Legend.Add(fmt.Sprintf("goal (%.1f × the Redis-bound ceiling: %s/s)", goalCeiling, group(goalQPS, 0)), goal)
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.YOffs = -vg.Points(6)
	return p.Save(7*vg.Inch, 4*vg.Inch, path)
}

func writeSVG(path string, img *vgsvg.Canvas) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := img.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
