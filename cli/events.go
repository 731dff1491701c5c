package cli

import (
	"bufio"
	"encoding/json"
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
				var e struct {
					Kind, Action, ID, JobKind, Status string
				}
				var m map[string]string
				if json.Unmarshal([]byte(data), &m) != nil {
					continue
				}
				e.Kind, e.Action, e.ID, e.JobKind, e.Status = m["kind"], m["action"], m["id"], m["job_kind"], m["status"]
				line := time.Now().Format("15:04:05") + "  " + e.Kind + " " + e.Action
				for _, f := range []string{e.ID, e.JobKind, e.Status} {
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
