package cli

import (
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/transport/client"
)

func (a *app) triggerCmd() *cobra.Command {
	t := &cobra.Command{Use: "trigger", Short: "Triggers: schedules, polls, file watches and webhooks that run miners automatically"}
	t.AddCommand(&cobra.Command{
		Use: "list", Short: "List the triggers with their status", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/triggers", nil, func(out *api.TriggerList) {
				if len(out.Triggers) == 0 {
					a.printf("no triggers (loci trigger set NAME --miner M --type schedule -s every=1h)\n")
				}
				for _, tr := range out.Triggers {
					status := tr.Status
					if tr.Reason != "" {
						status += " (" + tr.Reason + ")"
					}
					a.printf("%-16s %-9s miner %-14s %s\n", tr.Name, tr.Type, tr.Miner, status)
				}
				if out.Error != "" {
					a.printf("the configuration file could not be read again: %s\n", out.Error)
				}
			})
		},
	})
	t.AddCommand(&cobra.Command{
		Use: "get NAME", Short: "Show one trigger", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/triggers/"+client.Esc(args[0]), nil, func(tr *api.Trigger) { a.printTrigger(tr) })
		},
	})
	t.AddCommand(&cobra.Command{
		Use: "reload", Short: "Read the configuration file's triggers again now", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodPost, "/api/triggers/reload", nil, func(out *api.TriggersReloaded) {
				a.printf("%d triggers; added %v, removed %v, changed %v\n", len(out.Triggers), out.Added, out.Removed, out.Changed)
			})
		},
	})
	for _, act := range []struct{ name, short string }{
		{"enable", "Enable a trigger (checks every prerequisite; written to the configuration file)"},
		{"disable", "Disable a trigger (written to the configuration file)"},
	} {
		t.AddCommand(&cobra.Command{
			Use: act.name + " NAME", Short: act.short, Args: cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return show(a, c.Context(), http.MethodPost, "/api/triggers/"+client.Esc(args[0])+"/"+act.name, nil, func(tr *api.Trigger) {
					a.printf("trigger %s: %s\n", tr.Name, tr.Status)
				})
			},
		})
	}
	t.AddCommand(&cobra.Command{
		Use: "fire NAME", Short: "Ask for the trigger's miner run now (joins a queued one)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodPost, "/api/triggers/"+client.Esc(args[0])+"/fire", nil, func(out *api.TriggerFired) {
				id := ""
				if out.Job != nil {
					id = out.Job.ID
				}
				a.printf("%s: job %s (follow it: loci job watch %s)\n", out.Outcome, id, id)
			})
		},
	})
	t.AddCommand(&cobra.Command{
		Use: "rm NAME", Short: "Remove a trigger from the configuration file (and what the daemon remembers about it)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodDelete, "/api/triggers/"+client.Esc(args[0]), nil, func(out *api.MinerRemoved) {
				a.printf("removed trigger %s\n", out.Removed)
			})
		},
	})
	var miner, typ, credEnv, credFile string
	var enable, disable bool
	var settings, unsetSettings, unset []string
	set := &cobra.Command{
		Use:   "set NAME",
		Short: "Create a trigger (disabled unless --enable) or change the fields given",
		Long: "Create a trigger or change the fields given; it is written to its table in the configuration file.\n\n" +
			"Settings by type (-s key=value):\n  schedule: every (s, m, h, d; at least 1s), at (HH:MM UTC, whole-day intervals)\n" +
			"  poll:     every, max_backoff (default eight intervals)\n  watch:    path (absolute), debounce (100ms to 1h, default 2s), recursive (default true),\n" +
			"            max_wait (the longest wait for a run while changes keep coming: the debounce to 1d, default 30s)\n" +
			"  webhook:  auth (hmac-sha256 or token), header, prefix, encoding (hex or base64), delivery_header;\n" +
			"            its shared secret is read from --credential-env or --credential-file",
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			body := api.TriggerPut{UnsetSettings: unsetSettings, Unset: unset}
			if c.Flags().Changed("miner") {
				body.Miner = &miner
			}
			if c.Flags().Changed("type") {
				body.Type = &typ
			}
			if enable || disable {
				on := enable
				body.Enabled = &on
			}
			if credEnv != "" || credFile != "" {
				body.Credential = &api.CredentialRef{Env: credEnv, File: absPath(credFile)}
			}
			kv, err := keyValues(settings)
			if err != nil {
				return err
			}
			if len(kv) > 0 {
				body.Settings = map[string]any{}
				for k, v := range kv {
					body.Settings[k] = v
				}
			}
			return show(a, c.Context(), http.MethodPut, "/api/triggers/"+client.Esc(args[0]), body, func(out *api.TriggerPutResult) {
				what := "unchanged"
				switch {
				case out.Created:
					what = "created"
				case out.Changed:
					what = "changed"
				}
				a.printf("trigger %s %s: %s\n", out.Trigger.Name, what, out.Trigger.Status)
				for _, s := range out.Trigger.Setup {
					a.printf("  enabling needs: %s\n", s)
				}
				a.printConfigWritten(out.ConfigWritten)
			})
		},
	}
	set.Flags().StringVar(&miner, "miner", "", "the miner it runs")
	set.Flags().StringVar(&typ, "type", "", "schedule, poll, watch or webhook")
	set.Flags().BoolVar(&enable, "enable", false, "enable it (checks every prerequisite)")
	set.Flags().BoolVar(&disable, "disable", false, "disable it")
	set.Flags().StringVar(&credEnv, "credential-env", "", "a webhook's shared secret: this environment variable")
	set.Flags().StringVar(&credFile, "credential-file", "", "a webhook's shared secret: this file, inside credentials.dir (made absolute)")
	set.Flags().StringArrayVarP(&settings, "setting", "s", nil, "set a setting, key=value; repeatable")
	set.Flags().StringArrayVar(&unsetSettings, "unset-setting", nil, "remove a setting; repeatable")
	set.Flags().StringArrayVar(&unset, "unset", nil, "remove a field: credential")
	t.AddCommand(set)
	return t
}

func (a *app) printTrigger(tr *api.Trigger) {
	a.printf("name:      %s\ntype:      %s\nminer:     %s\nenabled:   %v\nstatus:    %s\n", tr.Name, tr.Type, tr.Miner, tr.Enabled, tr.Status)
	if tr.Reason != "" {
		a.printf("reason:    %s\n", tr.Reason)
	}
	keys := make([]string, 0, len(tr.Settings))
	for k := range tr.Settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		a.printf("setting:   %s=%s\n", k, tr.Settings[k])
	}
	if tr.Credential != nil {
		a.printf("credential: %s (available: %v)\n", tr.Credential.Kind, tr.Credential.Available)
	}
	if len(tr.Setup) > 0 {
		a.printf("enabling needs:\n  %s\n", strings.Join(tr.Setup, "\n  "))
	}
	if tr.Endpoint != "" {
		a.printf("endpoint:  %s\n", tr.Endpoint)
	}
	if tr.NextDue != nil {
		a.printf("next due:  %s\n", tr.NextDue.Format(time.RFC3339))
	}
	a.printf("running:   %v\ncounters:  fired %d, coalesced %d, failed %d, deliveries %d\n", tr.Running,
		tr.Counters.Fired, tr.Counters.Coalesced, tr.Counters.Failed, tr.Counters.Deliveries)
	if tr.LastError != "" {
		a.printf("last error: %s\n", tr.LastError)
	}
}
