package sources

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// ClaudeCodeName is the claude-code transcript source's name.
const ClaudeCodeName = "claude-code"

// ClaudeCodeFormat is the session format version the claude-code source
// follows: the JSONL session files Claude Code writes under
// ~/.claude/projects/<encoded cwd>/<session uuid>.jsonl, one record per
// line, a sub-agent's conversation in its own file under
// <session uuid>/subagents/agent-<id>.jsonl (every record isSidechain).
// Checked against the files Claude Code 2.1.328 writes
// (sources/testdata/transcripts/claude-code); the record types the parser
// knows are claudeKnown's.
const ClaudeCodeFormat = "jsonl-2.1"

// ClaudeCode is the claude-code transcript source: Claude Code's session
// files, one document per file (a sub-agent's file is its own document,
// its turns marked as the sub-agent's).
func ClaudeCode() SessionFiles {
	return SessionFiles{Format: SessionFormat{Name: ClaudeCodeName, Version: ClaudeCodeFormat,
		DefaultDir: ".claude/projects", Room: "claude-code", Match: claudeMatch, Parse: ParseClaudeCode,
		Retention: ClaudeCodeRetention}}
}

// claudeMatch takes the session files: <project>/<uuid>.jsonl and the
// sub-agents' <project>/<uuid>/subagents/agent-<id>.jsonl (their .meta.json
// files are not sessions).
func claudeMatch(rel string) bool {
	return strings.HasSuffix(rel, ".jsonl") && strings.Contains(rel, "/")
}

// claudeKnown are the record types Claude Code writes that are not
// conversation (or whose conversation is elsewhere): left out without
// being counted as unknown (all seen in the files 2.1.328 writes but
// file-history-snapshot and progress, which the interactive CLI and
// earlier versions write). "user" and "assistant" are the conversation;
// "summary" and "custom-title" name it.
var claudeKnown = map[string]bool{
	"system": true, "attachment": true, "file-history-snapshot": true, "queue-operation": true,
	"last-prompt": true, "atis-latch": true, "api-request-shape": true, "api-request-blob": true,
	"api-request": true, "tools-used": true, "cost-state": true, "mode": true, "progress": true,
}

// claudeRecord is the part of a session record the parser reads.
type claudeRecord struct {
	Type        string `json:"type"`
	SessionID   string `json:"sessionId"`
	Version     string `json:"version"`
	Cwd         string `json:"cwd"`
	Timestamp   string `json:"timestamp"`
	IsSidechain bool   `json:"isSidechain"`
	IsMeta      bool   `json:"isMeta"`
	// IsCompactSummary marks the summary Claude Code generates when it
	// compacts a conversation: the model's words, not the person's.
	IsCompactSummary bool `json:"isCompactSummary"`
	// IsAPIErrorMessage marks the assistant message the CLI writes in the
	// model's place when a request failed.
	IsAPIErrorMessage bool            `json:"isApiErrorMessage"`
	Origin            json.RawMessage `json:"origin"`
	Summary           string          `json:"summary"`
	CustomTitle       string          `json:"customTitle"`
	Message           struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// claudeBlock is one content block of a message.
type claudeBlock struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Name    string          `json:"name"`
	Input   json.RawMessage `json:"input"`
	Content json.RawMessage `json:"content"`
	IsError bool            `json:"is_error"`
}

// ParseClaudeCode reads one Claude Code session file. Each user record
// with words of the person's is a user turn (a slash command a marker
// "[command /compact]", a shell command run with ! a tool marker); the
// assistant records up to the next one (Claude Code writes each content
// block as its own record, and a tool's result comes back as a user record
// of only tool_result blocks) are one assistant turn: its text, a marker
// per tool call and a marker with the size of each result, never the
// result. Thinking is dropped; images become a marker. Records that are
// not the person's or the model's words are left out: isMeta reminders,
// the summary a compaction generates (isCompactSummary), the message the
// CLI writes when a request failed (isApiErrorMessage), background task
// notifications (which carry an origin; the sub-agent's own file has its
// conversation), the output of local and shell commands. The known record types that are
// not conversation are left out too; other types, and content blocks of
// types it does not know, are counted in Skipped. A file with no record
// Claude Code writes is not a session.
func ParseClaudeCode(ctx context.Context, r io.Reader) (*Session, error) {
	s := &Session{Agent: ClaudeCodeName}
	seen := 0
	bad, err := JSONLines(ctx, r, func(_ int, line []byte) error {
		// The type first, cheaply: most of a session's bytes are records
		// that are not conversation (attachments, request snapshots).
		switch typ := gjson.GetBytes(line, "type").String(); {
		case typ != "user" && typ != "assistant" && typ != "summary" && typ != "custom-title":
			if claudeKnown[typ] {
				seen++
			} else {
				s.Skipped++
			}
			return nil
		}
		var rec claudeRecord
		if json.Unmarshal(line, &rec) != nil {
			s.Skipped++
			return nil
		}
		switch {
		case rec.Type == "user" || rec.Type == "assistant":
			seen++
			claudeMessage(s, &rec)
		case rec.Type == "summary" || rec.Type == "custom-title":
			seen++
			if rec.CustomTitle != "" {
				s.Title = rec.CustomTitle
			} else if s.Title == "" {
				s.Title = rec.Summary
			}
		}
		return nil
	})
	s.Skipped += bad
	if err != nil {
		return nil, err
	}
	if seen == 0 && s.Skipped > 0 {
		return nil, &Filtered{Reason: "not_a_session"}
	}
	return s, nil
}

// claudeMessage adds a user or assistant record to the session's turns.
func claudeMessage(s *Session, rec *claudeRecord) {
	if s.ID == "" {
		s.ID = rec.SessionID
	}
	if rec.Version != "" {
		s.AgentVersion = rec.Version
	}
	if s.Project == "" {
		s.Project = rec.Cwd
	}
	if rec.IsMeta || rec.IsCompactSummary || rec.IsAPIErrorMessage || (rec.Type == "user" && len(rec.Origin) > 0 && !bytes.Equal(rec.Origin, []byte("null"))) {
		return
	}
	at, _ := time.Parse(time.RFC3339Nano, rec.Timestamp)
	var blocks []claudeBlock
	var str string
	if json.Unmarshal(rec.Message.Content, &str) == nil {
		blocks = []claudeBlock{{Type: "text", Text: str}}
	} else if json.Unmarshal(rec.Message.Content, &blocks) != nil {
		s.Skipped++
		return
	}
	var text, markers []string // a user's own words; the tool results for the assistant's turn
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if t := claudeText(rec.Type, b.Text); t != "" {
				text = append(text, t)
			}
		case "image", "document":
			text = append(text, ImageMarker())
		case "tool_use", "server_tool_use":
			text = append(text, ToolMarker(b.Name, claudeToolArgs(b.Name, b.Input)))
		case "tool_result", "web_search_tool_result":
			markers = append(markers, ResultMarker(resultSize(b.Content), b.IsError))
		case "thinking", "redacted_thinking":
			// The model's reasoning is never kept.
		default:
			s.Skipped++
		}
	}
	role := rec.Type
	if rec.Type == "user" {
		// Tool results belong to the assistant's turn they answer; when a
		// sub-agent's turns came between (older versions wrote them into
		// the session's file), they open the caller's next turn.
		if n := len(s.Turns); len(markers) > 0 && n > 0 {
			last := &s.Turns[n-1]
			switch {
			case last.Role == "assistant" && last.Sidechain == rec.IsSidechain:
				last.Text += "\n" + strings.Join(markers, "\n")
			case last.Sidechain != rec.IsSidechain:
				s.Turns = append(s.Turns, Turn{Role: "assistant", Time: at, Text: strings.Join(markers, "\n"), Sidechain: rec.IsSidechain})
			}
		}
	}
	if len(text) == 0 {
		return
	}
	if n := len(s.Turns); n > 0 && role == "assistant" && s.Turns[n-1].Role == role && s.Turns[n-1].Sidechain == rec.IsSidechain {
		s.Turns[n-1].Text += "\n" + strings.Join(text, "\n")
		return
	}
	s.Turns = append(s.Turns, Turn{Role: role, Time: at, Text: strings.Join(text, "\n"), Sidechain: rec.IsSidechain})
}

// claudeText is a text block as a turn keeps it: a reminder Claude Code
// adds and the output of a local command or of a shell command the person
// ran (! mode) are left out; a slash command the person ran, and such a
// shell command, become a marker.
func claudeText(typ, t string) string {
	t = strings.TrimSpace(t)
	if typ != "user" {
		return t
	}
	for _, drop := range []string{"<system-reminder>", "<local-command-stdout>", "<local-command-stderr>", "<local-command-caveat>",
		"<bash-stdout>", "<bash-stderr>"} {
		if strings.HasPrefix(t, drop) {
			return ""
		}
	}
	if strings.HasPrefix(t, "<command-name>") {
		cmd := strings.TrimSpace(between(t, "<command-name>", "</command-name>") + " " + between(t, "<command-args>", "</command-args>"))
		return "[command " + shorten(strings.Join(strings.Fields(cmd), " "), markerArgChars) + "]"
	}
	if strings.HasPrefix(t, "<bash-input>") {
		return ToolMarker("Bash", between(t, "<bash-input>", "</bash-input>"))
	}
	return t
}

// between is the text of s between open and the close after it ("" when
// either is missing).
func between(s, open, close string) string {
	_, rest, ok := strings.Cut(s, open)
	if !ok {
		return ""
	}
	in, _, ok := strings.Cut(rest, close)
	if !ok {
		return ""
	}
	return strings.TrimSpace(in)
}

// claudeToolArgs is a tool call's arguments as its marker shows them: the
// command for Bash, the file for the file tools, the pattern for the
// searches, the description for a sub-agent; otherwise the input as
// compact JSON.
func claudeToolArgs(name string, input json.RawMessage) string {
	var in map[string]any
	json.Unmarshal(input, &in)
	pick := func(keys ...string) string {
		for _, k := range keys {
			if v, ok := in[k].(string); ok && v != "" {
				return v
			}
		}
		return ""
	}
	var v string
	switch name {
	case "Bash":
		v = pick("command")
	case "Read", "Edit", "Write", "MultiEdit":
		v = pick("file_path")
	case "NotebookEdit":
		v = pick("notebook_path")
	case "Grep", "Glob":
		v = pick("pattern")
	case "WebFetch":
		v = pick("url")
	case "WebSearch", "web_search":
		v = pick("query")
	case "Agent", "Task":
		v = pick("description", "subagent_type")
	}
	if v != "" {
		return v
	}
	var buf bytes.Buffer
	if json.Compact(&buf, input) != nil || buf.String() == "{}" || buf.String() == "null" {
		return ""
	}
	return buf.String()
}

// resultSize is the size of a tool result's content: a string's bytes,
// or the text of its blocks (an image block counts as its data).
func resultSize(raw json.RawMessage) int {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return len(s)
	}
	var blocks []struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Source struct {
			Data string `json:"data"`
		} `json:"source"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return len(raw)
	}
	n := 0
	for _, b := range blocks {
		n += len(b.Text) + len(b.Source.Data)
	}
	return n
}
