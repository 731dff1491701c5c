package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// dashboardBench times the dashboard in Chromium against a daemon whose
// palace holds fill drawers: the overview's first render on a cold load
// (a fresh browser profile each time: navigation start to the view's
// performance mark), and the jobs view while 1,000 job frames a second
// arrive (the longest gap between animation frames, and the job reads
// the coalescing leaves).
func dashboardBench(bin, dir string, fill, clients int) error {
	browser := os.Getenv("LOCI_CHROMIUM")
	if browser == "" {
		p, err := exec.LookPath("chromium")
		if err != nil {
			return fmt.Errorf("no Chromium: install it with apt-get install chromium, or set LOCI_CHROMIUM")
		}
		browser = p
	}
	d, err := startConfigured(bin, filepath.Join(dir, "static"), filepath.Join(dir, "web.toml"), "[web]\nenable = true\n")
	if err != nil {
		return err
	}
	defer d.stop()
	if n := stored(d.addr); n < fill {
		if _, err := load(d.addr, "/api/wings/bench/rooms/big/drawers", fill-n, clients, 12); err != nil {
			return err
		}
	}
	base := "http://" + d.addr + "/ui/"
	newBrowser := func() (context.Context, func(), error) {
		opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
			chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1280, 800))
		actx, c1 := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, c2 := chromedp.NewContext(actx)
		if err := chromedp.Run(ctx); err != nil {
			c2()
			c1()
			return nil, nil, err
		}
		return ctx, func() { c2(); c1() }, nil
	}
	var renders, charts []time.Duration
	for range 5 {
		ctx, done, err := newBrowser()
		if err != nil {
			return err
		}
		var ms, chart float64
		tctx, c := context.WithTimeout(ctx, 30*time.Second)
		err = chromedp.Run(tctx, chromedp.Navigate(base+"#/overview"),
			chromedp.Poll(`performance.getEntriesByName('loci:view:overview').length > 0 && performance.getEntriesByName('loci:chart').length > 0`, nil),
			chromedp.Evaluate(`performance.getEntriesByName('loci:view:overview')[0].startTime`, &ms),
			chromedp.Evaluate(`performance.getEntriesByName('loci:chart')[0].startTime`, &chart))
		c()
		done()
		if err != nil {
			return err
		}
		renders = append(renders, time.Duration(ms*float64(time.Millisecond)))
		charts = append(charts, time.Duration(chart*float64(time.Millisecond)))
	}
	fmt.Printf("dashboard: overview first render on a palace of %d drawers, cold load: p50 %s, max %s; its chart drawn at p50 %s (5 fresh browsers)\n",
		stored(d.addr), pct(renders, 0.5).Round(time.Millisecond), pct(renders, 1).Round(time.Millisecond), pct(charts, 0.5).Round(time.Millisecond))
	var filed []time.Duration
	for range 20 {
		t0 := time.Now()
		resp, err := client.Get("http://" + d.addr + "/api/stats/filed")
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		filed = append(filed, time.Since(t0))
	}
	fmt.Printf("dashboard: GET /api/stats/filed (14 days, every drawer inside): p50 %s, max %s\n", pct(filed, 0.5).Round(time.Microsecond), pct(filed, 1).Round(time.Microsecond))

	// The jobs view under 1,000 job frames a second for 5 seconds.
	for range 3 {
		resp, err := client.Post("http://"+d.addr+"/api/jobs", "application/json", strings.NewReader(`{"type":"demo","steps":1}`))
		if err != nil {
			return err
		}
		resp.Body.Close()
	}
	ctx, done, err := newBrowser()
	if err != nil {
		return err
	}
	defer done()
	var out struct {
		Pushed     int     `json:"pushed"`
		MaxGapMS   float64 `json:"max_gap_ms"`
		P99GapMS   float64 `json:"p99_gap_ms"`
		P50GapMS   float64 `json:"p50_gap_ms"`
		JobReads   int     `json:"job_reads"`
		AnimFrames int     `json:"anim_frames"`
	}
	tctx, c := context.WithTimeout(ctx, 60*time.Second)
	defer c()
	err = chromedp.Run(tctx, chromedp.Navigate(base+"#/jobs"),
		chromedp.Poll(`document.querySelectorAll('tr[data-job]').length > 0 && !!window.lociLive`, nil),
		chromedp.Evaluate(`new Promise((resolve) => {
			const ids = [...document.querySelectorAll('tr[data-job]')].map((r) => r.dataset.job);
			const gaps = []; let last = performance.now(), pushed = 0, running = true;
			const tick = (t) => { gaps.push(t - last); last = t; if (running) requestAnimationFrame(tick); };
			requestAnimationFrame(tick);
			// The resource-timing buffer keeps 250 entries unless told more.
			performance.setResourceTimingBufferSize(1000000);
			const jobReads = () => performance.getEntriesByType('resource').filter((e) => /\/api\/jobs([/?]|$)/.test(new URL(e.name).pathname + new URL(e.name).search)).length;
			const before = jobReads();
			const t0 = performance.now();
			const timer = setInterval(() => {
				// 1,000 a second: the timer fires at most every few ms, so push
				// what is due since the start.
				const due = Math.floor((performance.now() - t0));
				while (pushed < due) { window.lociLive.push({kind: 'job', action: 'updated', id: ids[pushed % ids.length], job_kind: 'demo', status: 'running'}); pushed++; }
				if (performance.now() - t0 > 5000) {
					clearInterval(timer); running = false;
					setTimeout(() => {
						const reads = jobReads() - before;
						gaps.sort((a, b) => a - b);
						resolve({pushed, max_gap_ms: gaps[gaps.length - 1], p99_gap_ms: gaps[Math.floor(gaps.length * 0.99)], p50_gap_ms: gaps[gaps.length >> 1], job_reads: reads, anim_frames: gaps.length});
					}, 300);
				}
			}, 4);
		})`, &out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }))
	if err != nil {
		return err
	}
	fmt.Printf("dashboard: jobs view under %d job frames in 5 s (1,000/s): %d animation frames, gap p50 %.0f ms, p99 %.0f ms, longest %.0f ms; %d job reads (coalesced per animation frame)\n",
		out.Pushed, out.AnimFrames, out.P50GapMS, out.P99GapMS, out.MaxGapMS, out.JobReads)
	return nil
}
