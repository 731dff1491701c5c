package cli

import (
	"net/http"
	"path/filepath"
	"sort"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/transport/client"
)

func (a *app) minerCmd() *cobra.Command {
	m := &cobra.Command{Use: "miner", Short: "Miners: saved definitions of what to mine, from the configuration file"}
	m.AddCommand(&cobra.Command{
		Use: "list", Short: "List the miners with their state", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/miners", nil, func(out *api.MinerList) {
				if len(out.Miners) == 0 {
					a.printf("no miners (loci miner set NAME --locator DIR, or [miners.<name>] in the configuration file)\n")
				}
				for _, mi := range out.Miners {
					state := mi.State
					if mi.Reason != "" {
						state += " (" + mi.Reason + ")"
					}
					a.printf("%-16s %-10s %s  %s\n", mi.Name, mi.Source, mi.Locator, state)
				}
			})
		},
	})
	m.AddCommand(&cobra.Command{
		Use: "get NAME", Short: "Show one miner", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/miners/"+client.Esc(args[0]), nil, func(mi *api.Miner) {
				a.printf("name:      %s\nsource:    %s\nlocator:   %s\n", mi.Name, mi.Source, mi.Locator)
				if mi.Wing != "" {
					a.printf("wing:      %s\n", mi.Wing)
				}
				keys := make([]string, 0, len(mi.Options))
				for k := range mi.Options {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				for _, k := range keys {
					a.printf("option:    %s=%s\n", k, mi.Options[k])
				}
				if mi.Credential != nil {
					a.printf("credential: %s (available: %v)\n", mi.Credential.Kind, mi.Credential.Available)
				}
				if mi.MaxDocuments != nil {
					a.printf("max documents: %d\n", *mi.MaxDocuments)
				}
				a.printf("enabled:   %v\nstate:     %s\n", mi.Enabled, mi.State)
				if mi.Reason != "" {
					a.printf("reason:    %s\n", mi.Reason)
				}
			})
		},
	})
	m.AddCommand(&cobra.Command{
		Use: "reload", Short: "Read the configuration file's miners again", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodPost, "/api/miners/reload", nil, func(out *api.MinersReloaded) {
				a.printf("%d miners; added %v, removed %v, changed %v, enabled %v, disabled %v, broadened %v\n", len(out.Miners),
					out.Added, out.Removed, out.Changed, out.Enabled, out.Disabled, out.Broadened)
			})
		},
	})
	for _, act := range []struct{ name, short string }{
		{"enable", "Enable a miner (its enabled line in the configuration file; checks it can run)"},
		{"disable", "Disable a miner (its enabled line in the configuration file)"},
	} {
		m.AddCommand(&cobra.Command{
			Use: act.name + " NAME", Short: act.short, Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return show(a, c.Context(), http.MethodPost, "/api/miners/"+client.Esc(args[0])+"/"+act.name, nil, func(mi *api.Miner) {
					a.printf("miner %s: %s\n", mi.Name, mi.State)
				})
			},
		})
	}
	var setSource, setLocator, setWing, credEnv, credFile string
	var credOAuth bool
	var setEnable, setDisable, setAllow bool
	var setMax int
	var setOpts, unsetOpts, unset []string
	set := &cobra.Command{
		Use: "set NAME", Short: "Create a miner or change the fields given (written to its table in the configuration file)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			body := api.MinerPut{UnsetOptions: unsetOpts, Unset: unset, AllowBroaden: setAllow}
			str := func(flag, v string) *string {
				if c.Flags().Changed(flag) {
					return &v
				}
				return nil
			}
			body.Source, body.Locator, body.Wing = str("source", setSource), str("locator", setLocator), str("wing", setWing)
			if body.Locator != nil && (body.Source == nil || *body.Source == "" || *body.Source == "directory") {
				if p, err := filepath.Abs(*body.Locator); err == nil {
					body.Locator = &p
				}
			}
			if setEnable || setDisable {
				on := setEnable
				body.Enabled = &on
			}
			if credEnv != "" || credFile != "" || credOAuth {
				body.Credential = &api.CredentialRef{Env: credEnv, File: absPath(credFile), OAuth: credOAuth}
			}
			if c.Flags().Changed("max-documents") {
				body.MaxDocuments = &setMax
			}
			var err error
			if body.Options, err = keyValues(setOpts); err != nil {
				return err
			}
			return show(a, c.Context(), http.MethodPut, "/api/miners/"+client.Esc(args[0]), body, func(out *api.MinerPutResult) {
				what := "unchanged"
				switch {
				case out.Created:
					what = "created"
				case out.Changed:
					what = "changed"
				}
				state := out.Miner.State
				if out.Miner.Reason != "" {
					state += " (" + out.Miner.Reason + ")"
				}
				a.printf("miner %s %s: %s\n", out.Miner.Name, what, state)
				if out.IdentityChanged {
					a.printf("its source identity changed: the next run reads from a cursor of its own\n")
				}
				a.printConfigWritten(out.ConfigWritten)
			})
		},
	}
	set.Flags().StringVar(&setSource, "source", "", "the source (default directory)")
	set.Flags().StringVar(&setLocator, "locator", "", "what the source reads (a directory: made absolute)")
	set.Flags().StringVar(&setWing, "wing", "", "the wing to file into")
	set.Flags().BoolVar(&setEnable, "enable", false, "enable it (checks it can run)")
	set.Flags().BoolVar(&setDisable, "disable", false, "disable it")
	set.Flags().StringVar(&credEnv, "credential-env", "", "read its credential from this environment variable")
	set.Flags().StringVar(&credFile, "credential-file", "", "read its credential from this file, inside credentials.dir (made absolute)")
	set.Flags().BoolVar(&credOAuth, "credential-oauth", false, "read with the source's sign-in (or its source configuration's): loci source auth SOURCE")
	set.Flags().IntVar(&setMax, "max-documents", 0, "stop each run after this many documents, the next run going on (0: unlimited; default mining.max_documents)")
	set.Flags().StringArrayVarP(&setOpts, "option", "o", nil, "set an option, key=value; repeatable")
	set.Flags().StringArrayVar(&unsetOpts, "unset-option", nil, "remove an option; repeatable")
	set.Flags().StringArrayVar(&unset, "unset", nil, "remove a field: wing, credential, source, max_documents, schedule; repeatable")
	set.Flags().BoolVar(&setAllow, "allow-broaden", false, "allow a change that may widen what it reads")
	m.AddCommand(set)
	m.AddCommand(&cobra.Command{
		Use: "rm NAME", Short: "Remove a miner from the configuration file (what it mined stays)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodDelete, "/api/miners/"+client.Esc(args[0]), nil, func(out *api.MinerRemoved) {
				a.printf("removed miner %s (what it mined stays)\n", out.Removed)
			})
		},
	})
	sched := &cobra.Command{Use: "schedule", Short: "Opt a miner in or out of its configured schedule"}
	for _, act := range []string{"enable", "disable"} {
		sched.AddCommand(&cobra.Command{
			Use: act + " NAME", Short: act + " the miner's schedule", Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return show(a, c.Context(), http.MethodPost, "/api/miners/"+client.Esc(args[0])+"/schedule/"+act, nil, func(mi *api.Miner) {
					on := "off"
					if mi.Schedule != nil && mi.Schedule.Enabled {
						on = "on"
					}
					a.printf("miner %s: schedule %s\n", mi.Name, on)
				})
			},
		})
	}
	m.AddCommand(sched)
	var full, allow, noWait bool
	var opts []string
	run := &cobra.Command{
		Use: "run NAME", Short: "Run a miner now (a mine job); follows it unless --no-wait", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			body := api.MinerRun{Full: full, RequestedBy: "cli", AllowBroaden: allow}
			var err error
			if body.Options, err = keyValues(opts); err != nil {
				return err
			}
			var job api.Job
			if _, err := a.call(c.Context(), http.MethodPost, "/api/miners/"+client.Esc(args[0])+"/run", body, &job); err != nil {
				return err
			}
			if noWait {
				if a.jsonOut {
					return a.out(job)
				}
				a.printf("queued mine job %s (follow it: loci job watch %s)\n", job.ID, job.ID)
				return nil
			}
			return a.watch(c.Context(), job.ID)
		},
	}
	run.Flags().BoolVar(&full, "full", false, "read everything again (nothing is duplicated)")
	run.Flags().BoolVar(&allow, "allow-broaden", false, "allow option overrides that may widen what the miner reads")
	run.Flags().StringArrayVarP(&opts, "option", "o", nil, "override a saved option for this run, key=value; repeatable")
	run.Flags().BoolVar(&noWait, "no-wait", false, "queue the job and return")
	m.AddCommand(run)
	return m
}

// absPath is a path given on the command line made absolute ("" stays
// ""): the daemon reads it on its machine, from its own directory.
func absPath(p string) string {
	if p == "" {
		return p
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// printConfigWritten says that a change created the configuration file,
// and where.
func (a *app) printConfigWritten(w api.ConfigWritten) {
	if w.ConfigFileCreated {
		a.printf("created the configuration file %s (the daemon reads it from now on and at its next start)\n", w.ConfigFile)
	}
}
