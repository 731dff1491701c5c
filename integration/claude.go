package integration

import "path/filepath"

// Claude Code (checked with 2.1.328; `claude mcp add` writes the same
// entries):
//
//	user     MCP      ~/.claude.json                mcpServers.loci
//	         hooks    ~/.claude/settings.json       hooks.SessionStart|PreCompact|PostCompact|SessionEnd
//	         text     ~/.claude/CLAUDE.md
//	project  MCP      <project>/.mcp.json           mcpServers.loci (Claude asks once to approve it)
//	         hooks    <project>/.claude/settings.local.json (personal: the hook runs this machine's loci)
//	         text     <project>/CLAUDE.md
//
// PostCompact runs `loci hook claude-code pre-compact` too: its input
// carries compact_summary, which the hook files (PreCompact's and
// SessionEnd's carry no summary).
//
// CLAUDE_CONFIG_DIR moves the user files (.claude.json, settings.json,
// CLAUDE.md) into that directory, as Claude Code does.
func claudeCode() Agent {
	return Agent{Name: "claude-code", Command: "claude", files: claudeFiles}
}

func claudeFiles(p *plan) ([]File, error) {
	var mcpFile, settings, text string
	switch {
	case p.project != "":
		mcpFile = filepath.Join(p.project, ".mcp.json")
		settings = filepath.Join(p.project, ".claude", "settings.local.json")
		text = filepath.Join(p.project, "CLAUDE.md")
	default:
		dir := p.envDir("CLAUDE_CONFIG_DIR", "")
		mcpFile = filepath.Join(p.home(), ".claude.json")
		if dir != "" {
			mcpFile = filepath.Join(dir, ".claude.json")
		} else {
			dir = filepath.Join(p.home(), ".claude")
		}
		settings = filepath.Join(dir, "settings.json")
		text = filepath.Join(dir, "CLAUDE.md")
	}
	entry := orderedObject{{"type", "http"}, {"url", p.URL}}
	if p.Auth {
		entry = append(entry, field{"headers", orderedObject{{"Authorization", "Bearer ${" + TokenEnv + "}"}}})
	}
	if p.transport == TransportStdio {
		entry = orderedObject{{"type", "stdio"}, {"command", p.Loci}, {"args", p.bridgeArgs()}}
	}
	instr, err := p.instructions()
	if err != nil {
		return nil, err
	}
	return []File{
		{Path: mcpFile, Format: FormatJSON, Check: func(b []byte) error { return checkServers(b, "mcpServers") },
			Parts: []Part{{Kind: KindJSONKey, Path: []string{"mcpServers", "loci"}, Value: entry}}},
		{Path: settings, Format: FormatJSON, Check: func(b []byte) error { return checkHooks(b, "hooks") },
			Parts: p.hookParts(hookEvent{"PostCompact", EventPreCompact})},
		{Path: text, Format: FormatMarkdown, Parts: []Part{instr}},
	}, nil
}
