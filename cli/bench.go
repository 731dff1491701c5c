package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/transport/client"
)

// Retrieval benchmarks (../shared/bench/README.md): the data goes into a
// fresh palace of a daemon started for the purpose, through the public
// REST API, and is queried there with every ranking mode.

var benchModes = []string{"lexical", "semantic", "hybrid", "auto"}

func (a *app) benchCmd() *cobra.Command {
	b := &cobra.Command{Use: "bench", Short: "Measure retrieval quality on public data (LoCoMo, Cranfield) in a fresh palace"}
	var data, dir string
	var keep, expand bool
	locomo := &cobra.Command{
		Use: "locomo --data FILE", Short: "LoCoMo, turn level: recall@k and hit@k overall, for categories 1-4 and per category", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			var env []string
			if expand {
				cfg, err := os.CreateTemp("", "loci-bench-*.toml")
				if err != nil {
					return fault.Wrap(fault.IOFailed, err, "cannot write a configuration file", "check TMPDIR")
				}
				defer os.Remove(cfg.Name())
				fmt.Fprintln(cfg, "[extraction]\nprovider = \"heuristic\"")
				cfg.Close()
				env = append(env, "LOCI_CONFIG="+cfg.Name())
			}
			return a.withBenchDaemon(c.Context(), keep, env, func(cl *client.Client) error { return a.benchLocomo(c.Context(), cl, data, expand) })
		},
	}
	locomo.Flags().StringVar(&data, "data", "", "the LoCoMo JSON file (e.g. ../shared/bench/locomo/locomo-public.json)")
	locomo.Flags().BoolVar(&expand, "expand", false, "also read the turns with the heuristic extractor and measure search with expand (R@k: k/2 direct hits, then up to k/2 expanded)")
	cran := &cobra.Command{
		Use: "cranfield --dir DIR", Short: "Cranfield 1400: MAP, nDCG@10, R@10, R@100", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return a.withBenchDaemon(c.Context(), keep, nil, func(cl *client.Client) error { return a.benchCranfield(c.Context(), cl, dir) })
		},
	}
	cran.Flags().StringVar(&dir, "dir", "", "the Cranfield directory (cran.all.1400, cran.qry, cranqrel)")
	b.PersistentFlags().BoolVar(&keep, "keep", false, "keep the benchmark palace (its path is printed)")
	b.AddCommand(locomo, cran)
	return b
}

// withBenchDaemon runs fn against a daemon on a fresh temporary palace.
func (a *app) withBenchDaemon(ctx context.Context, keep bool, env []string, fn func(*client.Client) error) error {
	exe, err := os.Executable()
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot find the loci binary", "run the installed loci")
	}
	palace, err := os.MkdirTemp("", "loci-bench-")
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot create a temporary palace", "check TMPDIR")
	}
	if keep {
		fmt.Fprintf(a.stderrOrDiscard(), "benchmark palace: %s\n", palace)
	} else {
		defer os.RemoveAll(palace)
	}
	cmd := exec.CommandContext(ctx, exe, "serve", "--port", "0", "--palace", palace)
	cmd.Env = append(append(os.Environ(), "LOCI_LOG=warn", "LOCI_AUTH_ENABLED=false"), env...)
	cmd.Stderr = a.stderrOrDiscard()
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot start a daemon for the benchmark", "see the error")
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
		}
	}()
	for t0 := time.Now(); time.Since(t0) < 60*time.Second; time.Sleep(20 * time.Millisecond) {
		reg, live, err := config.ReadRegistry(palace)
		if err == nil && live && reg.PID == cmd.Process.Pid {
			return fn(client.New(reg.Address, "", ""))
		}
	}
	return fault.New(fault.ClientNotRunning, "the benchmark daemon did not become ready", "run loci serve yourself to see why")
}

// parallel runs fn over n items with 16 workers; the first error wins.
func parallel(n int, fn func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// BenchReport is what loci bench --json prints: one entry per ranking
// mode (a mode that cannot run says so).
type BenchReport struct {
	Dataset   string      `json:"dataset"`
	Drawers   int         `json:"drawers"`
	FiledMS   int64       `json:"filed_ms"`
	IndexedMS int64       `json:"indexed_ms"`
	Queries   int         `json:"queries"`
	Modes     []BenchMode `json:"modes"`
}

// BenchMode is one ranking mode's figures: recall and hit rate at 1, 5,
// 10 and 20 overall, for categories 1-4 and per category (LoCoMo), or
// MAP, nDCG@10, R@10 and R@100 (Cranfield); the p50 query latency from
// 16 clients.
type BenchMode struct {
	Mode        string               `json:"mode"`
	Unavailable bool                 `json:"unavailable,omitempty"`
	P50MS       float64              `json:"p50_ms"`
	All         *BenchRecall         `json:"all,omitempty"`
	Core        *BenchRecall         `json:"categories_1_4,omitempty"`
	Categories  map[int]*BenchRecall `json:"categories,omitempty"`
	MAP         *float64             `json:"map,omitempty"`
	NDCG10      *float64             `json:"ndcg_10,omitempty"`
	R10         *float64             `json:"recall_10,omitempty"`
	R100        *float64             `json:"recall_100,omitempty"`
}

// BenchRecall is recall@k and hit@k (k = 1, 5, 10, 20) over n questions.
type BenchRecall struct {
	N      int                `json:"n"`
	Recall map[string]float64 `json:"recall"`
	Hit    map[string]float64 `json:"hit"`
}

func (r *recallAcc) report() *BenchRecall {
	out := &BenchRecall{N: r.n, Recall: map[string]float64{}, Hit: map[string]float64{}}
	for i, k := range benchKs {
		if r.n > 0 {
			out.Recall[strconv.Itoa(k)] = round3(r.recall[i] / float64(r.n))
			out.Hit[strconv.Itoa(k)] = round3(r.hit[i] / float64(r.n))
		}
	}
	return out
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

func p50(lat []time.Duration) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	return s[len(s)/2]
}

type benchHit struct {
	Name string `json:"name"`
}

// search returns the names of the drawers found, best first; semantic
// legs that cannot run return errUnavailable.
func benchSearch(ctx context.Context, cl *client.Client, text, mode, wing string, limit int, expand bool) ([]string, error) {
	body := api.SearchRequest{Text: text, Ranking: mode, Limit: limit, Filter: &api.SearchFilter{Wing: wing}, Expand: expand}
	var out struct {
		Hits []benchHit `json:"hits"`
	}
	if _, err := cl.Do(ctx, http.MethodPost, "/api/search", body, &out); err != nil {
		return nil, err
	}
	names := make([]string, len(out.Hits))
	for i, h := range out.Hits {
		names[i] = h.Name
	}
	return names, nil
}

// rankAll runs every query (text and wing) in one ranking mode from 16
// clients and returns each one's drawer names and latency.
func rankAll(ctx context.Context, cl *client.Client, texts, wings []string, mode string, limit int, expand bool) ([][]string, []time.Duration, error) {
	ranked := make([][]string, len(texts))
	lat := make([]time.Duration, len(texts))
	err := parallel(len(texts), func(i int) error {
		t := time.Now()
		names, err := benchSearch(ctx, cl, texts[i], mode, wings[i], limit, expand)
		lat[i] = time.Since(t)
		ranked[i] = names
		return err
	})
	return ranked, lat, err
}

// reportUnavailable prints a mode that cannot run and reports it.
func (a *app) reportUnavailable(rep *BenchReport, mode string, err error) bool {
	if unavailable(err) {
		rep.Modes = append(rep.Modes, BenchMode{Mode: mode, Unavailable: true})
		a.say("%s: unavailable (no embedding profile configured)\n", mode)
		return true
	}
	return false
}

func unavailable(err error) bool {
	return err != nil && fault.As(err).Remote == fault.SearchSemanticUnavail
}

func fileDrawer(ctx context.Context, cl *client.Client, wing, room, name, content string) error {
	path := "/api/wings/" + client.Esc(wing) + "/rooms/" + client.Esc(room) + "/drawers"
	_, err := cl.Do(ctx, http.MethodPost, path, api.NewDrawer{Name: name, Content: content, Source: &api.Source{Kind: "transcript"}}, nil)
	return err
}

// waitIndexed waits until the lexical index and every vector index hold
// n drawers (the embed job the daemon queues after a burst of filing),
// and says how long that took.
func (a *app) waitIndexed(ctx context.Context, cl *client.Client, n int) (time.Duration, error) {
	t0 := time.Now()
	for {
		var st api.Status
		if _, err := cl.Do(ctx, http.MethodGet, "/api/status", nil, &st); err != nil {
			return 0, err
		}
		done := st.Indexes != nil && st.Indexes.Lexical.Drawers >= uint64(n)
		for _, v := range st.Indexes.Vectors {
			done = done && v.Drawers >= uint64(n) && v.Behind == 0
		}
		if done {
			if len(st.Indexes.Vectors) > 0 {
				a.say("every drawer searchable by every index %s after the last was filed\n", time.Since(t0).Round(time.Millisecond))
			}
			return time.Since(t0), nil
		}
		if time.Since(t0) > 10*time.Minute {
			return 0, fault.New(fault.ServerFailed, "the indexes did not catch up within 10 minutes", "see the daemon log (loci bench --keep, then loci serve on that palace)")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// LoCoMo.

type locomoTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	Caption string `json:"blip_caption"`
}

type locomoSample struct {
	SampleID     string                     `json:"sample_id"`
	Conversation map[string]json.RawMessage `json:"conversation"`
	QA           []struct {
		Question string   `json:"question"`
		Evidence []string `json:"evidence"`
		Category int      `json:"category"`
	} `json:"qa"`
}

var evidenceRe = regexp.MustCompile(`D(\d+):0*(\d+)`)

var benchKs = []int{1, 5, 10, 20}

type recallAcc struct {
	n      int
	recall [4]float64
	hit    [4]float64
}

func (r *recallAcc) add(ranked []string, relevant map[string]bool) {
	r.n++
	for i, k := range benchKs {
		found := 0
		for _, id := range ranked[:min(k, len(ranked))] {
			if relevant[id] {
				found++
			}
		}
		r.recall[i] += float64(found) / float64(len(relevant))
		if found > 0 {
			r.hit[i]++
		}
	}
}

func (r *recallAcc) line(label string) string {
	if r.n == 0 {
		return fmt.Sprintf("  %-14s (no questions)", label)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "  %-14s n=%-4d", label, r.n)
	for i, k := range benchKs {
		fmt.Fprintf(&b, " R@%d %.3f", k, r.recall[i]/float64(r.n))
	}
	for i, k := range benchKs {
		fmt.Fprintf(&b, " hit@%d %.3f", k, r.hit[i]/float64(r.n))
	}
	return b.String()
}

func (a *app) benchLocomo(ctx context.Context, cl *client.Client, file string, expand bool) error {
	if file == "" {
		return fault.Invalid("data", "is required: the LoCoMo JSON file")
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot read "+file, "check the path")
	}
	var samples []locomoSample
	if err := json.Unmarshal(raw, &samples); err != nil {
		return fault.Invalid("data", "is not a LoCoMo file: "+err.Error())
	}
	t0 := time.Now()
	// A wing per conversation, a room per session, the turns filed in
	// the order they were said (a conversation at a time per client), as
	// an agent files a transcript.
	type turn struct{ wing, room, name, content string }
	byConv := make([][]turn, len(samples))
	have := map[string]map[string]bool{}
	for c, s := range samples {
		have[s.SampleID] = map[string]bool{}
		var sessions []int
		for key := range s.Conversation {
			if n, err := strconv.Atoi(strings.TrimPrefix(key, "session_")); err == nil {
				sessions = append(sessions, n)
			}
		}
		sort.Ints(sessions)
		for _, n := range sessions {
			var ts []locomoTurn
			if json.Unmarshal(s.Conversation["session_"+strconv.Itoa(n)], &ts) != nil {
				continue
			}
			for _, t := range ts {
				content := t.Speaker + ": " + t.Text
				if t.Caption != "" {
					content += " [shares " + t.Caption + "]"
				}
				byConv[c] = append(byConv[c], turn{s.SampleID, "session-" + strconv.Itoa(n), t.DiaID, content})
				have[s.SampleID][t.DiaID] = true
			}
		}
	}
	var turns []turn
	for _, ts := range byConv {
		turns = append(turns, ts...)
	}
	if err := parallel(len(byConv), func(c int) error {
		for _, t := range byConv[c] {
			if err := fileDrawer(ctx, cl, t.wing, t.room, t.name, t.content); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	filed := time.Since(t0)
	a.say("LoCoMo, turn level: %d conversations, %d turns filed in %s\n", len(samples), len(turns), filed.Round(time.Millisecond))
	indexed, err := a.waitIndexed(ctx, cl, len(turns))
	if err != nil {
		return err
	}
	rep := &BenchReport{Dataset: "locomo", Drawers: len(turns), FiledMS: filed.Milliseconds(), IndexedMS: indexed.Milliseconds()}
	if expand {
		t1 := time.Now()
		var job api.Job
		if _, err := cl.Do(ctx, http.MethodPost, "/api/jobs", map[string]any{"type": "extract"}, &job); err != nil {
			return err
		}
		for job.Status != "completed" {
			if job.Status == "failed" || job.Status == "cancelled" {
				return fault.New(fault.ExtractFailed, "the extract job "+job.Status+": "+job.Error, "see the daemon log")
			}
			time.Sleep(200 * time.Millisecond)
			if _, err := cl.Do(ctx, http.MethodGet, "/api/jobs/"+job.ID, nil, &job); err != nil {
				return err
			}
		}
		a.say("heuristic extraction: %s in %s\n", string(job.Result), time.Since(t1).Round(time.Millisecond))
	}
	type question struct {
		wing, text string
		cat        int
		rel        map[string]bool
	}
	var qs []question
	skipped := 0
	for _, s := range samples {
		for _, q := range s.QA {
			rel := map[string]bool{}
			for _, e := range q.Evidence {
				for _, m := range evidenceRe.FindAllStringSubmatch(strings.ReplaceAll(e, "D:", "D"), -1) {
					id := "D" + m[1] + ":" + m[2]
					if have[s.SampleID][id] {
						rel[id] = true
					}
				}
			}
			if len(rel) == 0 {
				skipped++
				continue
			}
			qs = append(qs, question{s.SampleID, q.Question, q.Category, rel})
		}
	}
	a.say("%d questions (%d skipped without evidence)\n", len(qs), skipped)
	rep.Queries = len(qs)
	texts, wings := make([]string, len(qs)), make([]string, len(qs))
	for i, q := range qs {
		texts[i], wings[i] = q.text, q.wing
	}
	for _, mode := range benchModes {
		all, core := &recallAcc{}, &recallAcc{}
		per := map[int]*recallAcc{}
		ranked, lat, err := rankAll(ctx, cl, texts, wings, mode, 20, false)
		if a.reportUnavailable(rep, mode, err) {
			continue
		}
		if err != nil {
			return err
		}
		for i, q := range qs {
			all.add(ranked[i], q.rel)
			if q.cat >= 1 && q.cat <= 4 {
				core.add(ranked[i], q.rel)
			}
			if per[q.cat] == nil {
				per[q.cat] = &recallAcc{}
			}
			per[q.cat].add(ranked[i], q.rel)
		}
		bm := BenchMode{Mode: mode, P50MS: float64(p50(lat).Microseconds()) / 1000, All: all.report(), Core: core.report(), Categories: map[int]*BenchRecall{}}
		for c, acc := range per {
			bm.Categories[c] = acc.report()
		}
		rep.Modes = append(rep.Modes, bm)
		a.say("%s (query p50 %s, 16 clients):\n", mode, p50(lat).Round(10*time.Microsecond))
		a.say("%s\n%s\n", all.line("all"), core.line("categories 1-4"))
		cats := []int{}
		for c := range per {
			cats = append(cats, c)
		}
		sort.Ints(cats)
		for _, c := range cats {
			a.say("%s\n", per[c].line("category "+strconv.Itoa(c)))
		}
		if !expand || mode == "semantic" {
			continue
		}
		// With expand: k/2 direct hits, then up to k/2 expanded, against
		// the k direct hits above.
		for _, k := range []int{10, 20} {
			exp, _, err := rankAll(ctx, cl, texts, wings, mode, k/2, true)
			if err != nil {
				return err
			}
			base, with := map[int][2]float64{}, map[int][2]float64{}
			n := map[int]int{}
			for i, q := range qs {
				r := func(list []string) float64 {
					found := 0
					for _, id := range list[:min(k, len(list))] {
						if q.rel[id] {
							found++
						}
					}
					return float64(found) / float64(len(q.rel))
				}
				for _, c := range []int{0, q.cat} {
					b, w := base[c], with[c]
					b[0] += r(ranked[i])
					w[0] += r(exp[i])
					base[c], with[c] = b, w
					n[c]++
				}
			}
			cats := []int{}
			for c := range n {
				cats = append(cats, c)
			}
			sort.Ints(cats)
			for _, c := range cats {
				label := "all"
				if c > 0 {
					label = "category " + strconv.Itoa(c)
				}
				a.say("  %s+expand R@%d %-12s n=%-4d without %.3f, with %.3f\n", mode, k, label, n[c], base[c][0]/float64(n[c]), with[c][0]/float64(n[c]))
			}
		}
	}
	if a.jsonOut {
		return a.out(rep)
	}
	return nil
}

// Cranfield.

// smart reads a SMART-format file into records of fields (.I id, then
// .T/.A/.B/.W texts).
func smart(path string) ([]map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []map[string]string
	var cur map[string]string
	field := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, ".I") {
			cur = map[string]string{"I": strings.TrimSpace(strings.TrimPrefix(line, ".I"))}
			out = append(out, cur)
			field = ""
			continue
		}
		if len(line) == 2 && line[0] == '.' && cur != nil {
			field = line[1:]
			continue
		}
		if cur != nil && field != "" {
			if cur[field] != "" {
				cur[field] += " "
			}
			cur[field] += strings.TrimSpace(line)
		}
	}
	return out, sc.Err()
}

func (a *app) benchCranfield(ctx context.Context, cl *client.Client, dir string) error {
	if dir == "" {
		return fault.Invalid("dir", "is required: the Cranfield directory")
	}
	docs, err := smart(filepath.Join(dir, "cran.all.1400"))
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot read cran.all.1400", "check --dir")
	}
	queries, err := smart(filepath.Join(dir, "cran.qry"))
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot read cran.qry", "check --dir")
	}
	qrel, err := os.ReadFile(filepath.Join(dir, "cranqrel"))
	if err != nil {
		return fault.Wrap(fault.IOFailed, err, "cannot read cranqrel", "check --dir")
	}
	// Relevance codes 1 (most) to 4; -1 is not relevant. Queries are
	// numbered by position in cran.qry, not by their .I label.
	grades := map[int]map[string]int{}
	for _, line := range strings.Split(string(qrel), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		q, _ := strconv.Atoi(f[0])
		code, _ := strconv.Atoi(f[2])
		if code < 1 || code > 4 {
			continue
		}
		if grades[q] == nil {
			grades[q] = map[string]int{}
		}
		grades[q]["doc-"+f[1]] = code
	}
	t0 := time.Now()
	if err := parallel(len(docs), func(i int) error {
		content := strings.TrimSpace(docs[i]["T"] + "\n" + docs[i]["W"])
		if content == "" {
			content = "(empty document " + docs[i]["I"] + ")"
		}
		return fileDrawer(ctx, cl, "cranfield", "docs", "doc-"+docs[i]["I"], content)
	}); err != nil {
		return err
	}
	filed := time.Since(t0)
	a.say("Cranfield: %d documents filed in %s, %d queries\n", len(docs), filed.Round(time.Millisecond), len(queries))
	indexed, err := a.waitIndexed(ctx, cl, len(docs))
	if err != nil {
		return err
	}
	rep := &BenchReport{Dataset: "cranfield", Drawers: len(docs), FiledMS: filed.Milliseconds(), IndexedMS: indexed.Milliseconds(), Queries: len(queries)}
	texts, wings := make([]string, len(queries)), make([]string, len(queries))
	for i, q := range queries {
		texts[i], wings[i] = q["W"], "cranfield"
	}
	for _, mode := range benchModes {
		ranked, lat, err := rankAll(ctx, cl, texts, wings, mode, 200, false)
		if a.reportUnavailable(rep, mode, err) {
			continue
		}
		if err != nil {
			return err
		}
		var mapSum, ndcgSum float64
		n := 0
		for i := range queries {
			g := grades[i+1]
			if len(g) == 0 {
				continue
			}
			n++
			found, ap := 0, 0.0
			for rank, name := range ranked[i] {
				if g[name] > 0 {
					found++
					ap += float64(found) / float64(rank+1)
				}
			}
			mapSum += ap / float64(len(g))
			ndcgSum += ndcg10(ranked[i], g)
		}
		// Recall at k averaged per query.
		var rec10, rec100 float64
		for i := range queries {
			g := grades[i+1]
			if len(g) == 0 {
				continue
			}
			h10, h100 := 0, 0
			for rank, name := range ranked[i] {
				if g[name] > 0 {
					if rank < 10 {
						h10++
					}
					if rank < 100 {
						h100++
					}
				}
			}
			rec10 += float64(h10) / float64(len(g))
			rec100 += float64(h100) / float64(len(g))
		}
		a.say("%s: queries %d  MAP %.3f  nDCG@10 %.3f  R@10 %.3f  R@100 %.3f  (query p50 %s, 16 clients)\n", mode, n,
			mapSum/float64(n), ndcgSum/float64(n), rec10/float64(n), rec100/float64(n), p50(lat).Round(10*time.Microsecond))
		m, g, r10, r100 := round3(mapSum/float64(n)), round3(ndcgSum/float64(n)), round3(rec10/float64(n)), round3(rec100/float64(n))
		rep.Modes = append(rep.Modes, BenchMode{Mode: mode, P50MS: float64(p50(lat).Microseconds()) / 1000, MAP: &m, NDCG10: &g, R10: &r10, R100: &r100})
	}
	if a.jsonOut {
		return a.out(rep)
	}
	return nil
}

// ndcg10 with gain 5-code (code 1, the most relevant, gains 4).
func ndcg10(ranked []string, grades map[string]int) float64 {
	dcg := 0.0
	for i, name := range ranked[:min(10, len(ranked))] {
		if c := grades[name]; c > 0 {
			dcg += float64(5-c) / math.Log2(float64(i+2))
		}
	}
	var gains []float64
	for _, c := range grades {
		gains = append(gains, float64(5-c))
	}
	sort.Sort(sort.Reverse(sort.Float64Slice(gains)))
	ideal := 0.0
	for i, g := range gains[:min(10, len(gains))] {
		ideal += g / math.Log2(float64(i+2))
	}
	if ideal == 0 {
		return 0
	}
	return dcg / ideal
}
