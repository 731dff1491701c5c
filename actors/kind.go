package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/loci-dev/loci/config"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/store"
)

// Submission asks for a job: POST /api/jobs, an MCP tool, the CLI, or the
// daemon itself.
type Submission struct {
	// Type names the kind.
	Type string
	// RequestedBy is who asked (cli, http, mcp, unknown); empty: Channel.
	RequestedBy string
	// Channel is the interface the submission came through (store.ByCLI,
	// store.ByHTTP, store.ByMCP, store.ByUnknown): a kind may narrow what it
	// accepts by it and phrase its help in its terms.
	Channel string
	// Automatic marks a job the daemon queues on its own, a follow-up of
	// other work: it is requested by store.ByDaemon (RequestedBy and
	// Channel are ignored).
	Automatic bool
	// Params is a JSON object of the kind's fields; it may also hold type
	// and requested_by (a REST body is passed whole).
	Params json.RawMessage
	// Credential is the reference to the credential the job reads with
	// (a miner's run sets it, in process only; no request can): a kind
	// that reads a source keeps the reference in its input and reads the
	// credential when it runs, never storing the credential itself.
	Credential *config.CredentialRef
	// Typed, when set, is the kind's parameters as the Go value its Spec
	// names (the daemon's own callers build it, so the compiler checks
	// its fields); Params is then ignored. A value of another type (the
	// kind registered under the name is another one: a test's, a
	// replacement) is checked as its JSON would be.
	Typed any
}

// Plan is what a kind makes of a submission: the job's stored input and
// its queue priority.
type Plan struct {
	Input    any
	Priority store.Priority
	// Lane is the job's store.Job.Lane: what it uses alone.
	Lane string
	// Local says what the job reads besides the store: on a shared store
	// it is then claimed only by the daemon that can read it (Jobs.node).
	Local Locality
}

// Locality is what a job reads besides the store.
type Locality int

// Localities.
const (
	// Anywhere: only the store; any daemon may run it.
	Anywhere Locality = iota
	// ThisHost: this machine's files (a mine of a folder); a daemon on
	// the same host may run it.
	ThisHost
	// ThisDaemon: this daemon's own folder (an import's spooled file).
	ThisDaemon
)

// Tool describes the MCP tool that submits a kind's jobs; its arguments are
// the kind's parameters.
type Tool struct {
	Name        string
	Description string
	// Annotations for MCP clients.
	Destructive, Idempotent, OpenWorld bool
	// Defaults documents argument defaults in the tool's input schema.
	Defaults map[string]any
	// Unoffered are parameters the tool does not take (set by the daemon's
	// own callers, as a miner's document limit): MCP refuses them.
	Unoffered []string
	// Schemas replace the schemas made from the parameters' Go types for
	// the parameters named (a checkpoint's payload, whose Go type is raw
	// JSON): what an agent reads to call the tool.
	Schemas map[string]*jsonschema.Schema
}

// Kind is one kind of job, registered with the runtime (Jobs.Register):
// everything the runtime, REST and MCP need to know about it. Build one
// with Define; each lives in a file of its own in services/kinds.
type Kind struct {
	// Name is the kind's name: a job's kind and a submission's type.
	Name string
	// Background kinds share the jobs.background_concurrency slots.
	Background bool
	// Files: a completed job of this kind filed drawers (the kinds that
	// follow new drawers, as embed, read it in Completed.Kind).
	Files bool
	// Abortable: a running job of this kind may be force-cancelled.
	Abortable bool
	// Tool is the kind's MCP tool; nil: none.
	Tool *Tool
	// Writes reports whether a queued, running or paused job of this kind
	// writes drawers (the palace::busy guard); input reads its stored input
	// when the answer depends on it. Nil: never.
	Writes func(input func() json.RawMessage) bool
	// Run is the handler.
	Run Handler
	// Follow, when set, is told of every job that completes, of any kind,
	// once its completion is recorded: a kind that chains after others
	// queues its own job here (Jobs.Join, with Submission.Automatic). The
	// runtime names no kind: what follows what is declared by the kind
	// that follows. It runs on the finished job's worker and must not
	// block for long.
	Follow func(ctx context.Context, done Completed)

	params reflect.Type
	decode func(ctx context.Context, s Submission) (Plan, error)
}

// Completed is a job that completed, as the kinds that Follow see it.
type Completed struct {
	// Job is the job as its worker claimed it (input included), its
	// status completed.
	Job store.Job
	// Kind is the job's kind.
	Kind Kind
	// Result is what its handler returned (not serialized).
	Result any
}

// completed tells every registered kind's Follow, in registration order,
// that a job completed.
func (j *Jobs) completed(done Completed) {
	for _, name := range j.order {
		if f := j.kinds[name].Follow; f != nil {
			f(context.Background(), done)
		}
	}
}

// Spec is a kind's definition with its parameters typed: P is the struct
// of the fields a submission may carry (json tags name them; jsonschema
// tags describe them to MCP clients).
type Spec[P any] struct {
	Background, Files, Abortable bool
	Tool                         *Tool
	Writes                       func(input func() json.RawMessage) bool
	// Follow is Kind.Follow.
	Follow func(ctx context.Context, done Completed)
	// Decode validates the parameters of a submission and plans the job.
	Decode func(ctx context.Context, s Submission, p P) (Plan, error)
	Run    Handler
}

// Define makes a kind from its typed definition.
func Define[P any](name string, spec Spec[P]) Kind {
	return Kind{Name: name, Background: spec.Background, Files: spec.Files, Abortable: spec.Abortable,
		Tool: spec.Tool, Writes: spec.Writes, Run: spec.Run, Follow: spec.Follow,
		params: reflect.TypeFor[P](),
		decode: func(ctx context.Context, s Submission) (Plan, error) {
			var p P
			raw := s.Params
			if v, ok := s.Typed.(P); ok {
				p, raw = v, nil
			} else if s.Typed != nil {
				b, err := json.Marshal(s.Typed)
				if err != nil {
					return Plan{}, fault.Wrap(fault.SerializationFailed, err, fmt.Sprintf("a %s job's parameters: %v", name, err), "report this as a bug")
				}
				raw = b
			}
			if raw != nil {
				if err := decodeParams(raw, &p, name); err != nil {
					return Plan{}, err
				}
			}
			return spec.Decode(ctx, s, p)
		}}
}

// Params is the type of the kind's parameters (an MCP tool's arguments).
func (k Kind) Params() reflect.Type { return k.params }

// Register adds kinds to the runtime, in the order lists and messages name
// them. A kind registered twice is a programming error.
func (j *Jobs) Register(kinds ...Kind) {
	for _, k := range kinds {
		if _, dup := j.kinds[k.Name]; dup || k.decode == nil {
			panic(fmt.Sprintf("job kind %q registered twice or not built with Define", k.Name))
		}
		j.kinds[k.Name] = k
		j.order = append(j.order, k.Name)
	}
}

// Kinds lists the registered kinds in registration order.
func (j *Jobs) Kinds() []Kind {
	out := make([]Kind, len(j.order))
	for i, n := range j.order {
		out[i] = j.kinds[n]
	}
	return out
}

// kind looks up a registered kind; an unknown or empty name is
// input::invalid naming field.
func (j *Jobs) kind(name, field string) (Kind, error) {
	if k, ok := j.kinds[name]; ok {
		return k, nil
	}
	names := strings.Join(j.order, ", ")
	if name == "" {
		return Kind{}, fault.Invalid(field, "is required: one of "+names)
	}
	return Kind{}, fault.Invalid(field, fmt.Sprintf("%q is not one of %s", name, names))
}

// decodeParams decodes a submission's parameters into p, a pointer to a
// kind's parameter struct: a field the kind does not take, or one of the
// wrong JSON type, is input::invalid naming it.
func decodeParams(raw json.RawMessage, p any, kind string) error {
	var present map[string]json.RawMessage
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &present); err != nil {
			return fault.Invalid("body", "must be a JSON object")
		}
	}
	known := map[string]bool{"type": true, "requested_by": true}
	t := reflect.TypeOf(p).Elem()
	for i := range t.NumField() {
		if name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); name != "" && name != "-" {
			known[name] = true
		}
	}
	for name := range present {
		if !known[name] {
			return fault.Invalid(name, "is not a field of a "+kind+" job")
		}
	}
	delete(present, "type")
	delete(present, "requested_by")
	if len(present) == 0 {
		return nil
	}
	b, _ := json.Marshal(present)
	if err := json.Unmarshal(b, p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return fault.Invalid(te.Field, fmt.Sprintf("must be %s, not JSON %s", fault.JSONType(te.Type.Kind()), te.Value))
		}
		return fault.Invalid("body", "is not a valid "+kind+" job: "+err.Error())
	}
	return nil
}
