package sources

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// CodexName is the codex transcript source's name.
const CodexName = "codex"

// CodexFormat is the rollout format the codex source follows: the JSON
// Lines rollout files Codex writes under ~/.codex/sessions/YYYY/MM/DD/
// (rollout-<time>-<session id>.jsonl), one {timestamp, type, payload}
// record a line. Checked against codex-cli 0.169.0 (the fixtures under
// testdata/transcripts/codex were written by it); besides session_meta
// and response_item, the record types it writes are in codexKnown.
const CodexFormat = "rollout-0.169"

// Codex is the codex transcript source: Codex's rollout files, one
// document per session (a resumed session appends to its file, so it
// grows and only its new turns are filed). A sub-agent's session (its
// own rollout file, session_meta.source.subagent) is kept apart, its
// turns marked as a sub-agent's. Archived sessions
// (~/.codex/archived_sessions, flat rollout-*.jsonl files) are mined by
// giving that directory as the locator.
//
// A session's turns come from its response_item records: messages of
// the roles user and assistant (developer and system messages are
// Codex's instructions, not the conversation), tool calls as markers
// (a shell call's command, an apply_patch call's files), tool results as
// a size marker, web searches as a marker with the query, images as a
// marker. Reasoning items (their summaries and encrypted content) are
// dropped. The event_msg records repeat the messages for Codex's own
// interface and are not read, so nothing is doubled. The user-role
// messages Codex injects (the AGENTS.md instructions, the environment
// context, skills, a sub-agent's notification) are left out: see
// codexNotThePerson.
func Codex() SessionFiles {
	return SessionFiles{Format: SessionFormat{Name: CodexName, Version: CodexFormat, DefaultDir: ".codex/sessions", Room: "codex",
		Match: codexMatch, Parse: parseCodex}}
}

// codexMatch selects the rollout files: rollout-*.jsonl at any depth
// (YYYY/MM/DD under sessions, flat under archived_sessions).
func codexMatch(rel string) bool {
	base := path.Base(rel)
	return strings.HasPrefix(base, "rollout-") && strings.HasSuffix(base, ".jsonl")
}

// codexKnown are the record types a rollout holds that carry no turn of
// the conversation (read and left out, not counted as unknown).
var codexKnown = map[string]bool{"event_msg": true, "turn_context": true, "world_state": true, "token_usage_record": true, "compacted": true}

// codexItemsKnown are the response items left out on purpose: the
// model's reasoning, Codex's undo snapshots and compaction records.
var codexItemsKnown = map[string]bool{"reasoning": true, "ghost_snapshot": true, "compaction": true, "compaction_summary": true}

// codexRecord is one rollout line.
type codexRecord struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// codexMeta is a session_meta payload's fields the source keeps.
type codexMeta struct {
	ID         string `json:"id"`
	Cwd        string `json:"cwd"`
	CLIVersion string `json:"cli_version"`
	// Source is "exec", "cli", "vscode"… or, for a sub-agent's session,
	// {"subagent": {"thread_spawn": {"parent_thread_id", …}}}.
	Source json.RawMessage `json:"source"`
}

// subagent reports a sub-agent's session (spawned by another's
// spawn_agent call).
func (m codexMeta) subagent() bool {
	var src map[string]json.RawMessage
	if json.Unmarshal(m.Source, &src) != nil {
		return false
	}
	_, ok := src["subagent"]
	return ok
}

// codexItem is a response_item payload.
type codexItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL string `json:"image_url"`
	} `json:"content"`
	// Metadata Codex 0.169 attaches to a message: the provenance of each
	// content item ("user" for what the person typed).
	Passthrough struct {
		ItemMetadata []codexProvenance `json:"content_item_metadata"`
	} `json:"internal_chat_message_metadata_passthrough"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Input     string          `json:"input"`
	Output    json.RawMessage `json:"output"`
	Action    struct {
		Type    string   `json:"type"`
		Command []string `json:"command"`
		Query   string   `json:"query"`
	} `json:"action"`
}

// parseCodex reads a rollout file's complete lines into a session.
func parseCodex(ctx context.Context, r io.Reader) (*Session, error) {
	s := &Session{Agent: CodexName}
	meta, subagent := false, false
	bad, err := JSONLines(ctx, r, func(n int, line []byte) error {
		var rec codexRecord
		if json.Unmarshal(line, &rec) != nil {
			s.Skipped++
			return nil
		}
		at, _ := time.Parse(time.RFC3339Nano, rec.Timestamp)
		switch {
		case rec.Type == "session_meta":
			var m codexMeta
			if json.Unmarshal(rec.Payload, &m) != nil {
				s.Skipped++
				return nil
			}
			if !meta { // a forked session's file may repeat its parent's
				meta = true
				s.ID, s.Project, s.AgentVersion = m.ID, m.Cwd, m.CLIVersion
				subagent = m.subagent()
			}
		case rec.Type == "response_item":
			var it codexItem
			if json.Unmarshal(rec.Payload, &it) != nil {
				s.Skipped++
				return nil
			}
			role, text, known := codexItemText(&it)
			if !known {
				s.Skipped++
			} else if text != "" {
				codexAddTurn(s, role, at, text)
			}
		case codexKnown[rec.Type]:
		default:
			s.Skipped++
		}
		return nil
	})
	s.Skipped += bad
	if err != nil {
		return nil, err
	}
	if !meta {
		return nil, errors.New("codex: no session_meta record: not a rollout file")
	}
	for i := range s.Turns {
		s.Turns[i].Sidechain = subagent
	}
	return s, nil
}

// codexAddTurn appends text to the last turn when the same role spoke it
// (an assistant's message, tool calls and results are one turn), else
// starts a turn at the time given.
func codexAddTurn(s *Session, role string, at time.Time, text string) {
	if n := len(s.Turns); n > 0 && s.Turns[n-1].Role == role {
		s.Turns[n-1].Text += "\n" + text
		return
	}
	s.Turns = append(s.Turns, Turn{Role: role, Time: at, Text: text})
}

// codexItemText is a response item's role and text as a turn keeps it
// ("" to leave it out); known is false for an item type the source does
// not know.
func codexItemText(it *codexItem) (role, text string, known bool) {
	switch it.Type {
	case "message":
		switch it.Role {
		case "user", "assistant":
		default: // developer and system messages are Codex's instructions
			return "", "", true
		}
		var parts []string
		meta := it.Passthrough.ItemMetadata
		for i, c := range it.Content {
			switch c.Type {
			case "input_text", "output_text", "text":
				if it.Role == "user" && codexNotThePerson(c.Text, meta, len(it.Content), i) {
					continue
				}
				if codexImageTag.MatchString(strings.TrimSpace(c.Text)) {
					continue // the <image name=…> and </image> around an attached image
				}
				if t := strings.TrimSpace(c.Text); t != "" {
					parts = append(parts, t)
				}
			case "input_image", "image":
				parts = append(parts, ImageMarker())
			}
		}
		return it.Role, strings.Join(parts, "\n"), true
	case "function_call":
		return "assistant", ToolMarker(it.Name, codexArgs(it.Name, it.Arguments)), true
	case "custom_tool_call":
		return "assistant", ToolMarker(it.Name, codexCustomInput(it.Name, it.Input)), true
	case "local_shell_call":
		return "assistant", ToolMarker("shell", codexCommand(it.Action.Command)), true
	case "web_search_call":
		return "assistant", ToolMarker("web_search", it.Action.Query), true
	case "function_call_output", "custom_tool_call_output", "local_shell_call_output":
		size, failed := codexOutput(it.Output)
		return "assistant", ResultMarker(size, failed), true
	}
	return "", "", codexItemsKnown[it.Type]
}

// codexImageTag is the text Codex puts around an attached image.
var codexImageTag = regexp.MustCompile(`^</?image\b[^>]*>$`)

// codexNotThePerson reports a user-role content item Codex wrote, not the
// person: where the message has a provenance per item (0.169), one whose
// provenance is not "user" (agents_md, harness, skills, tool…); in older
// versions' messages, a text in the shape of Codex's injections.
func codexNotThePerson(text string, meta []codexProvenance, items, i int) bool {
	if len(meta) == items {
		return meta[i].Provenance.Type != "user"
	}
	return codexInjected(text)
}

// codexProvenance is one content item's metadata.
type codexProvenance struct {
	Provenance struct {
		Type string `json:"type"`
	} `json:"provenance"`
}

// codexInjectedTags are the tags of the blocks Codex sends as user
// messages: the environment, the user instructions (AGENTS.md) of older
// versions, skills, a shell command the person ran with its output, an
// interrupted turn, a sub-agent's notification.
var codexInjectedTags = map[string]bool{"environment_context": true, "user_instructions": true, "INSTRUCTIONS": true,
	"skills_instructions": true, "user_shell_command": true, "turn_aborted": true, "subagent_notification": true,
	"permissions instructions": true, "collaboration_mode": true}

// codexBlock is a text that is one tagged block: its opening and closing
// tag names.
var codexBlock = regexp.MustCompile(`(?s)^<([A-Za-z_][A-Za-z_ ]*)(?:\s[^>]*)?>.*</([A-Za-z_][A-Za-z_ ]*)>$`)

// codexInjected reports a text in the shape of Codex's injections (for
// messages without provenance): the AGENTS.md instructions ("# AGENTS.md
// instructions for <dir>" then an <INSTRUCTIONS> block) and a text that is
// one block of a tag codexInjectedTags names. A person's own tagged text
// (<task>…</task>) is kept.
func codexInjected(text string) bool {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "# AGENTS.md instructions for ") {
		return true
	}
	m := codexBlock.FindStringSubmatch(t)
	return m != nil && m[1] == m[2] && codexInjectedTags[m[1]]
}

// codexShells are the function tools whose arguments are a shell command.
var codexShells = map[string]bool{"shell": true, "exec_command": true, "shell_command": true, "container.exec": true, "local_shell": true}

// codexArgs is a function call's arguments as its marker shows them: a
// shell tool's command (without a "bash -lc" wrapper), other tools'
// arguments as their JSON.
func codexArgs(name, args string) string {
	if codexShells[name] {
		var a struct {
			Cmd     string          `json:"cmd"`
			Command json.RawMessage `json:"command"`
		}
		if json.Unmarshal([]byte(args), &a) == nil {
			if a.Cmd != "" {
				return a.Cmd
			}
			var argv []string
			if json.Unmarshal(a.Command, &argv) == nil {
				return codexCommand(argv)
			}
			var line string
			if json.Unmarshal(a.Command, &line) == nil {
				return line
			}
		}
	}
	return args
}

// codexCommand joins a command's words, showing only the script of a
// "bash -lc <script>" wrapper.
func codexCommand(argv []string) string {
	if len(argv) == 3 && (argv[1] == "-lc" || argv[1] == "-c") && (path.Base(argv[0]) == "bash" || path.Base(argv[0]) == "sh" || path.Base(argv[0]) == "zsh") {
		return argv[2]
	}
	return strings.Join(argv, " ")
}

// codexPatchFile is an apply_patch input's file line.
var codexPatchFile = regexp.MustCompile(`(?m)^\*\*\* (Add|Update|Delete) File: (.+)$`)

// codexCustomInput is a freeform tool call's input as its marker shows
// it: an apply_patch call's file operations, others' input.
func codexCustomInput(name, input string) string {
	if name == "apply_patch" {
		var ops []string
		for _, m := range codexPatchFile.FindAllStringSubmatch(input, -1) {
			ops = append(ops, strings.ToLower(m[1])+" "+strings.TrimSpace(m[2]))
		}
		if len(ops) > 0 {
			return strings.Join(ops, ", ")
		}
	}
	return input
}

// codexExit is the exit code line of a tool's output: "Process exited
// with code N" (exec_command), "Exit code: N" (apply_patch).
var codexExit = regexp.MustCompile(`(?m)^(?:Process exited with code|Exit code:) (-?\d+)$`)

// codexOutput is a tool output's size and whether it failed: the output
// is a string (0.169's tools: its exit code line, then "Output:" and the
// output, whose size is counted; older shells: a JSON {"output", "metadata": {"exit_code"}})
// or an object {"content", "success"}.
func codexOutput(raw json.RawMessage) (size int, failed bool) {
	var text string
	if json.Unmarshal(raw, &text) != nil {
		var o struct {
			Content json.RawMessage `json:"content"`
			Success *bool           `json:"success"`
		}
		if json.Unmarshal(raw, &o) != nil {
			return len(raw), false
		}
		if json.Unmarshal(o.Content, &text) != nil {
			text = string(o.Content)
		}
		return len(text), o.Success != nil && !*o.Success
	}
	if m := codexExit.FindStringSubmatch(text); m != nil {
		code, _ := strconv.Atoi(m[1])
		if _, out, ok := strings.Cut(text, "\nOutput:\n"); ok {
			return len(out), code != 0
		}
		return len(text), code != 0
	}
	var shell struct {
		Output   *string `json:"output"`
		Metadata struct {
			ExitCode int `json:"exit_code"`
		} `json:"metadata"`
	}
	if strings.HasPrefix(text, "{") && json.Unmarshal([]byte(text), &shell) == nil && shell.Output != nil {
		return len(*shell.Output), shell.Metadata.ExitCode != 0
	}
	return len(text), false
}
