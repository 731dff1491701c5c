package config

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
)

//go:generate go run ./gen -o ../docs/SETTINGS.md

// Setting is one configuration key as docs/SETTINGS.md lists it: its TOML
// key (a <name> segment stands for a table of the user's naming), its
// type, the default, the environment variable that sets it, and what it
// does.
type Setting struct {
	Key, Type, Default, Env, Doc string
}

// settingDocs says what each setting does, by key. Every key of Config
// must have one: TestEverySettingIsDocumented walks the struct, so a new
// field without a line here fails the tests, and docs/SETTINGS.md is
// generated from this table (go generate ./config).
var settingDocs = map[string]string{
	"server.bind":                            "IP address the REST, MCP and dashboard listener binds (no port). Beyond loopback, turn authentication on.",
	"server.port":                            "Port of that listener; 0 lets the OS choose (the address is then in <palace>/daemon.json and `loci status`).",
	"palace.path":                            "Directory of the embedded palace (absolute).",
	"store.min_free_bytes":                   "Free space kept on the palace's filesystem: below it writes are refused with loci::store::disk_full (507) and jobs wait, reads and search go on, and writes resume by themselves once space is freed. Raised to what the store needs to start its next files (a memtable log, a value log file, a flushed table: 128 MiB today); `loci status` shows the reserve in force.",
	"datastore.url":                          "The shared store: postgres://USER@HOST:PORT/DATABASE?options (or postgresql://), a PostgreSQL database several daemons serve together; \"\": the embedded palace under palace.path. Never write the password in it (refused): give it in LOCI_DATASTORE_PASSWORD or datastore.password_file. palace.path stays this daemon's own directory for its indexes and caches.",
	"datastore.password_file":                "File whose first line is the shared store's password; LOCI_DATASTORE_PASSWORD, when set, is used instead (the environment beats the file).",
	"auth.enabled":                           "Require a bearer token on every route but GET /api/health (and the dashboard's files).",
	"auth.token":                             "The shared secret, at least 16 characters; the environment beats the file. `loci auth generate` makes a token kept only as a digest.",
	"web.enable":                             "Serve the web dashboard on /ui/ (also `loci serve --web`).",
	"db.bind":                                "Bind address of the database admin listener.",
	"server.max_connections":                 "Connections the main listener keeps open at once (0: derived from the open-file limit, at most 4096). At the cap a new connection closes the one idle longest, or waits in the backlog while every one is busy.",
	"server.max_subscribers":                 "Event streams (GET /api/events) open at once, at most half of the connection cap; past it a new one is refused 503 loci::server::busy.",
	"server.slow_subscriber_secs":            "Seconds an event or MCP stream may stay behind (its client not reading) before it is dropped; the stream ends with a dropped frame when it can still be sent.",
	"db.port":                                "Port of the database admin listener; 0 lets the OS choose; must differ from server.port.",
	"db.allow_remote":                        "Allow the database admin listener beyond loopback (needs authentication).",
	"db.allowed_origins":                     "Browser origins the database admin listener accepts.",
	"db.query_timeout_secs":                  "Time limit of one SQL query on the database admin listener.",
	"db.max_scan_rows":                       "Rows one SQL statement may read from the store before it fails (loci::db::too_large).",
	"db.max_result_rows":                     "Rows one SQL statement returns; past it the result is cut and flagged truncated.",
	"webhook.enable":                         "Allow the webhook listener (bound when the first webhook trigger starts).",
	"webhook.bind":                           "Bind address of the webhook listener.",
	"webhook.port":                           "Port of the webhook listener; must differ from server.port and db.port.",
	"webhook.allow_remote":                   "Allow the webhook listener beyond loopback (needs authentication).",
	"webhook.max_body_bytes":                 "Largest webhook delivery body accepted.",
	"webhook.max_concurrent":                 "Deliveries handled at once; more are answered 429.",
	"dedup.enabled":                          "Detect exact and near-duplicate drawers at write time and link them (similar_to).",
	"dedup.near_threshold":                   "Similarity from which a drawer is a near duplicate (0.5 to 1).",
	"dedup.entity_fuzzy":                     "Resolve an entity name one typo away from exactly one known entity to that entity.",
	"jobs.max_concurrency":                   "Jobs running at once, in all.",
	"jobs.background_concurrency":            "Background jobs (mine, embed, extract, backup) running at once.",
	"jobs.lease_ttl_secs":                    "Seconds a running job's lease lasts without renewal before another worker may take it.",
	"jobs.drain_timeout_secs":                "Seconds a stopping daemon waits for running jobs to reach a checkpoint.",
	"mining.chunk_chars":                     "Largest drawer a mined document is split into, in characters.",
	"mining.max_file_bytes":                  "Larger files are skipped by the directory source.",
	"mining.max_documents":                   "Documents one mine job files at most (0: no limit); the next job continues.",
	"mining.source_timeout_secs":             "Seconds a source may take to answer before the job fails.",
	"mining.registries":                      "Source registries, searched in order: \"URL\" or \"NAME=URL\", where URL is https://..., http:// to loopback only (127.0.0.1, [::1], localhost), file:///abs/path or /abs/path, naming the index's .json file or the folder holding index.json. Unnamed, a registry is named after its host or its folder (-2, -3... when taken); \"bundled\" is the packages shipped with loci. Nothing reaches the network unless a registry is named here.",
	"mining.trusted_keys":                    "Public keys (\"loci-ed25519 <base64>\", a publisher's NAME.pub from loci source keygen) whose signatures vouch for registry archives.",
	"mining.signature_policy":                "optional (an archive signed by a key not trusted counts as unsigned; a trusted key's signature that does not verify is refused as tampering) or required (an archive not signed by a trusted key is refused, loci::source::untrusted).",
	"mining.secrets":                         "What mining does with a document holding a credential: redact (each replaced by a marker naming its kind), skip (not filed) or allow.",
	"credentials.dir":                        "Directory of credential files: a file credential set through REST or the CLI must lie under it (\"\": none may be set that way); sources' sign-in tokens go in its oauth folder (\"\": ~/.config/loci/credentials), never in the palace.",
	"credentials.backend":                    "Where sign-in tokens are kept: file (under credentials.dir, readable by the daemon's user only) or auto (today the same as file: no desktop keyring is used; a sign-in's stored_in says where its token went).",
	"assets.dir":                             "Directory replacing the built-in assets of the agent integrations (instruction snippets, hook and plugin scripts, supported agent versions), laid out like them: <agent>/versions.json, <agent>/instructions.md, opencode/plugin/loci.js. Absolute; a directory that does not exist stops the daemon from starting (loci::assets::not_found).",
	"embedding.default":                      "The profile search, auto ranking and the embed job use when none is named (\"\": lexical search only).",
	"embedding.save_secs":                    "Seconds between saves of the vector indexes of a running daemon (a graceful stop always saves).",
	"embedding.profiles.<name>.provider":     "static (built in), http (OpenAI-compatible or Ollama), command (a program, JSON on stdin and stdout, no shell) or hash (tests only).",
	"embedding.profiles.<name>.format":       "Of an http provider: openai or ollama.",
	"embedding.profiles.<name>.url":          "Endpoint of an http provider.",
	"embedding.profiles.<name>.model":        "Model name, recorded with every vector.",
	"embedding.profiles.<name>.dimension":    "Vector length (default 768; the static provider's is 101).",
	"embedding.profiles.<name>.key_env":      "Environment variable holding the provider's API key (never the key itself).",
	"embedding.profiles.<name>.key_file":     "File holding the provider's API key.",
	"embedding.profiles.<name>.command":      "Program and arguments of a command provider.",
	"embedding.profiles.<name>.batch_size":   "Texts per provider call (default 32).",
	"embedding.profiles.<name>.timeout_secs": "Seconds a provider call may take (default 30).",
	"embedding.profiles.<name>.pipeline":     "Name of the text preparation (default text-v1); vectors of another pipeline stay out of search until re-embedded.",
	"extraction.provider":                    "The extract job's provider: heuristic (built in, offline), command, http, or \"\" for none.",
	"extraction.command":                     "Program and arguments of a command provider (JSON on stdin and stdout, no shell).",
	"extraction.url":                         "Endpoint of an http provider.",
	"extraction.timeout_secs":                "Seconds a provider call may take.",
	"search.context_weight":                  "Auto ranking: share of the best neighbour's score added to a drawer's own (0: no context).",
	"search.context_window":                  "Auto ranking: neighbours counted on each side.",
	"search.semantic_weight":                 "Auto ranking: the semantic leg's weight, the lexical one's being 1 (0: lexical only).",
	"search.fusion":                          "Auto ranking: how the legs combine, scores or rrf.",
	"search.fusion_k":                        "Auto ranking: reciprocal rank fusion's constant.",
	"search.depth":                           "Auto ranking: candidates each leg gives the fusion.",
	"search.feedback_terms":                  "Auto ranking: words pseudo-relevance feedback adds (0: none).",
	"search.feedback_docs":                   "Auto ranking: best drawers the feedback words come from.",
	"search.feedback_weight":                 "Auto ranking: weight of the feedback query's scores.",
	"search.answer_weight":                   "Auto ranking: share by which a drawer holding the kind of answer asked for (a date, place, person, number) is raised.",
	"search.all_words_first":                 "Auto ranking: drawers matching every word first, as the lexical ranking does.",
	"backup.dir":                             "Folder the daemon's scheduled and requested backups go to (absolute, outside the palace; \"\": backups beside the palace's folder, ~/.local/share/loci/backups with the default palace). No request names another.",
	"backup.schedule.every":                  "Interval of scheduled backups, as a schedule trigger's (a number and a unit: s, m, h or d, at least 1s); \"\": no scheduled backups.",
	"backup.schedule.at":                     "Time of day of scheduled backups (HH:MM UTC), with whole-day intervals only.",
	"backup.keep":                            "Backups the daemon keeps in backup.dir: after each, the oldest of its own beyond this are deleted (files it did not name are never touched).",
	"backup.warn_after":                      "Age of the last successful backup past which `loci status`, `loci doctor` and the dashboard warn, once the palace holds data (m, h or d; at least 1m, though backup.schedule.every may be shorter).",
	"import.max_bytes":                       "Largest import the daemon takes (bytes of the export file, POST /api/imports, `loci import`): a longer upload is refused with loci::export::too_large (413) as it arrives, nothing changed. A bigger palace moves a few wings a file (`loci export --wing NAME`).",
	"miners.<name>.source":                   "The source adapter (default the directory source) or a named source configuration.",
	"miners.<name>.locator":                  "What the source reads (for the directory source, an absolute path).",
	"miners.<name>.wing":                     "The wing the miner files into.",
	"miners.<name>.options":                  "The source's options, a table of strings.",
	"miners.<name>.credential":               "Where the source's secret is read: {env = \"VAR\"}, {file = \"path\"} or {oauth = true}.",
	"miners.<name>.enabled":                  "Whether the miner may run.",
	"miners.<name>.max_documents":            "Overrides mining.max_documents for this miner's jobs.",
	"miners.<name>.schedule":                 "Its timetable: {every = \"1h\", at = \"06:00\" (UTC, whole days only), enabled}.",
	"source_configs.<name>.source":           "The source adapter the configuration is for.",
	"source_configs.<name>.options":          "The source's options.",
	"source_configs.<name>.credential":       "Where the source's secret is read (as for miners).",
	"triggers.<name>.miner":                  "The miner the trigger runs.",
	"triggers.<name>.type":                   "schedule, poll, watch or webhook.",
	"triggers.<name>.enabled":                "Whether the trigger runs (default false).",
	"triggers.<name>.credential":             "The webhook's shared secret: {env = \"VAR\"} or {file = \"path\"}.",
	"triggers.<name>.settings":               "The type's settings: schedule every/at; poll every/max_backoff; watch path/debounce/recursive/max_wait (default 30s: a run at the latest this long after a change however often the tree changes); webhook auth/header/prefix/encoding/delivery_header.",
}

// Settings lists every setting of Config in the order of its fields, with
// the defaults of def (Default of the environment the documentation is
// made for). A field without a line in settingDocs is an error naming it.
func Settings(def Config) ([]Setting, error) {
	envOf := map[string]string{}
	for _, s := range envSettings {
		envOf[s.key] = s.env
	}
	var out []Setting
	var missing []string
	var walk func(t reflect.Type, v reflect.Value, prefix string)
	walk = func(t reflect.Type, v reflect.Value, prefix string) {
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
			if name == "" || name == "-" {
				continue
			}
			key := prefix + name
			var fv reflect.Value
			if v.IsValid() {
				fv = v.Field(i)
			}
			ft := f.Type
			if ft.Kind() == reflect.Map && ft.Key().Kind() == reflect.String && ft.Elem().Kind() == reflect.Struct {
				// A table of the user's naming: [miners.<name>].
				walk(ft.Elem(), reflect.Value{}, key+".<name>.")
				continue
			}
			if ft.Kind() == reflect.Struct {
				walk(ft, fv, key+".")
				continue
			}
			doc, ok := settingDocs[key]
			if !ok {
				missing = append(missing, key)
				continue
			}
			out = append(out, Setting{Key: key, Type: typeName(ft), Default: defaultText(fv), Env: envOf[key], Doc: doc})
		}
	}
	walk(reflect.TypeOf(def), reflect.ValueOf(def), "")
	if len(missing) > 0 {
		return out, fmt.Errorf("settings without a line in settingDocs: %s", strings.Join(missing, ", "))
	}
	listed := map[string]bool{}
	for _, s := range out {
		listed[s.Key] = true
	}
	var stale []string
	for k := range settingDocs {
		if !listed[k] {
			stale = append(stale, k)
		}
	}
	if len(stale) > 0 {
		sort.Strings(stale)
		return out, fmt.Errorf("settingDocs lines of no setting: %s", strings.Join(stale, ", "))
	}
	return out, nil
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Pointer:
		return typeName(t.Elem())
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	case reflect.Slice:
		return "array of " + typeName(t.Elem())
	case reflect.Map:
		return "table"
	case reflect.Struct:
		return "table"
	}
	return t.Kind().String()
}

func defaultText(v reflect.Value) string {
	if !v.IsValid() {
		return ""
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice:
		if v.IsNil() || v.Len() == 0 && v.Kind() != reflect.Pointer {
			return ""
		}
	}
	if v.Kind() == reflect.String {
		if v.String() == "" {
			return `""`
		}
		return fmt.Sprintf("%q", v.String())
	}
	if v.Kind() == reflect.Slice {
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = fmt.Sprintf("%q", v.Index(i).Interface())
		}
		return "[" + strings.Join(slices.Clip(parts), ", ") + "]"
	}
	return fmt.Sprint(v.Interface())
}

// SettingsMarkdown is docs/SETTINGS.md: every setting with its type,
// default and environment variable, from Settings.
func SettingsMarkdown(def Config) (string, error) {
	list, err := Settings(def)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("# Settings\n\n")
	b.WriteString("<!-- Generated by `go generate ./config` from config/settings.go; do not edit. -->\n\n")
	b.WriteString("loci reads its settings from defaults, then the configuration file (`--config`, else `LOCI_CONFIG`,\n")
	b.WriteString("else `~/.config/loci/config.toml` when it exists; `$XDG_CONFIG_HOME` is honoured), then the environment\n")
	b.WriteString("variables below, then command-line flags. A key `a.b` is `b = ...` in the file's `[a]` table; `<name>`\n")
	b.WriteString("stands for a name you choose (`[miners.notes]`). Defaults shown with `~` follow `$HOME` and the XDG variables.\n")
	b.WriteString("A bad value stops the daemon at start with `loci::config::invalid` naming the key.\n\n")
	section := ""
	for _, s := range list {
		top, _, _ := strings.Cut(s.Key, ".")
		if top != section {
			section = top
			fmt.Fprintf(&b, "\n## [%s]\n\n| Key | Type | Default | Environment | What it does |\n|---|---|---|---|---|\n", top)
		}
		def := s.Default
		if def != "" {
			def = "`" + def + "`"
		}
		env := s.Env
		if env != "" {
			env = "`" + env + "`"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", s.Key, s.Type, def, env, strings.ReplaceAll(s.Doc, "|", "\\|"))
	}
	b.WriteString("\nOther environment variables: `LOCI_CONFIG` (the configuration file), `LOCI_DATASTORE_PASSWORD` (the shared store's password), `LOCI_LOG` (log level),\n")
	b.WriteString("`LOCI_MODE` (memory mode of CLI commands), `LOCI_WING` and `LOCI_ROOM` (CLI defaults), `NO_COLOR`, `FORCE_COLOR`.\n")
	return b.String(), nil
}

// DocEnv is the environment the documentation's defaults are shown for:
// HOME is "~" and no XDG variable is set.
func DocEnv(name string) (string, bool) {
	if name == "HOME" {
		return "~", true
	}
	return "", false
}
