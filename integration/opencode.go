package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// OpenCode (checked with 1.18.33):
//
//	user     MCP      ~/.config/opencode/opencode.json (or .jsonc)   mcp.loci ({type: remote, url, headers} or {type: local, command})
//	         plugin   ~/.config/opencode/plugin/loci.js              session.created, experimental.session.compacting, session.deleted
//	         text     ~/.config/opencode/AGENTS.md
//	project  MCP      <project>/opencode.json (or .jsonc)
//	         plugin   <project>/.opencode/plugin/loci.js
//	         text     <project>/AGENTS.md
//
// XDG_CONFIG_HOME moves ~/.config, as OpenCode does. OpenCode has no
// command hooks: its plugins (JavaScript modules it loads from the
// plugin/ or plugins/ directory) receive its events, and loci's plugin
// hands them to `loci hook opencode <event>`. Its session.compacted
// event carries only the session's id, no summary.
func opencode() Agent {
	return Agent{Name: "opencode", Command: "opencode", files: opencodeFiles}
}

func opencodeFiles(p *plan) ([]File, error) {
	dir := filepath.Join(p.envDir("XDG_CONFIG_HOME", filepath.Join(p.home(), ".config")), "opencode")
	cfgDir, pluginRoot, text := dir, dir, filepath.Join(dir, "AGENTS.md")
	if p.project != "" {
		cfgDir, pluginRoot, text = p.project, filepath.Join(p.project, ".opencode"), filepath.Join(p.project, "AGENTS.md")
	}
	cfg := filepath.Join(cfgDir, "opencode.json")
	if _, err := os.Stat(cfg); err != nil {
		if _, err := os.Stat(filepath.Join(cfgDir, "opencode.jsonc")); err == nil {
			cfg = filepath.Join(cfgDir, "opencode.jsonc")
		}
	}
	pluginDir := filepath.Join(pluginRoot, "plugin")
	if _, err := os.Stat(pluginDir); err != nil {
		if fi, err := os.Stat(filepath.Join(pluginRoot, "plugins")); err == nil && fi.IsDir() {
			pluginDir = filepath.Join(pluginRoot, "plugins")
		}
	}
	entry := orderedObject{{"type", "remote"}, {"url", p.URL}}
	if p.Auth {
		entry = append(entry, field{"headers", orderedObject{{"Authorization", "Bearer {env:" + TokenEnv + "}"}}})
	}
	if p.transport == TransportStdio {
		entry = orderedObject{{"type", "local"}, {"command", append([]string{p.Loci}, p.bridgeArgs()...)}}
	}
	entry = append(entry, field{"enabled", true})
	plugin, err := p.Assets.Read("opencode/plugin/loci.js")
	if err != nil {
		return nil, err
	}
	bin, _ := json.Marshal(p.Loci)
	script := strings.ReplaceAll(string(plugin), "__LOCI_BINARY__", string(bin))
	instr, err := p.instructions()
	if err != nil {
		return nil, err
	}
	return []File{
		{Path: cfg, Format: FormatJSON, Check: func(b []byte) error { return checkServers(b, "mcp") },
			Parts: []Part{{Kind: KindJSONKey, Path: []string{"mcp", "loci"}, Value: entry}}},
		{Path: filepath.Join(pluginDir, "loci.js"), Format: FormatFile, Parts: []Part{{Kind: KindWhole, Value: script}}},
		{Path: text, Format: FormatMarkdown, Parts: []Part{instr}},
	}, nil
}
