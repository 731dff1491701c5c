package cli

import "testing"

// A daemon's help loses the REST routes it names for scripts, with the
// words that joined them to the loci command, wherever the route stands:
// the sentence left is whole.
func TestCLIHelpDropsRoutesWhole(t *testing.T) {
	for help, want := range map[string]string{
		// The admin listener's already_running and not_open helps.
		"close it first (DELETE /api/db or `loci db stop`), then open it with the new settings; or open it with the settings it has": "close it first (`loci db stop`), then open it with the new settings; or open it with the settings it has",
		"open it again with POST /api/db or `loci db serve`":                                                                         "open it again with `loci db serve`",
		"close it first (`loci db stop` or DELETE /api/db), then open it again":                                                      "close it first (`loci db stop`), then open it again",
		"close it first: DELETE /api/db, or `loci db stop`; then open it again":                                                      "close it first: `loci db stop`; then open it again",
		"close it first with DELETE /api/db (`loci db stop`), then open it again":                                                    "close it first with `loci db stop`, then open it again",
		"close it first (`loci db stop`, DELETE /api/db), then open it again":                                                        "close it first (`loci db stop`), then open it again",
		"close it first (DELETE /api/db, `loci db stop`), then open it again":                                                        "close it first (`loci db stop`), then open it again",
		"close it first (DELETE /api/db)":                                                                                            "close it first",
		// The helps of other modules, as before.
		"list the miners (GET /api/miners, loci miner list); miners are defined in the configuration file":         "list the miners (loci miner list); miners are defined in the configuration file",
		"list the plugins (loci plugin list, GET /api/plugins)":                                                    "list the plugins (loci plugin list)",
		"enable it first: loci miner enable x (POST /api/miners/x/enable)":                                         "enable it first: loci miner enable x",
		"list them (GET /api/source-configs)":                                                                      "list them",
		"provide what it needs, then enable it again (GET /api/triggers/t, loci trigger get t, lists it as setup)": "provide what it needs, then enable it again (loci trigger get t, lists it as setup)",
		"no route here, or anywhere":                                                                               "no route here, or anywhere",
	} {
		if got := cliHelp(help); got != want {
			t.Errorf("cliHelp(%q)\n = %q\nwant %q", help, got, want)
		}
	}
}
