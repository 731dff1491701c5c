package config

import (
	"errors"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loci-dev/loci/extract/provider"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/search/rank"
	"github.com/loci-dev/loci/sources/secret"
	"github.com/loci-dev/loci/triggers"
)

// Validate checks every setting and names the first bad key: each
// section by its own method, then the listeners' ports against each
// other.
func (c *Config) Validate() error {
	// Miners, source configurations and triggers are not checked here: a
	// bad one is reported by the daemon as unavailable with its reason, at
	// start as at a reload, and does not stop the daemon or the CLI.
	sections := []func() error{
		c.Extraction.validate,
		c.Embedding.validate,
		c.Server.validate,
		c.DB.validate,
		c.Webhook.validate,
		c.validatePorts,
		c.Palace.validate,
		c.Store.validate,
		c.Datastore.validate,
		c.Auth.validate,
		c.Dedup.validate,
		c.Jobs.validate,
		c.Mining.validate,
		c.Search.validate,
		c.Credentials.validate,
		c.Assets.validate,
		c.validateBackup,
		c.Import.validate,
	}
	for _, check := range sections {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// bad is a setting's error: its key, what is wrong, and where to correct
// it.
func bad(key, format string, args ...any) error {
	return fault.Newf(fault.ConfigInvalid, "correct "+key+" in the configuration file, environment or flags",
		"%s: "+format, append([]any{key}, args...)...)
}

// badInFile is the error of a setting only the file sets.
func badInFile(key, format string, args ...any) error {
	return fault.Newf(fault.ConfigInvalid, "correct "+key+" in the configuration file",
		"%s: "+format, append([]any{key}, args...)...)
}

// oneOf names an enum's values as a sentence: "a, b or c".
func oneOf[T ~string](values []T) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = string(v)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// checkIP and checkPort are the listeners' address checks.
func checkIP(key, v string) error {
	if net.ParseIP(v) == nil {
		return bad(key, "%q is not an IP address (an address only, no port or host name)", v)
	}
	return nil
}

// checkPort takes 0 on every listener: the OS chooses a free port (the
// daemon reports the one it got).
func checkPort(key string, p int) error {
	if p < 0 || p > 65535 {
		return bad(key, "%d is not a port (0 to 65535; 0 lets the OS choose)", p)
	}
	return nil
}

// checkOrigin says what is wrong with an entry of db.allowed_origins by
// NormalizeOrigin's rule, or "".
func checkOrigin(s string) string {
	if _, err := NormalizeOrigin(s); err != nil {
		return err.Error()
	}
	return ""
}

// NormalizeOrigin normalises a serialised origin, scheme://host[:port], as
// a browser sends it: the scheme and host lowercased, a scheme's default
// port (https 443, http 80) dropped, nothing after the authority (a
// trailing "/" is dropped). Anything else ("null", a path, a user, a
// wildcard) is an error saying what is wrong. It is the one rule of
// db.allowed_origins and of the admin listener's Origin check.
func NormalizeOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSuffix(s, "/"))
	switch {
	case err != nil:
		return "", errors.New("not a URL")
	case u.Scheme == "" || u.Host == "" || u.Opaque != "":
		return "", errors.New("it needs a scheme and a host")
	case u.User != nil:
		return "", errors.New("an origin has no user part")
	case u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return "", errors.New("an origin has no path, query or fragment")
	case strings.ContainsAny(u.Host, "*?"):
		return "", errors.New("wildcards are not accepted: list each origin")
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	// A browser leaves a scheme's default port out of the Origin it sends.
	if port := u.Port(); (scheme == "https" && port == "443") || (scheme == "http" && port == "80") {
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return scheme + "://" + host, nil
}

func (x Extraction) validate() error {
	switch {
	case x.Provider != "" && !slices.Contains(provider.Names, x.Provider):
		return fault.Newf(fault.ConfigInvalid, "correct extraction.provider in the configuration file",
			"extraction.provider: %q is not %s", x.Provider, oneOf(provider.Names))
	case x.Provider == provider.Command && len(x.Command) == 0:
		return fault.New(fault.ConfigInvalid, "extraction.command: a command provider needs the program and its arguments", "set extraction.command")
	case x.Provider == provider.HTTP && x.URL == "":
		return fault.New(fault.ConfigInvalid, "extraction.url: an http provider needs its endpoint", "set extraction.url")
	case x.TimeoutSecs < 0:
		return fault.New(fault.ConfigInvalid, "extraction.timeout_secs: must not be negative", "correct it")
	}
	return nil
}

func (s Server) validate() error {
	if err := checkIP("server.bind", s.Bind); err != nil {
		return err
	}
	if err := checkPort("server.port", s.Port); err != nil {
		return err
	}
	switch {
	case s.MaxConnections < 0:
		return bad("server.max_connections", "must not be negative (0 derives it from the open-file limit)")
	case s.MaxConnections > 0 && s.MaxConnections < 8:
		return bad("server.max_connections", "%d is too few to serve a dashboard and a client; use at least 8 (0 derives it from the open-file limit)", s.MaxConnections)
	case s.MaxSubscribers < 1:
		return bad("server.max_subscribers", "must be at least 1")
	case s.SlowSubscriberSecs < 1:
		return bad("server.slow_subscriber_secs", "must be at least 1")
	}
	return nil
}

func (d DB) validate() error {
	if err := checkIP("db.bind", d.Bind); err != nil {
		return err
	}
	if err := checkPort("db.port", d.Port); err != nil {
		return err
	}
	switch {
	case d.QueryTimeoutSecs < 1:
		return bad("db.query_timeout_secs", "must be at least 1")
	case d.MaxScanRows < 1:
		return bad("db.max_scan_rows", "must be at least 1")
	case d.MaxResultRows < 1:
		return bad("db.max_result_rows", "must be at least 1")
	}
	for _, o := range d.AllowedOrigins {
		if problem := checkOrigin(o); problem != "" {
			return bad("db.allowed_origins", "%q is not an origin: %s; list origins as a browser sends them: scheme://host[:port], e.g. https://console.example.com or http://192.168.1.20:3000 (no path, no wildcard)", o, problem)
		}
	}
	return nil
}

func (w Webhook) validate() error {
	if err := checkIP("webhook.bind", w.Bind); err != nil {
		return err
	}
	if err := checkPort("webhook.port", w.Port); err != nil {
		return err
	}
	switch {
	case w.MaxBodyBytes <= 0:
		return bad("webhook.max_body_bytes", "must be positive")
	case w.MaxConcurrent <= 0:
		return bad("webhook.max_concurrent", "must be positive")
	}
	return nil
}

// validatePorts keeps the listeners on different ports.
func (c *Config) validatePorts() error {
	switch {
	case c.DB.Port != 0 && c.DB.Port == c.Server.Port:
		return bad("db.port", "%d is also server.port; they must differ", c.DB.Port)
	case c.Webhook.Port != 0 && (c.Webhook.Port == c.Server.Port || c.Webhook.Port == c.DB.Port):
		return bad("webhook.port", "%d is also server.port or db.port; they must differ", c.Webhook.Port)
	}
	return nil
}

func (p Palace) validate() error {
	switch {
	case p.Path == "":
		return bad("palace.path", "is empty; an absolute path is required")
	case !filepath.IsAbs(p.Path):
		return bad("palace.path", "%q is relative; an absolute path is required", p.Path)
	}
	return nil
}

func (s Store) validate() error {
	if s.MinFreeBytes < 0 {
		return bad("store.min_free_bytes", "%d is negative; give a number of bytes (0: the store's own need only)", s.MinFreeBytes)
	}
	return nil
}

// validate checks datastore.url: a postgres:// or postgresql:// URL
// naming a host and a database, without a password (in the user part or
// an option): configuration files are shown and copied, so the password
// comes from LOCI_DATASTORE_PASSWORD or datastore.password_file. The
// errors never repeat the URL's user part or options.
func (d Datastore) validate() error {
	if d.URL == "" {
		if d.PasswordFile != "" {
			return bad("datastore.password_file", "is set without datastore.url: the password is for the shared store; set datastore.url too, or remove it")
		}
		return nil
	}
	if d.PasswordFile != "" && !filepath.IsAbs(d.PasswordFile) {
		// A relative name would be read from whatever directory the daemon
		// starts in (a service's is not the shell's): another file.
		return bad("datastore.password_file", "%q must be an absolute path: a relative one is read from the daemon's working directory, which changes with how it starts", d.PasswordFile)
	}
	u, err := url.Parse(d.URL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return fault.New(fault.ConfigInvalid, "datastore.url: not a postgres:// or postgresql:// URL (its text is not shown: it may hold a password)",
			"write datastore.url (or LOCI_DATASTORE_URL) as postgres://USER@HOST:PORT/DATABASE?options, or remove it to use the embedded palace")
	}
	q := u.Query()
	_, inUser := u.User.Password()
	if inUser || q.Has("password") {
		return fault.New(fault.ConfigInvalid, "datastore.url holds a password; configuration files are shown and copied, so a password is never read from the URL (the URL is not shown)",
			"remove the password from datastore.url (or LOCI_DATASTORE_URL) and give it in the environment variable "+DatastorePasswordEnv+
				" or in a file named by datastore.password_file")
	}
	if u.Host == "" && q.Get("host") == "" {
		return bad("datastore.url", "names no host: write postgres://USER@HOST:PORT/DATABASE (a Unix socket: ?host=/run/postgresql)")
	}
	if strings.Trim(u.Path, "/") == "" && q.Get("dbname") == "" {
		return bad("datastore.url", "names no database: write postgres://USER@HOST:PORT/DATABASE")
	}
	return nil
}

func (a Auth) validate() error {
	switch {
	case a.Token != "" && len(a.Token) < 16:
		return bad("auth.token", "is shorter than 16 characters")
	case secretProblem(a.Token) != "":
		return bad("auth.token", "%s (its value is not shown); set the secret alone", secretProblem(a.Token))
	}
	return nil
}

func (d Dedup) validate() error {
	if d.NearThreshold < 0.5 || d.NearThreshold > 1 {
		return bad("dedup.near_threshold", "%v is outside 0.5 to 1", d.NearThreshold)
	}
	return nil
}

func (j Jobs) validate() error {
	switch {
	case j.MaxConcurrency < 1:
		return bad("jobs.max_concurrency", "must be at least 1")
	case j.BackgroundConcurrency < 1:
		return bad("jobs.background_concurrency", "must be at least 1")
	case j.LeaseTTLSecs < 3:
		return bad("jobs.lease_ttl_secs", "must be at least 3")
	case j.DrainTimeoutSecs < 0:
		return bad("jobs.drain_timeout_secs", "must not be negative")
	}
	return nil
}

func (m Mining) validate() error {
	switch {
	case m.ChunkChars < 100:
		return bad("mining.chunk_chars", "must be at least 100")
	case m.MaxFileBytes <= 0:
		return bad("mining.max_file_bytes", "must be positive")
	case m.MaxDocuments < 0:
		return bad("mining.max_documents", "must not be negative (0 is unlimited)")
	case m.SourceTimeoutSecs < 1:
		return bad("mining.source_timeout_secs", "must be at least 1")
	case !slices.Contains(secret.Policies, m.Secrets):
		return bad("mining.secrets", "%q is not %s", m.Secrets, oneOf(secret.Policies))
	case m.SignaturePolicy != "optional" && m.SignaturePolicy != "required":
		return bad("mining.signature_policy", "%q is not optional or required", m.SignaturePolicy)
	}
	for i, k := range m.TrustedKeys {
		if f := strings.Fields(k); len(f) < 2 || f[0] != "loci-ed25519" {
			return bad("mining.trusted_keys", "entry %d is not a public key (\"loci-ed25519 <base64>\", as loci source keygen writes to NAME.pub)", i)
		}
	}
	return checkRegistries(m.Registries)
}

func (s Search) validate() error {
	switch {
	case s.ContextWeight < 0 || s.ContextWeight > 10:
		return bad("search.context_weight", "must be between 0 and 10")
	case s.ContextWindow < 0 || s.ContextWindow > 10:
		return bad("search.context_window", "must be between 0 and 10")
	case s.SemanticWeight < 0 || s.SemanticWeight > 10:
		return bad("search.semantic_weight", "must be between 0 and 10")
	case !slices.Contains(rank.Methods, s.Fusion):
		return bad("search.fusion", "%q is not %s", s.Fusion, oneOf(rank.Methods))
	case s.FusionK < 1:
		return bad("search.fusion_k", "must be at least 1")
	case s.Depth < 1 || s.Depth > 1000:
		return bad("search.depth", "must be between 1 and 1000")
	case s.AnswerWeight < 0 || s.AnswerWeight > 10:
		return bad("search.answer_weight", "must be between 0 and 10")
	case s.FeedbackTerms < 0 || s.FeedbackTerms > 100:
		return bad("search.feedback_terms", "must be between 0 and 100")
	case s.FeedbackDocs < 1 || s.FeedbackDocs > 100:
		return bad("search.feedback_docs", "must be between 1 and 100")
	case s.FeedbackWeight < 0 || s.FeedbackWeight > 10:
		return bad("search.feedback_weight", "must be between 0 and 10")
	}
	return nil
}

// validate checks each profile (its errors name the file, where alone
// profiles are set), then the section's own settings.
func (e Embedding) validate() error {
	for name, p := range e.Profiles {
		key := "embedding.profiles." + name
		if name == "" || strings.ContainsAny(name, " /\t\n") {
			return badInFile(key, "profile names are non-empty words")
		}
		switch p.Provider {
		case "http":
			if p.URL == "" || p.Model == "" {
				return badInFile(key+".url", "an http profile needs url and model")
			}
			if p.Format != "" && p.Format != "openai" && p.Format != "ollama" {
				return badInFile(key+".format", "%q is not openai or ollama", p.Format)
			}
		case "command":
			if len(p.Command) == 0 {
				return badInFile(key+".command", "a command profile needs the program and its arguments")
			}
		case "hash":
		case StaticProvider:
			if p.Model != "" && p.Model != StaticModel {
				return badInFile(key+".model", "the static provider has one model, %s", StaticModel)
			}
		case "":
			return badInFile(key+".provider", "is required: static, http, command or hash")
		default:
			return badInFile(key+".provider", "%q is not static, http, command or hash", p.Provider)
		}
		if p.Dimension < 0 || p.Dimension > 16384 {
			return badInFile(key+".dimension", "%d is outside 1 to 16384", p.Dimension)
		}
		if p.BatchSize < 0 || p.TimeoutSecs < 0 {
			return badInFile(key, "batch_size and timeout_secs must not be negative")
		}
	}
	switch {
	case e.SaveSecs < 1:
		return bad("embedding.save_secs", "must be at least 1")
	case e.Default != "" && e.Profiles[e.Default].Provider == "":
		return bad("embedding.default", "%q is not a configured profile", e.Default)
	}
	return nil
}

func (c Credentials) validate() error {
	switch {
	case c.Backend != "auto" && c.Backend != "file":
		return bad("credentials.backend", "%q is not auto or file", c.Backend)
	case c.Dir != "" && !filepath.IsAbs(c.Dir):
		return bad("credentials.dir", "%q is relative; an absolute path is required", c.Dir)
	}
	return nil
}

func (a Assets) validate() error {
	if a.Dir != "" && !filepath.IsAbs(a.Dir) {
		return bad("assets.dir", "%q is relative; an absolute path is required", a.Dir)
	}
	return nil
}

func (i Import) validate() error {
	if i.MaxBytes < 1 {
		return bad("import.max_bytes", "%d is not a size; give the largest import the daemon takes, in bytes (default %d)", i.MaxBytes, DefaultImportMaxBytes)
	}
	return nil
}

// validateBackup checks the backup section: an absolute folder outside
// the palace, a schedule a schedule trigger would take, a positive keep
// and a warning age of at least a minute (the schedule may be tighter:
// the message says why the warning is not).
func (c *Config) validateBackup() error {
	b := c.Backup
	if b.Dir != "" {
		if !filepath.IsAbs(b.Dir) {
			return bad("backup.dir", "%q is relative; an absolute path is required", b.Dir)
		}
		if rel, err := filepath.Rel(filepath.Clean(c.Palace.Path), filepath.Clean(b.Dir)); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return bad("backup.dir", "%q is inside the palace (%s); choose a folder outside it, so that a restore or the palace's loss leaves the backups", b.Dir, c.Palace.Path)
		}
	}
	if s := b.Schedule; s.Every != "" || s.At != "" {
		raw := map[string]string{"every": s.Every}
		if s.At != "" {
			raw["at"] = s.At
		}
		if s.Every == "" {
			return bad("backup.schedule.every", "is required with at (a number and a unit: s, m, h or d, at least 1s)")
		}
		if _, err := triggers.Check(triggers.Schedule, raw); err != nil {
			// The trigger's words, under this section's key.
			k, problem, _ := strings.Cut(strings.TrimPrefix(fault.As(err).Msg, "settings."), ": ")
			return bad("backup.schedule."+k, "%s", problem)
		}
	}
	switch {
	case b.Keep < 1:
		return bad("backup.keep", "must be at least 1 (the scheduled backups kept)")
	case b.Keep > MaxBackupKeep:
		return bad("backup.keep", "%d is more than %d", b.Keep, MaxBackupKeep)
	}
	d, ok := triggers.ParseDuration(b.WarnAfter)
	switch {
	case !ok:
		return bad("backup.warn_after", "%q is not a duration (a number and a unit: m, h or d, at least 1m, e.g. \"7d\")", b.WarnAfter)
	case d < time.Minute:
		// backup.schedule.every goes down to 1s (a schedule trigger's
		// floor); the warning does not: a backup takes a while to write,
		// and the status counts its age in seconds.
		return bad("backup.warn_after", "%q is shorter than 1m, its minimum: a backup takes a while to write, so a tighter warning would come and go between backups even when backup.schedule.every is shorter (which it may be, down to 1s); give at least \"1m\", e.g. \"7d\"", b.WarnAfter)
	}
	return nil
}
