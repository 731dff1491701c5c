package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/project"
)

// The agents and events `loci hook` answers.
var (
	hookAgents = []string{"claude-code", "codex", "opencode"}
	hookEvents = []string{"session-start", "pre-compact", "session-end"}
)

// Bounds of one hook run: the agent waits for it, so it never takes long
// whatever the daemon or the agent's stdin does.
const (
	// hookBudget is the whole run's limit.
	hookBudget = 2 * time.Second
	// hookStdinWait is how long the hook waits for stdin to end.
	hookStdinWait = 500 * time.Millisecond
	// hookConnect is the limit on connecting to the daemon: a daemon that
	// is down costs no more than this.
	hookConnect = 200 * time.Millisecond
	// hookMaxInput bounds the hook JSON read from stdin.
	hookMaxInput = 1 << 20
	// hookWakeUpBytes is the wake-up's content budget (the spec's
	// default); Claude Code keeps up to 10,000 characters of
	// additionalContext, so the text with its headings fits.
	hookWakeUpBytes = 8192
)

// hookCmd is `loci hook AGENT EVENT`, run by the agents' hook
// configuration (loci integration install). It never fails the agent: it
// exits 0 whatever happens, saying what went wrong on stderr only.
func (a *app) hookCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "hook AGENT EVENT",
		Short: "Answer an agent's hook: session-start context, pre-compact and session-end checkpoints (always exits 0)",
		Long: "Run by the hooks `loci integration install` writes: reads the agent's hook JSON on standard input and\n" +
			"prints the agent's hook output. AGENT is " + strings.Join(hookAgents, ", ") + "; EVENT is " + strings.Join(hookEvents, ", ") + ".\n" +
			"session-start prints the agent's wake-up context for the project (the wing of the .loci.toml found from\n" +
			"the hook's cwd); pre-compact and session-end file the session summary the hook carries, if any, as a\n" +
			"checkpoint. It exits 0 within about 2 seconds whatever happens, printing nothing when the daemon is down:\n" +
			"the agent's session never breaks because of loci.",
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			a.hook(c.Context(), c.InOrStdin(), args)
			return nil
		},
	}
}

// hook runs one hook; every failure is a line on stderr.
func (a *app) hook(ctx context.Context, stdin io.Reader, args []string) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, hookBudget)
	defer cancel()
	if len(args) != 2 || !oneOf(args[0], hookAgents) || !oneOf(args[1], hookEvents) {
		fmt.Fprintf(a.stderr, "loci hook: usage: loci hook AGENT EVENT (AGENT: %s; EVENT: %s); got %q; nothing done\n",
			strings.Join(hookAgents, ", "), strings.Join(hookEvents, ", "), strings.Join(args, " "))
		return
	}
	agent, event := args[0], args[1]
	in, tooLarge := readHookInput(stdin, start.Add(hookStdinWait))
	if tooLarge {
		fmt.Fprintf(a.stderr, "loci hook %s %s: the hook input on stdin was over 1 MiB and is ignored (nothing from it is filed)\n", agent, event)
	}
	dir := in.str("cwd")
	if dir == "" {
		dir, _ = os.Getwd()
	}
	scope, err := project.Find(dir, a.getenv)
	if err != nil {
		a.hookFail(agent, event, err)
		return
	}
	mode := a.effectiveMode(scope)
	if mode == "disabled" {
		return
	}
	cl, err := a.newClient(false)
	if err != nil {
		a.hookFail(agent, event, err)
		return
	}
	cl.Mode = mode
	cl.HTTP = &http.Client{Transport: &http.Transport{
		Proxy:       nil,
		DialContext: (&net.Dialer{Timeout: hookConnect}).DialContext,
	}}
	wing := scope.Wing
	if v, ok := a.env("LOCI_WING"); ok && strings.TrimSpace(v) != "" {
		wing = v
	}
	switch event {
	case "session-start":
		q := url.Values{"agent_identity": {agent}, "max_bytes": {strconv.Itoa(hookWakeUpBytes)}}
		if wing != "" {
			q.Set("wing", wing)
		}
		var w api.WakeUp
		if _, err := cl.Do(ctx, http.MethodGet, "/api/wake-up?"+q.Encode(), nil, &w); err != nil {
			if !fault.Is(err, fault.ClientNotRunning) && fault.As(err).Remote != fault.PalaceWingNotFound {
				a.hookFail(agent, event, err)
			}
			return
		}
		text := wakeUpText(agent, wing, scope.File, &w)
		if text == "" {
			return
		}
		var out any
		if agent == "opencode" {
			out = map[string]string{"context": text}
		} else {
			out = map[string]any{"hookSpecificOutput": map[string]string{"hookEventName": "SessionStart", "additionalContext": text}}
		}
		b, _ := json.Marshal(out)
		fmt.Fprintf(a.stdout, "%s\n", b)
	default:
		summary := in.summary()
		if summary == "" || mode == "read_only" {
			return
		}
		item := map[string]any{
			"destination": "project",
			"content":     summary,
			"tags":        []string{"session-summary", agent, event},
			"source":      map[string]string{"kind": "transcript", "uri": in.str("transcript_path"), "agent": agent},
		}
		if wing != "" {
			item["wing"] = wing
		}
		body := map[string]any{"type": "checkpoint", "requested_by": "cli",
			"payload": map[string]any{"items": []any{item}}}
		var job api.Job
		if _, err := cl.Do(ctx, http.MethodPost, "/api/jobs", body, &job); err != nil && !fault.Is(err, fault.ClientNotRunning) {
			a.hookFail(agent, event, err)
		}
	}
}

// hookFail says on stderr why a hook did nothing.
func (a *app) hookFail(agent, event string, err error) {
	fe := fault.As(err)
	code := fe.Code
	if fe.Remote != "" {
		code = fe.Remote
	}
	fmt.Fprintf(a.stderr, "loci hook %s %s: %s (%s); nothing done\n", agent, event, safeText(fe.Msg), code)
}

// hookInput is an agent's hook JSON, read loosely: every agent names its
// fields its own way and a field of an unexpected type is ignored.
type hookInput map[string]any

// readHookInput reads the hook JSON from stdin until it ends or the
// deadline passes (an agent that never closes stdin costs no more);
// anything that is not a JSON object is no input. tooLarge reports input
// over hookMaxInput, which is ignored.
func readHookInput(stdin io.Reader, deadline time.Time) (in hookInput, tooLarge bool) {
	if stdin == nil {
		return nil, false
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(stdin, hookMaxInput+1))
		got <- b
	}()
	var b []byte
	select {
	case b = <-got:
	case <-time.After(time.Until(deadline)):
		return nil, false
	}
	if len(b) > hookMaxInput {
		return nil, true
	}
	if json.Unmarshal(b, &in) != nil {
		return nil, false
	}
	return in, false
}

// str is a string field, trimmed; "" when absent or not a string.
func (in hookInput) str(key string) string {
	s, _ := in[key].(string)
	return strings.TrimSpace(s)
}

// summaryFields are the fields that carry a session's summary, in order:
// OpenCode's plugin (summary), Claude Code's PostCompact (compact_summary),
// Codex's stop and notify payloads (last_assistant_message,
// last-assistant-message).
var summaryFields = []string{"summary", "compact_summary", "last_assistant_message", "last-assistant-message"}

// summary is the first non-blank summary the input carries.
func (in hookInput) summary() string {
	for _, k := range summaryFields {
		if s, ok := in[k].(string); ok && strings.TrimSpace(s) != "" {
			return s
		}
	}
	return ""
}

// wakeUpText is the context a session starts with: the agent's latest
// diary entry and recent checkpoints, under a heading saying where they
// come from; "" when there is nothing.
func wakeUpText(agent, wing, file string, w *api.WakeUp) string {
	if w.Diary == nil && len(w.Items) == 0 && w.LastSession == nil {
		return ""
	}
	var b strings.Builder
	where := "every wing"
	if wing != "" {
		where = fmt.Sprintf("wing %q", wing)
	}
	fmt.Fprintf(&b, "Memories from loci for %s, %s", agent, where)
	if file != "" {
		fmt.Fprintf(&b, " (project file %s)", file)
	}
	b.WriteString(".\n")
	if w.Diary != nil {
		fmt.Fprintf(&b, "\nYour latest diary entry (%s):\n%s\n", w.Diary.CreatedAt.UTC().Format(time.RFC3339), strings.TrimSpace(w.Diary.Content))
	}
	if ls := w.LastSession; ls != nil {
		fmt.Fprintf(&b, "\n%s\n%s\n", lastSessionHeading(ls), strings.TrimSpace(ls.Content))
	}
	if len(w.Items) > 0 {
		b.WriteString("\nRecent checkpoints, newest first:\n")
		for _, d := range w.Items {
			fmt.Fprintf(&b, "- [%s] %s\n", d.CreatedAt.UTC().Format(time.RFC3339), strings.TrimSpace(d.Content))
		}
	}
	if w.Skipped > 0 {
		fmt.Fprintf(&b, "\n(%d more did not fit.)\n", w.Skipped)
	}
	search := "loci_search"
	if wing != "" {
		search = fmt.Sprintf("loci_search with wing %q", wing)
	}
	fmt.Fprintf(&b, "\nSearch loci (%s) before answering from memory; checkpoint what should outlive this session (loci_checkpoint, source.agent %q).\n", search, agent)
	return b.String()
}

// lastSessionHeading says what a wake-up's closing turns are: the last
// turns of the latest session mined into the wing, with whom, where and
// when it ended.
func lastSessionHeading(ls *api.WakeUpSession) string {
	var b strings.Builder
	b.WriteString("How the last session ended")
	if ls.Agent != "" {
		fmt.Fprintf(&b, " (%s", ls.Agent)
		if ls.Title != "" {
			fmt.Fprintf(&b, ", %q", ls.Title)
		}
		b.WriteString(")")
	}
	fmt.Fprintf(&b, ", its last %d %s, to %s", ls.Turns, plural(ls.Turns, "turn", "turns"), ls.Ended.UTC().Format(time.RFC3339))
	if ls.Clipped {
		b.WriteString(" (the oldest shown cut to its end)")
	}
	b.WriteString(":")
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func oneOf(s string, list []string) bool {
	for _, x := range list {
		if s == x {
			return true
		}
	}
	return false
}
