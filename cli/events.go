package cli

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func (a *app) eventsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "events",
		Short: "Print the daemon's change notices live (drawers, wings, rooms, jobs) until interrupted",
		Long: "Print the daemon's change notices as they happen: identifiers and kinds only, never content.\n" +
			"With --json each notice is printed as its JSON object, one per line. After a resync notice,\n" +
			"some notices were missed: re-read what you show.",
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cl, err := a.client()
			if err != nil {
				return err
			}
			body, err := cl.Stream(c.Context(), "/api/events")
			if err != nil {
				return err
			}
			defer body.Close()
			// Subscribed: changes from now on are shown (said on stderr, so
			// that --json output stays one notice a line).
			fmt.Fprintln(a.stderrOrDiscard(), "following change notices; Ctrl-C stops")
			sc := bufio.NewScanner(body)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				data, ok := strings.CutPrefix(sc.Text(), "data: ")
				if !ok {
					continue // event names, keep-alive comments, blank lines
				}
				if a.jsonOut {
					a.printf("%s\n", data)
					continue
				}
				var e map[string]string
				if json.Unmarshal([]byte(data), &e) != nil {
					continue
				}
				line := time.Now().Format("15:04:05") + "  " + e["kind"] + " " + e["action"]
				for _, f := range []string{e["id"], e["job_kind"], e["status"]} {
					if f != "" {
						line += "  " + f
					}
				}
				a.printf("%s\n", line)
			}
			if c.Context().Err() != nil {
				return nil
			}
			return sc.Err()
		},
	}
}
