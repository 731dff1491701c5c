// Package exportgen writes synthetic chat exports (a ChatGPT data
// export's conversations.json) of a given size, for the export-file
// sources' memory test and benchmark: varied text, reasoning, tool calls
// and their output in every conversation, nothing real.
package exportgen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
)

// Sentinels are strings the generator puts only in what a transcript
// source must drop (reasoning, tool output): a drawer holding one is a
// leak.
const (
	ReasoningSentinel  = "GENERATED-REASONING"
	ToolOutputSentinel = "GENERATED-TOOL-OUTPUT"
)

var words = strings.Fields(`deploy queue lamp kettle copper harbour ledger migrate index shard
replica cursor window branch merge rebase config token schema drawer palace wing room graph
vector search answer river stone garden pepper orbit signal packet socket thread lock batch
commit rollback latency budget ticket sprint review draft summary chapter recipe sourdough
flour oven hiking trail tent rain shell compass summit glacier valley meadow lantern`)

// ChatGPT writes a ChatGPT export of about size bytes (at least one
// conversation) to w: conversations of about convBytes each (64 KiB when
// 0), each a chain of user and assistant messages with a thoughts message,
// a code call to python and its execution_output. It returns the number of
// conversations written.
func ChatGPT(w io.Writer, size, convBytes int64, seed uint64) (int, error) {
	if convBytes <= 0 {
		convBytes = 64 << 10
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var written int64
	n := 0
	if _, err := bw.WriteString("["); err != nil {
		return 0, err
	}
	written++
	for n == 0 || written < size-convBytes/2 {
		b, err := conversation(rng, n, convBytes)
		if err != nil {
			return n, err
		}
		if n > 0 {
			bw.WriteString(",\n")
			written += 2
		}
		if _, err := bw.Write(b); err != nil {
			return n, err
		}
		written += int64(len(b))
		n++
	}
	if _, err := bw.WriteString("]\n"); err != nil {
		return n, err
	}
	return n, bw.Flush()
}

func sentence(rng *rand.Rand, n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[rng.IntN(len(words))])
	}
	b.WriteByte('.')
	return b.String()
}

type node struct {
	ID       string   `json:"id"`
	Message  any      `json:"message"`
	Parent   *string  `json:"parent"`
	Children []string `json:"children"`
}

func message(id, role, recipient string, at float64, content map[string]any) map[string]any {
	return map[string]any{"id": id, "author": map[string]any{"role": role, "name": nil, "metadata": map[string]any{}},
		"create_time": at, "update_time": nil, "content": content, "status": "finished_successfully",
		"end_turn": nil, "weight": 1.0, "metadata": map[string]any{}, "recipient": recipient, "channel": nil}
}

// conversation is one conversation's JSON, about convBytes long.
func conversation(rng *rand.Rand, k int, convBytes int64) ([]byte, error) {
	id := fmt.Sprintf("%08x-0000-4000-8000-%012x", k, k)
	base := 1.7e9 + float64(k)*600
	mapping := map[string]node{}
	prev := "root"
	mapping["root"] = node{ID: "root"}
	var size int64
	add := func(nid string, msg map[string]any) {
		p := prev
		mapping[nid] = node{ID: nid, Message: msg, Parent: &p}
		pn := mapping[prev]
		pn.Children = append(pn.Children, nid)
		mapping[prev] = pn
		prev = nid
	}
	for i := 0; size < convBytes; i++ {
		at := base + float64(i)*10
		say := sentence(rng, 40+rng.IntN(80))
		size += int64(len(say)) + 400
		switch i % 6 {
		case 0, 3:
			add(fmt.Sprintf("m%d", i), message(fmt.Sprintf("m%d", i), "user", "all", at, map[string]any{"content_type": "text", "parts": []string{say}}))
		case 1:
			add(fmt.Sprintf("m%d", i), message(fmt.Sprintf("m%d", i), "assistant", "all", at,
				map[string]any{"content_type": "thoughts", "thoughts": []map[string]any{{"summary": "Thinking", "content": ReasoningSentinel + " " + say}}}))
		case 2:
			add(fmt.Sprintf("m%d", i), message(fmt.Sprintf("m%d", i), "assistant", "python", at,
				map[string]any{"content_type": "code", "language": "unknown", "text": "print(" + fmt.Sprint(rng.IntN(1000)) + ")"}))
		case 4:
			add(fmt.Sprintf("m%d", i), message(fmt.Sprintf("m%d", i), "tool", "all", at,
				map[string]any{"content_type": "execution_output", "text": ToolOutputSentinel + " " + say}))
		default:
			add(fmt.Sprintf("m%d", i), message(fmt.Sprintf("m%d", i), "assistant", "all", at, map[string]any{"content_type": "text", "parts": []string{say}}))
		}
	}
	return json.Marshal(map[string]any{"title": "Generated " + sentence(rng, 4), "create_time": base, "update_time": base + 300,
		"mapping": mapping, "current_node": prev, "conversation_id": id, "id": id})
}
