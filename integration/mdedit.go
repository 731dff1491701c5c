package integration

import "strings"

// The instructions block sits between a begin and an end line naming the
// agent, so the integrations of two agents sharing one AGENTS.md keep
// their own blocks.

func mdBegin(agent string) string {
	return "<!-- loci:begin " + agent + " (written by `loci integration`; edit outside these lines) -->"
}

func mdEnd(agent string) string { return "<!-- loci:end " + agent + " -->" }

// mdBlock is the whole block for body.
func mdBlock(agent, body string) string {
	return mdBegin(agent) + "\n" + strings.TrimRight(body, "\n") + "\n" + mdEnd(agent) + "\n"
}

// mdFind returns the span of agent's block (its lines, newline included).
func mdFind(src, agent string) (from, to int, ok bool) {
	b := strings.Index(src, mdBegin(agent))
	if b < 0 || (b > 0 && src[b-1] != '\n') {
		return 0, 0, false
	}
	e := strings.Index(src[b:], mdEnd(agent))
	if e < 0 {
		return 0, 0, false
	}
	to = b + e + len(mdEnd(agent))
	if to < len(src) && src[to] == '\n' {
		to++
	}
	return b, to, true
}

// mdSet writes agent's block in place of the one there, or at the end
// after a blank line.
func mdSet(src, agent, body string) string {
	block := mdBlock(agent, body)
	if from, to, ok := mdFind(src, agent); ok {
		return src[:from] + block + src[to:]
	}
	switch {
	case src == "":
		return block
	case strings.HasSuffix(src, "\n"):
		return src + "\n" + block
	default:
		return src + "\n\n" + block
	}
}

// mdRemove deletes agent's block and the blank line set before it.
func mdRemove(src, agent string) string {
	from, to, ok := mdFind(src, agent)
	if !ok {
		return src
	}
	if to == len(src) && strings.HasSuffix(src[:from], "\n\n") {
		from--
	}
	return src[:from] + src[to:]
}
