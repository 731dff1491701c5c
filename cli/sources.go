package cli

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
)

func (a *app) sourceCmd() *cobra.Command {
	s := &cobra.Command{Use: "source", Short: "The sources loci mines: adapters and what was mined"}
	s.AddCommand(&cobra.Command{
		Use: "list", Short: "List the source adapters and the sources mined so far", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/sources", nil, func(out *api.SourceList) {
				a.printf("adapters:\n")
				for _, ad := range out.Adapters {
					opts := "none"
					if len(ad.Options) > 0 {
						opts = strings.Join(ad.Options, ", ")
					}
					line := fmt.Sprintf("  %-15s %s, %s; options: %s", ad.Name, ad.State, ad.Origin, opts)
					if ad.Format != "" {
						line += "; format " + ad.Format
					}
					if ad.DefaultLocator != "" {
						line += "; default locator " + ad.DefaultLocator
					}
					a.printf("%s\n", line)
					if ad.Reason != "" {
						a.printf("                  why %s: %s\n", ad.State, ad.Reason)
					}
				}
				defer a.printWarnings(out.Warnings)
				if len(out.Sources) == 0 {
					a.printf("nothing mined yet (loci mine PATH)\n")
					return
				}
				a.printf("sources:\n")
				for _, src := range out.Sources {
					a.printf("  %-15s %s  %d documents in wing %s, last run %s (job %s)\n", src.Adapter, src.Locator, src.Documents, src.Wing, ago(src.LastRun), src.LastJob)
				}
			})
		},
	})
	s.AddCommand(a.sourcePackageCmds()...)
	s.AddCommand(a.sourceDevCmds()...)
	s.AddCommand(a.sourceAuthCmd())
	return s
}

// printWarnings prints the retention guard's warnings, one with its help
// per line pair.
func (a *app) printWarnings(ws []api.SourceWarning) {
	for _, w := range ws {
		a.printf("warning:    %s\n", w.Message)
		if w.Help != "" {
			a.printf("            %s\n", w.Help)
		}
	}
}
