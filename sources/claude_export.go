package sources

import (
	"encoding/json"
	"path"
	"strings"
)

// ClaudeExportName is the Claude.ai export source's name.
const ClaudeExportName = "claude-export"

// claudeExportVersion is the conversations.json layout the parser follows:
// a conversation has uuid, name, created_at, updated_at (RFC 3339) and
// chat_messages, each with uuid, sender (human, assistant), created_at,
// text and/or content blocks (text, thinking, tool_use, tool_result),
// attachments (file_name, file_size, extracted_content) and files
// (file_name); where messages carry parent_message_uuid and the
// conversation current_leaf_message_uuid, the current branch is followed.
// Checked against the layout publicly described for Claude.ai exports made
// in 2024 and 2025 (see sources/testdata/transcripts/claude-export/
// README.md).
const claudeExportVersion = "conversations-2025"

// ClaudeExport is the export-file source of a Claude.ai data export's
// conversations.json: one document per conversation, filed in the room
// "claude".
func ClaudeExport() ExportFile {
	return ExportFile{Format: ExportFormat{Name: ClaudeExportName, Version: claudeExportVersion, Room: "claude", App: "Claude.ai",
		IDKeys: []string{"uuid"}, TimeKeys: []string{"updated_at", "created_at"},
		URL:   func(id string) string { return "https://claude.ai/chat/" + id },
		Parse: parseClaudeConversation}, spans: &spanCache{}}
}

type claudeConversation struct {
	UUID         string                `json:"uuid"`
	Name         string                `json:"name"`
	ChatMessages []claudeExportMessage `json:"chat_messages"`
	CurrentLeaf  string                `json:"current_leaf_message_uuid"`
}

type claudeExportMessage struct {
	UUID        string          `json:"uuid"`
	Parent      string          `json:"parent_message_uuid"`
	Sender      string          `json:"sender"`
	CreatedAt   json.RawMessage `json:"created_at"`
	Text        string          `json:"text"`
	Content     []claudeBlock   `json:"content"`
	Attachments []struct {
		FileName         string `json:"file_name"`
		FileSize         int    `json:"file_size"`
		ExtractedContent string `json:"extracted_content"`
	} `json:"attachments"`
	Files []struct {
		FileName string `json:"file_name"`
		FileKind string `json:"file_kind"`
	} `json:"files"`
}

// parseClaudeConversation reads one conversation: each message a turn of
// its sender (human is the user), its content blocks in order (thinking
// dropped, tool_use a tool marker, tool_result a result marker), or its
// text when it has no blocks, then its attachments and files as markers
// (never their extracted text); unknown senders and block types are
// counted in Skipped.
func parseClaudeConversation(raw []byte) (*Session, error) {
	var c claudeConversation
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	if c.UUID == "" || c.ChatMessages == nil {
		return nil, errNotConversation
	}
	s := &Session{ID: c.UUID, Agent: "claude.ai", Title: c.Name}
	for _, m := range c.branch() {
		var role string
		switch m.Sender {
		case "human", "user":
			role = "user"
		case "assistant":
			role = "assistant"
		default:
			s.Skipped++
			continue
		}
		var lines []string
		if len(m.Content) == 0 {
			lines = append(lines, m.Text)
		}
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				lines = append(lines, b.Text)
			case "thinking", "redacted_thinking":
				// The model's reasoning: never kept.
			case "tool_use":
				lines = append(lines, ToolMarker(b.Name, toolArgs(b.Input)))
			case "tool_result":
				lines = append(lines, ResultMarker(claudeResultSize(b.Content), b.IsError))
			case "image":
				lines = append(lines, ImageMarker())
			default:
				s.Skipped++
			}
		}
		for _, a := range m.Attachments {
			size := a.FileSize
			if size == 0 {
				size = len(a.ExtractedContent)
			}
			lines = append(lines, "[attachment "+oneLine(a.FileName)+": "+humanBytes(size)+"]")
		}
		for _, f := range m.Files {
			if f.FileKind == "image" || isImageName(f.FileName) {
				lines = append(lines, ImageMarker())
			} else {
				lines = append(lines, "[file "+oneLine(f.FileName)+"]")
			}
		}
		addTurn(s, role, exportInstant(m.CreatedAt), lines)
	}
	return s, nil
}

// branch is the messages of the current branch: when the conversation
// names its current leaf and the messages their parents, the leaf up
// through its parents, reversed; else every message in order.
func (c *claudeConversation) branch() []claudeExportMessage {
	if c.CurrentLeaf == "" {
		return c.ChatMessages
	}
	byID := make(map[string]int, len(c.ChatMessages))
	for i, m := range c.ChatMessages {
		if m.UUID != "" {
			byID[m.UUID] = i
		}
	}
	var out []claudeExportMessage
	seen := map[string]bool{}
	for cur := c.CurrentLeaf; cur != "" && !seen[cur]; {
		i, ok := byID[cur]
		if !ok {
			break
		}
		seen[cur] = true
		out = append(out, c.ChatMessages[i])
		cur = c.ChatMessages[i].Parent
	}
	if len(out) == 0 {
		return c.ChatMessages
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// claudeResultSize is the size of a tool result's content: its text
// blocks' text, or its JSON.
func claudeResultSize(raw json.RawMessage) int {
	var text string
	if json.Unmarshal(raw, &text) == nil {
		return len(text)
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) == nil {
		n := 0
		for _, b := range blocks {
			n += len(b.Text)
		}
		if n > 0 {
			return n
		}
	}
	return len(raw)
}

func oneLine(s string) string { return shorten(strings.Join(strings.Fields(s), " "), markerArgChars) }

func isImageName(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic", ".bmp", ".svg":
		return true
	}
	return false
}
