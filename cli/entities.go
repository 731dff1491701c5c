package cli

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/loci-dev/loci/api"
	"github.com/loci-dev/loci/transport/client"
)

func (a *app) entityCmd() *cobra.Command {
	e := &cobra.Command{Use: "entity", Short: "Knowledge-graph entities: people, places, projects, tools and more"}
	var name, kind string
	var limit int
	list := &cobra.Command{
		Use: "list", Short: "List entities by name (--name contains, any case; --kind)", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			q := url.Values{}
			if name != "" {
				q.Set("name", name)
			}
			if kind != "" {
				q.Set("kind", kind)
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			return show(a, c.Context(), http.MethodGet, "/api/entities?"+q.Encode(), nil, func(out *api.EntityList) {
				if len(out.Entities) == 0 {
					a.printf("no entities\n")
				}
				for _, en := range out.Entities {
					aka := ""
					if len(en.Aliases) > 0 {
						aka = "  (also " + strings.Join(en.Aliases, ", ") + ")"
					}
					a.printf("%s  %-12s %s%s\n", en.ID, en.Kind, en.Name, aka)
				}
				if out.Truncated {
					a.printf("more entities match: raise --limit or narrow --name\n")
				}
			})
		},
	}
	list.Flags().StringVar(&name, "name", "", "names containing this (any case)")
	list.Flags().StringVar(&kind, "kind", "", "of this kind")
	list.Flags().IntVar(&limit, "limit", 0, "at most this many (default 50, max 200)")
	e.AddCommand(list)
	printEntity := func(en *api.Entity) {
		a.printf("id:      %s\nname:    %s\nkind:    %s\nkey:     %s\n", en.ID, en.Name, en.Kind, en.Key)
		if len(en.Aliases) > 0 {
			a.printf("aliases: %s\n", strings.Join(en.Aliases, ", "))
		}
	}
	e.AddCommand(&cobra.Command{
		Use: "get ID", Short: "Show one entity", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/entities/"+client.Esc(args[0]), nil, printEntity)
		},
	})
	e.AddCommand(&cobra.Command{
		Use: "alias ID ALIAS", Short: "Record another spelling of an entity", Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodPost, "/api/entities/"+client.Esc(args[0])+"/aliases", api.AliasAdd{Alias: args[1]}, printEntity)
		},
	})
	e.AddCommand(&cobra.Command{
		Use: "mentions ID", Short: "The drawers that mention an entity, with the name as spelled", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/entities/"+client.Esc(args[0])+"/mentions", nil, func(out *api.MentionList) {
				if len(out.Mentions) == 0 {
					a.printf("no drawer mentions %s\n", out.Entity.Name)
				}
				for _, m := range out.Mentions {
					a.printf("%s  %q (%s, %s, confidence %.2f)\n", m.Drawer, m.Observation.Name, m.Observation.Rule, m.Provenance.Extractor, m.Observation.Confidence)
				}
			})
		},
	})
	e.AddCommand(&cobra.Command{
		Use: "candidates ID", Short: "Entities this one resembles, or that resemble it", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			return show(a, c.Context(), http.MethodGet, "/api/entities/"+client.Esc(args[0])+"/candidates", nil, func(out *api.EntityCandidates) {
				if len(out.Candidates) == 0 {
					a.printf("no candidates\n")
				}
				for _, cd := range out.Candidates {
					a.printf("%s  %-12s %s  (%s, similarity %.2f)\n", cd.Entity.ID, cd.Entity.Kind, cd.Entity.Name, cd.Side, cd.Similarity)
				}
			})
		},
	})
	return e
}

func (a *app) factCmd() *cobra.Command {
	f := &cobra.Command{Use: "fact", Short: "Knowledge-graph facts (relationships between entities)"}
	var asOf string
	h := &cobra.Command{
		Use: "history ID", Short: "A fact with what it superseded, what superseded it, and its confirmations, conflicts and refinements", Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			q := ""
			if asOf != "" {
				q = "?as_of=" + url.QueryEscape(asOf)
			}
			return show(a, c.Context(), http.MethodGet, "/api/relationships/"+client.Esc(args[0])+"/history"+q, nil, func(out *api.FactHistory) {
				a.printFact("", &out.Relationship)
				for _, r := range out.Related {
					how := r.Relation
					if r.Side != "" {
						how += " (" + r.Side + ")"
					}
					if r.Reason != "" {
						how += ": " + r.Reason
					}
					a.printFact("  "+how+"\n    ", &r.Relationship)
				}
			})
		},
	}
	h.Flags().StringVar(&asOf, "as-of", "", "judge validity at this time (RFC 3339 or a date)")
	f.AddCommand(h)
	return f
}

func (a *app) printFact(prefix string, f *api.Fact) {
	valid := f.ValidFrom.Format("2006-01-02")
	if f.ValidTo != nil {
		valid += " to " + f.ValidTo.Format("2006-01-02")
	}
	state := "current"
	switch {
	case f.RetractedAt != nil:
		state = "retracted"
	case !f.Current:
		state = "not current"
	}
	seen := ""
	if n := len(f.Evidence); n > 1 {
		seen = fmt.Sprintf(", asserted %d times", n)
	}
	a.printf("%s%s %s %s  [%s, %s, confidence %.2f%s]  %s\n", prefix, f.Subject.Name, f.Predicate, f.Object.Name, valid, state, f.Confidence, seen, f.ID)
}

func (a *app) graphCmd() *cobra.Command {
	var entity string
	var depth, limit int
	g := &cobra.Command{
		Use: "graph", Short: "The knowledge graph: an entity's neighbourhood of open facts (--entity NAME or ID, --depth 1-3), or the entities with the most facts and the facts among them", Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			q := url.Values{}
			if entity != "" {
				q.Set("entity", entity)
			}
			if depth > 0 {
				q.Set("depth", strconv.Itoa(depth))
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			return show(a, c.Context(), http.MethodGet, "/api/graph?"+q.Encode(), nil, func(out *api.Graph) {
				if out.Entity != nil {
					a.printf("around %s (%s, %s): ", out.Entity.Name, out.Entity.Kind, out.Entity.ID)
				} else if len(out.Edges) > 0 {
					a.printf("the entities with the most facts: ")
				}
				a.printf("%d entities, %d facts\n", len(out.Nodes), len(out.Edges))
				for _, f := range out.Edges {
					a.printFact("", &f)
				}
				if out.Truncated {
					a.printf("more entities are reachable: raise --limit\n")
				}
			})
		},
	}
	g.Flags().StringVar(&entity, "entity", "", "start from this entity: its name (the exact one first, else the one name containing it) or id")
	g.Flags().IntVar(&depth, "depth", 0, "hops out from the entity: 1 to 3 (default 1)")
	g.Flags().IntVar(&limit, "limit", 0, "at most this many entities (default 50, max 200)")
	return g
}
