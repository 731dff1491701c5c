package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loci-dev/loci/actors"
	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/search"
	"github.com/loci-dev/loci/store"
)

// gate is how the memory mode applies to a tool.
type gate int

const (
	ungated gate = iota // job control, status, mode: never refused
	reads
	writes
)

// hints are a tool's annotation booleans: readOnly, destructive,
// idempotent, openWorld.
type hints [4]bool

// mcpCall is what a tool handler knows of its caller.
type mcpCall struct {
	session string
	mode    Mode
}

// mcpTool is one tool: its description, argument schema, annotations, mode
// gate and handler.
type mcpTool struct {
	name   string
	desc   string
	schema *jsonschema.Schema
	hints  hints
	gate   gate
	run    func(ctx context.Context, call *mcpCall, args json.RawMessage) (any, error)
}

// refine adjusts the schema made from an argument's Go type: what an agent
// reads in tools/list to call the tool right the first time.
type refine func(*jsonschema.Schema)

// describe sets the argument's description.
func describe(d string) refine { return func(s *jsonschema.Schema) { s.Description = d } }

// allowed lists the argument's values (a closed vocabulary).
func allowed(values ...string) refine {
	return func(s *jsonschema.Schema) {
		s.Enum = make([]any, len(values))
		for i, v := range values {
			s.Enum[i] = v
		}
	}
}

// between bounds a number.
func between(lo, hi float64) refine {
	return func(s *jsonschema.Schema) { s.Minimum, s.Maximum = &lo, &hi }
}

// atLeast bounds a number from below.
func atLeast(lo float64) refine { return func(s *jsonschema.Schema) { s.Minimum = &lo } }

// byDefault advertises the default.
func byDefault(v any) refine {
	return func(s *jsonschema.Schema) { s.Default, _ = json.Marshal(v) }
}

// instant is an RFC 3339 timestamp or a date.
func instant(s *jsonschema.Schema) { s.Pattern = store.InstantPattern }

// notBlank is a string with something in it.
func notBlank(s *jsonschema.Schema) { one := 1; s.MinLength, s.Pattern = &one, `\S` }

// refined applies refinements to the named arguments of a schema.
func refined(name string, schema *jsonschema.Schema, args map[string][]refine) {
	for arg, rs := range args {
		p := schema.Properties[arg]
		if p == nil {
			panic(fmt.Sprintf("tool %s: no argument %s to refine", name, arg))
		}
		for _, r := range rs {
			r(p)
		}
	}
}

// tool builds a tool whose arguments decode into T: unknown arguments,
// missing required ones and wrong types are loci::input::invalid naming
// the argument. args refine the schema made from T.
func tool[T any](name, desc string, h hints, g gate, args map[string][]refine, run func(ctx context.Context, call *mcpCall, in T) (any, error)) mcpTool {
	schema, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("tool %s: %v", name, err))
	}
	refined(name, schema, args)
	return mcpTool{name: name, desc: desc, schema: schema, hints: h, gate: g,
		run: func(ctx context.Context, call *mcpCall, raw json.RawMessage) (any, error) {
			var in T
			if err := decodeArgs(raw, schema, &in); err != nil {
				return nil, err
			}
			return run(ctx, call, in)
		}}
}

// objectKeys is the keys of a JSON object in the order they are written
// (raw is known to be an object).
func objectKeys(raw []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return keys
		}
	}
	return keys
}

func decodeArgs(raw json.RawMessage, schema *jsonschema.Schema, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		raw = []byte("{}")
	}
	if err := checkUTF8(raw); err != nil {
		return err
	}
	var present map[string]json.RawMessage
	if err := json.Unmarshal(raw, &present); err != nil {
		return fault.Invalid("arguments", "must be a JSON object")
	}
	// The first unknown argument in the order the client wrote them (as
	// REST names the first unknown field), not the map's random order.
	for _, name := range objectKeys(raw) {
		if _, ok := schema.Properties[name]; !ok {
			return fault.Invalid(name, "is not an argument of this tool; see its input schema")
		}
	}
	for _, name := range schema.Required {
		if _, ok := present[name]; !ok {
			return fault.Invalid(name, "is required")
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			// encoding/json names a field of an embedded struct after the
			// struct ("recallArgs.limit"): the argument is what follows.
			field := te.Field
			for head, rest, ok := strings.Cut(field, "."); ok && schema.Properties[head] == nil; head, rest, ok = strings.Cut(field, ".") {
				field = rest
			}
			return fault.Invalid(field, fmt.Sprintf("must be %s, not JSON %s", fault.JSONType(te.Type.Kind()), te.Value))
		}
		return fault.Invalid("arguments", err.Error())
	}
	return nil
}

// instantText is how an instant argument is written.
const instantText = "RFC 3339 (2026-03-01T09:00:00Z) or a date (2026-03-01, midnight UTC)"

// Argument shapes, exactly the spec's.
type (
	setModeArgs struct {
		Mode string `json:"mode" jsonschema:"full (read and write), read_only (no writes) or disabled (no memory at all; job control still works); remembered for this MCP session"`
	}
	noArgs struct{}
	// recallArgs are loci_recall's arguments; loci_search adds room.
	recallArgs struct {
		Query             string   `json:"query" jsonschema:"the words to search for (not blank)"`
		Limit             int      `json:"limit,omitempty" jsonschema:"hits to return, 1 to 200 (0 or absent: the default, 10); with expand, up to as many linked drawers again"`
		Wing              string   `json:"wing,omitempty" jsonschema:"only this wing (its name or UUID)"`
		Ranking           string   `json:"ranking,omitempty" jsonschema:"auto (default: hybrid when the query can be embedded, else lexical), lexical (BM25 words), semantic (vectors) or hybrid (both)"`
		Profile           string   `json:"profile,omitempty" jsonschema:"the embedding profile for the semantic leg (default: the configured default)"`
		Tags              []string `json:"tags,omitempty" jsonschema:"only drawers carrying every listed tag"`
		SourceKind        string   `json:"source_kind,omitempty" jsonschema:"only drawers whose source kind is this"`
		AsOf              string   `json:"as_of,omitempty" jsonschema:"only drawers valid at this instant: RFC 3339 (2026-03-01T09:00:00Z) or a date (2026-03-01); not with from/until or include_historical"`
		From              string   `json:"from,omitempty" jsonschema:"only drawers valid at some point from this instant, RFC 3339 or a date; needs until, not with as_of or include_historical"`
		Until             string   `json:"until,omitempty" jsonschema:"... until this instant (exclusive), RFC 3339 or a date; needs from"`
		IncludeHistorical bool     `json:"include_historical,omitempty" jsonschema:"also superseded and expired drawers (default false: only current ones); not with as_of or from/until"`
		Expand            bool     `json:"expand,omitempty" jsonschema:"after the direct hits, add drawers that mention the same entities or ones a fact away in the knowledge graph (each with via: the entities)"`
		KnownAt           string   `json:"known_at,omitempty" jsonschema:"answer as loci would have at this instant (record time), RFC 3339 or a date"`
		MaxBytes          int      `json:"max_bytes,omitempty" jsonschema:"bytes of the whole answer at most, 512 to 16777216 (0: the default, 8192)"`
		MaxHitBytes       int      `json:"max_hit_bytes,omitempty" jsonschema:"bytes of one hit's content at most, 64 or more (0: no bound but max_bytes)"`
	}
	searchArgs struct {
		recallArgs
		Room string `json:"room,omitempty" jsonschema:"only this room of the wing (its name or UUID; needs wing)"`
	}
	historyArgs struct {
		DrawerID string `json:"drawer_id" jsonschema:"a drawer's id (a UUID), as search hits give it"`
	}
	factHistoryArgs struct {
		RelationshipID string `json:"relationship_id" jsonschema:"a fact's id (a UUID): a relationship of the knowledge graph, as a checkpoint job's result.facts gives it"`
		AsOf           string `json:"as_of,omitempty" jsonschema:"judge validity at this instant, RFC 3339 (2026-03-01T09:00:00Z) or a date (2026-03-01); default now"`
		KnownAt        string `json:"known_at,omitempty" jsonschema:"answer as loci would have at this instant (record time), RFC 3339 or a date"`
	}
	wakeUpArgs struct {
		AgentIdentity string `json:"agent_identity" jsonschema:"who is waking up: the agent's name as it writes its diary (e.g. claude)"`
		Wing          string `json:"wing,omitempty" jsonschema:"only this wing (name or id): its diary entry and checkpoints; absent: the agent's newest diary entry in any wing and its checkpoints in every wing"`
		MaxItems      int    `json:"max_items,omitempty" jsonschema:"items at most (0 or absent: the default, 10)"`
		MaxBytes      int    `json:"max_bytes,omitempty" jsonschema:"bytes of content at most, whole drawers (0 or absent: the default, 8192)"`
	}
	diaryWriteArgs struct {
		AgentIdentity string `json:"agent_identity" jsonschema:"whose diary: the agent's name (e.g. claude)"`
		Wing          string `json:"wing" jsonschema:"the wing of the diary (a name; created when missing)"`
		Content       string `json:"content" jsonschema:"the entry, stored verbatim (not blank)"`
	}
	diaryReadArgs struct {
		AgentIdentity string `json:"agent_identity" jsonschema:"whose diary: the agent's name (e.g. claude)"`
		Wing          string `json:"wing" jsonschema:"the wing of the diary"`
		Limit         int    `json:"limit,omitempty" jsonschema:"entries, newest first, 1 to 200 (0 or absent: the default, 20)"`
	}
	nameArgs struct {
		Name string `json:"name"`
	}
	idArgs struct {
		ID string `json:"id"`
	}
	jobListArgs struct {
		Status string `json:"status,omitempty" jsonschema:"only jobs in this status (default: every job)"`
		// Automatic narrows to the daemon's own follow-up jobs or leaves
		// them out.
		Automatic *bool `json:"automatic,omitempty" jsonschema:"false: leave out the jobs the daemon queued on its own (embed after writes, extract after mining; requested_by daemon); true: only those; absent: every job"`
	}
)

// jobID describes a job tool's id argument.
var jobID = map[string][]refine{"id": {describe("a job's id (a UUID), as the tool that submitted it or loci_job_list answers")}}

var (
	readHints    = hints{true, false, true, false}
	searchHints  = hints{true, false, true, true}
	controlHints = hints{false, false, true, false}
)

// notAvailable answers the tools whose capability lands in a later
// version.
func notAvailable(what string) error {
	return fault.New(fault.InputInvalid, what+" is not available in this version of loci",
		what+" is not available in this version; the tool keeps its final arguments and will work once the capability ships")
}

func (q searchArgs) query() (search.SearchQuery, error) {
	if strings.TrimSpace(q.Query) == "" {
		// Named as the tool names it (the search itself says "text").
		return search.SearchQuery{}, fault.Invalid("query", "is required: the words to search for")
	}
	out := search.SearchQuery{Text: q.Query, Limit: q.Limit, Wing: q.Wing, Room: q.Room, Ranking: q.Ranking,
		Profile: q.Profile, Tags: q.Tags, SourceKind: q.SourceKind, Historical: q.IncludeHistorical, Expand: q.Expand}
	var err error
	if out.AsOf, err = optInstant("as_of", q.AsOf); err != nil {
		return out, err
	}
	if out.From, err = optInstant("from", q.From); err != nil {
		return out, err
	}
	if out.Until, err = optInstant("until", q.Until); err != nil {
		return out, err
	}
	if out.KnownAt, err = optInstant("known_at", q.KnownAt); err != nil {
		return out, err
	}
	return out, nil
}

// searchRefinements are loci_search's and loci_recall's.
var searchRefinements = map[string][]refine{
	"query": {notBlank}, "limit": {byDefault(search.SearchLimit), between(0, search.SearchMaxLimit)},
	"ranking":     {byDefault(search.RankAuto), allowed(search.RankAuto, search.RankLexical, search.RankSemantic, search.RankHybrid)},
	"source_kind": {allowed(store.SourceKinds...)},
	"as_of":       {instant}, "from": {instant}, "until": {instant}, "known_at": {instant},
	"max_bytes": {byDefault(MCPSearchBytes), atLeast(0)}, "max_hit_bytes": {atLeast(0)},
}

// mcpSearch runs loci_search or loci_recall: brief hits, compact, within
// the budget (max_bytes 8192 unless given).
func (s *Server) mcpSearch(ctx context.Context, in searchArgs, recall bool) (any, error) {
	q, err := in.query()
	if err != nil {
		return nil, err
	}
	if in.MaxBytes < 0 {
		return nil, fault.Invalid("max_bytes", "must be 0 or more (0 means the default, 8192)")
	}
	if in.MaxBytes == 0 {
		in.MaxBytes = MCPSearchBytes
	}
	b, err := searchBudget(in.MaxBytes, in.MaxHitBytes, "the default, 8192")
	if err != nil {
		return nil, err
	}
	res, err := s.Search.Search(ctx, q, recall)
	if err != nil {
		return nil, err
	}
	out, err := briefSearch(ctx, res, b)
	if err != nil {
		return nil, fault.Wrap(fault.SerializationFailed, err, "cannot encode the answer", "report it")
	}
	return json.RawMessage(out), nil
}

// mcpTools is the tool list, in the spec's order.
func (s *Server) mcpTools() []mcpTool {
	job := func(name, desc string, h hints, action func(*actors.Jobs, context.Context, string) (*store.Job, error)) mcpTool {
		return tool(name, desc, h, ungated, jobID, func(ctx context.Context, _ *mcpCall, in idArgs) (any, error) {
			j, err := action(s.Jobs, ctx, in.ID)
			return apiJob(j), err
		})
	}
	return append([]mcpTool{
		tool("loci_set_mode", "Set this session's memory mode: full, read_only or disabled.", controlHints, ungated,
			map[string][]refine{"mode": {allowed(string(ModeFull), string(ModeReadOnly), string(ModeDisabled))}},
			func(_ context.Context, call *mcpCall, in setModeArgs) (any, error) {
				if call.session == "" {
					return nil, fault.New(fault.InputInvalid, "loci_set_mode needs an MCP session: this call has none",
						"connect with a session (streamable HTTP sends mcp-session-id)")
				}
				m, err := ParseMode(in.Mode)
				if err != nil || in.Mode == "" {
					return nil, fault.Invalid("mode", fmt.Sprintf("%q is not full, read_only or disabled", in.Mode))
				}
				s.mcpModes.Store(call.session, m)
				return api.ModeSet{Mode: string(m)}, nil
			}),
		tool("loci_status", "Daemon status: version, uptime, pid, address, palace, datastore and migration state, counts, this session's mode, "+
			"and the wings by name with their drawers (the names a search's wing takes).", readHints, ungated, nil,
			func(ctx context.Context, call *mcpCall, _ noArgs) (any, error) {
				st := s.statusReport(ctx, call.mode)
				if wings, err := s.Palace.WingCounts(ctx); err == nil {
					st.Wings = wings
					if len(wings) > api.MaxStatusWings {
						st.Wings, st.WingsOmitted = wings[:api.MaxStatusWings], len(wings)-api.MaxStatusWings
					}
				}
				return st, nil
			}),
		tool("loci_search", "Search memories (BM25, vectors or both). Each hit: id, wing, room, name or document and chunk, valid_from, score, content; "+
			"a hit from a mined conversation also turn {role, at}: who said what matched, and when. "+
			"The answer fits max_bytes (default 8192): a longer hit keeps a verbatim window around the passage that matched, "+
			"marked truncated with full_bytes and window (byte offsets); loci_history with the hit's id gives the whole drawer. "+
			"Hits that do not fit even clipped are left out and counted in omitted.", searchHints, reads, searchRefinements,
			func(ctx context.Context, _ *mcpCall, in searchArgs) (any, error) {
				return s.mcpSearch(ctx, in, false)
			}),
		tool("loci_recall", "Verbatim recall: search every room (of wing, when given); hits and max_bytes as loci_search.", searchHints, reads, searchRefinements,
			func(ctx context.Context, _ *mcpCall, in recallArgs) (any, error) {
				return s.mcpSearch(ctx, searchArgs{recallArgs: in}, true)
			}),
		tool("loci_history", "A drawer whole, with its supersession chain: every version oldest first, each verbatim once, with its wing and room names (the whole text of a clipped search hit).", readHints, reads, nil,
			func(ctx context.Context, _ *mcpCall, in historyArgs) (any, error) {
				d, versions, err := s.Palace.History(ctx, in.DrawerID)
				if err != nil {
					return nil, err
				}
				return s.briefHistory(ctx, d, versions)
			}),
		tool("loci_fact_history", "An assertion of the knowledge graph with its confirmations, conflicts and corrections.", readHints, reads,
			map[string][]refine{"relationship_id": {notBlank}, "as_of": {instant}, "known_at": {instant}},
			func(ctx context.Context, _ *mcpCall, in factHistoryArgs) (any, error) {
				var asOf *time.Time
				if in.AsOf != "" {
					t, err := store.ParseTimeOrDate(in.AsOf)
					if err != nil {
						return nil, fault.Invalid("as_of", fmt.Sprintf("%q is not RFC 3339 or a date (YYYY-MM-DD)", in.AsOf))
					}
					asOf = &t
				}
				knownAt, err := optInstant("known_at", in.KnownAt)
				if err != nil {
					return nil, err
				}
				g, err := s.graph()
				if err != nil {
					return nil, err
				}
				return s.factHistory(ctx, g, in.RelationshipID, asOf, knownAt)
			}),
		tool("loci_wake_up", "Session-start context for this agent: its own latest diary entry and the recent checkpoints it signed (source.agent), then checkpoints nobody signed, marked unattributed; never another agent's. "+
			"With wing: last_session, the closing turns of the wing's latest mined session, when no checkpoint is newer than its end.", readHints, reads,
			map[string][]refine{"agent_identity": {notBlank}, "max_items": {byDefault(10), atLeast(0)}, "max_bytes": {byDefault(8192), atLeast(0)}},
			func(ctx context.Context, _ *mcpCall, in wakeUpArgs) (any, error) {
				if in.MaxItems < 0 {
					return nil, fault.Invalid("max_items", "must be 0 or more (0 means the default)")
				}
				if in.MaxBytes < 0 {
					return nil, fault.Invalid("max_bytes", "must be 0 or more (0 means the default)")
				}
				res, err := s.Palace.WakeUp(ctx, in.AgentIdentity, in.Wing, in.MaxItems, in.MaxBytes)
				return apiWakeUp(res), err
			}),
		tool("loci_diary_write", "Write a diary entry for an agent.", hints{false, false, false, false}, writes,
			map[string][]refine{"agent_identity": {notBlank}, "wing": {notBlank}, "content": {notBlank}},
			func(ctx context.Context, _ *mcpCall, in diaryWriteArgs) (any, error) {
				res, err := s.Palace.DiaryWrite(ctx, in.AgentIdentity, in.Wing, in.Content, store.ByMCP)
				if err != nil {
					return nil, err
				}
				return apiWrite(res), nil
			}),
		tool("loci_diary_read", "An agent's newest diary entries.", readHints, reads,
			map[string][]refine{"agent_identity": {notBlank}, "wing": {notBlank}, "limit": {byDefault(DiaryLimit), between(0, DiaryMaxLimit)}},
			func(ctx context.Context, _ *mcpCall, in diaryReadArgs) (any, error) {
				limit, err := checkLimit("limit", in.Limit, DiaryLimit, DiaryMaxLimit)
				if err != nil {
					return nil, err
				}
				entries, err := s.Palace.DiaryRead(ctx, in.AgentIdentity, in.Wing, limit)
				if err != nil {
					return nil, err
				}
				return api.DiaryEntries{Entries: apiDrawerList(entries)}, nil
			}),
		tool("loci_miner_list", "List miners.", readHints, ungated, nil,
			func(context.Context, *mcpCall, noArgs) (any, error) {
				m, err := s.miners()
				if err != nil {
					return nil, err
				}
				return apiMiners(m), nil
			}),
		tool("loci_miner_get", "One miner.", readHints, ungated,
			map[string][]refine{"name": {describe("a miner's name, as loci_miner_list lists them")}},
			func(_ context.Context, _ *mcpCall, in nameArgs) (any, error) {
				m, err := s.miners()
				if err != nil {
					return nil, err
				}
				info, err := m.Get(in.Name)
				if err != nil {
					return nil, err
				}
				return apiMiner(info), nil
			}),
		tool("loci_source_config_list", "List source configurations (never credential locations or content).", readHints, ungated, nil,
			func(context.Context, *mcpCall, noArgs) (any, error) {
				m, err := s.miners()
				if err != nil {
					return nil, err
				}
				return apiSourceConfigs(m.SourceConfigs()), nil
			}),
		tool("loci_source_config_get", "One source configuration (never credential location or content).", readHints, ungated,
			map[string][]refine{"id": {describe("a source configuration's id, as loci_source_config_list lists them")}},
			func(_ context.Context, _ *mcpCall, in idArgs) (any, error) {
				m, err := s.miners()
				if err != nil {
					return nil, err
				}
				c, err := m.SourceConfig(in.ID)
				if err != nil {
					return nil, err
				}
				return apiSourceConfig(c), nil
			}),
		tool("loci_trigger_list", "List triggers: what asks for miner runs automatically (schedule, poll, watch, webhook), with status.", readHints, ungated, nil,
			func(ctx context.Context, _ *mcpCall, _ noArgs) (any, error) {
				if s.Triggers == nil {
					return nil, notAvailable("triggers")
				}
				return apiTriggers(ctx, s.Triggers), nil
			}),
		tool("loci_trigger_get", "One trigger: its settings, status, what enabling still needs, counters and next due time.", readHints, ungated,
			map[string][]refine{"name": {describe("a trigger's name, as loci_trigger_list lists them")}},
			func(ctx context.Context, _ *mcpCall, in nameArgs) (any, error) {
				if s.Triggers == nil {
					return nil, notAvailable("triggers")
				}
				info, err := s.Triggers.Get(ctx, in.Name)
				if err != nil {
					return nil, err
				}
				return apiTrigger(info), nil
			}),
		tool("loci_job_list", "List jobs, newest first.", readHints, ungated, map[string][]refine{"status": {allowed(store.JobStatuses...)}},
			func(ctx context.Context, _ *mcpCall, in jobListArgs) (any, error) {
				jobs, err := s.Jobs.ListFiltered(ctx, actors.JobFilter{Status: in.Status, Automatic: in.Automatic})
				if err != nil {
					return nil, err
				}
				return apiJobs(jobs), nil
			}),
		tool("loci_job_get", "One job.", readHints, ungated, jobID,
			func(ctx context.Context, _ *mcpCall, in idArgs) (any, error) {
				j, err := s.Jobs.Get(ctx, in.ID)
				return apiJob(j), err
			}),
		job("loci_job_pause", "Pause a running job.", controlHints, (*actors.Jobs).Pause),
		job("loci_job_resume", "Resume a paused job.", controlHints, (*actors.Jobs).Resume),
		job("loci_job_cancel", "Cancel a job.", hints{false, true, true, false}, (*actors.Jobs).Cancel),
		job("loci_job_retry", "Queue a failed job again, from its checkpoint (a cancelled or completed job cannot be retried).", controlHints, (*actors.Jobs).Retry),
	}, s.kindTools()...)
}

// kindTools are the tools that submit jobs, one for each job kind that
// declares one: its arguments are the kind's parameters.
func (s *Server) kindTools() []mcpTool {
	var out []mcpTool
	for _, k := range s.Jobs.Kinds() {
		if k.Tool == nil {
			continue
		}
		schema, err := jsonschema.ForType(k.Params(), &jsonschema.ForOptions{
			// A raw JSON field (a checkpoint's payload) takes any value.
			TypeSchemas: map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[json.RawMessage](): {}}})
		if err != nil {
			panic(fmt.Sprintf("tool %s: %v", k.Tool.Name, err))
		}
		for _, name := range k.Tool.Unoffered {
			delete(schema.Properties, name)
			schema.Required = slices.DeleteFunc(schema.Required, func(r string) bool { return r == name })
		}
		for name, v := range k.Tool.Defaults {
			b, _ := json.Marshal(v)
			schema.Properties[name].Default = b
		}
		for name, sch := range k.Tool.Schemas {
			if schema.Properties[name] == nil {
				panic(fmt.Sprintf("tool %s: no argument %s", k.Tool.Name, name))
			}
			schema.Properties[name] = sch
		}
		out = append(out, mcpTool{name: k.Tool.Name, desc: k.Tool.Description, schema: schema,
			hints: hints{false, k.Tool.Destructive, k.Tool.Idempotent, k.Tool.OpenWorld}, gate: writes,
			run: func(ctx context.Context, _ *mcpCall, raw json.RawMessage) (any, error) {
				if err := decodeArgs(raw, schema, new(json.RawMessage)); err != nil {
					return nil, err
				}
				j, err := s.Jobs.Submit(ctx, actors.Submission{Type: k.Name, Channel: store.ByMCP, Params: raw})
				return apiJob(j), err
			}})
	}
	return out
}

// mcpInstructions is the initialize instruction text, made from the tools.
func mcpInstructions(tools []mcpTool) string {
	var b strings.Builder
	b.WriteString("loci is a local memory for agents: a palace of wings, rooms and drawers of verbatim text, " +
		"searchable by words and meaning, with jobs that file memories in the background. " +
		"Search before you answer from memory; write a diary entry or a checkpoint when you learn something worth keeping. " +
		"Every tool answers compact JSON; a failure is {error, code, help}.\n\nTools:\n")
	for _, t := range tools {
		fmt.Fprintf(&b, "- %s: %s\n", t.name, t.desc)
	}
	return b.String()
}

// mcpHandler serves /mcp: the SDK's streamable HTTP transport, one session
// per client (the memory mode is remembered per session), behind the Host
// check and the spec's 406 for a plain GET.
func (s *Server) mcpHandler() http.Handler {
	tools := s.mcpTools()
	srv := mcp.NewServer(&mcp.Implementation{Name: "loci", Version: s.Version},
		&mcp.ServerOptions{Instructions: mcpInstructions(tools),
			// A session's mode is forgotten when the session ends.
			InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
				if ss := req.Session; ss != nil {
					go func() { _ = ss.Wait(); s.mcpModes.Delete(ss.ID()) }()
				}
			}})
	for _, t := range tools {
		ro, destructive, idem, open := t.hints[0], t.hints[1], t.hints[2], t.hints[3]
		srv.AddTool(&mcp.Tool{Name: t.name, Description: t.desc, InputSchema: t.schema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ro, DestructiveHint: &destructive, IdempotentHint: idem, OpenWorldHint: &open}},
			func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				call := &mcpCall{mode: ModeFull}
				if req.Session != nil {
					call.session = req.Session.ID()
				}
				if m, ok := s.mcpModes.Load(call.session); ok && call.session != "" {
					call.mode = m.(Mode)
				}
				var out any
				var err error
				switch {
				case t.gate == reads:
					err = call.mode.allowMCP(false)
				case t.gate == writes:
					err = call.mode.allowMCP(true)
				}
				if err == nil {
					out, err = t.run(ctx, call, req.Params.Arguments)
				}
				return toolResult(out, err), nil
			})
	}
	srv.AddReceivingMiddleware(plainToolResults)
	s.mcpServer = srv
	h := s.guardMCP(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv },
		&mcp.StreamableHTTPOptions{DisableLocalhostProtection: true, JSONResponse: true, // the Host check below is stricter
			SessionTimeout: s.mcpSessionIdle()}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !localHost(r.Host) {
			renderError(s.Log, w, r, fault.Newf(fault.InputInvalid,
				"reach /mcp as localhost, 127.0.0.1 or [::1] (a proxy must keep the Host header)",
				"Host %q is refused on /mcp (DNS rebinding protection)", r.Host))
			return
		}
		if r.Method == http.MethodGet && !strings.Contains(r.Header.Get("Accept"), "text/event-stream") {
			e := fault.New(fault.InputInvalid, "GET /mcp needs Accept: text/event-stream",
				"use an MCP client (streamable HTTP): POST JSON-RPC to /mcp")
			e.Status = http.StatusNotAcceptable
			renderError(s.Log, w, r, e)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// localHost: the Host header names this machine by loopback name.
func localHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return host == "localhost" || host == "127.0.0.1" || host == "::1"
}

// toolResult renders a tool's answer, or its failure as {error, code,
// help}, as compact JSON text (an agent reads every byte of it: pretty
// printing was 28 to 31% of a status or a search answer's bytes).
func toolResult(out any, err error) *mcp.CallToolResult {
	if err != nil {
		b, _ := compactJSON(fault.As(err).Body())
		res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
		res.SetError(err)
		return res
	}
	b, merr := compactJSON(out)
	if merr != nil {
		return toolResult(nil, fault.Wrap(fault.SerializationFailed, merr, "cannot encode the answer", "report it"))
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}
}

// textResult is a tool's answer on the wire exactly as the SDK writes a
// CallToolResult of text ({content: [{type: text, text}], isError?}), as a
// plain struct. The SDK's own CallToolResult and TextContent marshal through
// nested MarshalJSON methods, and encoding/json re-scans the output of each:
// two whole passes over the answer text that a plain struct does not need
// (about 100 µs of an MCP search over 10,000 drawers: docs/BENCHMARKS.md).
// ResultBase is the SDK's documented way to make a custom result.
type textResult struct {
	mcp.ResultBase
	Content []textItem `json:"content"`
	IsError bool       `json:"isError,omitempty"`
}

// textItem is one text content item of a textResult.
type textItem struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// plainToolResults is receiving middleware that hands the SDK a textResult
// for a tools/call answer made only of text. A request or answer carrying
// _meta, structured content or annotations keeps the SDK's own result (the
// SDK adds fields to those, and newer protocol versions set a result type).
func plainToolResults(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		r, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || r.Meta != nil || r.StructuredContent != nil || len(req.GetParams().GetMeta()) > 0 {
			return res, err
		}
		out := &textResult{Content: make([]textItem, len(r.Content)), IsError: r.IsError}
		for i, c := range r.Content {
			t, ok := c.(*mcp.TextContent)
			if !ok || t.Meta != nil || t.Annotations != nil {
				return res, err
			}
			out.Content[i] = textItem{Type: "text", Text: t.Text}
		}
		return out, nil
	}
}

// allowMCP is Allow with the MCP way out: loci_set_mode.
func (m Mode) allowMCP(write bool) error {
	if err := m.Allow(write); err != nil {
		fe := fault.As(err)
		return fault.New(fe.Code, strings.Replace(fe.Msg, "this request", "this MCP session", 1),
			"call loci_set_mode with full (or read_only to read)")
	}
	return nil
}

// optInstant parses an optional instant argument.
func optInstant(name, v string) (*time.Time, error) {
	if v == "" {
		return nil, nil
	}
	t, err := ParseInstant(name, v)
	if err != nil {
		return nil, err
	}
	return &t, nil
}
