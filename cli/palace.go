package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/fault"
	"github.com/loci-dev/loci/transport/client"
)

// call sends one request and prints the answer with --json.
func (a *app) call(ctx context.Context, method, path string, body, out any) (int, error) {
	cl, err := a.client()
	if err != nil {
		return 0, err
	}
	return cl.Do(ctx, method, path, body, out)
}

// content reads drawer content from the arguments, or stdin for "-" or
// none.
func (a *app) content(args []string, stdin io.Reader) (string, error) {
	var text string
	if len(args) > 0 && !(len(args) == 1 && args[0] == "-") {
		text = strings.Join(args, " ")
	} else {
		b, err := io.ReadAll(io.LimitReader(stdin, 1<<20+1))
		if err != nil {
			return "", fault.Wrap(fault.IOFailed, err, "cannot read content from standard input", "pass the content as arguments")
		}
		text = string(b)
	}
	if !utf8.ValidString(text) {
		// JSON would carry it with U+FFFD in place of the bad bytes: not
		// the text given.
		return "", fault.Invalid("content", "is not valid UTF-8; convert it first (for example iconv -f latin1 -t utf-8), so it is stored exactly as given")
	}
	return text, nil
}

// confirm asks before a destructive command unless --yes was given.
func (a *app) confirm(c *cobra.Command, yes bool, question string) error {
	if yes {
		return nil
	}
	fmt.Fprintf(a.stderr, "%s [y/N] ", safeText(question))
	line, err := bufio.NewReader(c.InOrStdin()).ReadString('\n')
	if err != nil && line == "" {
		return fault.Wrap(fault.CLIPromptFailed, err, "cannot read the confirmation", "pass --yes to confirm without a prompt")
	}
	if ans := strings.ToLower(strings.TrimSpace(line)); ans != "y" && ans != "yes" {
		return fault.New(fault.CLIAborted, "not confirmed; nothing was deleted", "answer y, or pass --yes")
	}
	return nil
}

func (a *app) wingCmd() *cobra.Command {
	w := &cobra.Command{Use: "wing", Short: "List, show, create and delete wings"}
	w.AddCommand(&cobra.Command{
		Use: "list", Short: "List wings with room and drawer counts", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/wings", nil, func(out *api.WingList) {
				if len(out.Wings) == 0 {
					a.printf("no wings yet; file a drawer with `loci drawer add --wing W --room R TEXT`\n")
				}
				for _, w := range out.Wings {
					a.printf("%-24s %3d rooms %6d drawers  %s\n", w.Name, w.RoomCount, w.Drawers, w.Description)
				}
			})
		},
	})
	w.AddCommand(&cobra.Command{
		Use: "get WING", Short: "Show one wing with its rooms", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/wings/"+client.Esc(args[0]), nil, func(out *api.Wing) {
				a.printf("%s (%s): %d rooms, %d drawers\n", out.Name, out.ID, out.RoomCount, out.Drawers)
				for _, r := range out.Rooms {
					a.printf("  %-22s %6d drawers\n", r.Name, r.Drawers)
				}
			})
		},
	})
	var desc string
	create := &cobra.Command{
		Use: "create NAME", Short: "Create a wing (nothing changes when it exists)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodPost, "/api/wings", api.NewPlace{Name: args[0], Description: desc}, func(out *api.WingCreated) {
				a.printf("%s wing %s (%s)\n", createdWord(out.Created), out.Wing.Name, out.Wing.ID)
			})
		},
	}
	create.Flags().StringVar(&desc, "description", "", "what the wing holds")
	w.AddCommand(create)
	var yes bool
	del := &cobra.Command{
		Use: "delete WING", Short: "Delete a wing with all its rooms and drawers", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if err := a.confirm(c, yes, fmt.Sprintf("Delete wing %q with all its rooms and drawers?", args[0])); err != nil {
				return err
			}
			return a.remove(c.Context(), "/api/wings/"+client.Esc(args[0]))
		},
	}
	del.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	w.AddCommand(del)
	return w
}

func createdWord(created bool) string {
	if created {
		return "created"
	}
	return "existing"
}

func (a *app) remove(ctx context.Context, path string) error {
	var out api.RemovedAnswer
	if _, err := a.call(ctx, http.MethodDelete, path, nil, &out); err != nil {
		return err
	}
	if a.jsonOut {
		return a.out(out)
	}
	a.printf("removed %d wings, %d rooms, %d drawers\n", out.Removed.Wings, out.Removed.Rooms, out.Removed.Drawers)
	return nil
}

func (a *app) roomCmd() *cobra.Command {
	r := &cobra.Command{Use: "room", Short: "List, show, create and delete rooms of a wing"}
	var wing string
	r.PersistentFlags().StringVar(&wing, "wing", "", "wing (LOCI_WING, else the project's .loci.toml)")
	w := func() (string, error) { return a.defaultPlace(wing, "LOCI_WING", "wing") }
	r.AddCommand(&cobra.Command{
		Use: "list", Short: "List a wing's rooms", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			wn, err := w()
			if err != nil {
				return err
			}
			return show(a, c.Context(), http.MethodGet, "/api/wings/"+client.Esc(wn)+"/rooms", nil, func(out *api.RoomList) {
				for _, r := range out.Rooms {
					a.printf("%-24s %6d drawers  %s\n", r.Name, r.Drawers, r.Description)
				}
			})
		},
	})
	r.AddCommand(&cobra.Command{
		Use: "get ROOM", Short: "Show one room", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			wn, err := w()
			if err != nil {
				return err
			}
			return show(a, c.Context(), http.MethodGet, "/api/wings/"+client.Esc(wn)+"/rooms/"+client.Esc(args[0]), nil, func(out *api.Room) {
				a.printf("%s/%s (%s): %d current drawers, %d stored\n", out.Wing, out.Name, out.ID, out.Drawers, out.Stored)
			})
		},
	})
	var desc string
	create := &cobra.Command{
		Use: "create NAME", Short: "Create a room (and its wing)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			wn, err := w()
			if err != nil {
				return err
			}
			return show(a, c.Context(), http.MethodPost, "/api/wings/"+client.Esc(wn)+"/rooms", api.NewPlace{Name: args[0], Description: desc}, func(out *api.RoomCreated) {
				a.printf("%s room %s/%s (%s)\n", createdWord(out.Created), out.Room.Wing, out.Room.Name, out.Room.ID)
			})
		},
	}
	create.Flags().StringVar(&desc, "description", "", "what the room holds")
	r.AddCommand(create)
	var yes bool
	del := &cobra.Command{
		Use: "delete ROOM", Short: "Delete a room and its drawers", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			wn, err := w()
			if err != nil {
				return err
			}
			if err := a.confirm(c, yes, fmt.Sprintf("Delete room %q of wing %q with all its drawers?", args[0], wn)); err != nil {
				return err
			}
			return a.remove(c.Context(), "/api/wings/"+client.Esc(wn)+"/rooms/"+client.Esc(args[0]))
		},
	}
	del.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	r.AddCommand(del)
	return r
}

func (a *app) drawerCmd() *cobra.Command {
	d := &cobra.Command{Use: "drawer", Short: "File, read, correct and delete drawers"}
	var wing, room string
	place := func() (string, error) {
		wn, err := a.defaultPlace(wing, "LOCI_WING", "wing")
		if err != nil {
			return "", err
		}
		rn, err := a.defaultPlace(room, "LOCI_ROOM", "room")
		if err != nil {
			return "", err
		}
		return "/api/wings/" + client.Esc(wn) + "/rooms/" + client.Esc(rn) + "/drawers", nil
	}
	placeFlags := func(c *cobra.Command) {
		c.Flags().StringVar(&wing, "wing", "", "wing (LOCI_WING, else the project's .loci.toml)")
		c.Flags().StringVar(&room, "room", "", "room (LOCI_ROOM, else the project's .loci.toml)")
	}
	// drawerID is the id of the drawer ref names: a UUID as it is, unless
	// --wing or --room is given; else a name (or UUID) in the room those
	// name, read like drawer get.
	drawerID := func(ctx context.Context, ref string) (string, error) {
		if _, err := uuid.Parse(ref); err == nil && wing == "" && room == "" {
			return ref, nil
		}
		p, err := place()
		if err != nil {
			return "", fault.Newf(fault.InputInvalid, "give the drawer's id, or its name with --wing and --room (or LOCI_WING and LOCI_ROOM)",
				"%q is not a drawer id and no room was given to find it by name", ref)
		}
		var d api.Drawer
		if _, err := a.call(ctx, http.MethodGet, p+"/"+client.EscPath(ref), nil, &d); err != nil {
			return "", err
		}
		return d.ID, nil
	}
	idCmd := func(c *cobra.Command) *cobra.Command {
		placeFlags(c)
		return c
	}

	var limit int
	var hist bool
	var cursor string
	list := &cobra.Command{
		Use: "list", Short: "List a room's newest drawers (previews)", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			p, err := place()
			if err != nil {
				return err
			}
			q := url.Values{}
			q.Set("limit", strconv.Itoa(limit))
			if hist {
				q.Set("include_historical", "true")
			}
			if cursor != "" {
				q.Set("cursor", cursor)
			}
			return show(a, c.Context(), http.MethodGet, p+"?"+q.Encode(), nil, func(out *api.DrawerList) {
				for _, p := range out.Drawers {
					label := p.ID
					if p.Name != "" {
						label = p.Name
					}
					mark := ""
					if p.ValidTo != nil {
						mark = " [superseded]"
					}
					a.printf("%s  %s%s\n    %s\n", ago(p.CreatedAt), label, mark, p.Preview)
				}
				if out.NextCursor != "" {
					a.printf("more drawers: add --cursor %s for the next page\n", out.NextCursor)
				}
			})
		},
	}
	placeFlags(list)
	list.Flags().IntVar(&limit, "limit", 0, "how many (default 50, max 200)")
	list.Flags().BoolVar(&hist, "historical", false, "include superseded drawers")
	list.Flags().StringVar(&cursor, "cursor", "", "read the page after the one that printed this cursor")
	d.AddCommand(list)

	get := &cobra.Command{
		Use: "get DRAWER", Short: "Show one drawer in full (an id alone, or a name or id with --wing and --room)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if _, err := uuid.Parse(args[0]); err == nil && wing == "" && room == "" {
				// An id needs no room: read it through its history.
				var h api.History
				if _, err := a.call(c.Context(), http.MethodGet, "/api/drawers/"+client.Esc(args[0])+"/history", nil, &h); err != nil {
					return err
				}
				if a.jsonOut {
					return a.out(h.Drawer)
				}
				a.printDrawer(&h.Drawer)
				return nil
			}
			p, err := place()
			if err != nil {
				return err
			}
			return show(a, c.Context(), http.MethodGet, p+"/"+client.EscPath(args[0]), nil, func(out *api.Drawer) {
				a.printDrawer(out)
			})
		},
	}
	placeFlags(get)
	d.AddCommand(get)

	var name string
	var tags []string
	add := &cobra.Command{
		Use: "add [TEXT...]", Short: "File a drawer (text from arguments, or standard input)",
		RunE: func(c *cobra.Command, args []string) error {
			p, err := place()
			if err != nil {
				return err
			}
			text, err := a.content(args, c.InOrStdin())
			if err != nil {
				return err
			}
			body := api.NewDrawer{Content: text, Name: name, Tags: tags, RequestedBy: "cli"}
			var out api.WriteResult
			status, err := a.call(c.Context(), http.MethodPost, p, body, &out)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.out(out)
			}
			a.printWrite(&out, status)
			return nil
		},
	}
	placeFlags(add)
	add.Flags().StringVar(&name, "name", "", "drawer name, unique in the room (may contain '/')")
	add.Flags().StringSliceVar(&tags, "tag", nil, "tag (repeat or comma-separate)")
	d.AddCommand(add)

	var yes bool
	del := &cobra.Command{
		Use: "delete DRAWER", Short: "Delete one drawer (name or id)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			p, err := place()
			if err != nil {
				return err
			}
			if err := a.confirm(c, yes, fmt.Sprintf("Delete drawer %q?", args[0])); err != nil {
				return err
			}
			return a.remove(c.Context(), p+"/"+client.EscPath(args[0]))
		},
	}
	placeFlags(del)
	del.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	d.AddCommand(del)

	var invalidate bool
	var stags []string
	sup := &cobra.Command{
		Use:   "supersede DRAWER [TEXT...]",
		Short: "Correct a drawer (id, or name with --wing and --room): the text opens a replacement; --invalidate only closes it",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			id, err := drawerID(c.Context(), args[0])
			if err != nil {
				return err
			}
			body := api.SupersedeRequest{RequestedBy: "cli"}
			if !invalidate {
				text, err := a.content(args[1:], c.InOrStdin())
				if err != nil {
					return err
				}
				body.Content = &text
			} else if len(args) > 1 {
				return fault.New(fault.InputInvalid, "--invalidate takes no text", "drop the text, or drop --invalidate to replace the drawer")
			}
			if c.Flags().Changed("tag") {
				body.Tags = &stags
			}
			return show(a, c.Context(), http.MethodPost, "/api/drawers/"+client.Esc(id)+"/supersede", body, func(out *api.Supersede) {
				if out.Replacement != nil {
					a.printf("superseded %s; replacement %s\n", out.Superseded.ID, out.Replacement.ID)
				} else {
					a.printf("invalidated %s\n", out.Superseded.ID)
				}
			})
		},
	}
	placeFlags(sup)
	sup.Flags().BoolVar(&invalidate, "invalidate", false, "close the drawer's validity without a replacement")
	sup.Flags().StringSliceVar(&stags, "tag", nil, "replace the tags carried over (repeat or comma-separate)")
	d.AddCommand(sup)

	d.AddCommand(idCmd(&cobra.Command{
		Use: "history DRAWER", Short: "Show a drawer's supersession chain, oldest first (id, or name with --wing and --room)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			id, err := drawerID(c.Context(), args[0])
			if err != nil {
				return err
			}
			return show(a, c.Context(), http.MethodGet, "/api/drawers/"+client.Esc(id)+"/history", nil, func(out *api.History) {
				for i, v := range out.Versions {
					state := "current"
					if v.ValidTo != nil {
						state = "until " + ago(*v.ValidTo)
					}
					a.printf("%d. %s  from %s, %s\n   %s\n", i+1, v.ID, ago(v.ValidFrom), state, oneLine(v.Content))
				}
			})
		},
	}))
	d.AddCommand(idCmd(&cobra.Command{
		Use: "duplicates DRAWER", Short: "Show the drawers a drawer was found similar to (id, or name with --wing and --room)", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			id, err := drawerID(c.Context(), args[0])
			if err != nil {
				return err
			}
			return show(a, c.Context(), http.MethodGet, "/api/drawers/"+client.Esc(id)+"/duplicates", nil, func(out *api.Duplicates) {
				if len(out.Similar) == 0 {
					a.printf("no similar drawers recorded\n")
				}
				for _, s := range out.Similar {
					a.printf("%s  %-10s %.3f  %s drawer\n", s.Drawer, s.Kind, s.Similarity, s.Side)
				}
			})
		},
	}))
	return d
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > 100 {
		return string(r[:99]) + "…"
	}
	return s
}

func (a *app) noteCmd() *cobra.Command {
	n := &cobra.Command{Use: "note", Short: "File notes"}
	var wing, room, uri string
	add := &cobra.Command{
		Use: "add [TEXT...]", Short: "File a note (an unnamed drawer of source kind note)",
		RunE: func(c *cobra.Command, args []string) error {
			wn, err := a.defaultPlace(wing, "LOCI_WING", "wing")
			if err != nil {
				return err
			}
			rn, err := a.defaultPlace(room, "LOCI_ROOM", "room")
			if err != nil {
				return err
			}
			text, err := a.content(args, c.InOrStdin())
			if err != nil {
				return err
			}
			var out api.WriteResult
			status, err := a.call(c.Context(), http.MethodPost, "/api/notes",
				api.NewNote{Wing: wn, Room: rn, Content: text, URI: uri, RequestedBy: "cli"}, &out)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.out(out)
			}
			a.printWrite(&out, status)
			return nil
		},
	}
	add.Flags().StringVar(&wing, "wing", "", "wing (LOCI_WING, else the project's .loci.toml)")
	add.Flags().StringVar(&room, "room", "", "room (LOCI_ROOM, else the project's .loci.toml)")
	add.Flags().StringVar(&uri, "uri", "", "where the note comes from")
	n.AddCommand(add)
	return n
}

func (a *app) diaryCmd() *cobra.Command {
	d := &cobra.Command{Use: "diary", Short: "Write and read an agent's diary"}
	var agent, wing string
	var limit int
	d.PersistentFlags().StringVar(&agent, "agent", "", "agent identity (required)")
	d.PersistentFlags().StringVar(&wing, "wing", "", "wing (LOCI_WING, else the project's .loci.toml)")
	d.AddCommand(&cobra.Command{
		Use: "write [TEXT...]", Short: "Write a diary entry",
		RunE: func(c *cobra.Command, args []string) error {
			if err := required("agent", agent, "NAME (whose diary this is)"); err != nil {
				return err
			}
			wn, err := a.defaultPlace(wing, "LOCI_WING", "wing")
			if err != nil {
				return err
			}
			text, err := a.content(args, c.InOrStdin())
			if err != nil {
				return err
			}
			var out api.WriteResult
			status, err := a.call(c.Context(), http.MethodPost, "/api/diary",
				api.DiaryWrite{AgentIdentity: agent, Wing: wn, Content: text, RequestedBy: "cli"}, &out)
			if err != nil {
				return err
			}
			if a.jsonOut {
				return a.out(out)
			}
			a.printWrite(&out, status)
			return nil
		},
	})
	read := &cobra.Command{
		Use: "read", Short: "Read an agent's newest diary entries", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if err := required("agent", agent, "NAME (whose diary to read)"); err != nil {
				return err
			}
			wn, err := a.defaultPlace(wing, "LOCI_WING", "wing")
			if err != nil {
				return err
			}
			q := url.Values{"agent_identity": {agent}, "wing": {wn}, "limit": {strconv.Itoa(limit)}}
			return show(a, c.Context(), http.MethodGet, "/api/diary?"+q.Encode(), nil, func(out *struct {
				Entries []api.Drawer `json:"entries"`
			}) {
				for _, e := range out.Entries {
					a.printf("%s  %s\n%s\n\n", ago(e.CreatedAt), e.ID, e.Content)
				}
			})
		},
	}
	read.Flags().IntVar(&limit, "limit", 0, "how many (default 20, max 200)")
	d.AddCommand(read)
	return d
}

// statsCmd is `loci stats`: the drawers filed per day over the last days
// (local days), over every room.
func (a *app) statsCmd() *cobra.Command {
	var days int
	cmd := &cobra.Command{
		Use: "stats", Short: "Drawers filed per day over the last days (--days, default 14), every room", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if days < 1 || days > 366 {
				return fault.Invalid("--days", fmt.Sprintf("%d is outside 1 to 366", days))
			}
			now := time.Now()
			since := time.Date(now.Year(), now.Month(), now.Day()-days+1, 0, 0, 0, 0, now.Location())
			q := url.Values{"since": {since.Format(time.RFC3339)}, "buckets": {strconv.Itoa(days)}, "step_secs": {"86400"}}
			return show(a, c.Context(), http.MethodGet, "/api/stats/filed?"+q.Encode(), nil, func(out *api.Filed) {
				most := slices.Max(append([]int{1}, out.Counts...))
				for i, n := range out.Counts {
					day := out.Since.Add(time.Duration(i) * time.Duration(out.StepSecs) * time.Second).In(now.Location())
					a.printf("%s  %7d  %s\n", day.Format("Mon 2006-01-02"), n, strings.Repeat("#", (n*40+most-1)/most))
				}
				a.printf("%d drawers filed in %d days\n", out.Total, len(out.Counts))
			})
		},
	}
	cmd.Flags().IntVar(&days, "days", 14, "how many days, today the last (1 to 366)")
	return cmd
}
