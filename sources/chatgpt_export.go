package sources

import (
	"encoding/json"
	"sort"
	"strings"
)

// ChatGPTExportName is the ChatGPT export source's name.
const ChatGPTExportName = "chatgpt-export"

// chatGPTExportVersion is the conversations.json layout the parser
// follows: a conversation's messages are a tree (mapping: node id to
// {message, parent, children}) whose current branch ends at current_node;
// a message has author.role, create_time (Unix seconds), recipient,
// metadata.is_visually_hidden_from_conversation and content by
// content_type (text, multimodal_text, code, execution_output, thoughts,
// reasoning_recap, tether_browsing_display, tether_quote, system_error,
// user_editable_context, model_editable_context). Checked against the
// layout publicly described for exports made in 2024 and 2025 (see
// sources/testdata/transcripts/chatgpt-export/README.md).
const chatGPTExportVersion = "conversations-2025"

// ChatGPTExport is the export-file source of a ChatGPT data export's
// conversations.json: one document per conversation, its current branch
// only (the answers regenerated or edited away are left out), filed in
// the room "chatgpt".
func ChatGPTExport() ExportFile {
	return ExportFile{Format: ExportFormat{Name: ChatGPTExportName, Version: chatGPTExportVersion, Room: "chatgpt", App: "ChatGPT",
		IDKeys: []string{"conversation_id", "id"}, TimeKeys: []string{"update_time", "create_time"},
		URL:   func(id string) string { return "https://chatgpt.com/c/" + id },
		Parse: parseChatGPTConversation}, spans: &spanCache{}}
}

type gptConversation struct {
	ID             string             `json:"id"`
	ConversationID string             `json:"conversation_id"`
	Title          string             `json:"title"`
	Mapping        map[string]gptNode `json:"mapping"`
	CurrentNode    string             `json:"current_node"`
}

type gptNode struct {
	Message  *gptMessage `json:"message"`
	Parent   string      `json:"parent"`
	Children []string    `json:"children"`
}

type gptMessage struct {
	Author struct {
		Role string `json:"role"`
	} `json:"author"`
	CreateTime json.RawMessage `json:"create_time"`
	Content    json.RawMessage `json:"content"`
	Recipient  string          `json:"recipient"`
	Metadata   struct {
		Hidden bool `json:"is_visually_hidden_from_conversation"`
	} `json:"metadata"`
}

type gptContent struct {
	ContentType string            `json:"content_type"`
	Parts       []json.RawMessage `json:"parts"`
	Text        string            `json:"text"`
	Result      string            `json:"result"`
}

// parseChatGPTConversation reads one conversation: the messages of its
// current branch, root first. User, assistant and visible system messages
// keep their text; an assistant message to a tool (recipient other than
// "all") is a tool marker; a tool's message is a result marker (its size,
// never its text) or image markers; reasoning (thoughts, reasoning_recap)
// and the hidden context messages are dropped; unknown content types and
// roles are counted in Skipped.
func parseChatGPTConversation(raw []byte) (*Session, error) {
	var c gptConversation
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, err
	}
	if c.Mapping == nil {
		return nil, errNotConversation
	}
	s := &Session{ID: c.ConversationID, Agent: "chatgpt", Title: c.Title}
	if s.ID == "" {
		s.ID = c.ID
	}
	for _, node := range c.branch() {
		m := c.Mapping[node].Message
		if m == nil || m.Metadata.Hidden {
			continue
		}
		gptTurn(s, m)
	}
	return s, nil
}

// branch is the current branch's node ids, root first: current_node up
// through its parents, reversed. Without a usable current_node, the
// branch ends at the leaf reached from the root through each node's last
// child (the latest answer).
func (c *gptConversation) branch() []string {
	cur := c.CurrentNode
	if _, ok := c.Mapping[cur]; !ok {
		cur = c.lastLeaf()
	}
	var ids []string
	seen := map[string]bool{}
	for cur != "" && !seen[cur] {
		n, ok := c.Mapping[cur]
		if !ok {
			break
		}
		seen[cur] = true
		ids = append(ids, cur)
		cur = n.Parent
	}
	for i, j := 0, len(ids)-1; i < j; i, j = i+1, j-1 {
		ids[i], ids[j] = ids[j], ids[i]
	}
	return ids
}

func (c *gptConversation) lastLeaf() string {
	keys := make([]string, 0, len(c.Mapping))
	for k := range c.Mapping {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	root := ""
	for _, k := range keys {
		if _, ok := c.Mapping[c.Mapping[k].Parent]; !ok {
			root = k
			break
		}
	}
	seen := map[string]bool{}
	for cur := root; cur != "" && !seen[cur]; {
		seen[cur] = true
		kids := c.Mapping[cur].Children
		if len(kids) == 0 {
			return cur
		}
		if _, ok := c.Mapping[kids[len(kids)-1]]; !ok {
			return cur
		}
		cur = kids[len(kids)-1]
	}
	return root
}

// gptTurn adds one message of the branch to the session.
func gptTurn(s *Session, m *gptMessage) {
	var ct gptContent
	if len(m.Content) > 0 && json.Unmarshal(m.Content, &ct) != nil {
		s.Skipped++
		return
	}
	at := exportInstant(m.CreateTime)
	switch ct.ContentType {
	case "thoughts", "reasoning_recap", "user_editable_context", "model_editable_context":
		// The model's reasoning, and the custom instructions and memory
		// sent as context: never kept.
		return
	}
	role := m.Author.Role
	switch role {
	case "tool":
		addTurn(s, "assistant", at, gptToolResult(s, &ct, len(m.Content)))
		return
	case "user", "assistant", "system":
	default:
		s.Skipped++
		return
	}
	if role == "assistant" && m.Recipient != "" && m.Recipient != "all" {
		args := ct.Text
		if ct.ContentType != "code" {
			args = strings.Join(gptParts(s, &ct), " ")
		}
		addTurn(s, role, at, []string{ToolMarker(m.Recipient, args)})
		return
	}
	var lines []string
	switch ct.ContentType {
	case "text", "multimodal_text":
		lines = gptParts(s, &ct)
	case "code":
		lines = []string{"```\n" + ct.Text + "\n```"}
	case "execution_output", "tether_browsing_display", "tether_quote", "system_error":
		lines = gptToolResult(s, &ct, len(m.Content))
	default:
		s.Skipped++
		return
	}
	addTurn(s, role, at, lines)
}

// gptParts is a text or multimodal content's lines: its strings, images
// as markers, audio by its transcription; parts of unknown types are
// counted in Skipped.
func gptParts(s *Session, ct *gptContent) []string {
	var lines []string
	for _, p := range ct.Parts {
		var text string
		if json.Unmarshal(p, &text) == nil {
			lines = append(lines, text)
			continue
		}
		var part struct {
			ContentType string `json:"content_type"`
			Text        string `json:"text"`
		}
		if json.Unmarshal(p, &part) != nil {
			s.Skipped++
			continue
		}
		switch part.ContentType {
		case "image_asset_pointer":
			lines = append(lines, ImageMarker())
		case "audio_transcription":
			lines = append(lines, part.Text)
		case "audio_asset_pointer", "real_time_user_audio_video_asset_pointer":
			// The recording itself: its transcription is the text.
		default:
			s.Skipped++
		}
	}
	return lines
}

// gptToolResult is a tool's message as markers: images it made, and the
// size of the rest (never its text).
func gptToolResult(s *Session, ct *gptContent, rawLen int) []string {
	switch ct.ContentType {
	case "execution_output":
		return []string{ResultMarker(len(ct.Text), false)}
	case "system_error":
		return []string{ResultMarker(len(ct.Text), true)}
	case "multimodal_text":
		var lines []string
		size := 0
		for _, p := range ct.Parts {
			var part struct {
				ContentType string `json:"content_type"`
			}
			if json.Unmarshal(p, &part) == nil && part.ContentType == "image_asset_pointer" {
				lines = append(lines, ImageMarker())
				continue
			}
			size += len(p)
		}
		if size > 0 || len(lines) == 0 {
			lines = append(lines, ResultMarker(size, false))
		}
		return lines
	case "text":
		size := 0
		for _, p := range ct.Parts {
			var text string
			if json.Unmarshal(p, &text) == nil {
				size += len(text)
			} else {
				size += len(p)
			}
		}
		return []string{ResultMarker(size, false)}
	case "tether_browsing_display":
		return []string{ResultMarker(len(ct.Result), false)}
	}
	return []string{ResultMarker(rawLen, false)}
}
