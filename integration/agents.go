package integration

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"
	"text/template"

	"github.com/loci-dev/loci/fault"
)

// The pieces the three agents share: the hook command line, the
// instructions block, the checks of an MCP entry.

// Hook events, as `loci hook <agent> <event>` names them.
const (
	EventSessionStart = "session-start"
	EventPreCompact   = "pre-compact"
	EventSessionEnd   = "session-end"
)

// hookTimeoutSecs bounds a hook in the agents' own settings (the hook
// itself answers much faster, and always exits 0).
const hookTimeoutSecs = 10

// shellQuote quotes s for a POSIX shell when it needs it (the agents run a
// hook's command through the shell).
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-+:@%=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// bridgeArgs are the stdio entry's arguments: the bridge, pinned to the
// daemon the HTTP entry would name (an agent runs it with its own
// environment, where the daemon's registry file may not be found).
func (p *plan) bridgeArgs() []string {
	args := []string{"mcp"}
	if u, err := url.Parse(p.URL); err == nil && u.Host != "" {
		args = append(args, "--addr", u.Host)
	}
	return args
}

// hookCommand is the command line a hook runs.
func (p *plan) hookCommand(event string) string {
	return shellQuote(p.Loci) + " hook " + p.agent.Name + " " + event
}

// hookEvent maps an agent's hook event onto loci's.
type hookEvent struct{ agentName, event string }

// hookGroup is a Claude-style matcher group running one command (Claude
// Code's settings.json and Codex's hooks.json share this shape).
func (p *plan) hookGroup(event string) any {
	return orderedObject{{"hooks", []any{orderedObject{
		{"type", "command"},
		{"command", p.hookCommand(event)},
		{"timeout", hookTimeoutSecs},
	}}}}
}

// hookParts are the json_hook parts for the three events, under the
// agents' names for them; more are further agent events mapped onto
// loci's (Claude Code's PostCompact, the one hook input that carries the
// compaction's summary, runs pre-compact, which files it).
func (p *plan) hookParts(more ...hookEvent) []Part {
	var parts []Part
	for _, ev := range append([]hookEvent{
		{"SessionStart", EventSessionStart},
		{"PreCompact", EventPreCompact},
		{"SessionEnd", EventSessionEnd},
	}, more...) {
		parts = append(parts, Part{Kind: KindJSONHook, Path: []string{"hooks", ev.agentName},
			Command: p.hookCommand(ev.event), Value: p.hookGroup(ev.event)})
	}
	return parts
}

// instructions renders the agent's instructions asset.
func (p *plan) instructions() (Part, error) {
	name := p.agent.Name + "/instructions.md"
	src, err := p.Assets.Read(name)
	if err != nil {
		return Part{}, err
	}
	t, err := template.New(name).Option("missingkey=error").Parse(string(src))
	if err != nil {
		return Part{}, fault.Wrap(fault.IntegrationAssetsMissing, err, "asset "+name+" in "+p.Assets.Origin()+" is not a valid template: "+err.Error(),
			"fix the file, or unset assets.dir / LOCI_ASSETS_DIR")
	}
	var b bytes.Buffer
	if err := t.Execute(&b, struct{ Wing, Room, Agent string }{p.Wing, p.Room, p.agent.Name}); err != nil {
		return Part{}, fault.Wrap(fault.IntegrationAssetsMissing, err, "asset "+name+": "+err.Error(), "fix the file")
	}
	return Part{Kind: KindBlock, Name: p.agent.Name, Value: b.String()}, nil
}

// checkHooks checks a Claude-style hooks object: each event an array of
// groups, each group's hooks an array of commands.
func checkHooks(src []byte, path ...string) error {
	var doc map[string]any
	if err := json.Unmarshal(stripJSONC(src), &doc); err != nil {
		return err
	}
	var cur any = doc
	for _, k := range path {
		m, _ := cur.(map[string]any)
		cur = m[k]
	}
	if cur == nil {
		return nil
	}
	events, ok := cur.(map[string]any)
	if !ok {
		return errorf("%s is not an object", strings.Join(path, "."))
	}
	for ev, groups := range events {
		list, ok := groups.([]any)
		if !ok {
			return errorf("hooks.%s is not an array", ev)
		}
		for _, g := range list {
			gm, ok := g.(map[string]any)
			if !ok {
				return errorf("hooks.%s holds a group that is not an object", ev)
			}
			hs, ok := gm["hooks"].([]any)
			if !ok {
				return errorf("a group of hooks.%s has no hooks array", ev)
			}
			for _, h := range hs {
				hm, ok := h.(map[string]any)
				if !ok || hm["type"] == nil {
					return errorf("a hook of hooks.%s has no type", ev)
				}
			}
		}
	}
	return nil
}

// checkServers checks that the object at path maps names to objects.
func checkServers(src []byte, path ...string) error {
	var doc map[string]any
	if err := json.Unmarshal(stripJSONC(src), &doc); err != nil {
		return err
	}
	var cur any = doc
	for i, k := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return errorf("%s is not an object", strings.Join(path[:i], "."))
		}
		cur = m[k]
	}
	if cur == nil {
		return nil
	}
	servers, ok := cur.(map[string]any)
	if !ok {
		return errorf("%s is not an object", strings.Join(path, "."))
	}
	for name, s := range servers {
		if _, ok := s.(map[string]any); !ok {
			return errorf("%s.%s is not an object", strings.Join(path, "."), name)
		}
	}
	return nil
}
