package main_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The dashboard's search view in a real browser says who said what a
// transcript hit matched, and when (issue 27, point 5); a note's hit says
// nothing of the kind.
func TestDashboardShowsATranscriptHitsTurn(t *testing.T) {
	// Not parallel: it writes artifacts/screens/failed.png, as TestDashboardInABrowser does.
	browser := chromium(t)
	shots := screens(t)
	d, _ := withConfig(t, "[web]\nenable = true\n")
	t0 := time.Now().UTC().Truncate(time.Second).Add(-30 * time.Minute)
	_, content := conversation(t0)
	if r := d.do("POST", "/api/wings/app/rooms/sessions/drawers", map[string]any{"content": content,
		"source": map[string]any{"kind": "transcript", "uri": "/home/a/.claude/projects/-work-app/s1.jsonl", "agent": "claude-code"}}); r.status != 201 {
		t.Fatalf("file the transcript: %s", r.raw)
	}
	if r := d.do("POST", "/api/notes", map[string]any{"wing": "app", "room": "notes", "content": "The dashboard port is written on the whiteboard."}); r.status != 201 {
		t.Fatalf("note: %s", r.raw)
	}
	asked := t0.Add(2 * time.Minute).Format(time.RFC3339)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(browser), chromedp.NoSandbox,
		chromedp.Flag("disable-gpu", true), chromedp.Flag("disable-quic", true), chromedp.WindowSize(1280, 800))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting %s: %v", browser, err)
	}
	tctx, c := context.WithTimeout(ctx, 60*time.Second)
	defer c()
	var buf []byte
	// Two hits: the transcript's says who spoke and when, the note's
	// nothing of the kind.
	check := fmt.Sprintf(`(() => {
		const hits = document.querySelectorAll('#results .hit');
		const turns = document.querySelectorAll('#results .hit .hit-turn');
		if (hits.length !== 2 || turns.length !== 1) return false;
		const turn = turns[0], at = turn.querySelector('time');
		const shown = new Date(%q).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' });
		return turn.textContent === 'said by user · ' + shown && !!at && at.getAttribute('datetime') === %q &&
			turn.querySelector('b').textContent === 'user' && turn.closest('.hit').textContent.includes('Use 7411 then.');
	})()`, asked, asked)
	err := chromedp.Run(tctx, chromedp.Navigate("http://"+d.addr+"/ui/#/search?ranking=lexical&q=which+port+should+the+dashboard+listen+on"),
		chromedp.Poll(check, nil, chromedp.WithPollingTimeout(25*time.Second)), chromedp.FullScreenshot(&buf, 100))
	if err != nil {
		var page string
		_ = chromedp.Run(ctx, chromedp.FullScreenshot(&buf, 100), chromedp.Evaluate(`document.getElementById('view').innerText`, &page))
		_ = os.WriteFile(filepath.Join(shots, "failed.png"), buf, 0o644)
		t.Fatalf("the search view: %v\n%s", err, page)
	}
	if err := os.WriteFile(filepath.Join(shots, "search-transcript.png"), buf, 0o644); err != nil {
		t.Fatal(err)
	}
}
