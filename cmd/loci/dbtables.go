package main

import (
	"context"

	"github.com/loci-dev/loci/dbadmin/sqlview"
	"github.com/loci-dev/loci/services"
	"github.com/loci-dev/loci/transport"
)

// daemonTables are the admin listener's tables whose rows come from the
// daemon rather than the store: the miners and the trigger definitions
// of the configuration file, as GET /api/miners and GET /api/triggers
// show them (the same conversion, so never a credential's name, path or
// value, nor a webhook's secret), read at each statement's time.
func daemonTables(miners *services.Miners, trig *services.Triggers) []sqlview.Extra {
	return []sqlview.Extra{minersTable(miners), triggerDefinitionsTable(trig)}
}

// nullable is s, or NULL when empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func minersTable(m *services.Miners) sqlview.Extra {
	return sqlview.Extra{Name: "miners",
		Doc: "The miners the configuration file defines, one row per miner, as GET /api/miners shows them (read from the daemon at the statement's time, not from the store's snapshot); their jobs are in jobs (kind 'mine'), what they read in sources and documents.",
		Columns: []sqlview.Column{
			{Name: "name", Type: sqlview.TypeID, Doc: "the miner's name"},
			{Name: "source", Type: sqlview.TypeID, Doc: "the source adapter, or the source configuration it names"},
			{Name: "locator", Type: sqlview.TypeText, Doc: "what it reads (a folder, a file, a URL)"},
			{Name: "wing", Type: sqlview.TypeID, Doc: "the wing it files into (NULL: the source's own)"},
			{Name: "enabled", Type: sqlview.TypeBool, Doc: "whether it may run"},
			{Name: "state", Type: sqlview.TypeID, Doc: "ready, disabled or unavailable"},
			{Name: "reason", Type: sqlview.TypeText, Doc: "why it is not ready"},
			{Name: "max_documents", Type: sqlview.TypeInt, Doc: "the documents a run reads at most (NULL: no bound)"},
			{Name: "schedule_every", Type: sqlview.TypeID, Doc: "its timetable's interval (NULL: no schedule)"},
			{Name: "schedule_at", Type: sqlview.TypeID, Doc: "its timetable's time of day"},
			{Name: "schedule_enabled", Type: sqlview.TypeBool, Doc: "whether it is opted in to its schedule"},
			{Name: "options", Type: sqlview.TypeJSON, Doc: "its options (an object of strings)"},
			{Name: "credential_kind", Type: sqlview.TypeID, Doc: "its credential's kind: env, file or oauth (NULL: none); never its name, path or value"},
			{Name: "credential_available", Type: sqlview.TypeBool, Doc: "whether its credential can be read now"},
		},
		Rows: func(context.Context) ([][]any, error) {
			list := m.List()
			out := make([][]any, len(list))
			for i, in := range list {
				a := transport.APIMiner(in)
				row := []any{a.Name, a.Source, a.Locator, nullable(a.Wing), a.Enabled, a.State, nullable(a.Reason), a.MaxDocuments,
					nil, nil, nil, a.Options, nil, nil}
				if s := a.Schedule; s != nil {
					row[8], row[9], row[10] = s.Every, nullable(s.At), s.Enabled
				}
				if c := a.Credential; c != nil {
					row[12], row[13] = c.Kind, c.Available
				}
				out[i] = row
			}
			return out, nil
		}}
}

func triggerDefinitionsTable(t *services.Triggers) sqlview.Extra {
	return sqlview.Extra{Name: "trigger_definitions",
		Doc: "The triggers the configuration file defines, one row per trigger, with their live status, as GET /api/triggers shows them (read from the daemon at the statement's time, not from the store's snapshot); join triggers ON name for the counters the store keeps.",
		Columns: []sqlview.Column{
			{Name: "name", Type: sqlview.TypeID, Doc: "the trigger's name (triggers.name)"},
			{Name: "miner", Type: sqlview.TypeID, Doc: "the miner it runs (miners.name)"},
			{Name: "type", Type: sqlview.TypeID, Doc: "schedule, poll, watch or webhook"},
			{Name: "enabled", Type: sqlview.TypeBool, Doc: "whether the configuration file enables it"},
			{Name: "settings", Type: sqlview.TypeJSON, Doc: "its type's settings (an object of strings; settings never hold secrets)"},
			{Name: "credential_kind", Type: sqlview.TypeID, Doc: "where a webhook's secret is read: env or file (NULL: none); never the name, path or secret"},
			{Name: "credential_available", Type: sqlview.TypeBool, Doc: "whether that secret can be read now"},
			{Name: "status", Type: sqlview.TypeID, Doc: "disabled, active, failing or unavailable"},
			{Name: "reason", Type: sqlview.TypeText, Doc: "why it is not active"},
			{Name: "setup", Type: sqlview.TypeJSON, Doc: "what enabling it still needs (an array of texts)"},
			{Name: "running", Type: sqlview.TypeBool, Doc: "whether the supervisor runs it now"},
			{Name: "endpoint", Type: sqlview.TypeText, Doc: "a listening webhook's URL"},
			{Name: "next_due", Type: sqlview.TypeTime, Doc: "a running schedule's next slot (UTC)"},
		},
		Rows: func(ctx context.Context) ([][]any, error) {
			list := t.List(ctx)
			out := make([][]any, len(list))
			for i, in := range list {
				a := transport.APITrigger(in)
				row := []any{a.Name, a.Miner, a.Type, a.Enabled, a.Settings, nil, nil, a.Status, nullable(a.Reason), a.Setup,
					a.Running, nullable(a.Endpoint), a.NextDue}
				if c := a.Credential; c != nil {
					row[5], row[6] = c.Kind, c.Available
				}
				out[i] = row
			}
			return out, nil
		}}
}
