package main_test

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// freePort is a TCP port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// withConfig starts a daemon on a configuration file holding text.
func withConfig(t *testing.T, text string, extraEnv ...string) (*daemon, string) {
	t.Helper()
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	if err := os.WriteFile(cfg, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return start(t, home, palace, append([]string{"LOCI_CONFIG=" + cfg}, extraEnv...)...), cfg
}

// eventually polls cond until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mineJobs lists the mine jobs.
func mineJobs(t *testing.T, d *daemon) []map[string]any {
	t.Helper()
	r := d.do("GET", "/api/jobs?kind=mine&limit=200", nil)
	var out []map[string]any
	list, _ := r.body["jobs"].([]any)
	for _, j := range list {
		if m, ok := j.(map[string]any); ok && m["kind"] == "mine" {
			out = append(out, m)
		}
	}
	return out
}

func githubSign(secret, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// Triggers through the CLI and REST: created disabled, bad settings
// refused naming the key with the file unchanged, enable checking every
// prerequisite, a schedule that does not fire on enable, fire with its
// trigger frame, a hand edit of the file picked up within seconds, and
// removal.
func TestTriggersThroughCLIAndREST(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	d, cfg := withConfig(t, fmt.Sprintf(`
[webhook]
enable = true
port = %d

[miners.docs]
locator = %q
enabled = true
`, freePort(t), root))

	out, errOut, code := d.cli("", "trigger", "set", "nightly", "--miner", "docs", "--type", "schedule", "-s", "every=1h")
	if code != 0 || !strings.Contains(out, "trigger nightly created: disabled") {
		t.Fatalf("trigger set: %d %s %s", code, out, errOut)
	}
	before, _ := os.ReadFile(cfg)
	for _, c := range []struct {
		args    []string
		mention string
	}{
		{[]string{"--type", "schedule", "-s", "every=1ms"}, "settings.every"},
		{[]string{"--type", "schedule", "-s", "every=1h", "-s", "colour=red"}, "settings.colour"},
		{[]string{"--type", "webhook", "-s", "prefix=ghp_16C7e42F292c6912E7710c838347Ae178B4a"}, "settings.prefix"},
		{[]string{"--type", "cron"}, "type"},
		{[]string{"--type", "watch", "-s", "path=relative"}, `settings.path: "relative" is relative`},
	} {
		_, errOut, code := d.cli("", append([]string{"trigger", "set", "bad", "--miner", "docs"}, c.args...)...)
		if code == 0 || !strings.Contains(errOut, "loci::trigger::invalid") || !strings.Contains(errOut, c.mention) {
			t.Errorf("trigger set %v: %d %s", c.args, code, errOut)
		}
	}
	if after, _ := os.ReadFile(cfg); string(after) != string(before) {
		t.Fatalf("a refused trigger changed the file:\n%s", after)
	}
	if r := d.do("PUT", "/api/triggers/Bad", map[string]any{"miner": "docs", "type": "schedule", "settings": map[string]any{"every": "1h"}}); r.status != 400 || r.code() != "loci::trigger::invalid" {
		t.Fatalf("an uppercase name: %d %s", r.status, r.raw)
	}

	// A webhook without its secret cannot be enabled: 409 naming what it needs.
	if r := d.do("PUT", "/api/triggers/hook", map[string]any{"miner": "docs", "type": "webhook"}); r.status != 201 {
		t.Fatalf("put hook: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/triggers/hook/enable", nil); r.status != 409 || r.code() != "loci::trigger::not_activatable" || !strings.Contains(r.raw, "credential") {
		t.Fatalf("enable without a secret: %d %s", r.status, r.raw)
	}
	if r := d.do("POST", "/api/triggers/nightly/fire", nil); r.status != 409 || r.code() != "loci::trigger::disabled" {
		t.Fatalf("fire while disabled: %d %s", r.status, r.raw)
	}

	out, errOut, code = d.cli("", "trigger", "enable", "nightly")
	if code != 0 || !strings.Contains(out, "trigger nightly: active") {
		t.Fatalf("enable: %d %s %s", code, out, errOut)
	}
	if s, _ := os.ReadFile(cfg); !strings.Contains(string(s), "[triggers.nightly]\nminer = \"docs\"\ntype = \"schedule\"\nenabled = true") {
		t.Fatalf("the file after enable:\n%s", s)
	}
	r := d.do("GET", "/api/triggers/nightly", nil)
	due, _ := time.Parse(time.RFC3339Nano, get[string](r.body, "next_due"))
	if get[bool](r.body, "running") != true || time.Until(due) < 59*time.Minute || get[float64](r.body, "counters", "fired") != 0 {
		t.Fatalf("a schedule just enabled: %s", r.raw)
	}

	// fire asks now; its trigger frame is on the event stream.
	req, _ := http.NewRequest("GET", "http://"+d.addr+"/api/events", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	frames := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			frames <- sc.Text()
		}
	}()
	out, errOut, code = d.cli("", "trigger", "fire", "nightly")
	if code != 0 || !strings.Contains(out, "queued: job ") && !strings.Contains(out, "coalesced: job ") {
		t.Fatalf("fire: %d %s %s", code, out, errOut)
	}
	deadline := time.After(10 * time.Second)
	for found := false; !found; {
		select {
		case l := <-frames:
			found = strings.Contains(l, `"kind":"trigger"`) && strings.Contains(l, `"id":"nightly"`) && strings.Contains(l, `"status":"queued"`)
		case <-deadline:
			t.Fatal("no trigger frame after fire")
		}
	}
	if r := d.do("GET", "/api/triggers/nightly", nil); get[float64](r.body, "counters", "fired") != 1 || get[string](r.body, "last_job") == "" {
		t.Fatalf("counters after fire: %s", r.raw)
	}

	// A hand edit of the file is picked up within seconds.
	f, _ := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	fmt.Fprintf(f, "\n# added by hand\n[triggers.hourly]\nminer = \"docs\"\ntype = \"poll\"\nsettings = { every = \"1h\" }\n")
	f.Close()
	eventually(t, 10*time.Second, "the hand-added trigger", func() bool { return d.do("GET", "/api/triggers/hourly", nil).status == 200 })
	out, _, _ = d.cli("", "trigger", "list")
	if !strings.Contains(out, "hourly") || !strings.Contains(out, "nightly") || !strings.Contains(out, "hook") {
		t.Fatalf("trigger list:\n%s", out)
	}
	out, _, _ = d.cli("", "trigger", "get", "hook")
	if !strings.Contains(out, "status:    disabled") || !strings.Contains(out, "enabling needs:") {
		t.Fatalf("trigger get hook:\n%s", out)
	}

	out, errOut, code = d.cli("", "trigger", "rm", "nightly")
	if code != 0 || !strings.Contains(out, "removed trigger nightly") {
		t.Fatalf("rm: %d %s %s", code, out, errOut)
	}
	if r := d.do("GET", "/api/triggers/nightly", nil); r.status != 404 || r.code() != "loci::trigger::not_found" {
		t.Fatalf("after rm: %d %s", r.status, r.raw)
	}
	if s, _ := os.ReadFile(cfg); strings.Contains(string(s), "[triggers.nightly]") || !strings.Contains(string(s), "# added by hand") {
		t.Fatalf("the file after rm:\n%s", s)
	}
}

// A watch trigger: a new file becomes searchable; a burst of 500 files is
// one or two runs, not 500.
func TestWatchTrigger(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	d, _ := withConfig(t, fmt.Sprintf(`
[miners.docs]
locator = %q
enabled = true

[triggers.files]
miner = "docs"
type = "watch"
enabled = true
settings = { path = %q, debounce = "100ms" }
`, root, root))
	eventually(t, 10*time.Second, "the watch running", func() bool {
		return get[bool](d.do("GET", "/api/triggers/files", nil).body, "running")
	})
	watchArmed(t, d, "files")
	if err := os.WriteFile(filepath.Join(root, "docs", "zeppelin.md"), []byte("The zeppelin hangar opens at dawn.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the new file searchable", func() bool {
		r := d.do("POST", "/api/search", map[string]any{"query": "zeppelin hangar"})
		return strings.Contains(r.raw, "zeppelin hangar opens")
	})
	eventually(t, 10*time.Second, "the first run done", func() bool {
		for _, j := range mineJobs(t, d) {
			if !finished(j) {
				return false
			}
		}
		return true
	})
	before := len(mineJobs(t, d))
	burst := filepath.Join(root, "burst")
	os.MkdirAll(burst, 0o755)
	for i := range 500 {
		os.WriteFile(filepath.Join(burst, fmt.Sprintf("f%03d.txt", i)), []byte(fmt.Sprintf("burst file number %d about kettles\n", i)), 0o644)
	}
	eventually(t, 20*time.Second, "the burst mined", func() bool {
		r := d.do("GET", "/api/wings/proj/rooms/files", nil)
		return get[float64](r.body, "drawers") >= 505
	})
	// Absence can only be shown by waiting: a further run would be asked
	// within the debounce (100ms) of the burst's last change; a second of
	// quiet is ten debounces.
	time.Sleep(time.Second)
	if runs := len(mineJobs(t, d)) - before; runs < 1 || runs > 2 {
		t.Fatalf("a burst of 500 files made %d runs", runs)
	}
}

// Webhook deliveries against the real listener: GitHub's signing, a
// replayed delivery id, a wrong signature, unknown and disabled triggers,
// token auth, a body over max_body_bytes, and a burst over max_concurrent.
func TestWebhookDeliveries(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	port := freePort(t)
	secretFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(secretFile, []byte("a-token-of-sixteen-chars\n"), 0o600)
	d, _ := withConfig(t, fmt.Sprintf(`
[webhook]
enable = true
port = %d
max_body_bytes = 1024
max_concurrent = 2

[miners.docs]
locator = %q
enabled = true

[triggers.gh]
miner = "docs"
type = "webhook"
enabled = true
settings = { delivery_header = "X-GitHub-Delivery" }
credential = { env = "LOCI_TEST_HOOK_SECRET" }

[triggers.tok]
miner = "docs"
type = "webhook"
enabled = true
settings = { auth = "token" }
credential = { file = %q }

[triggers.off]
miner = "docs"
type = "webhook"
credential = { env = "LOCI_TEST_HOOK_SECRET" }
`, port, root, secretFile), "LOCI_TEST_HOOK_SECRET=It's a Secret to Everybody", "LOCI_TEST_DELIVERY_DELAY=300ms")
	base := fmt.Sprintf("http://127.0.0.1:%d/hooks/", port)
	eventually(t, 10*time.Second, "the listener open", func() bool {
		r := d.do("GET", "/api/triggers", nil)
		return get[bool](r.body, "webhook", "listening")
	})
	post := func(name, body string, headers ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", base+name, strings.NewReader(body))
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	body := `{"ref":"refs/heads/main"}`
	sig := githubSign("It's a Secret to Everybody", body)
	resp, first := post("gh", body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	if resp.StatusCode != 202 || !strings.Contains(first, `"status":"queued"`) {
		t.Fatalf("a signed delivery: %d %s", resp.StatusCode, first)
	}
	resp, again := post("gh", body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958")
	jobID := func(s string) string {
		i := strings.Index(s, `"id":"`)
		if i < 0 {
			return ""
		}
		return s[i+6 : i+6+36]
	}
	if resp.StatusCode != 202 || !strings.Contains(again, `"status":"duplicate"`) || jobID(again) != jobID(first) {
		t.Fatalf("a replayed delivery: %d %s", resp.StatusCode, again)
	}
	for _, c := range []struct {
		name, body string
		headers    []string
	}{
		{"gh", body, []string{"X-Hub-Signature-256", githubSign("wrong", body)}},
		{"gh", body, nil},
		{"gh", body + " ", []string{"X-Hub-Signature-256", sig}},
		{"nope", body, []string{"X-Hub-Signature-256", sig}},
		{"off", body, []string{"X-Hub-Signature-256", sig}},
		{"tok", body, []string{"X-Loci-Token", "not-the-token"}},
	} {
		resp, got := post(c.name, c.body, c.headers...)
		if resp.StatusCode != 401 || got != "" {
			t.Errorf("%s %v: %d %q, want an empty 401", c.name, c.headers, resp.StatusCode, got)
		}
	}
	if resp, got := post("tok", body, "X-Loci-Token", "a-token-of-sixteen-chars"); resp.StatusCode != 202 || !strings.Contains(got, `"job"`) {
		t.Fatalf("token auth: %d %s", resp.StatusCode, got)
	}
	big := strings.Repeat("x", 2048)
	if resp, _ := post("gh", big, "X-Hub-Signature-256", githubSign("It's a Secret to Everybody", big)); resp.StatusCode != 413 {
		t.Fatalf("a body over max_body_bytes: %d", resp.StatusCode)
	}
	// Ten at once against max_concurrent 2 (each held 300 ms): some 429.
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	retryAfter := ""
	for i := range 10 {
		wg.Go(func() {
			resp, _ := post("gh", body, "X-Hub-Signature-256", sig, "X-GitHub-Delivery", fmt.Sprintf("burst-%d", i))
			mu.Lock()
			statuses[resp.StatusCode]++
			if resp.StatusCode == 429 {
				retryAfter = resp.Header.Get("Retry-After")
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[429] == 0 || statuses[202] == 0 || retryAfter == "" || statuses[202]+statuses[429] != 10 {
		t.Fatalf("a burst over max_concurrent: %v (Retry-After %q)", statuses, retryAfter)
	}
	r := d.do("GET", "/api/triggers/gh", nil)
	if n := get[float64](r.body, "counters", "deliveries"); n != float64(1+statuses[202]) {
		t.Fatalf("deliveries counted %v, want %d: %s", n, 1+statuses[202], r.raw)
	}
	if !strings.HasSuffix(get[string](r.body, "endpoint"), fmt.Sprintf("127.0.0.1:%d/hooks/gh", port)) {
		t.Fatalf("endpoint: %s", r.raw)
	}
	if strings.Contains(d.log.String(), "Secret to Everybody") || strings.Contains(d.log.String(), "a-token-of-sixteen") {
		t.Fatal("a secret reached the log")
	}
}

// A 1-second schedule while its miner runs: the run waiting is joined
// (coalesced), never more than one running and one waiting.
func TestScheduleCoalescesWhileItsMinerRuns(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "many")
	for i := range 6000 {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%05d.txt", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("file %d holds a line about lamps number %d and kettles %d\n", i, i*7, i*13)), 0o644)
	}
	d, _ := withConfig(t, fmt.Sprintf(`
[miners.many]
locator = %q
enabled = true

[triggers.tick]
miner = "many"
type = "schedule"
enabled = true
settings = { every = "1s" }
`, root))
	deadline := time.Now().Add(60 * time.Second)
	for {
		running, queued := 0, 0
		for _, j := range mineJobs(t, d) {
			switch j["status"] {
			case "running":
				running++
			case "queued":
				queued++
			}
		}
		if running > 1 || queued > 1 {
			t.Fatalf("%d running and %d queued runs of one miner", running, queued)
		}
		r := d.do("GET", "/api/triggers/tick", nil)
		if get[float64](r.body, "counters", "coalesced") >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request was joined in a minute: %s", r.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kill -9 with a delivery accepted (202 not yet sent) and not queued; the
// restarted daemon queues it exactly once.
func TestKill9WithAcceptedDelivery(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	port := freePort(t)
	home, palace := newPalace(t)
	cfg := filepath.Join(home, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`
[webhook]
enable = true
port = %d

[miners.docs]
locator = %q
enabled = true

[triggers.gh]
miner = "docs"
type = "webhook"
enabled = true
settings = { delivery_header = "X-GitHub-Delivery" }
credential = { env = "LOCI_TEST_HOOK_SECRET" }
`, port, root)), 0o644)
	secret := "LOCI_TEST_HOOK_SECRET=s3cret-for-the-hook"
	d := start(t, home, palace, "LOCI_CONFIG="+cfg, secret, "LOCI_TEST_DELIVERY_DELAY=60s")
	eventually(t, 10*time.Second, "the listener open", func() bool {
		return get[bool](d.do("GET", "/api/triggers", nil).body, "webhook", "listening")
	})
	body := `{"zen":"Keep it logically awesome."}`
	go func() {
		req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/hooks/gh", port), strings.NewReader(body))
		req.Header.Set("X-Hub-Signature-256", githubSign("s3cret-for-the-hook", body))
		req.Header.Set("X-GitHub-Delivery", "d-kill-9")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	eventually(t, 10*time.Second, "the delivery accepted", func() bool {
		return get[float64](d.do("GET", "/api/triggers/gh", nil).body, "counters", "deliveries") == 1
	})
	if n := len(mineJobs(t, d)); n != 0 {
		t.Fatalf("%d mine jobs before the kill", n)
	}
	d.cmd.Process.Kill()
	<-d.exited
	d = start(t, home, palace, "LOCI_CONFIG="+cfg, secret)
	eventually(t, 10*time.Second, "the recovered delivery queued", func() bool { return len(mineJobs(t, d)) == 1 })
	// Absence can only be shown by waiting: a second job would come from
	// the same recovery at the start that queued the first, not later; a
	// second after the first is ample.
	time.Sleep(time.Second)
	if n := len(mineJobs(t, d)); n != 1 {
		t.Fatalf("%d mine jobs after the restart, want exactly 1", n)
	}
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d/hooks/gh", port), strings.NewReader(body))
	req.Header.Set("X-Hub-Signature-256", githubSign("s3cret-for-the-hook", body))
	req.Header.Set("X-GitHub-Delivery", "d-kill-9")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 202 || !strings.Contains(string(b), `"status":"duplicate"`) || !strings.Contains(string(b), get[string](mineJobs(t, d)[0], "id")) {
		t.Fatalf("the delivery sent again after recovery: %d %s", resp.StatusCode, b)
	}
}

// A miner's own schedule runs once opted in (and stops when opted out);
// removing a trigger forgets what the daemon remembered about it.
func TestMinerScheduleAndForgetting(t *testing.T) {
	t.Parallel()
	root := mineTree(t)
	d, _ := withConfig(t, fmt.Sprintf(`
[miners.docs]
locator = %q
enabled = true
schedule = { every = "1s" }

[triggers.later]
miner = "docs"
type = "poll"
enabled = true
settings = { every = "1h" }
`, root))
	// Absence can only be shown by waiting: two periods of the miner's
	// schedule (every 1s), which would have run twice by now.
	time.Sleep(2 * time.Second)
	if n := len(mineJobs(t, d)); n != 0 {
		t.Fatalf("%d runs before the schedule was opted in to", n)
	}
	if out, errOut, code := d.cli("", "miner", "schedule", "enable", "docs"); code != 0 || !strings.Contains(out, "schedule on") {
		t.Fatalf("schedule enable: %d %s %s", code, out, errOut)
	}
	eventually(t, 10*time.Second, "runs of the miner's schedule", func() bool { return len(mineJobs(t, d)) >= 2 })
	d.cli("", "miner", "schedule", "disable", "docs")
	// The supervisor reads the configuration every 3 s (Triggers.Every)
	// and reports no change of a miner's schedule outside, so the test
	// waits past one reading; then, absence can only be shown by waiting:
	// 2.5 s is more than two periods of the schedule (every 1s).
	time.Sleep(4 * time.Second)
	n := len(mineJobs(t, d))
	time.Sleep(2500 * time.Millisecond)
	if m := len(mineJobs(t, d)); m != n {
		t.Fatalf("the schedule ran after opting out: %d then %d runs", n, m)
	}

	if r := d.do("POST", "/api/triggers/later/fire", nil); r.status != 202 {
		t.Fatalf("fire: %d %s", r.status, r.raw)
	}
	if r := d.do("GET", "/api/triggers/later", nil); get[float64](r.body, "counters", "fired") != 1 {
		t.Fatalf("counters: %s", r.raw)
	}
	if r := d.do("DELETE", "/api/triggers/later", nil); r.status != 200 || get[string](r.body, "removed") != "later" {
		t.Fatalf("delete: %d %s", r.status, r.raw)
	}
	r := d.do("PUT", "/api/triggers/later", map[string]any{"miner": "docs", "type": "poll", "settings": map[string]any{"every": "1h"}})
	if r.status != 201 || get[float64](r.body, "trigger", "counters", "fired") != 0 || get[string](r.body, "trigger", "status") != "disabled" {
		t.Fatalf("the trigger made again remembers its predecessor: %d %s", r.status, r.raw)
	}
}
