package integration

import (
	"encoding/json"
	"path/filepath"
	"strings"
)

// Codex (checked with codex-cli 0.169.0; `codex mcp add` writes the same
// table):
//
//	user     MCP      ~/.codex/config.toml     [mcp_servers.loci] (url, bearer_token_env_var; or command, args)
//	         hooks    ~/.codex/hooks.json      hooks.SessionStart|PreCompact|SessionEnd (Codex asks to trust them once)
//	         text     ~/.codex/AGENTS.md
//	project  MCP      <project>/.codex/config.toml (read for trusted projects)
//	         hooks    <project>/.codex/hooks.json
//	         text     <project>/AGENTS.md
//
// Codex's PostCompact input has no summary (its schema in 0.169.0 allows
// none), so it is not registered; PreCompact runs pre-compact as for
// Claude Code.
//
// CODEX_HOME moves ~/.codex, as Codex does. The hooks go to hooks.json,
// not to [hooks] tables of config.toml: Codex reads both, and a JSON file
// of its own is edited without touching the user's TOML.
func codex() Agent {
	return Agent{Name: "codex", Command: "codex", files: codexFiles}
}

func codexFiles(p *plan) ([]File, error) {
	home := p.envDir("CODEX_HOME", filepath.Join(p.home(), ".codex"))
	dir, text := home, filepath.Join(home, "AGENTS.md")
	if p.project != "" {
		dir, text = filepath.Join(p.project, ".codex"), filepath.Join(p.project, "AGENTS.md")
	}
	var b strings.Builder
	b.WriteString("[mcp_servers.loci]\n")
	if p.transport == TransportStdio {
		b.WriteString("command = " + tomlString(p.Loci) + "\n")
		b.WriteString("args = " + tomlStrings(p.bridgeArgs()) + "\n")
		if p.Auth {
			b.WriteString("env_vars = " + tomlStrings([]string{TokenEnv}) + "\n")
		}
	} else {
		b.WriteString("url = " + tomlString(p.URL) + "\n")
		if p.Auth {
			b.WriteString("bearer_token_env_var = " + tomlString(TokenEnv) + "\n")
		}
	}
	instr, err := p.instructions()
	if err != nil {
		return nil, err
	}
	return []File{
		{Path: filepath.Join(dir, "config.toml"), Format: FormatTOML, Check: checkCodexConfig,
			Parts: []Part{{Kind: KindTOMLTable, Path: []string{"mcp_servers", "loci"}, Value: b.String()}}},
		{Path: filepath.Join(dir, "hooks.json"), Format: FormatJSON, Check: checkCodexHooks, Parts: p.hookParts()},
		{Path: text, Format: FormatMarkdown, Parts: []Part{instr}},
	}, nil
}

// checkCodexConfig checks the MCP servers of a config.toml: each a table
// with a url or a command.
func checkCodexConfig(src []byte) error {
	doc, err := parseTOML(src)
	if err != nil {
		return err
	}
	v, ok := tomlGet(doc, []string{"mcp_servers"})
	if !ok {
		return nil
	}
	servers, ok := v.(map[string]any)
	if !ok {
		return errorf("mcp_servers is not a table")
	}
	for name, s := range servers {
		t, ok := s.(map[string]any)
		if !ok {
			return errorf("mcp_servers.%s is not a table", name)
		}
		if t["url"] == nil && t["command"] == nil {
			return errorf("mcp_servers.%s has neither url nor command", name)
		}
	}
	return nil
}

// checkCodexHooks checks a hooks.json: Codex refuses a root field other
// than description and hooks.
func checkCodexHooks(src []byte) error {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(stripJSONC(src), &doc); err != nil {
		return err
	}
	for k := range doc {
		if k != "description" && k != "hooks" {
			return errorf("Codex accepts only description and hooks at the top of hooks.json, not %q", k)
		}
	}
	return checkHooks(src, "hooks")
}
